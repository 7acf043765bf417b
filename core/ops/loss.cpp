// Loss ops: declarations and the public API. Kernels: kernels/cpu/loss.cpp.
//
// Each loss is one op that computes the per-element (or per-row) loss and its
// reduction in one kernel. The reduction is a structural int64 attribute
// (Reduction as an integer); optional tensors are passed only when defined,
// with bool attributes saying which are present.
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/ops/nn_inputs.h"

namespace nnvm {

namespace {

DimVector reduced(IntArrayRef shape, int64_t reduction, std::string_view op) {
  NNVM_CHECK(reduction >= 0 && reduction <= 2, op, "unknown reduction ", reduction,
             " (expected None, Mean or Sum)");
  return Reduction(reduction) == Reduction::None ? dims(shape) : DimVector{};
}

// mse_loss, l1_loss: input, target of the same shape. attrs: reduction
InferFn infer_pointwise_loss(std::string_view op) {
  return [op](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
    check_floating(in[0], op, "input");
    check_floating(in[1], op, "target");
    NNVM_CHECK(in[0].sizes() == in[1].sizes(), op, "input of shape ", shape_str(in[0].sizes()),
               " and target of shape ", shape_str(in[1].sizes()), " differ (expected the same shape)");
    return {{reduced(in[0].sizes(), a.i(0), op), promote_types(in[0].dtype(), in[1].dtype())}};
  };
}

// input, target, [weight], [pos_weight]. attrs: reduction, has_weight, has_pos_weight
OutputSpecs infer_bce_with_logits(absl::Span<const Tensor> in, const Attrs& a) {
  constexpr std::string_view op = "binary_cross_entropy_with_logits";
  const bool has_weight = a.b(1), has_pos_weight = a.b(2);
  check_input_count(in, 2 + has_weight + has_pos_weight, op);
  const Tensor &x = in[0], &y = in[1];
  check_floating(x, op, "input");
  check_floating(y, op, "target");
  NNVM_CHECK(x.sizes() == y.sizes(), op, "input of shape ", shape_str(x.sizes()), " and target of shape ",
             shape_str(y.sizes()), " differ (expected the same shape)");
  auto check_broadcast = [&](const Tensor& w, std::string_view what) {
    check_floating(w, op, what);
    const bool fits = w.dim() <= x.dim() && [&] {
      for (int64_t d = 1; d <= w.dim(); ++d)
        if (w.size(-d) != 1 && w.size(-d) != x.size(-d)) return false;
      return true;
    }();
    NNVM_CHECK(fits, op, what, " of shape ", shape_str(w.sizes()), " does not broadcast to input of shape ",
               shape_str(x.sizes()));
  };
  if (has_weight) check_broadcast(in[2], "weight");
  if (has_pos_weight) check_broadcast(in[2 + has_weight], "pos_weight");
  return {{reduced(x.sizes(), a.i(0), op), promote_types(x.dtype(), y.dtype())}};
}

// nll_loss, cross_entropy: scores [C], [N, C] or [N, C, d1, ...]; an int64
// target [], [N] or [N, d1, ...]; an optional weight [C].
// attrs: reduction, ignore_index, has_weight (cross_entropy: then label_smoothing)
InferFn infer_class_loss(std::string_view op, std::string_view scores) {
  return [op, scores](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
    const bool has_weight = a.b(2);
    check_input_count(in, 2 + has_weight, op);
    const Tensor &x = in[0], &t = in[1];
    check_floating(x, op, scores);
    NNVM_CHECK(t.dtype() == kInt64, op, "expected an int64 target of class indices but got ", t.dtype(),
               " (shape ", shape_str(t.sizes()), ")");
    NNVM_CHECK(x.dim() >= 1, op, "expected ", scores, " of shape [C], [N, C] or [N, C, d1, ...] but got ",
               shape_str(x.sizes()));
    DimVector expected = dims(x.sizes());
    expected.erase(expected.begin() + (x.dim() == 1 ? 0 : 1));
    NNVM_CHECK(t.sizes() == expected, op, "target of shape ", shape_str(t.sizes()), " does not fit ", scores,
               " of shape ", shape_str(x.sizes()), " (expected target of shape ", shape_str(expected), ")");
    const int64_t classes = x.size(x.dim() == 1 ? 0 : 1);
    if (has_weight) {
      const Tensor& w = in[2];
      check_floating(w, op, "weight");
      NNVM_CHECK(w.dim() == 1 && w.size(0) == classes, op, "weight of shape ", shape_str(w.sizes()),
                 " does not fit ", scores, " of shape ", shape_str(x.sizes()), " (expected shape [", classes,
                 "])");
    }
    return {{reduced(t.sizes(), a.i(0), op), x.dtype()}};
  };
}

// inputs: g, logits, target, [weight]; attrs: cross_entropy's. output: dlogits
OutputSpecs infer_cross_entropy_backward(absl::Span<const Tensor> in, const Attrs& a) {
  NNVM_CHECK(in.size() >= 3, "cross_entropy_backward", "expected g, logits and target but got ", in.size(),
             " inputs");
  const OutputSpecs loss = infer_class_loss("cross_entropy", "logits")(in.subspan(1), a);
  NNVM_CHECK(in[0].sizes() == loss[0].shape, "cross_entropy_backward", "gradient of shape ",
             shape_str(in[0].sizes()), " does not match the loss of shape ", shape_str(loss[0].shape));
  return {{dims(in[1].sizes()), in[1].dtype()}};
}

// ---- gradients ----
// Targets and class weights get no gradient (libtorch's rule for the class
// losses); the element-wise losses differentiate both input and target, and
// binary_cross_entropy_with_logits also its weight and pos_weight.

using Ctx = GradContext;

// The loss gradient as a factor per element: Mean spreads it over the n terms.
Tensor per_term(const Tensor& g, const Attrs& a, int64_t n) {
  return Reduction(a.i(0)) == Reduction::Mean ? g / double(std::max<int64_t>(n, 1)) : g;
}

template <class F> GradFn pointwise_loss_grad(F dloss_dinput) {
  return [dloss_dinput](const Ctx& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    if (!g.defined()) return {Tensor(), Tensor()};
    const Tensor gx = per_term(g, c.attrs, c.inputs[0].numel()) * dloss_dinput(c.inputs[0] - c.inputs[1]);
    return {c.needs_input_grad[0] ? gx : Tensor(), c.needs_input_grad[1] ? -gx : Tensor()};
  };
}

// With s = sigmoid(x), l = 1 + (pos_weight - 1) y and w the weight:
//   d/dx = w (l s - pos_weight y)        d/dy = w ((pos_weight - 1) softplus(-x) - x)
//   d/dw = the unweighted loss           d/dpos_weight = w y softplus(-x)
// (pos_weight = 1 without one).
std::vector<Tensor> bce_with_logits_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined()) return grads;
  const Tensor &x = c.inputs[0], &y = c.inputs[1];
  const bool has_weight = c.attrs.b(1), has_pos_weight = c.attrs.b(2);
  const Tensor scale = per_term(g, c.attrs, x.numel());
  const Tensor weighted = has_weight ? scale * c.inputs[2] : scale;
  const Tensor softplus_neg = softplus(-x);
  const Tensor pos_weight = has_pos_weight ? c.inputs[2 + has_weight] : Tensor();
  if (c.needs_input_grad[0]) {
    const Tensor s = x.sigmoid();
    grads[0] = weighted * (has_pos_weight ? (1 + (pos_weight - 1) * y) * s - pos_weight * y : s - y);
  }
  if (c.needs_input_grad[1])
    grads[1] = weighted * (has_pos_weight ? (pos_weight - 1) * softplus_neg - x : -x);
  if (has_weight && c.needs_input_grad[2]) {
    const Tensor log_weight = has_pos_weight ? 1 + (pos_weight - 1) * y : Tensor();
    grads[2] = scale * ((1 - y) * x + (has_pos_weight ? log_weight * softplus_neg : softplus_neg));
  }
  if (has_pos_weight && c.needs_input_grad[2 + has_weight]) grads[2 + has_weight] = weighted * y * softplus_neg;
  return grads;
}

