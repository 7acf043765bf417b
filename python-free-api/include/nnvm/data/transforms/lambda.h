// Transforms made from a function (libtorch's transforms::Lambda and
// BatchLambda): .map(Lambda<Example<>>([](Example<> e) { ...; return e; })).
#pragma once

#include <functional>
#include <utility>

#include "nnvm/data/transforms/base.h"

namespace nnvm::data::transforms {

template <class Input, class Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;

  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  Output apply_batch(Input input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

template <class Input, class Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;

  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  Output apply(Input input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

}  // namespace nnvm::data::transforms
