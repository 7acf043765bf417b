// clip_grad_norm_, as torch.nn.utils.clip_grad_norm_ (max_norm / (norm + 1e-6)).
#include "nnvm/nn/utils.h"

#include <algorithm>
#include <cmath>

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"

namespace nnvm::nn::utils {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NNVM_CHECK(norm_type > 0, "clip_grad_norm_", "norm_type must be positive, got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> params;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) params.push_back(p);
  if (params.empty()) return 0.0;

  const bool inf_norm = std::isinf(norm_type);
  double total = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad().to(kFloat64);
    if (g.numel() == 0) continue;
    if (inf_norm)
      total = std::max(total, g.abs().max().item<double>());
    else
      total += std::pow(g.norm(Scalar(norm_type)).item<double>(), norm_type);
  }
  if (!inf_norm) total = std::pow(total, 1.0 / norm_type);
  NNVM_CHECK(!error_if_nonfinite || std::isfinite(total), "clip_grad_norm_", "the total norm of order ", norm_type,
             " of the gradients of ", params.size(), " parameters is non-finite (", total, ")");

  const double coef = max_norm / (total + 1e-6);
  if (coef < 1)
    for (Tensor& p : params)
      // A new tensor rather than an in-place scale: the gradient may alias another tensor.
      p.mutable_grad() = p.grad() * Scalar(coef);
  return total;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

}  // namespace nnvm::nn::utils
