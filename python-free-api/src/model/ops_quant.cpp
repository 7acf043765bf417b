// Model ops of 8-bit quantization (registered by add_more_ops): ONNX's
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, and the integer
// products MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.
//
// Quantizing rounds half to even (nnvm's round) and saturates to the output's
// range; NaN quantizes to the zero point.
//
// The integer products run on the INT8 GEMM (docs/MODELS.md, "Quantized products"):
// the ops "integer_matmul" and "integer_conv2d" (core/ops/quantized_layers.cpp)
// take A as uint8 (an int8 A plus 128) and B packed as int8 (a uint8 B less
// 128), B packed here once per weight (PackedOperands), and give the int32
// sums exactly, corrected for the zero points. Where the GEMM's bounds or the
// layout do not hold (k past kInt8MaxK, or past kNoWrapK for the requantized
// products, whose float64 sums do not wrap; a convolution not 2-d) they
// accumulate in float64: every product of two 8-bit values and every sum of
// them is an integer below 2^53, so float64's GEMM and convolution give
// exactly the int32 sums the specification asks for (a sum past int32's
// range wraps, as int32 accumulation does). The float64 convolution runs the
// Conv kernel on the inputs less their zero points, so padding reads as the
// zero point; the GEMM's pads with the zero point.
#include <mutex>

#include "nnvm/core/op.h"
#include "nnvm/core/storage.h"
#include "nnvm/kernels/cpu/gemm_int8.h"
#include "ops_nn.h"

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

// A sum of k products of two 8-bit values less their zero points (each at
// most 255 in magnitude) fits int32 for k up to this: the requantizing ops
// read float64 sums, which never wrap, so they take the GEMM up to here only.
constexpr int64_t kNoWrapK = int64_t(INT32_MAX) / (255 * 255);

void check_operand(const OpContext& ctx, const Tensor& x, const Tensor& zero_point, const char* what) {
  NNVM_CHECK(x.dtype() == kUInt8 || x.dtype() == kInt8, ctx.where(), what, " must be uint8 or int8, got ",
             x.dtype());
  NNVM_CHECK(!zero_point.defined() || zero_point.dtype() == x.dtype(), ctx.where(), what, "'s zero point is ",
             zero_point.defined() ? zero_point.dtype() : x.dtype(), ", ", what, " ", x.dtype());
}

// x less its zero point, as exact float64 values; `zero_point` is already
// shaped to broadcast against x (or undefined: 0).
Tensor centered(const OpContext& ctx, const Tensor& x, const Tensor& zero_point, const char* what) {
  check_operand(ctx, x, zero_point, what);
  if (!zero_point.defined()) return x.to(kFloat64);
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

// B of an integer product packed for the INT8 GEMM, with its column sums.
struct PackedOperand {
  Tensor packed, column_sums;
};

// Packs B [k, n] (a matrix product's) or a convolution weight [n, c, kh, kw]
// (as `groups` blocks [kh·kw·c, n / groups] in (i, j, channel) order) once
// per tensor: an entry is remade when the tensor's storage or version, view
// or dtype changes, and dropped when its storage is freed. Weights that are
// initializers are the same tensors on every call, so they pack once.
class PackedOperands {
 public:
  PackedOperand get(const Tensor& b, int64_t groups) {
    const std::shared_ptr<Storage>& storage = b.storage();
    const uint64_t version = storage->version();
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& e : entries_)
      if (e.storage.lock() == storage && e.version == version && e.groups == groups &&
          e.dtype == b.dtype() && e.offset == b.storage_offset() && e.sizes == b.sizes() && e.strides == b.strides())
        return e.value;
    std::erase_if(entries_, [](const Entry& e) { return e.storage.expired(); });
    Entry e{storage, version, groups, b.dtype(), b.storage_offset(), dims(b.sizes()), dims(b.strides()),
            b.dim() == 2 ? pack_matrix(b) : pack_conv_weight(b, groups)};
    entries_.push_back(e);
    return e.value;
  }

 private:
  struct Entry {
    std::weak_ptr<Storage> storage;
    uint64_t version;
    int64_t groups;
    DType dtype;
    int64_t offset;
    DimVector sizes, strides;
    PackedOperand value;
  };

  // bytes [k, n] as int8 (a uint8 B less 128) packed `groups` times side by side.
  static PackedOperand pack(const std::vector<int8_t>& bytes, int64_t k, int64_t n, int64_t groups) {
    const int64_t group_n = n / groups, block = cpu::int8_packed_bytes(k, group_n);
    PackedOperand p{empty({groups * block}, kInt8), zeros({n}, kInt32)};
    for (int64_t g = 0; g < groups; ++g) {
      int8_t* out = p.packed.data_ptr<int8_t>() + g * block;
      cpu::pack_int8_b({bytes.data() + g * group_n, n, 1}, k, group_n, out);
      cpu::int8_column_sums(out, k, group_n, p.column_sums.data_ptr<int32_t>() + g * group_n);
    }
    return p;
  }

  static int8_t as_int8(const Tensor& b, uint8_t byte) { return int8_t(b.dtype() == kUInt8 ? byte ^ 0x80 : byte); }

  static PackedOperand pack_matrix(const Tensor& b) {
    const int64_t k = b.size(0), n = b.size(1), rs = b.stride(0), cs = b.stride(1);
    const uint8_t* src = static_cast<const uint8_t*>(b.data_ptr());
    std::vector<int8_t> bytes(size_t(k * n));
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) bytes[size_t(p * n + j)] = as_int8(b, src[p * rs + j * cs]);
    return pack(bytes, k, n, 1);
  }

  // B[(i·kw + j)·c + ch][o] = w[o][ch][i][j]: each group's blocks side by side in the columns.
  static PackedOperand pack_conv_weight(const Tensor& w, int64_t groups) {
    const Tensor wc = w.contiguous();
    const int64_t n = w.size(0), c = w.size(1), kh = w.size(2), kw = w.size(3), k = c * kh * kw;
    const uint8_t* src = static_cast<const uint8_t*>(wc.data_ptr());
    std::vector<int8_t> bytes(size_t(k * n));
    for (int64_t o = 0; o < n; ++o)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j)
            bytes[size_t(((i * kw + j) * c + ch) * n + o)] = as_int8(w, src[((o * c + ch) * kh + i) * kw + j]);
    return pack(bytes, k, n, groups);
  }

  std::mutex mutex_;
  std::vector<Entry> entries_;
};

