// INT8 layers (docs/QUANTIZATION.md), each with W stored as int8 (per output
// channel, symmetric) and x quantized to uint8, the product on the INT8 GEMM
// (kernels/cpu/gemm_int8.h), the result dequantized in the GEMM's store:
//   "quantized_linear_dynamic": y = x Wᵀ + b (PyTorch's quantized::linear_dynamic),
//     x float32 [..., k]; attributes n, k.
//   "quantized_conv2d_dynamic": y = conv2d(x, W) + b, groups 1, zero padding,
//     x float32 [batch, c, h, w], W [n, c, kh, kw] packed as [n, c·kh·kw];
//     attributes kernel, stride, padding, dilation (each [2]), n.
// Each ends with two Scalar attributes, x's scale and zero point: a scale of
// 0 quantizes x from its own range on each call (dynamic), a positive one
// with the given parameters (static: calibrated beforehand).
// Inputs after x: W packed (int8, int8_packed_bytes(k, n)), W's column sums
// (int32 [n]), W's scales (float32 [n]), the bias (float32 [n]). Not
// differentiable (inference; fine-tune the float model). The public
// functions: python-free-api nnvm/quantized.h. Kernels:
// kernels/cpu/quantized_layers.cpp.
#include "nnvm/core/op.h"
#include <cmath>

#include "nnvm/core/int8_layout.h"

namespace nnvm {

namespace {

// The packed weight's inputs (1..4) for a product of k by n.
void check_weight(std::string_view op, absl::Span<const Tensor> in, int64_t k, int64_t n) {
  const Tensor &packed = in[1], &sums = in[2], &scales = in[3], &bias = in[4];
  NNVM_CHECK(k <= kInt8MaxK, op, k, " products per output, past the INT8 GEMM's ", kInt8MaxK);
  NNVM_CHECK(packed.dtype() == kInt8 && packed.dim() == 1 && packed.numel() == int8_packed_bytes(k, n), op,
             "expected a packed weight of ", int8_packed_bytes(k, n), " int8 bytes, got ", packed.dtype(), " ",
             shape_str(packed.sizes()));
  NNVM_CHECK(sums.dtype() == kInt32 && sums.dim() == 1 && sums.numel() == n, op,
             "expected the weight's column sums as int32 [", n, "], got ", sums.dtype(), " ", shape_str(sums.sizes()));
  for (const Tensor* t : {&scales, &bias})
    NNVM_CHECK(t->dtype() == kFloat32 && t->dim() == 1 && t->numel() == n, op, "expected float32 [", n,
               "] scales and bias, got ", t->dtype(), " ", shape_str(t->sizes()));
}

// x's scale (0: dynamic) and zero point, attributes `at` and `at + 1`.
void check_input_qparams(std::string_view op, const Attrs& attrs, size_t at) {
  const double scale = attrs.d(at), zero_point = attrs.d(at + 1);
  NNVM_CHECK(std::isfinite(scale) && scale >= 0 && zero_point >= 0 && zero_point <= 255 &&
                 zero_point == std::floor(zero_point),
             op, "input scale ", scale, " and zero point ", zero_point,
             ": expected a finite scale of at least 0 (0: from the input's range) and a zero point in [0, 255]");
}

OutputSpecs infer_linear_dynamic(absl::Span<const Tensor> in, const Attrs& attrs) {
  constexpr std::string_view op = "quantized_linear_dynamic";
  const int64_t n = attrs.i(0), k = attrs.i(1);
  const Tensor& x = in[0];
  NNVM_CHECK(x.dtype() == kFloat32, op, "expected a float32 input, got ", x.dtype(), " ", shape_str(x.sizes()));
  check_input_qparams(op, attrs, 2);
  NNVM_CHECK(x.dim() >= 1 && x.size(-1) == k, op, "input ", shape_str(x.sizes()), " against a weight of ", k,
             " input features (expected [..., ", k, "])");
  check_weight(op, in, k, n);
  DimVector shape(x.sizes().begin(), x.sizes().end());
  shape.back() = n;
  return {{std::move(shape), kFloat32}};
}

OutputSpecs infer_conv2d_dynamic(absl::Span<const Tensor> in, const Attrs& attrs) {
  constexpr std::string_view op = "quantized_conv2d_dynamic";
  const IntArrayRef kernel = attrs.ints(0), stride = attrs.ints(1), padding = attrs.ints(2), dilation = attrs.ints(3);
  const int64_t n = attrs.i(4);
  const Tensor& x = in[0];
  NNVM_CHECK(x.dtype() == kFloat32 && x.dim() == 4, op, "expected a float32 input [batch, channels, h, w], got ",
             x.dtype(), " ", shape_str(x.sizes()));
  check_input_qparams(op, attrs, 5);
  NNVM_CHECK(kernel.size() == 2 && stride.size() == 2 && padding.size() == 2 && dilation.size() == 2, op,
             "expected kernel, stride, padding and dilation of 2 each");
  DimVector shape{x.size(0), n, 0, 0};
  for (size_t d = 0; d < 2; ++d) {
    NNVM_CHECK(kernel[d] > 0 && stride[d] > 0 && dilation[d] > 0 && padding[d] >= 0, op, "kernel ",
               shape_str(kernel), " stride ", shape_str(stride), " dilation ", shape_str(dilation), " padding ",
               shape_str(padding), ": expected positive sizes and a padding of at least 0");
    const int64_t span = dilation[d] * (kernel[d] - 1) + 1, in_size = x.size(2 + int64_t(d)) + 2 * padding[d];
    NNVM_CHECK(in_size >= span, op, "input ", shape_str(x.sizes()), " padded by ", shape_str(padding),
               " is smaller than the kernel ", shape_str(kernel), " dilated by ", shape_str(dilation));
    shape[2 + d] = (in_size - span) / stride[d] + 1;
  }
  check_weight(op, in, x.size(1) * kernel[0] * kernel[1], n);
  return {{std::move(shape), kFloat32}};
}

}  // namespace

NNVM_REGISTER(quantized_layer_ops) {
  register_op("quantized_linear_dynamic").inputs(5).infer_with(infer_linear_dynamic).checks_input_values();
  register_op("quantized_conv2d_dynamic").inputs(5).infer_with(infer_conv2d_dynamic).checks_input_values();
}

}  // namespace nnvm
