// Normalisation and dropout ops: declarations and the public API.
// Kernels: kernels/cpu/norm.cpp and kernels/cpu/dropout.cpp.
//
// Each is one op (not a composition), so a pass that recognises a decomposed
// layer norm can replace it with this op. Optional tensors (weight, bias,
// running stats) are passed only when defined, in a fixed order; bool
// attributes say which are present.
#include <algorithm>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/ops/nn_inputs.h"

namespace nnvm {

namespace {

// attrs: normalized_shape, has_weight, has_bias, eps
OutputSpecs infer_layer_norm(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef norm = a.ints(0);
  const bool has_weight = a.b(1), has_bias = a.b(2);
  check_input_count(in, 1 + has_weight + has_bias, "layer_norm");
  check_normalized_shape(x, norm, "layer_norm");
  if (has_weight) check_param(in[1], norm, "layer_norm", "weight", x);
  if (has_bias) check_param(in[1 + has_weight], norm, "layer_norm", "bias", x);
  return {{dims(x.sizes()), x.dtype()}};
}

// attrs: num_groups, has_weight, has_bias, eps
OutputSpecs infer_group_norm(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const int64_t groups = a.i(0);
  const bool has_weight = a.b(1), has_bias = a.b(2);
  check_input_count(in, 1 + has_weight + has_bias, "group_norm");
  check_floating(x, "group_norm", "input");
  NNVM_CHECK(x.dim() >= 2, "group_norm", "expected an input of shape [N, C, *] but got ", shape_str(x.sizes()));
  const int64_t channels = x.size(1);
  NNVM_CHECK(groups > 0 && channels % groups == 0, "group_norm", "input of shape ", shape_str(x.sizes()),
             " has ", channels, " channels, which num_groups ", groups, " does not divide (expected num_groups > 0 ",
             "dividing the channels)");
  if (has_weight) check_param(in[1], {channels}, "group_norm", "weight", x);
  if (has_bias) check_param(in[1 + has_weight], {channels}, "group_norm", "bias", x);
  return {{dims(x.sizes()), x.dtype()}};
}

// inputs: x, [running_mean, running_var], [weight], [bias]
// attrs: training, has_running, has_weight, has_bias, momentum, eps
// outputs: y, and in training with running stats their updated values.
OutputSpecs infer_batch_norm(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const bool training = a.b(0), has_running = a.b(1), has_weight = a.b(2), has_bias = a.b(3);
  check_input_count(in, 1 + 2 * has_running + has_weight + has_bias, "batch_norm");
  check_floating(x, "batch_norm", "input");
  NNVM_CHECK(x.dim() >= 2, "batch_norm", "expected an input of shape [N, C, *] but got ", shape_str(x.sizes()));
  NNVM_CHECK(training || has_running, "batch_norm", "running_mean and running_var must be defined in evaluation mode");
  const int64_t channels = x.size(1);
  NNVM_CHECK(!training || x.numel() / std::max<int64_t>(channels, 1) != 1 || channels == 0, "batch_norm",
             "expected more than 1 value per channel when training, got input of shape ", shape_str(x.sizes()));
  size_t k = 1;
  if (has_running) {
    check_param(in[k++], {channels}, "batch_norm", "running_mean", x);
    check_param(in[k++], {channels}, "batch_norm", "running_var", x);
  }
  if (has_weight) check_param(in[k++], {channels}, "batch_norm", "weight", x);
  if (has_bias) check_param(in[k++], {channels}, "batch_norm", "bias", x);
  OutputSpecs out{{dims(x.sizes()), x.dtype()}};
  if (training && has_running) {
    out.push_back({{channels}, in[1].dtype()});
    out.push_back({{channels}, in[2].dtype()});
  }
  return out;
}

// attrs: p, seed, counter
OutputSpecs infer_dropout(absl::Span<const Tensor> in, const Attrs&) {
  check_floating(in[0], "dropout", "input");
  return {{dims(in[0].sizes()), in[0].dtype()}};
}

// inputs: g, x, [weight]; attrs: layer_norm's. outputs: dx, [dweight], [dbias]
OutputSpecs infer_layer_norm_backward(absl::Span<const Tensor> in, const Attrs& a) {
  const bool has_weight = a.b(1), has_bias = a.b(2);
  check_input_count(in, 2 + has_weight, "layer_norm_backward");
  const Tensor &g = in[0], &x = in[1];
  NNVM_CHECK(g.sizes() == x.sizes(), "layer_norm_backward", "gradient of shape ", shape_str(g.sizes()),
             " does not match input of shape ", shape_str(x.sizes()));
  infer_layer_norm(in.subspan(1, 1 + has_weight), {a[0], a[1], false, a[3]});
  const DType param = has_weight ? in[2].dtype() : x.dtype();
  OutputSpecs out{{dims(x.sizes()), x.dtype()}};
  if (has_weight) out.push_back({dims(a.ints(0)), param});
  if (has_bias) out.push_back({dims(a.ints(0)), param});
  return out;
}

// ---- gradients ----
// With xhat = (x - mean) * rstd over a normalised set of m elements and
// dxhat = g * weight, the input's gradient is
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),
// and the affine parameters get sum(g * xhat) and sum(g) over everything
// but their own dim. layer_norm runs this as one fused kernel; group_norm and
// batch_norm build it from ops, so their gradients are differentiable again.

using Ctx = GradContext;

std::vector<Tensor> layer_norm_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined()) return grads;
  static const OpDef& backward = find_op("layer_norm_backward");
  const bool has_weight = c.attrs.b(1);
  std::vector<Tensor> in{g, c.inputs[0]};
  if (has_weight) in.push_back(c.inputs[1]);
  std::vector<Tensor> out = call(backward, in, c.attrs);
  for (size_t k = 0; k < grads.size(); ++k)
    if (c.needs_input_grad[k]) grads[k] = out[k];
  return grads;
}