// inputs: log_probs, target, [weight]; attrs: reduction, ignore_index, has_weight.
// Row r's loss is -w[t_r] log_probs[r, t_r]: its gradient is -w[t_r] g at
// class t_r (divided by the summed weight of the counted rows for Mean).
std::vector<Tensor> nll_loss_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined() || !c.needs_input_grad[0]) return grads;
  const Tensor &x = c.inputs[0], &target = c.inputs[1];
  const int64_t class_dim = x.dim() == 1 ? 0 : 1;
  const Tensor ignored = target == c.attrs.i(1);
  const Tensor safe_target = target.masked_fill(ignored, 0);
  Tensor w = c.attrs.b(2) ? c.inputs[2].index_select(0, safe_target.reshape({-1})).reshape(target.sizes())
                          : ones(target.sizes(), x.dtype());
  w = w.masked_fill(ignored, 0);
  Tensor scaled = g * w;
  if (Reduction(c.attrs.i(0)) == Reduction::Mean) scaled = scaled / w.sum();
  grads[0] = zeros_like(x, scaled.dtype()).scatter(class_dim, safe_target.unsqueeze(class_dim),
                                                   (-scaled).unsqueeze(class_dim));
  return grads;
}

// softmax(logits) minus the target distribution, scaled: one fused kernel.
std::vector<Tensor> cross_entropy_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined() || !c.needs_input_grad[0]) return grads;
  static const OpDef& backward = find_op("cross_entropy_backward");
  std::vector<Tensor> in{g.to(c.inputs[0].dtype())};
  in.insert(in.end(), c.inputs.begin(), c.inputs.end());
  grads[0] = call1(backward, in, c.attrs);
  return grads;
}

}  // namespace

