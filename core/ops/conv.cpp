// Convolutions: "conv2d" and "conv_transpose2d" over NCHW inputs, each with an
// optional bias as a third input. conv1d is conv2d on a height-1 view, and an
// unbatched (CHW) input is a batch of one; both are views in the public
// functions, so each op has one layout. Kernels: kernels/cpu/conv.cpp.
#include <algorithm>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/ops/image.h"

namespace nnvm {

namespace {

// One spatial parameter list (stride, padding, ...) expanded to `rank` values.
DimVector expand_param(IntArrayRef v, int64_t rank, std::string_view op, std::string_view what, int64_t min) {
  NNVM_CHECK(int64_t(v.size()) == 1 || int64_t(v.size()) == rank, op, what, " must have 1 or ", rank,
             " values, got ", shape_str(v));
  DimVector out(size_t(rank), v[0]);
  if (int64_t(v.size()) == rank) out.assign(v.begin(), v.end());
  for (int64_t x : out)
    NNVM_CHECK(x >= min, op, what, " must be ", min == 0 ? "non-negative" : "positive", ", got ", shape_str(v));
  return out;
}

struct ConvParams {
  DimVector stride, padding, dilation, output_padding;
  int64_t groups;
};

// Checks a convolution's operands over `rank` spatial dims (x: [N, C, *spatial])
// and returns the output shape. `op` and the shapes in messages are the user's.
DimVector conv_shape(std::string_view op, int64_t rank, bool transposed, absl::Span<const Tensor> in,
                     const ConvParams& p) {
  const Tensor &x = in[0], &w = in[1];
  NNVM_CHECK(x.dim() == rank + 2 && w.dim() == rank + 2, op, "expected a ", rank + 2, "-D input and weight, got ",
             shape_str(x.sizes()), " and ", shape_str(w.sizes()));
  NNVM_CHECK(is_floating(x.dtype()), op, "expected a floating-point input, got ", x.dtype());
  NNVM_CHECK(w.dtype() == x.dtype(), op, "input and weight dtypes differ: ", x.dtype(), " and ", w.dtype());
  NNVM_CHECK(p.groups > 0, op, "groups must be positive, got ", p.groups);
  const int64_t channels = x.size(1);
  int64_t out_channels;
  if (transposed) {
    NNVM_CHECK(w.size(0) == channels, op, "input ", shape_str(x.sizes()), " has ", channels,
               " channels but weight ", shape_str(w.sizes()), " expects ", w.size(0));
    NNVM_CHECK(channels % p.groups == 0, op, "input channels ", channels, " of ", shape_str(x.sizes()),
               " are not divisible by groups = ", p.groups);
    out_channels = w.size(1) * p.groups;
  } else {
    out_channels = w.size(0);
    NNVM_CHECK(out_channels % p.groups == 0, op, "output channels ", out_channels, " of weight ",
               shape_str(w.sizes()), " are not divisible by groups = ", p.groups);
    NNVM_CHECK(w.size(1) * p.groups == channels, op, "input ", shape_str(x.sizes()), " has ", channels,
               " channels but weight ", shape_str(w.sizes()), " with groups = ", p.groups, " expects ",
               w.size(1) * p.groups);
  }
  if (in.size() == 3) {
    const Tensor& b = in[2];
    NNVM_CHECK(b.dim() == 1 && b.size(0) == out_channels, op, "bias of shape ", shape_str(b.sizes()),
               " does not match ", out_channels, " output channels (weight ", shape_str(w.sizes()), ")");
    NNVM_CHECK(b.dtype() == x.dtype(), op, "bias dtype ", b.dtype(), " differs from the input's ", x.dtype());
  }
  DimVector shape = {x.size(0), out_channels};
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = x.size(2 + d), k = w.size(2 + d);
    const int64_t s = p.stride[d], pad = p.padding[d], dil = p.dilation[d];
    const int64_t extent = dil * (k - 1) + 1;
    int64_t out;
    if (transposed) {
      const int64_t op_pad = p.output_padding[d];
      NNVM_CHECK(op_pad < s || op_pad < dil, op, "output_padding ", shape_str(p.output_padding),
                 " must be smaller than either stride ", shape_str(p.stride), " or dilation ",
                 shape_str(p.dilation));
      out = (size - 1) * s - 2 * pad + extent + op_pad;
    } else {
      NNVM_CHECK(extent <= size + 2 * pad, op, "kernel ", shape_str(w.sizes()), " (dilated extent ", extent,
                 ") is larger than the padded input ", shape_str(x.sizes()), " with padding ",
                 shape_str(p.padding));
      out = (size + 2 * pad - extent) / s + 1;
    }
    NNVM_CHECK(out > 0, op, "output size is ", out, " for input ", shape_str(x.sizes()), " and weight ",
               shape_str(w.sizes()));
    shape.push_back(out);
  }
  return shape;
}

ConvParams params_of(const Attrs& a, bool transposed) {
  if (transposed) return {dims(a.ints(0)), dims(a.ints(1)), dims(a.ints(4)), dims(a.ints(2)), a.i(3)};
  return {dims(a.ints(0)), dims(a.ints(1)), dims(a.ints(2)), {0, 0}, a.i(3)};
}

OutputSpecs infer_conv(absl::Span<const Tensor> in, const Attrs& a, bool transposed) {
  const char* op = transposed ? "conv_transpose2d" : "conv2d";
  NNVM_CHECK(in.size() == 2 || in.size() == 3, op, "expected input, weight and an optional bias, got ",
             in.size(), " tensors");
  return {{conv_shape(op, 2, transposed, in, params_of(a, transposed)), in[0].dtype()}};
}

std::vector<Tensor> operands(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (b.defined()) return {x, w, b};
  return {x, w};
}

// ---- gradients ----
// conv2d and conv_transpose2d are each other's adjoint in the input, so each
// op's input gradient is the other op; both weight gradients are the same
// correlation of an image with a gradient, "conv2d_backward_weight".

// inputs: image [N, C, H, W], grad [N, O, OH, OW]; attrs: kernel [kh, kw],
// stride, padding, dilation, groups. The result is conv2d's weight gradient
// [O, C / groups, kh, kw] for an input `image` whose output gradient is `grad`.
OutputSpecs infer_backward_weight(absl::Span<const Tensor> in, const Attrs& a) {
  const char* op = "conv2d_backward_weight";
  const Tensor &image = in[0], &grad = in[1];
  NNVM_CHECK(image.dim() == 4 && grad.dim() == 4 && image.size(0) == grad.size(0), op,
             "expected 4-D image and gradient with one batch size, got ", shape_str(image.sizes()), " and ",
             shape_str(grad.sizes()));
  NNVM_CHECK(image.dtype() == grad.dtype(), op, "image and gradient dtypes differ: ", image.dtype(), " and ",
             grad.dtype());
  const int64_t groups = a.i(4);
  NNVM_CHECK(groups > 0 && image.size(1) % groups == 0 && grad.size(1) % groups == 0, op, "channels of ",
             shape_str(image.sizes()), " and ", shape_str(grad.sizes()), " are not divisible by groups = ", groups);
  return {{{grad.size(1), image.size(1) / groups, a.ints(0)[0], a.ints(0)[1]}, image.dtype()}};
}

Tensor weight_grad(const Tensor& image, const Tensor& grad, const Tensor& w, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  static const OpDef& op = find_op("conv2d_backward_weight");
  return call1(op, {image, grad}, {DimVector{w.size(2), w.size(3)}, dims(stride), dims(padding), dims(dilation),
                                   groups});
}

std::vector<Tensor> conv2d_grad(const GradContext& c) {
  static const OpDef& transposed = find_op("conv_transpose2d");
  std::vector<Tensor> grads(c.needs_input_grad.size());
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return grads;
  const Tensor &x = c.inputs[0], &w = c.inputs[1];
  const IntArrayRef stride = c.attrs.ints(0), padding = c.attrs.ints(1), dilation = c.attrs.ints(2);
  const int64_t groups = c.attrs.i(3);
  if (c.needs_input_grad[0]) {
    // The rows and columns the forward's stride skipped at the end come back as output_padding.
    DimVector output_padding;
    for (int64_t d = 0; d < 2; ++d)
      output_padding.push_back(x.size(2 + d) - ((g.size(2 + d) - 1) * stride[d] - 2 * padding[d] +
                                                dilation[d] * (w.size(2 + d) - 1) + 1));
    grads[0] = call1(transposed, {g, w}, {dims(stride), dims(padding), output_padding, groups, dims(dilation)});
  }
  if (c.needs_input_grad[1]) grads[1] = weight_grad(x, g, w, stride, padding, dilation, groups);
  if (grads.size() == 3 && c.needs_input_grad[2]) grads[2] = g.sum({0, 2, 3});
  return grads;
}

std::vector<Tensor> conv_transpose2d_grad(const GradContext& c) {
  static const OpDef& conv = find_op("conv2d");
  std::vector<Tensor> grads(c.needs_input_grad.size());
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return grads;
  const Tensor &x = c.inputs[0], &w = c.inputs[1];
  const IntArrayRef stride = c.attrs.ints(0), padding = c.attrs.ints(1), dilation = c.attrs.ints(4);
  const int64_t groups = c.attrs.i(3);
  if (c.needs_input_grad[0]) {
    // An output_padding of at least the stride adds rows no input pixel reaches.
    grads[0] = call1(conv, {g, w}, {dims(stride), dims(padding), dims(dilation), groups})
                   .narrow(2, 0, x.size(2))
                   .narrow(3, 0, x.size(3));
  }
  if (c.needs_input_grad[1]) grads[1] = weight_grad(g, x, w, stride, padding, dilation, groups);
  if (grads.size() == 3 && c.needs_input_grad[2]) grads[2] = g.sum({0, 2, 3});
  return grads;
}

}  // namespace

