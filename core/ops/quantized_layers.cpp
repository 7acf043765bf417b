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
// (int32 [n]), W's scales (float32 [n]), the bias (float32 [n]).
//
// The exact integer products of ONNX's quantized operators (MatMulInteger,
// QLinearMatMul, ConvInteger, QLinearConv: docs/MODELS.md), int32 out:
//   "integer_matmul": Σ_p (a[i][p] - za[i]) (b[p][j] - zb[j]), a uint8 or
//     int8 [m, k]; attributes n, k.
//   "integer_conv2d": the convolution of x - zx by w - zw[o] (padding reads
//     as zx), x uint8 or int8 [batch, c, h, w], w [n, c / groups, kh, kw]
//     packed per group as [kh·kw·c / groups, n / groups] in (i, j, channel)
//     order, the groups' packed blocks one after another; attributes kernel
//     [2], stride [2], padding [4] (top, left, bottom, right), dilation [2],
//     groups, n.
// Inputs after the operand: its zero points (int32 [rows] or [1]), B packed,
// B's column sums (int32 [n]), B's zero points (int32 [n] or [1]). The zero
// points are the GEMM operands': an int8 operand A is read as uint8 (plus
// 128), so its zero point is given plus 128; a uint8 B is packed as int8
// (less 128), its zero point given less 128. Sums wrap past int32's range.
//
// Not differentiable (inference; fine-tune the float model). The public
// functions: python-free-api nnvm/quantized.h and the model ops
// (python-free-api/src/model/ops_quant.cpp). Kernels:
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

// Dim d (0 or 1) of a 2-d window's output over x [batch, c, h, w] padded by
// `before` and `after` on that dim (of `padding`, named in messages).
int64_t window_output(std::string_view op, const Tensor& x, IntArrayRef kernel, IntArrayRef stride,
                      IntArrayRef dilation, IntArrayRef padding, size_t d, int64_t before, int64_t after) {
  NNVM_CHECK(kernel[d] > 0 && stride[d] > 0 && dilation[d] > 0 && before >= 0 && after >= 0, op, "kernel ",
             shape_str(kernel), " stride ", shape_str(stride), " dilation ", shape_str(dilation), " padding ",
             shape_str(padding), ": expected positive sizes and a padding of at least 0");
  const int64_t span = dilation[d] * (kernel[d] - 1) + 1, in_size = x.size(2 + int64_t(d)) + before + after;
  NNVM_CHECK(in_size >= span, op, "input ", shape_str(x.sizes()), " padded by ", shape_str(padding),
             " is smaller than the kernel ", shape_str(kernel), " dilated by ", shape_str(dilation));
  return (in_size - span) / stride[d] + 1;
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
  for (size_t d = 0; d < 2; ++d)
    shape[2 + d] = window_output(op, x, kernel, stride, dilation, padding, d, padding[d], padding[d]);
  check_weight(op, in, x.size(1) * kernel[0] * kernel[1], n);
  return {{std::move(shape), kFloat32}};
}

// An integer product's operand (uint8 or int8) and its zero points (rows of them).
void check_integer_operand(std::string_view op, const Tensor& x, const Tensor& zero_points, int64_t rows) {
  NNVM_CHECK(x.dtype() == kUInt8 || x.dtype() == kInt8, op, "expected a uint8 or int8 operand, got ", x.dtype(), " ",
             shape_str(x.sizes()));
  NNVM_CHECK(zero_points.dtype() == kInt32 && zero_points.dim() == 1 &&
                 (zero_points.numel() == 1 || zero_points.numel() == rows),
             op, "expected int32 zero points [1] or [", rows, "], got ", zero_points.dtype(), " ",
             shape_str(zero_points.sizes()));
}

// B's inputs (2..4) for groups products of k by n / groups.
void check_integer_b(std::string_view op, absl::Span<const Tensor> in, int64_t k, int64_t n, int64_t groups) {
  const Tensor &packed = in[2], &sums = in[3];
  NNVM_CHECK(k <= kInt8MaxK, op, k, " products per output, past the INT8 GEMM's ", kInt8MaxK);
  const int64_t bytes = groups * int8_packed_bytes(k, n / groups);
  NNVM_CHECK(packed.dtype() == kInt8 && packed.dim() == 1 && packed.numel() == bytes, op, "expected a packed B of ",
             bytes, " int8 bytes, got ", packed.dtype(), " ", shape_str(packed.sizes()));
  NNVM_CHECK(sums.dtype() == kInt32 && sums.dim() == 1 && sums.numel() == n, op,
             "expected B's column sums as int32 [", n, "], got ", sums.dtype(), " ", shape_str(sums.sizes()));
  check_integer_operand(op, packed, in[4], n);
}

OutputSpecs infer_integer_matmul(absl::Span<const Tensor> in, const Attrs& attrs) {
  constexpr std::string_view op = "integer_matmul";
  const int64_t n = attrs.i(0), k = attrs.i(1);
  const Tensor& a = in[0];
  NNVM_CHECK(a.dim() == 2 && a.size(1) == k, op, "expected A [m, ", k, "], got ", shape_str(a.sizes()));
  check_integer_operand(op, a, in[1], a.size(0));
  check_integer_b(op, in, k, n, 1);
  return {{{a.size(0), n}, kInt32}};
}

OutputSpecs infer_integer_conv2d(absl::Span<const Tensor> in, const Attrs& attrs) {
  constexpr std::string_view op = "integer_conv2d";
  const IntArrayRef kernel = attrs.ints(0), stride = attrs.ints(1), padding = attrs.ints(2), dilation = attrs.ints(3);
  const int64_t groups = attrs.i(4), n = attrs.i(5);
  const Tensor& x = in[0];
  NNVM_CHECK(x.dim() == 4 && kernel.size() == 2 && stride.size() == 2 && padding.size() == 4 && dilation.size() == 2 &&
                 groups >= 1 && x.size(1) % groups == 0 && n % groups == 0,
             op, "expected x [batch, channels, h, w] with channels and ", n, " outputs divisible by groups ", groups,
             ", kernel, stride and dilation of 2 each and 4 paddings, got x ", shape_str(x.sizes()));
  check_integer_operand(op, x, in[1], 1);
  DimVector shape{x.size(0), n, 0, 0};
  for (size_t d = 0; d < 2; ++d)
    shape[2 + d] = window_output(op, x, kernel, stride, dilation, padding, d, padding[d], padding[d + 2]);
  check_integer_b(op, in, x.size(1) / groups * kernel[0] * kernel[1], n, groups);
  return {{std::move(shape), kInt32}};
}

}  // namespace

NNVM_REGISTER(quantized_layer_ops) {
  register_op("integer_matmul").inputs(5).infer_with(infer_integer_matmul);
  register_op("integer_conv2d").inputs(5).infer_with(infer_integer_conv2d);
  register_op("quantized_linear_dynamic").inputs(5).infer_with(infer_linear_dynamic).checks_input_values();
  register_op("quantized_conv2d_dynamic").inputs(5).infer_with(infer_conv2d_dynamic).checks_input_values();
}

}  // namespace nnvm