PackedOperand packed_operand(const Tensor& b, int64_t groups) {
  static PackedOperands cache;
  return cache.get(b, groups);
}

// Zero points as the GEMM's operands see them (A as uint8, B as int8), int32
// [count] or [1]; `zero_point` is undefined (0), one value or shaped along
// the operand's rows or columns.
Tensor gemm_zero_points(const Tensor& zero_point, const Tensor& operand, bool is_a, int64_t count) {
  const int64_t shift = is_a ? (operand.dtype() == kInt8 ? 128 : 0) : (operand.dtype() == kUInt8 ? -128 : 0);
  if (!zero_point.defined()) return full({1}, Scalar(shift), kInt32);
  Tensor z = zero_point.to(kInt32).reshape({-1});
  if (shift != 0) z = z + shift;
  return z.numel() == 1 || z.numel() == count ? z : z.expand({count / z.numel(), z.numel()}).reshape({-1});
}

// (A - za)(B - zb) for one A [m, k] and B [k, n], int32.
Tensor gemm_product(const Tensor& a, const Tensor& za, const Tensor& b, const Tensor& zb) {
  static const OpDef& op = find_op("integer_matmul");
  const PackedOperand p = packed_operand(b, 1);
  return call1(op, {a, za, p.packed, p.column_sums, zb}, {b.size(1), b.size(0)});
}

// MatMul's batch index `t` of the broadcast batch `batch` in x [..., r, c] (its own batch dims, size 1 broadcast).
Tensor batch_of(const Tensor& x, IntArrayRef batch, int64_t t) {
  Tensor v = x;
  const int64_t own = x.dim() - 2, skip = int64_t(batch.size()) - own;
  for (int64_t d = int64_t(batch.size()) - 1; d >= 0; --d) {
    const int64_t index = t % batch[size_t(d)];
    t /= batch[size_t(d)];
    if (d >= skip) v = v.select(d - skip, x.size(d - skip) == 1 ? 0 : index);
  }
  return v;
}