// The normalisation gradient over `reduced` dims (kept) of x, given xhat, rstd and dxhat.
Tensor normalized_grad(const Tensor& dxhat, const Tensor& xhat, const Tensor& rstd, IntArrayRef reduced) {
  return rstd * (dxhat - dxhat.mean(reduced, true) - xhat * (dxhat * xhat).mean(reduced, true));
}

// A per-channel parameter of an [N, C, *] input, shaped to broadcast against it.
Tensor per_channel(const Tensor& p, const Tensor& x) {
  DimVector shape(size_t(x.dim() - 1), 1);
  shape[0] = x.size(1);
  return p.reshape(shape);
}

DimVector all_but_channels(const Tensor& x) {
  DimVector d{0};
  for (int64_t i = 2; i < x.dim(); ++i) d.push_back(i);
  return d;
}

// Gradients of the optional weight and bias at inputs[first...] of an [N, C, *] norm.
void affine_grads(const Ctx& c, const Tensor& g, const Tensor& xhat, size_t first, bool has_weight,
                  bool has_bias, std::vector<Tensor>& grads) {
  const DimVector reduced = all_but_channels(xhat);
  if (has_weight && c.needs_input_grad[first]) grads[first] = (g * xhat).sum(reduced);
  if (has_bias && c.needs_input_grad[first + has_weight]) grads[first + has_weight] = g.sum(reduced);
}

// attrs: num_groups, has_weight, has_bias, eps
std::vector<Tensor> group_norm_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined()) return grads;
  const Tensor& x = c.inputs[0];
  const bool has_weight = c.attrs.b(1), has_bias = c.attrs.b(2);
  const DimVector grouped{x.size(0), c.attrs.i(0), -1};
  const Tensor xg = x.reshape(grouped);
  const Tensor centred = xg - xg.mean({2}, true);
  const Tensor rstd = (centred.square().mean({2}, true) + c.attrs.d(3)).rsqrt();
  const Tensor xhat = centred * rstd;
  if (c.needs_input_grad[0]) {
    const Tensor dxhat = has_weight ? g * per_channel(c.inputs[1], x) : g;
    grads[0] = normalized_grad(dxhat.reshape(grouped), xhat, rstd, {2}).reshape(x.sizes());
  }
  affine_grads(c, g, xhat.reshape(x.sizes()), 1, has_weight, has_bias, grads);
  return grads;
}

