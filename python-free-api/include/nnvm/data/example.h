// One sample or one batch: an input and its target (libtorch's
// torch::data::Example<>). Binds to structured bindings:
//   for (const auto& [data, target] : loader)
// TensorExample is an input without a target.
#pragma once

#include <utility>

#include "nnvm/core/tensor.h"

namespace nnvm::data {
namespace example {
// The Target of an Example that has none.
struct NoTarget {};
}  // namespace example

template <class Data = Tensor, class Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}

  Data data;
  Target target;
};

template <class Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;

  Example() = default;
  Example(Data data) : data(std::move(data)) {}  // NOLINT: libtorch converts both ways
  operator Data&() { return data; }
  operator const Data&() const { return data; }

  Data data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

}  // namespace nnvm::data
