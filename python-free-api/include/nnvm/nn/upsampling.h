// nn::Upsample (libtorch's): F::interpolate as a module, over the spatial
// dims of an [N, C, ...] input.
#pragma once

#include <optional>
#include <vector>

#include "nnvm/nn/module.h"
#include "nnvm/nn/ops.h"

namespace nnvm::nn {

// Give exactly one of size and scale_factor (a value per spatial dim, or one for all).
struct UpsampleOptions {
  NNVM_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  NNVM_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  NNVM_ARG(InterpolateMode, mode) = kNearest;
  // linear, bilinear, bicubic and trilinear only; unset is false
  NNVM_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options = {}) : Module("Upsample"), options(options) {}
  Tensor forward(const Tensor& x);

  UpsampleOptions options;
};
NNVM_MODULE(Upsample);

}  // namespace nnvm::nn