// inputs: x, [running_mean, running_var], [weight], [bias]
// attrs: training, has_running, has_weight, has_bias, momentum, eps.
// Training normalises with the batch's statistics, so the gradient flows
// through them; evaluation uses the running statistics as constants. The
// running statistics (and the updated ones the op returns) get no gradient.
std::vector<Tensor> batch_norm_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined()) return grads;
  const Tensor& x = c.inputs[0];
  const bool training = c.attrs.b(0), has_running = c.attrs.b(1), has_weight = c.attrs.b(2);
  const size_t first = has_running ? 3 : 1;
  const double eps = c.attrs.d(5);
  const DimVector reduced = all_but_channels(x);
  Tensor xhat, rstd;
  if (training) {
    const Tensor centred = x - x.mean(reduced, true);
    rstd = (centred.square().mean(reduced, true) + eps).rsqrt();
    xhat = centred * rstd;
  } else {
    rstd = (per_channel(c.inputs[2], x) + eps).rsqrt();
    xhat = (x - per_channel(c.inputs[1], x)) * rstd;
  }
  if (c.needs_input_grad[0]) {
    const Tensor dxhat = has_weight ? g * per_channel(c.inputs[first], x) : g;
    grads[0] = training ? normalized_grad(dxhat, xhat, rstd, reduced) : dxhat * rstd;
  }
  affine_grads(c, g, xhat, first, has_weight, c.attrs.b(3), grads);
  return grads;
}

// Dropout's gradient is g * mask / (1 - p): dropout itself applied to g with
// the same (seed, counter). The kernel's mask is a pure function of those and
// the element's row-major position, and g has x's shape, so the mask is
// regenerated instead of saved: no extra output, no memory kept between
// forward and backward, and the gradient is again differentiable the same way.
std::vector<Tensor> dropout_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  static const OpDef& op = find_op("dropout");
  return {call1(op, {g}, c.attrs)};
}

}  // namespace

NNVM_REGISTER(nn_ops) {
  register_op("layer_norm").inputs(-1).infer_with(infer_layer_norm).grad_with(layer_norm_grad);
  register_op("layer_norm_backward").inputs(-1).infer_with(infer_layer_norm_backward);
  register_op("group_norm").inputs(-1).infer_with(infer_group_norm).grad_with(group_norm_grad);
  register_op("batch_norm").inputs(-1).infer_with(infer_batch_norm).grad_with(batch_norm_grad);
  register_op("dropout").inputs(1).infer_with(infer_dropout).grad_with(dropout_grad, /*saves_inputs=*/false);
}

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  static const OpDef& op = find_op("layer_norm");
  std::vector<Tensor> inputs{x};
  push_if_defined(inputs, weight);
  push_if_defined(inputs, bias);
  return call1(op, inputs, {dims(normalized_shape), weight.defined(), bias.defined(), Scalar(eps)});
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  static const OpDef& op = find_op("group_norm");
  std::vector<Tensor> inputs{x};
  push_if_defined(inputs, weight);
  push_if_defined(inputs, bias);
  return call1(op, inputs, {num_groups, weight.defined(), bias.defined(), Scalar(eps)});
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  static const OpDef& op = find_op("batch_norm");
  NNVM_CHECK(running_mean.defined() == running_var.defined(), "batch_norm",
             "running_mean and running_var must both be defined or both be undefined");
  std::vector<Tensor> inputs{x};
  // Training updates the running statistics in place after the op ran; the
  // op (and a recorded gradient node) gets copies so the update does not
  // invalidate what autograd saved. They hold C values each.
  push_if_defined(inputs, training && running_mean.defined() ? running_mean.clone() : running_mean);
  push_if_defined(inputs, training && running_var.defined() ? running_var.clone() : running_var);
  push_if_defined(inputs, weight);
  push_if_defined(inputs, bias);
  std::vector<Tensor> outs = call(op, inputs, {training, running_mean.defined(), weight.defined(), bias.defined(),
                                               Scalar(momentum), Scalar(eps)});
  // The op is functional; the in-place update of the caller's buffers is a
  // copy, which the tracer functionalises like any other in-place write.
  // Running statistics are buffers: they never join the graph.
  if (outs.size() == 3) {
    Tensor(running_mean).copy_(outs[1].detach());
    Tensor(running_var).copy_(outs[2].detach());
  }
  return outs[0];
}

Tensor dropout(const Tensor& x, double p, bool train, Generator* gen) {
  static const OpDef& op = find_op("dropout");
  NNVM_CHECK(p >= 0 && p <= 1, "dropout", "probability p must be in [0, 1], got ", p, " (input of shape ",
             x.defined() ? shape_str(x.sizes()) : "undefined", ")");
  if (!train || p == 0) return x;
  NNVM_CHECK(x.defined(), "dropout", "the input is an undefined tensor");
  // Two random words per element, as bernoulli draws them: the mask is
  // bernoulli(1 - p) for the same generator state.
  const auto [seed, counter] = (gen ? *gen : default_generator()).reserve(2 * uint64_t(x.numel()));
  return call1(op, {x}, {Scalar(p), Scalar(int64_t(seed)), Scalar(int64_t(counter))});
}

}  // namespace nnvm
