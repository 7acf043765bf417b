// rms_norm and rms_norm_backward: declarations and the public API.
// Kernels: kernels/cpu/rms_norm.cpp; the JIT row kernels: jit/rowwise_jit.h.
//
// y = x / sqrt(mean(x^2) + eps) [* weight], the mean over the trailing
// normalized_shape dims (torch.nn.functional.rms_norm). One op, like
// layer_norm, so the recognise pass can replace the decomposed form with it.
#include <limits>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/ops/nn_inputs.h"

namespace nnvm {

namespace {

// attrs: normalized_shape, has_weight, eps
OutputSpecs infer_rms_norm(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef norm = a.ints(0);
  const bool has_weight = a.b(1);
  check_input_count(in, 1 + has_weight, "rms_norm");
  check_normalized_shape(x, norm, "rms_norm");
  if (has_weight) check_param(in[1], norm, "rms_norm", "weight", x);
  return {{dims(x.sizes()), x.dtype()}};
}

// inputs: g, x, [weight]; attrs: rms_norm's. outputs: dx, [dweight]
OutputSpecs infer_rms_norm_backward(absl::Span<const Tensor> in, const Attrs& a) {
  const bool has_weight = a.b(1);
  check_input_count(in, 2 + has_weight, "rms_norm_backward");
  const Tensor &g = in[0], &x = in[1];
  NNVM_CHECK(g.sizes() == x.sizes(), "rms_norm_backward", "gradient of shape ", shape_str(g.sizes()),
             " does not match input of shape ", shape_str(x.sizes()));
  infer_rms_norm(in.subspan(1), a);
  OutputSpecs out{{dims(x.sizes()), x.dtype()}};
  if (has_weight) out.push_back({dims(a.ints(0)), in[2].dtype()});
  return out;
}

// With rstd = 1 / sqrt(mean(x^2) + eps), xhat = x * rstd and dxhat = g * weight:
//   dx = rstd * (dxhat - xhat * mean(dxhat * xhat)),  dweight = sum over rows of g * xhat.
// One fused kernel, as layer_norm_backward.
std::vector<Tensor> rms_norm_grad(const GradContext& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined()) return grads;
  static const OpDef& backward = find_op("rms_norm_backward");
  std::vector<Tensor> in{g, c.inputs[0]};
  if (c.attrs.b(1)) in.push_back(c.inputs[1]);
  std::vector<Tensor> out = call(backward, in, c.attrs);
  for (size_t k = 0; k < grads.size(); ++k)
    if (c.needs_input_grad[k]) grads[k] = out[k];
  return grads;
}

// torch's default: the machine epsilon of the input's dtype.
double default_eps(DType t) {
  if (t == kFloat64) return std::numeric_limits<double>::epsilon();
  if (t == kFloat16) return 0.0009765625;  // 2^-10
  if (t == kBFloat16) return 0.0078125;    // 2^-7
  return std::numeric_limits<float>::epsilon();
}

}  // namespace

NNVM_REGISTER(rms_norm_ops) {
  register_op("rms_norm").inputs(-1).infer_with(infer_rms_norm).grad_with(rms_norm_grad);
  register_op("rms_norm_backward").inputs(-1).infer_with(infer_rms_norm_backward);
}

Tensor rms_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, std::optional<double> eps) {
  static const OpDef& op = find_op("rms_norm");
  std::vector<Tensor> inputs{x};
  push_if_defined(inputs, weight);
  const double e = eps ? *eps : default_eps(x.defined() ? x.dtype() : kFloat32);
  return call1(op, inputs, {dims(normalized_shape), weight.defined(), Scalar(e)});
}

}  // namespace nnvm