NNVM_REGISTER(loss_ops) {
  register_op("mse_loss").inputs(2).infer_with(infer_pointwise_loss("mse_loss")).grad_with(
      pointwise_loss_grad([](const Tensor& diff) { return diff * 2; }));
  register_op("l1_loss").inputs(2).infer_with(infer_pointwise_loss("l1_loss")).grad_with(
      pointwise_loss_grad([](const Tensor& diff) { return diff.sign(); }));
  register_op("binary_cross_entropy_with_logits").inputs(-1).infer_with(infer_bce_with_logits)
      .grad_with(bce_with_logits_grad);
  register_op("nll_loss").checks_input_values().inputs(-1).infer_with(infer_class_loss("nll_loss", "log_probs")).grad_with(nll_loss_grad);
  register_op("cross_entropy").checks_input_values().inputs(-1).infer_with(infer_class_loss("cross_entropy", "logits"))
      .grad_with(cross_entropy_grad);
  register_op("cross_entropy_backward").checks_input_values().inputs(-1).infer_with(infer_cross_entropy_backward);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  static const OpDef& op = find_op("mse_loss");
  return call1(op, {input, target}, {int64_t(reduction)});
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  static const OpDef& op = find_op("l1_loss");
  return call1(op, {input, target}, {int64_t(reduction)});
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        Reduction reduction, const Tensor& pos_weight) {
  static const OpDef& op = find_op("binary_cross_entropy_with_logits");
  std::vector<Tensor> inputs{input, target};
  push_if_defined(inputs, weight);
  push_if_defined(inputs, pos_weight);
  return call1(op, inputs, {int64_t(reduction), weight.defined(), pos_weight.defined()});
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight, Reduction reduction,
                int64_t ignore_index) {
  static const OpDef& op = find_op("nll_loss");
  std::vector<Tensor> inputs{log_probs, target};
  push_if_defined(inputs, weight);
  return call1(op, inputs, {int64_t(reduction), ignore_index, weight.defined()});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight, Reduction reduction,
                     int64_t ignore_index, double label_smoothing) {
  static const OpDef& op = find_op("cross_entropy");
  NNVM_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "cross_entropy",
             "label_smoothing must be in [0, 1], got ", label_smoothing);
  std::vector<Tensor> inputs{logits, target};
  push_if_defined(inputs, weight);
  return call1(op, inputs, {int64_t(reduction), ignore_index, weight.defined(), Scalar(label_smoothing)});
}

}  // namespace nnvm
