// Model ops of 8-bit quantization (registered by add_more_ops): ONNX's
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, and the integer
// products MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.
//
// Quantizing rounds half to even (nnvm's round) and saturates to the output's
// range; NaN quantizes to the zero point. The integer products accumulate in
// float64: every product of two 8-bit values and every sum of them is an
// integer below 2^53, so float64's GEMM and convolution give exactly the
// int32 sums the specification asks for (a sum past int32's range wraps, as
// int32 accumulation does). The convolutions run the Conv kernel on the
// inputs less their zero points, so padding reads as the zero point.
#include "op_util.h"

namespace nnvm::model_detail {
namespace {

// The range of a quantized dtype.
std::pair<double, double> range_of(const OpContext& ctx, DType dtype) {
  NNVM_CHECK(dtype == kUInt8 || dtype == kInt8, ctx.where(), "quantized values must be uint8 or int8, got ", dtype);
  return dtype == kUInt8 ? std::pair{0.0, 255.0} : std::pair{-128.0, 127.0};
}

// A scale or zero point shaped to broadcast against x: one value for the whole
// tensor, or a 1-d tensor of one value per index of x's dim `axis`.
Tensor along_axis(const OpContext& ctx, const Tensor& param, const Tensor& x, int64_t axis, const char* what) {
  if (param.dim() <= 1 && param.numel() == 1) return param.reshape({});
  axis = normalize_axis(ctx, axis, x.dim());
  NNVM_CHECK(param.dim() == 1 && param.size(0) == x.size(axis), ctx.where(), what, " ",
             shape_str(param.sizes()), " must hold one value, or one per index of dim ", axis, " of ",
             shape_str(x.sizes()));
  std::vector<int64_t> shape(size_t(x.dim()), 1);
  shape[size_t(axis)] = -1;
  return param.reshape(shape);
}

Tensor optional_input(const OpContext& ctx, int64_t i) { return ctx.has_input(i) ? ctx.input(i) : Tensor(); }

void check_scale(const OpContext& ctx, const Tensor& scale, const char* what) {
  NNVM_CHECK(is_floating(scale.dtype()), ctx.where(), what, " must be floating-point, got ", scale.dtype());
}

// round(value) + zero_point saturated to `dtype`; value is floating.
Tensor saturate(const OpContext& ctx, const Tensor& value, const Tensor& zero_point, DType dtype) {
  const auto [lo, hi] = range_of(ctx, dtype);
  Tensor q = value.round().nan_to_num(0.0);
  if (zero_point.defined()) q = q + zero_point.to(q.dtype());
  return q.clamp(lo, hi).to(dtype);
}

// ---- QuantizeLinear, DequantizeLinear ----

// The axis of per-axis scales: an attribute from opset 13, dim 1 before.
int64_t quant_axis(const OpContext& ctx) { return ctx.opset() >= 13 ? ctx.attr_int("axis", 1) : 1; }

Tensor quantize_linear(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &scale = ctx.input(1);
  const Tensor zero_point = optional_input(ctx, 2);
  check_scale(ctx, scale, "y_scale");
  NNVM_CHECK(is_floating(x.dtype()) || x.dtype() == kInt32, ctx.where(), "expected a floating or int32 input, got ",
             x.dtype());
  const int64_t axis = quant_axis(ctx);
  const Tensor xf = is_floating(x.dtype()) ? x : x.to(scale.dtype());
  const Tensor s = along_axis(ctx, scale, x, axis, "y_scale").to(xf.dtype());
  const Tensor zp = zero_point.defined() ? along_axis(ctx, zero_point, x, axis, "y_zero_point") : Tensor();
  return saturate(ctx, xf / s, zp, zero_point.defined() ? zero_point.dtype() : kUInt8);
}

Tensor dequantize_linear(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &scale = ctx.input(1);
  const Tensor zero_point = optional_input(ctx, 2);
  check_scale(ctx, scale, "x_scale");
  NNVM_CHECK(x.dtype() == kUInt8 || x.dtype() == kInt8 || x.dtype() == kInt32, ctx.where(),
             "expected a uint8, int8 or int32 input, got ", x.dtype());
  const int64_t axis = quant_axis(ctx);
  // x - zero_point is exact in int64; then one rounding to the scale's dtype.
  Tensor centered = x.to(kInt64);
  if (zero_point.defined()) {
    NNVM_CHECK(zero_point.dtype() == x.dtype(), ctx.where(), "x_zero_point is ", zero_point.dtype(), ", x ",
               x.dtype());
    centered = centered - along_axis(ctx, zero_point, x, axis, "x_zero_point").to(kInt64);
  }
  return centered.to(scale.dtype()) * along_axis(ctx, scale, x, axis, "x_scale");
}

// DynamicQuantizeLinear -> (y, y_scale, y_zero_point): uint8 over the range
// of x widened to hold 0. A range of 0 (x all zeros) takes scale 1, as ONNX
// Runtime does, rather than dividing by 0.
std::vector<Tensor> dynamic_quantize_linear(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(is_floating(x.dtype()), ctx.where(), "expected a floating-point input, got ", x.dtype());
  const Tensor zero = zeros({}, x.dtype());
  const Tensor lo = x.numel() == 0 ? zero : minimum(x.min(), zero);
  const Tensor hi = x.numel() == 0 ? zero : maximum(x.max(), zero);
  Tensor scale = (hi - lo) / 255.0;
  scale = where(scale == 0, 1.0, scale);
  const Tensor zero_point = (-lo / scale).round().clamp(0.0, 255.0);
  return {saturate(ctx, x / scale, zero_point, kUInt8), scale, zero_point.to(kUInt8)};
}

// ---- integer products ----

// x less its zero point, as exact float64 values; `zero_point` is already
// shaped to broadcast against x (or undefined: 0).
Tensor centered(const OpContext& ctx, const Tensor& x, const Tensor& zero_point, const char* what) {
  NNVM_CHECK(x.dtype() == kUInt8 || x.dtype() == kInt8, ctx.where(), what, " must be uint8 or int8, got ",
             x.dtype());
  if (!zero_point.defined()) return x.to(kFloat64);
  NNVM_CHECK(zero_point.dtype() == x.dtype(), ctx.where(), what, "'s zero point is ", zero_point.dtype(), ", ",
             what, " ", x.dtype());
  return x.to(kFloat64) - zero_point.to(kFloat64);
}

// A matrix product's operand's parameter (zero point, scale): one value, or
// one per row of A (`rows`) or per column of B.
Tensor per_row_or_column(const OpContext& ctx, const Tensor& param, const Tensor& operand, bool rows,
                         const char* what) {
  if (!param.defined()) return param;
  if (param.dim() <= 1 && param.numel() == 1) return param.reshape({});
  NNVM_CHECK(operand.dim() >= 2, ctx.where(), what, " ", shape_str(param.sizes()),
             " must hold one value for a 1-d operand ", shape_str(operand.sizes()));
  return along_axis(ctx, param, operand, operand.dim() - (rows ? 2 : 1), what);
}

// The exact product (A - a_zero_point)(B - b_zero_point) in float64, from
// inputs a, a_zero_point, b, b_zero_point at these positions.
Tensor integer_matmul(const OpContext& ctx, int64_t a, int64_t a_zp, int64_t b, int64_t b_zp) {
  const Tensor &x = ctx.input(a), &y = ctx.input(b);
  const Tensor xz = per_row_or_column(ctx, optional_input(ctx, a_zp), x, true, "a_zero_point");
  const Tensor yz = per_row_or_column(ctx, optional_input(ctx, b_zp), y, false, "b_zero_point");
  return centered(ctx, x, xz, "A").matmul(centered(ctx, y, yz, "B"));
}

// An exact float64 sum as int32, wrapping as int32 accumulation does.
Tensor to_int32(const Tensor& sum) { return sum.to(kInt64).to(kInt32); }

// QLinearMatMul: the product requantized by a_scale * b_scale / y_scale,
// that ratio formed in the scales' dtype as the specification's reference does.
Tensor qlinear_matmul(const OpContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(3);
  const Tensor &a_scale = ctx.input(1), &b_scale = ctx.input(4), &y_scale = ctx.input(6);
  check_scale(ctx, a_scale, "a_scale");
  check_scale(ctx, b_scale, "b_scale");
  check_scale(ctx, y_scale, "y_scale");
  NNVM_CHECK(y_scale.numel() == 1, ctx.where(), "y_scale must hold one value, got ", shape_str(y_scale.sizes()));
  const Tensor sum = integer_matmul(ctx, 0, 2, 3, 5);
  const Tensor ratio = per_row_or_column(ctx, a_scale, a, true, "a_scale") *
                       per_row_or_column(ctx, b_scale, b, false, "b_scale") / y_scale.reshape({});
  const Tensor y_zp = optional_input(ctx, 7);
  return saturate(ctx, sum * ratio.to(kFloat64), y_zp.defined() ? y_zp.reshape({}) : y_zp,
                  y_zp.defined() ? y_zp.dtype() : a.dtype());
}

// The convolution of x - x_zero_point by w - w_zero_point (one value, or one
// per output channel), plus an int32 bias, in float64: the Conv kernel run on
// this node, whose attributes are Conv's.
Tensor integer_conv(const OpContext& ctx, const OpKernel& conv, const Tensor& x, const Tensor& x_zp, const Tensor& w,
                    const Tensor& w_zp, const Tensor& bias) {
  NNVM_CHECK(!x_zp.defined() || x_zp.numel() == 1, ctx.where(), "x_zero_point must hold one value, got ",
             shape_str(x_zp.sizes()));
  NNVM_CHECK(x.dim() >= 3 && w.dim() == x.dim(), ctx.where(), "expected X [N, C, D1, ...] and W of its rank, got ",
             shape_str(x.sizes()), " and ", shape_str(w.sizes()));
  const Tensor wz = w_zp.defined() ? along_axis(ctx, w_zp, w, 0, "w_zero_point") : w_zp;
  std::vector<Tensor> inputs{centered(ctx, x, x_zp.defined() ? x_zp.reshape({}) : x_zp, "X"),
                             centered(ctx, w, wz, "W")};
  if (bias.defined()) {
    NNVM_CHECK(bias.dtype() == kInt32, ctx.where(), "bias B must be int32, got ", bias.dtype());
    inputs.push_back(bias.to(kFloat64));
  }
  const OpContext conv_ctx(ctx.node(), ctx.opset(), std::move(inputs), 1, nullptr, nullptr, 0);
  return conv(conv_ctx).at(0);
}

Tensor qlinear_conv(const OpContext& ctx, const OpKernel& conv) {
  const Tensor &x = ctx.input(0), &w = ctx.input(3);
  const Tensor &x_scale = ctx.input(1), &w_scale = ctx.input(4), &y_scale = ctx.input(6);
  check_scale(ctx, x_scale, "x_scale");
  check_scale(ctx, w_scale, "w_scale");
  check_scale(ctx, y_scale, "y_scale");
  NNVM_CHECK(x_scale.numel() == 1 && y_scale.numel() == 1, ctx.where(),
             "x_scale and y_scale must hold one value each, got ", shape_str(x_scale.sizes()), " and ",
             shape_str(y_scale.sizes()));
  const Tensor sum = integer_conv(ctx, conv, x, optional_input(ctx, 2), w, optional_input(ctx, 5),
                                  optional_input(ctx, 8));
  // w_scale per output channel: dim 1 of the output.
  Tensor w_s = w_scale.reshape({-1});
  if (w_s.numel() != 1) {
    NNVM_CHECK(w_s.numel() == w.size(0), ctx.where(), "w_scale ", shape_str(w_scale.sizes()),
               " must hold one value or one per output channel (", w.size(0), ")");
    std::vector<int64_t> shape(size_t(sum.dim()), 1);
    shape[1] = -1;
    w_s = w_s.reshape(shape);
  } else {
    w_s = w_s.reshape({});
  }
  const Tensor ratio = x_scale.reshape({}) * w_s / y_scale.reshape({});
  const Tensor y_zp = optional_input(ctx, 7);
  return saturate(ctx, sum * ratio.to(kFloat64), y_zp.defined() ? y_zp.reshape({}) : y_zp,
                  y_zp.defined() ? y_zp.dtype() : x.dtype());
}

}  // namespace

void add_quant_ops(OpTable& table) {
  add_single(table, "QuantizeLinear", quantize_linear);
  add_single(table, "DequantizeLinear", dequantize_linear);
  add(table, "DynamicQuantizeLinear", dynamic_quantize_linear);
  add_single(table, "MatMulInteger", [](const OpContext& ctx) { return to_int32(integer_matmul(ctx, 0, 2, 1, 3)); });
  add_single(table, "QLinearMatMul", qlinear_matmul);
  const OpKernel conv = table.at("Conv");  // add_nn_ops registered it
  add_single(table, "ConvInteger", [conv](const OpContext& ctx) {
    return to_int32(integer_conv(ctx, conv, ctx.input(0), optional_input(ctx, 2), ctx.input(1),
                                 optional_input(ctx, 3), {}));
  });
  add_single(table, "QLinearConv", [conv](const OpContext& ctx) { return qlinear_conv(ctx, conv); });
}

}  // namespace nnvm::model_detail
