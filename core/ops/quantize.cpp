// The quantize and dequantize ops (core/quantize.h) and libtorch's functions
// and Tensor methods over them; kernels in kernels/cpu/quantize.cpp. int_repr
// and _make_*_quantized_tensor are the copy op between a quantized dtype and
// the integer dtype it is stored as (kernels/cpu/creation.cpp copies the
// integers).
//
// Per tensor, the scale and zero point are Scalar attributes: run-time values,
// so a new scale never recompiles a trace. Per channel, they are input tensors
// (float64 and int64), with the axis an int attribute.
#include "nnvm/core/quantize.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm {

std::string_view qscheme_name(QScheme s) {
  switch (s) {
    case kPerTensorAffine: return "per_tensor_affine";
    case kPerChannelAffine: return "per_channel_affine";
    case kPerTensorSymmetric: return "per_tensor_symmetric";
    case kPerChannelSymmetric: return "per_channel_symmetric";
  }
  return "?";
}

int64_t quant_min(DType t) {
  NNVM_CHECK(is_quantized(t), "quant_min", "expected a quantized dtype but got ", t);
  return t == kQInt8 ? -128 : t == kQUInt8 ? 0 : std::numeric_limits<int32_t>::min();
}

int64_t quant_max(DType t) {
  NNVM_CHECK(is_quantized(t), "quant_max", "expected a quantized dtype but got ", t);
  return t == kQInt8 ? 127 : t == kQUInt8 ? 255 : std::numeric_limits<int32_t>::max();
}

std::string Quantizer::describe() const {
  if (per_channel())
    return detail::concat(dtype, ", per-channel along axis ", axis, " (", scales.size(), " channels)");
  return detail::concat(dtype, ", per-tensor scale ", scale, " zero point ", zero_point);
}

namespace {

OutputSpecs same_shape(const Tensor& x, DType dtype) { return {{dims(x.sizes()), dtype}}; }

// Per-channel parameters as the kernels read them: a float64 and an int64
// vector of x.size(axis) values each.
void check_channel_inputs(absl::Span<const Tensor> in, int64_t axis, const char* op) {
  const int64_t channels = in[0].size(axis);
  NNVM_CHECK(in[1].dtype() == kFloat64 && in[2].dtype() == kInt64 && in[1].dim() == 1 && in[2].dim() == 1 &&
                 in[1].size(0) == channels && in[2].size(0) == channels,
             op, "expected float64 scales and int64 zero points of shape [", channels, "] but got ", in[1].dtype(),
             " ", shape_str(in[1].sizes()), " and ", in[2].dtype(), " ", shape_str(in[2].sizes()));
}

}  // namespace

NNVM_REGISTER(quantize_ops) {
  // quantize_per_tensor(x float32) [scale, zero_point, dtype]
  register_op("quantize_per_tensor").inputs(1).infer_with([](absl::Span<const Tensor> in, const Attrs& a) {
    return same_shape(in[0], a.dtype(2));
  });
  // quantize_per_channel(x float32, scales float64, zero_points int64) [axis, dtype]
  register_op("quantize_per_channel").inputs(3).infer_with([](absl::Span<const Tensor> in, const Attrs& a) {
    check_channel_inputs(in, a.i(0), "quantize_per_channel");
    return same_shape(in[0], a.dtype(1));
  });
  // dequantize_per_tensor(q) [scale, zero_point] -> float32
  register_op("dequantize_per_tensor")
      .inputs(1)
      .takes_quantized(QuantizedInputs::kAny)
      .infer_with([](absl::Span<const Tensor> in, const Attrs&) { return same_shape(in[0], kFloat32); });
  // dequantize_per_channel(q, scales float64, zero_points int64) [axis] -> float32
  register_op("dequantize_per_channel")
      .inputs(3)
      .takes_quantized(QuantizedInputs::kAny)
      .infer_with([](absl::Span<const Tensor> in, const Attrs& a) {
        check_channel_inputs(in, a.i(0), "dequantize_per_channel");
        return same_shape(in[0], kFloat32);
      });
}

