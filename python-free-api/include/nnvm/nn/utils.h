// Gradient utilities (libtorch's torch::nn::utils).
#pragma once

#include <limits>
#include <vector>

#include "nnvm/core/tensor.h"

namespace nnvm::nn::utils {

// Rescales the gradients of `parameters` so that their joint norm (the norm of
// all gradients concatenated; norm_type may be infinity) is at most max_norm.
// Returns the norm before clipping. Parameters without a gradient are skipped.
// With error_if_nonfinite, a NaN or infinite norm throws nnvm::Error.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

}  // namespace nnvm::nn::utils
