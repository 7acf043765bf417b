// Pooling and resampling over NCHW inputs: max_pool2d, avg_pool2d,
// adaptive_avg_pool2d, and the ops of interpolate's nearest and bilinear
// modes, "upsample_nearest2d" and "upsample_bilinear2d" (the public
// interpolate is core/ops/interpolate.cpp). An unbatched (CHW) pooling input
// is a batch of one, viewed in the public function. Kernels: kernels/cpu/pool.cpp.
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/ops/image.h"

namespace nnvm {

namespace {

DimVector pair_param(IntArrayRef v, std::string_view op, std::string_view what, int64_t min) {
  NNVM_CHECK(v.size() == 1 || v.size() == 2, op, what, " must have 1 or 2 values, got ", shape_str(v));
  DimVector out = {v[0], v.back()};
  for (int64_t x : out)
    NNVM_CHECK(x >= min, op, what, " must be ", min == 0 ? "non-negative" : "positive", ", got ", shape_str(v));
  return out;
}

void check_image(const Tensor& x, std::string_view op) {
  NNVM_CHECK(x.dim() == 4, op, "expected a 4-D (NCHW) input, got ", shape_str(x.sizes()));
  NNVM_CHECK(is_floating(x.dtype()), op, "expected a floating-point input, got ", x.dtype());
  NNVM_CHECK(x.size(1) > 0 && x.size(2) > 0 && x.size(3) > 0, op, "expected non-empty channel and spatial dims, got ",
             shape_str(x.sizes()));
}

// libtorch's pooling_output_shape: in ceil mode the last window must start
// inside the input or its left padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

// attrs: kernel, stride, padding, dilation, ceil_mode (avg_pool2d: dilation is [1, 1]).
OutputSpecs infer_pool(std::string_view op, const Tensor& x, const Attrs& a, bool has_dilation) {
  check_image(x, op);
  const IntArrayRef k = a.ints(0), s = a.ints(1), pad = a.ints(2);
  const DimVector one = {1, 1};
  const IntArrayRef dil = has_dilation ? a.ints(3) : IntArrayRef(one);
  const bool ceil_mode = a.b(has_dilation ? 4 : 3);
  DimVector shape = {x.size(0), x.size(1)};
  for (int d = 0; d < 2; ++d) {
    NNVM_CHECK(pad[d] <= k[d] / 2, op, "padding ", shape_str(pad), " must be at most half of kernel_size ",
               shape_str(k));
    const int64_t out = pooled_size(x.size(2 + d), k[d], s[d], pad[d], dil[d], ceil_mode);
    NNVM_CHECK(out > 0, op, "kernel_size ", shape_str(k), " with dilation ", shape_str(dil), " and padding ",
               shape_str(pad), " is larger than the input ", shape_str(x.sizes()), " (output size ", out, ")");
    shape.push_back(out);
  }
  return {{std::move(shape), x.dtype()}};
}

// attrs of both upsampling ops: output size [h, w], then the scales as Scalars
// (0: derived from the sizes); bilinear adds align_corners.
OutputSpecs infer_upsample(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  check_image(x, "interpolate");
  return {{{x.size(0), x.size(1), a.ints(0)[0], a.ints(0)[1]}, x.dtype()}};
}

// ---- gradients ----
// Each op's gradient is a dedicated "<op>_backward" op with a CPU kernel.
// The linear ones take the input's shape then the forward's attributes, and
// their own gradient is the forward op again (the adjoint of an adjoint).

void declare_linear_backward(const std::string& name) {
  const OpDef* forward = &register_op(name);
  const OpDef* backward = &register_op(name + "_backward");
  register_op(name).grad_with([backward](const GradContext& c) -> std::vector<Tensor> {
    if (!c.grad_outputs[0].defined()) return {Tensor()};
    Attrs attrs{dims(c.inputs[0].sizes())};
    for (size_t i = 0; i < c.attrs.size(); ++i) attrs.push_back(c.attrs[i]);
    return {call1(*backward, {c.grad_outputs[0]}, attrs)};
  });
  register_op(name + "_backward")
      .inputs(1)
      .infer_with([](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
        return {{dims(a.ints(0)), in[0].dtype()}};
      })
      .grad_with(
          [forward](const GradContext& c) -> std::vector<Tensor> {
            if (!c.grad_outputs[0].defined()) return {Tensor()};
            return {call1(*forward, {c.grad_outputs[0]}, c.attrs.tail(1))};
          },
          /*saves_inputs=*/false);
}

// inputs: grad, input; attrs: max_pool2d's. Each window's gradient goes to
// the position its maximum came from (the first of equal values).
std::vector<Tensor> max_pool_grad(const GradContext& c) {
  static const OpDef& op = find_op("max_pool2d_backward");
  if (!c.grad_outputs[0].defined()) return {Tensor()};
  return {call1(op, {c.grad_outputs[0], c.inputs[0]}, c.attrs)};
}

}  // namespace

NNVM_REGISTER(pool_ops) {
  register_op("max_pool2d").inputs(1).infer_with([](absl::Span<const Tensor> in, const Attrs& a) {
    return infer_pool("max_pool2d", in[0], a, true);
  });
  // attrs: kernel, stride, padding, ceil_mode, count_include_pad
  register_op("avg_pool2d").inputs(1).infer_with([](absl::Span<const Tensor> in, const Attrs& a) {
    return infer_pool("avg_pool2d", in[0], a, false);
  });
  register_op("adaptive_avg_pool2d").inputs(1).infer_with(  // attrs: output_size [h, w]
      [](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
        check_image(in[0], "adaptive_avg_pool2d");
        return {{{in[0].size(0), in[0].size(1), a.ints(0)[0], a.ints(0)[1]}, in[0].dtype()}};
      });
  register_op("upsample_nearest2d").inputs(1).infer_with(infer_upsample);
  register_op("upsample_bilinear2d").inputs(1).infer_with(infer_upsample);

  register_op("max_pool2d").grad_with(max_pool_grad);
  register_op("max_pool2d_backward").inputs(2).infer_with([](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs {
    return {{dims(in[1].sizes()), in[1].dtype()}};
  });
  for (const char* name : {"avg_pool2d", "adaptive_avg_pool2d", "upsample_nearest2d", "upsample_bilinear2d"})
    declare_linear_backward(name);
}

Tensor max_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  static const OpDef& op = find_op("max_pool2d");
  const char* name = "max_pool2d";
  const DimVector k = pair_param(kernel_size, name, "kernel_size", 1);
  const Attrs attrs = {k, stride.empty() ? k : pair_param(stride, name, "stride", 1),
                       pair_param(padding, name, "padding", 0), pair_param(dilation, name, "dilation", 1),
                       ceil_mode};
  return with_batch(x, name, [&](const Tensor& xb) { return call1(op, {xb}, attrs); });
}

Tensor avg_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad) {
  static const OpDef& op = find_op("avg_pool2d");
  const char* name = "avg_pool2d";
  const DimVector k = pair_param(kernel_size, name, "kernel_size", 1);
  const Attrs attrs = {k, stride.empty() ? k : pair_param(stride, name, "stride", 1),
                       pair_param(padding, name, "padding", 0), ceil_mode, count_include_pad};
  return with_batch(x, name, [&](const Tensor& xb) { return call1(op, {xb}, attrs); });
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size) {
  static const OpDef& op = find_op("adaptive_avg_pool2d");
  const Attrs attrs = {pair_param(output_size, "adaptive_avg_pool2d", "output_size", 0)};
  return with_batch(x, "adaptive_avg_pool2d", [&](const Tensor& xb) { return call1(op, {xb}, attrs); });
}

}  // namespace nnvm