namespace {

void check_target(DType dtype, const char* fn) {
  NNVM_CHECK(is_quantized(dtype), fn, "expected a quantized dtype (kQInt8, kQUInt8 or kQInt32) but got ", dtype);
}

void check_scale(double scale, const char* fn) {
  NNVM_CHECK(std::isfinite(scale) && scale > 0, fn, "scale must be positive and finite, got ", scale);
}

void check_zero_point(int64_t zero_point, DType dtype, const char* fn) {
  NNVM_CHECK(zero_point >= quant_min(dtype) && zero_point <= quant_max(dtype), fn, "zero point ", zero_point,
             " is outside the range [", quant_min(dtype), ", ", quant_max(dtype), "] of ", dtype);
}

void check_defined(const Tensor& t, const char* fn) { NNVM_CHECK(t.defined(), fn, "the tensor is undefined"); }

// The float32 tensor PyTorch quantizes: float64, float16 and bfloat16 are converted.
Tensor float32_input(const Tensor& x, const char* fn) {
  check_defined(x, fn);
  NNVM_CHECK(x.is_floating_point(), fn, "expected a floating-point tensor but got ", x.dtype(), " of shape ",
             shape_str(x.sizes()));
  return x.to(kFloat32);
}

// The quantized dtype an integer tensor's values are stored as.
DType quantized_of(const Tensor& t, const char* fn) {
  check_defined(t, fn);
  const DType d = t.dtype();
  NNVM_CHECK(d == kInt8 || d == kUInt8 || d == kInt32, fn, "expected an int8, uint8 or int32 tensor but got ", d,
             " of shape ", shape_str(t.sizes()));
  return d == kInt8 ? kQInt8 : d == kUInt8 ? kQUInt8 : kQInt32;
}

std::shared_ptr<const Quantizer> per_tensor(DType dtype, double scale, int64_t zero_point, const char* fn) {
  check_scale(scale, fn);
  check_zero_point(zero_point, dtype, fn);
  auto q = std::make_shared<Quantizer>();
  q->scheme = kPerTensorAffine;
  q->dtype = dtype;
  q->scale = scale;
  q->zero_point = zero_point;
  return q;
}

// Checks per-channel parameters for a tensor of `shape` and reads them (their
// pending values are computed in traced mode). The tensors are what the ops take.
struct ChannelParams {
  Tensor scales;       // float64, contiguous
  Tensor zero_points;  // int64, contiguous
  std::shared_ptr<const Quantizer> quantizer;
};

ChannelParams per_channel(IntArrayRef shape, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                          DType dtype, const char* fn) {
  check_defined(scales, fn);
  check_defined(zero_points, fn);
  const int64_t rank = int64_t(shape.size());
  NNVM_CHECK(axis >= 0 && axis < rank, fn, "axis ", axis, " is out of range for a tensor of shape ",
             shape_str(shape), " (expected 0 <= axis < ", rank, ")");
  const int64_t channels = shape[size_t(axis)];
  NNVM_CHECK(scales.is_floating_point() && scales.dim() == 1 && scales.size(0) == channels, fn,
             "expected floating-point scales of shape [", channels, "] (the size of axis ", axis, " of ",
             shape_str(shape), ") but got ", scales.dtype(), " of shape ", shape_str(scales.sizes()));
  const DType z = zero_points.dtype();
  NNVM_CHECK(is_integral(z) && zero_points.dim() == 1 && zero_points.size(0) == channels, fn,
             "expected integer zero points of shape [", channels, "] (the size of axis ", axis, " of ",
             shape_str(shape), ") but got ", z, " of shape ", shape_str(zero_points.sizes()));
  ChannelParams p{scales.to(kFloat64).contiguous(), zero_points.to(kInt64).contiguous(), nullptr};
  auto q = std::make_shared<Quantizer>();
  q->scheme = kPerChannelAffine;
  q->dtype = dtype;
  q->axis = axis;
  q->scales = p.scales.to_vector<double>();
  q->zero_points = p.zero_points.to_vector<int64_t>();
  for (int64_t c = 0; c < channels; ++c) {
    const double s = q->scales[size_t(c)];
    const int64_t zp = q->zero_points[size_t(c)];
    NNVM_CHECK(std::isfinite(s) && s > 0, fn, "scale ", s, " of channel ", c, " must be positive and finite");
    NNVM_CHECK(zp >= quant_min(dtype) && zp <= quant_max(dtype), fn, "zero point ", zp, " of channel ", c,
               " is outside the range [", quant_min(dtype), ", ", quant_max(dtype), "] of ", dtype);
  }
  p.quantizer = std::move(q);
  return p;
}

Tensor with_quantizer(Tensor q, std::shared_ptr<const Quantizer> quantizer) {
  q.impl()->quantizer = std::move(quantizer);
  return q;
}

const Quantizer& quantizer_of(const Tensor& t, const char* fn) {
  check_defined(t, fn);
  const TensorImpl& impl = *t.impl();
  NNVM_CHECK(is_quantized(impl.dtype), fn, "expected a quantized tensor but got ", impl.dtype, " of shape ",
             shape_str(impl.shape));
  NNVM_CHECK(impl.quantizer != nullptr, fn, "this ", impl.dtype,
             " tensor has no scale or zero point; make quantized tensors with quantize_per_tensor, "
             "quantize_per_channel or _make_per_tensor_quantized_tensor");
  return *impl.quantizer;
}

const Quantizer& per_tensor_quantizer_of(const Tensor& t, const char* fn) {
  const Quantizer& q = quantizer_of(t, fn);
  NNVM_CHECK(!q.per_channel(), fn, "the tensor is quantized per channel (", q.describe(),
             "); use q_per_channel_scales(), q_per_channel_zero_points() and q_per_channel_axis()");
  return q;
}

const Quantizer& per_channel_quantizer_of(const Tensor& t, const char* fn) {
  const Quantizer& q = quantizer_of(t, fn);
  NNVM_CHECK(q.per_channel(), fn, "the tensor is quantized per tensor (", q.describe(),
             "); use q_scale() and q_zero_point()");
  return q;
}

const OpDef& copy_op() {
  static const OpDef& op = find_op("copy");
  return op;
}

}  // namespace

Tensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype) {
  constexpr const char* fn = "quantize_per_tensor";
  check_target(dtype, fn);
  std::shared_ptr<const Quantizer> quantizer = per_tensor(dtype, scale, zero_point, fn);
  static const OpDef& op = find_op("quantize_per_tensor");
  return with_quantizer(call1(op, float32_input(x, fn), {Scalar(scale), Scalar(zero_point), dtype}),
                        std::move(quantizer));
}

Tensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                            DType dtype) {
  constexpr const char* fn = "quantize_per_channel";
  check_target(dtype, fn);
  const Tensor xf = float32_input(x, fn);
  ChannelParams p = per_channel(xf.sizes(), scales, zero_points, axis, dtype, fn);
  static const OpDef& op = find_op("quantize_per_channel");
  return with_quantizer(call1(op, {xf, p.scales, p.zero_points}, {axis, dtype}), std::move(p.quantizer));
}

Tensor dequantize(const Tensor& q) {
  constexpr const char* fn = "dequantize";
  const Quantizer& qz = quantizer_of(q, fn);
  if (qz.per_channel()) {
    static const OpDef& op = find_op("dequantize_per_channel");
    return call1(op, {q, tensor(qz.scales), tensor(qz.zero_points)}, {qz.axis});
  }
  static const OpDef& op = find_op("dequantize_per_tensor");
  return call1(op, q, {Scalar(qz.scale), Scalar(qz.zero_point)});
}

Tensor _make_per_tensor_quantized_tensor(const Tensor& int_tensor, double scale, int64_t zero_point) {
  constexpr const char* fn = "_make_per_tensor_quantized_tensor";
  const DType dtype = quantized_of(int_tensor, fn);
  std::shared_ptr<const Quantizer> quantizer = per_tensor(dtype, scale, zero_point, fn);
  return with_quantizer(call1(copy_op(), int_tensor, {dtype}), std::move(quantizer));
}

Tensor _make_per_channel_quantized_tensor(const Tensor& int_tensor, const Tensor& scales,
                                          const Tensor& zero_points, int64_t axis) {
  constexpr const char* fn = "_make_per_channel_quantized_tensor";
  const DType dtype = quantized_of(int_tensor, fn);
  ChannelParams p = per_channel(int_tensor.sizes(), scales, zero_points, axis, dtype, fn);
  return with_quantizer(call1(copy_op(), int_tensor, {dtype}), std::move(p.quantizer));
}

const Quantizer& Tensor::quantizer() const { return quantizer_of(*this, "quantizer"); }
QScheme Tensor::qscheme() const { return quantizer_of(*this, "qscheme").scheme; }
double Tensor::q_scale() const { return per_tensor_quantizer_of(*this, "q_scale").scale; }
int64_t Tensor::q_zero_point() const { return per_tensor_quantizer_of(*this, "q_zero_point").zero_point; }
Tensor Tensor::q_per_channel_scales() const {
  return tensor(per_channel_quantizer_of(*this, "q_per_channel_scales").scales);
}
Tensor Tensor::q_per_channel_zero_points() const {
  return tensor(per_channel_quantizer_of(*this, "q_per_channel_zero_points").zero_points);
}
int64_t Tensor::q_per_channel_axis() const { return per_channel_quantizer_of(*this, "q_per_channel_axis").axis; }

Tensor Tensor::int_repr() const {
  quantizer_of(*this, "int_repr");
  return call1(copy_op(), *this, {underlying(dtype())});
}

Tensor Tensor::dequantize() const { return nnvm::dequantize(*this); }

}  // namespace nnvm