// The exact int32 product on the INT8 GEMM, MatMul's broadcasting kept: one
// GEMM over A's rows where B is a matrix, one per batch where B has batch
// dims. Undefined where it does not apply (then: float64).
Tensor gemm_matmul(const Tensor& a, const Tensor& az, const Tensor& b, const Tensor& bz, int64_t max_k) {
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a, b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const int64_t k = a2.size(-1);
  if (!a.is_cpu() || !b.is_cpu() || k > max_k || b2.size(-2) != k) return {};
  const int64_t m = a2.size(-2), n = b2.size(-1);
  const Tensor zb = gemm_zero_points(bz, b, false, n);
  Tensor y;
  if (b2.dim() == 2) {
    int64_t row_count = 1;
    for (int64_t d = 0; d + 1 < a2.dim(); ++d) row_count *= a2.size(d);
    const Tensor rows = a2.reshape({row_count, k});
    y = gemm_product(rows, gemm_zero_points(az, a, true, rows.size(0)), b2, zb);
    DimVector shape(a2.sizes().begin(), a2.sizes().end());
    shape.back() = n;
    y = y.reshape(shape);
  } else {
    // (matmul's own broadcast: the same message for batch dims that do not broadcast)
    DimVector batch = broadcast_shapes(a2.sizes().subspan(0, size_t(a2.dim() - 2)),
                                       b2.sizes().subspan(0, size_t(b2.dim() - 2)), "matmul");
    int64_t count = 1;
    for (int64_t s : batch) count *= s;
    const Tensor za = gemm_zero_points(az, a, true, m);
    std::vector<Tensor> parts;
    for (int64_t t = 0; t < count; ++t)
      parts.push_back(gemm_product(batch_of(a2, batch, t), za, batch_of(b2, batch, t), zb));
    batch.push_back(m);
    batch.push_back(n);
    y = count == 0 ? zeros(batch, kInt32) : stack(parts).reshape(batch);
  }
  if (a.dim() == 1) y = y.squeeze(-2);
  if (b.dim() == 1) y = y.squeeze(-1);
  return y;
}

// The product (A - a_zero_point)(B - b_zero_point) from inputs a,
// a_zero_point, b, b_zero_point at these positions: int32 on the INT8 GEMM
// for k up to max_k, else exact float64 values (undefined: none).
std::pair<Tensor, Tensor> integer_matmul(const OpContext& ctx, int64_t a, int64_t a_zp, int64_t b, int64_t b_zp,
                                         int64_t max_k) {
  const Tensor &x = ctx.input(a), &y = ctx.input(b);
  const Tensor xz = per_row_or_column(ctx, optional_input(ctx, a_zp), x, true, "a_zero_point");
  const Tensor yz = per_row_or_column(ctx, optional_input(ctx, b_zp), y, false, "b_zero_point");
  check_operand(ctx, x, xz, "A");
  check_operand(ctx, y, yz, "B");
  if (x.dim() >= 1 && y.dim() >= 1)
    if (Tensor sums = gemm_matmul(x, xz, y, yz, max_k); sums.defined()) return {sums, Tensor()};
  return {Tensor(), centered(ctx, x, xz, "A").matmul(centered(ctx, y, yz, "B"))};
}

// An exact float64 sum as int32, wrapping as int32 accumulation does.
Tensor to_int32(const Tensor& sum) { return sum.to(kInt64).to(kInt32); }

// The sums as int32 (MatMulInteger, ConvInteger) or float64 (to requantize).
Tensor as_int32(const std::pair<Tensor, Tensor>& sums) {
  return sums.first.defined() ? sums.first : to_int32(sums.second);
}
Tensor as_float64(const std::pair<Tensor, Tensor>& sums) {
  return sums.first.defined() ? sums.first.to(kFloat64) : sums.second;
}

// QLinearMatMul: the product requantized by a_scale * b_scale / y_scale,
// that ratio formed in the scales' dtype as the specification's reference does.
Tensor qlinear_matmul(const OpContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(3);
  const Tensor &a_scale = ctx.input(1), &b_scale = ctx.input(4), &y_scale = ctx.input(6);
  check_scale(ctx, a_scale, "a_scale");
  check_scale(ctx, b_scale, "b_scale");
  check_scale(ctx, y_scale, "y_scale");
  NNVM_CHECK(y_scale.numel() == 1, ctx.where(), "y_scale must hold one value, got ", shape_str(y_scale.sizes()));
  const Tensor sum = as_float64(integer_matmul(ctx, 0, 2, 3, 5, kNoWrapK));
  const Tensor ratio = per_row_or_column(ctx, a_scale, a, true, "a_scale") *
                       per_row_or_column(ctx, b_scale, b, false, "b_scale") / y_scale.reshape({});
  const Tensor y_zp = optional_input(ctx, 7);
  return saturate(ctx, sum * ratio.to(kFloat64), y_zp.defined() ? y_zp.reshape({}) : y_zp,
                  y_zp.defined() ? y_zp.dtype() : a.dtype());
}

