// The composite ops of nn/ops.h: each is a few calls to the op table, so its
// gradient is autograd's and a trace records the ops it is made of.
#include "nnvm/nn/ops.h"

#include "nnvm/core/ops/nn_inputs.h"

namespace nnvm {

namespace {

// A pointwise loss's operands: defined, floating, of one shape.
void check_loss_operands(const Tensor& input, const Tensor& target, std::string_view op) {
  NNVM_CHECK(input.defined() && target.defined(), op, "input and target must be defined tensors");
  check_floating(input, op, "input");
  check_floating(target, op, "target");
  NNVM_CHECK(input.sizes() == target.sizes(), op, "input of shape ", shape_str(input.sizes()),
             " and target of shape ", shape_str(target.sizes()), " differ (expected the same shape)");
}

Tensor reduce(const Tensor& loss, Reduction reduction, std::string_view op) {
  switch (reduction) {
    case Reduction::None: return loss;
    case Reduction::Mean: return loss.mean();
    case Reduction::Sum: return loss.sum();
  }
  NNVM_CHECK(false, op, "unknown reduction ", int(reduction), " (expected None, Mean or Sum)");
  return {};
}

// log(p) floored at -100. p = 0 goes around the log (log(1) instead, then
// replaced by -100), so its gradient is 0 rather than 0 / 0.
Tensor floored_log(const Tensor& p) {
  const Tensor positive = p > 0;
  return where(positive, where(positive, p, 1.0).log().clamp_min(-100), -100.0);
}

// t log t, 0 where t = 0 (its limit), with the same detour around log(0).
Tensor xlogx(const Tensor& t) {
  const Tensor zero = t == 0;
  return where(zero, 0.0, t * where(zero, 1.0, t).log());
}

}  // namespace

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  NNVM_CHECK(min_val < max_val, "hardtanh", "min_val ", min_val, " must be less than max_val ", max_val);
  return x.clamp(min_val, max_val);
}

Tensor relu6(const Tensor& x) { return hardtanh(x, 0.0, 6.0); }

Tensor selu(const Tensor& x) {
  constexpr double alpha = 1.6732632423543772848170429916717;
  constexpr double scale = 1.0507009873554804934193349852946;
  return elu(x, alpha) * scale;
}

Tensor dropout2d(const Tensor& x, double p, bool train, Generator* gen) {
  NNVM_CHECK(x.defined(), "dropout2d", "the input is an undefined tensor");
  NNVM_CHECK(p >= 0 && p <= 1, "dropout2d", "probability p must be in [0, 1], got ", p, " (input of shape ",
             shape_str(x.sizes()), ")");
  NNVM_CHECK(x.dim() == 3 || x.dim() == 4, "dropout2d", "expected an input of shape [N, C, H, W] or [N, C, L] but got ",
             shape_str(x.sizes()));
  check_floating(x, "dropout2d", "input");
  if (!train || p == 0) return x;
  if (p == 1) return x * 0.0;
  DimVector channels(size_t(x.dim()), 1);
  channels[0] = x.size(0);
  channels[1] = x.size(1);
  return x * (bernoulli(channels, 1 - p, x.dtype(), gen) / (1 - p));
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  NNVM_CHECK(x1.defined() && x2.defined(), "cosine_similarity", "x1 and x2 must be defined tensors");
  NNVM_CHECK(eps >= 0, "cosine_similarity", "eps must be non-negative, got ", eps);
  const Tensor norm1 = x1.norm(2, {dim}, true).clamp_min(eps), norm2 = x2.norm(2, {dim}, true).clamp_min(eps);
  return ((x1 / norm1) * (x2 / norm2)).sum({dim});
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  check_loss_operands(input, target, "smooth_l1_loss");
  NNVM_CHECK(beta >= 0, "smooth_l1_loss", "beta must be non-negative, got ", beta, " (input of shape ",
             shape_str(input.sizes()), ")");
  if (beta == 0) return l1_loss(input, target, reduction);
  const Tensor diff = input - target, abs_diff = diff.abs();
  return reduce(where(abs_diff < beta, diff.square() * (0.5 / beta), abs_diff - 0.5 * beta), reduction,
                "smooth_l1_loss");
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  check_loss_operands(input, target, "huber_loss");
  NNVM_CHECK(delta > 0, "huber_loss", "delta must be positive, got ", delta, " (input of shape ",
             shape_str(input.sizes()), ")");
  return smooth_l1_loss(input, target, reduction, delta) * delta;
}

// Unlike PyTorch, inputs outside [0, 1] are not caught: the check would read
// the data and so end the trace.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  constexpr std::string_view op = "binary_cross_entropy";
  check_loss_operands(input, target, op);
  Tensor loss = -(target * floored_log(input) + (1 - target) * floored_log(1 - input));
  if (weight.defined()) {
    check_floating(weight, op, "weight");
    NNVM_CHECK(broadcasts_to(weight.sizes(), input.sizes()), op, "weight of shape ",
               shape_str(weight.sizes()), " does not broadcast to input of shape ", shape_str(input.sizes()));
    loss = loss * weight;
  }
  return reduce(loss, reduction, op);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  check_loss_operands(input, target, "kl_div");
  const Tensor loss = log_target ? target.exp() * (target - input) : xlogx(target) - target * input;
  return reduce(loss, reduction, "kl_div");
}

}  // namespace nnvm