NNVM_REGISTER(conv_ops) {
  // attrs: stride, padding, dilation, groups
  register_op("conv2d").inputs(-1).infer_with(
      [](absl::Span<const Tensor> in, const Attrs& a) { return infer_conv(in, a, false); })
      .grad_with(conv2d_grad);
  // attrs: stride, padding, output_padding, groups, dilation
  register_op("conv_transpose2d").inputs(-1).infer_with(
      [](absl::Span<const Tensor> in, const Attrs& a) { return infer_conv(in, a, true); })
      .grad_with(conv_transpose2d_grad);
  register_op("conv2d_backward_weight").inputs(2).infer_with(infer_backward_weight);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  static const OpDef& op = find_op("conv2d");
  const Attrs attrs = {expand_param(stride, 2, "conv2d", "stride", 1),
                       expand_param(padding, 2, "conv2d", "padding", 0),
                       expand_param(dilation, 2, "conv2d", "dilation", 1), groups};
  NNVM_CHECK(weight.defined(), "conv2d", "the weight is an undefined tensor");
  return with_batch(x, "conv2d", [&](const Tensor& xb) { return call1(op, operands(xb, weight, bias), attrs); });
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  NNVM_CHECK(x.defined() && weight.defined(), "conv1d", "input and weight must be defined tensors");
  NNVM_CHECK(x.dim() == 2 || x.dim() == 3, "conv1d", "expected a 2-D (CW) or 3-D (NCW) input, got ",
             shape_str(x.sizes()));
  const Tensor xb = x.dim() == 2 ? x.unsqueeze(0) : x;
  const ConvParams p = {expand_param(stride, 1, "conv1d", "stride", 1),
                        expand_param(padding, 1, "conv1d", "padding", 0),
                        expand_param(dilation, 1, "conv1d", "dilation", 1), {0}, groups};
  conv_shape("conv1d", 1, false, operands(xb, weight, bias), p);
  const Tensor y = conv2d(xb.unsqueeze(2), weight.unsqueeze(2), bias, {1, p.stride[0]}, {0, p.padding[0]},
                          {1, p.dilation[0]}, groups)
                       .squeeze(2);
  return x.dim() == 2 ? y.squeeze(0) : y;
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  static const OpDef& op = find_op("conv_transpose2d");
  const char* name = "conv_transpose2d";
  const Attrs attrs = {expand_param(stride, 2, name, "stride", 1), expand_param(padding, 2, name, "padding", 0),
                       expand_param(output_padding, 2, name, "output_padding", 0), groups,
                       expand_param(dilation, 2, name, "dilation", 1)};
  NNVM_CHECK(weight.defined(), name, "the weight is an undefined tensor");
  return with_batch(x, name, [&](const Tensor& xb) { return call1(op, operands(xb, weight, bias), attrs); });
}

}  // namespace nnvm
