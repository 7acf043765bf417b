// Transforms of an example's data tensor, its target untouched (libtorch's
// TensorTransform, TensorLambda and Normalize).
#pragma once

#include <functional>
#include <utility>

#include "nnvm/data/example.h"
#include "nnvm/data/transforms/base.h"
#include "nnvm/data/types.h"

namespace nnvm::data::transforms {

template <class Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;

  virtual Tensor operator()(Tensor input) = 0;

  E apply(E input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

template <class Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;

  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

namespace detail {
// Per-channel statistics as float32 [C, 1, 1], which broadcast over [C, H, W]
// images; one value gives a 0-d tensor, which keeps any input's shape.
// Throws nnvm::Error for no values or, when `positive`, a value <= 0.
Tensor channel_stats(ArrayRef<double> values, const char* what, bool positive);
}  // namespace detail

// (data - mean) / stddev, with a scalar or one value per channel (dim -3).
template <class Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(double mean, double stddev) : Normalize(ArrayRef<double>(&mean, 1), ArrayRef<double>(&stddev, 1)) {}
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(detail::channel_stats(mean, "mean", false)), stddev(detail::channel_stats(stddev, "stddev", true)) {}

  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }

  Tensor mean, stddev;
};

}  // namespace nnvm::data::transforms