// A 2-d convolution of x - x_zero_point by w - w_zero_point on the INT8
// GEMM (im2col: kernels/cpu/quantized_layers.cpp), int32; undefined where it
// does not apply (then: float64, whose Conv kernel names bad shapes).
Tensor gemm_conv(const OpContext& ctx, const Tensor& x, const Tensor& x_zp, const Tensor& w, const Tensor& w_zp,
                 int64_t max_k) {
  static const OpDef& op = find_op("integer_conv2d");
  const int64_t groups = ctx.attr_int("group", 1);
  if (x.dim() != 4 || !x.is_cpu() || !w.is_cpu() || groups < 1 || x.size(1) % groups != 0 ||
      w.size(1) * groups != x.size(1) || w.size(0) % groups != 0 || w.size(1) * w.size(2) * w.size(3) > max_k)
    return {};
  const std::vector<Window> win = windows(ctx, x.sizes().subspan(2), kernel_of(ctx, w), false);
  const PackedOperand p = packed_operand(w, groups);
  return call1(op,
               {x, gemm_zero_points(x_zp, x, true, 1), p.packed, p.column_sums,
                gemm_zero_points(w_zp, w, false, w.size(0))},
               {dims({win[0].kernel, win[1].kernel}), dims({win[0].stride, win[1].stride}),
                dims({win[0].pad_begin, win[1].pad_begin, win[0].pad_end, win[1].pad_end}),
                dims({win[0].dilation, win[1].dilation}), groups, w.size(0)});
}

// The convolution of x - x_zero_point by w - w_zero_point (one value, or one
// per output channel), plus an int32 bias: int32 on the INT8 GEMM (2-d, k up
// to max_k), else exact float64 values: the Conv kernel run on this node,
// whose attributes are Conv's.
std::pair<Tensor, Tensor> integer_conv(const OpContext& ctx, const OpKernel& conv, const Tensor& x,
                                       const Tensor& x_zp, const Tensor& w, const Tensor& w_zp, const Tensor& bias,
                                       int64_t max_k) {
  NNVM_CHECK(!x_zp.defined() || x_zp.numel() == 1, ctx.where(), "x_zero_point must hold one value, got ",
             shape_str(x_zp.sizes()));
  NNVM_CHECK(x.dim() >= 3 && w.dim() == x.dim(), ctx.where(), "expected X [N, C, D1, ...] and W of its rank, got ",
             shape_str(x.sizes()), " and ", shape_str(w.sizes()));
  const Tensor wz = w_zp.defined() ? along_axis(ctx, w_zp, w, 0, "w_zero_point") : w_zp;
  check_operand(ctx, x, x_zp, "X");
  check_operand(ctx, w, wz, "W");
  if (bias.defined())
    NNVM_CHECK(bias.dtype() == kInt32, ctx.where(), "bias B must be int32, got ", bias.dtype());
  if (Tensor sums = gemm_conv(ctx, x, x_zp, w, wz, max_k); sums.defined()) {
    if (!bias.defined()) return {sums, Tensor()};
    NNVM_CHECK(bias.dim() == 1 && bias.size(0) == w.size(0), ctx.where(), "bias B ", shape_str(bias.sizes()),
               " must be [", w.size(0), "], one value per output channel");
    return {Tensor(), sums.to(kFloat64) + bias.to(kFloat64).reshape({-1, 1, 1})};
  }
  std::vector<Tensor> inputs{centered(ctx, x, x_zp.defined() ? x_zp.reshape({}) : x_zp, "X"),
                             centered(ctx, w, wz, "W")};
  if (bias.defined()) inputs.push_back(bias.to(kFloat64));
  const OpContext conv_ctx(ctx.node(), ctx.opset(), std::move(inputs), 1, nullptr, nullptr, 0);
  return {Tensor(), conv(conv_ctx).at(0)};
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
  const Tensor sum = as_float64(integer_conv(ctx, conv, x, optional_input(ctx, 2), w, optional_input(ctx, 5),
                                             optional_input(ctx, 8), kNoWrapK));
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
  add_single(table, "MatMulInteger",
             [](const OpContext& ctx) { return as_int32(integer_matmul(ctx, 0, 2, 1, 3, cpu::kInt8MaxK)); });
  add_single(table, "QLinearMatMul", qlinear_matmul);
  const OpKernel conv = table.at("Conv");  // add_nn_ops registered it
  add_single(table, "ConvInteger", [conv](const OpContext& ctx) {
    return as_int32(integer_conv(ctx, conv, ctx.input(0), optional_input(ctx, 2), ctx.input(1),
                                 optional_input(ctx, 3), {}, cpu::kInt8MaxK));
  });
  add_single(table, "QLinearConv", [conv](const OpContext& ctx) { return qlinear_conv(ctx, conv); });
}

}  // namespace nnvm::model_detail
