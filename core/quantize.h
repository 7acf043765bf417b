// Quantized tensors, as PyTorch has them. A quantized tensor has dtype qint8,
// quint8 or qint32, stores integers q of that width, and means
// (q - zero_point) * scale through the Quantizer its TensorImpl carries: one
// scale and zero point (per tensor), or one of each per index of `axis` (per
// channel). quantize, dequantize and int_repr are ops of the op table
// (core/ops/quantize.cpp), recorded in traced mode like any op; every other op
// refuses a quantized input unless its OpDef takes one (core/op.h,
// QuantizedInputs): views of a per-tensor quantized tensor, copies of any.
//
// Rounding is PyTorch's: q = clamp(nearbyint(x * (1 / scale)) + zero_point,
// qmin, qmax), in float32 with the scale rounded to float, ties to even; NaN
// saturates to qmin as PyTorch's x86 kernels do. Dequantizing is
// float(scale) * (q - zero_point) in float32.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "nnvm/core/dtype.h"
#include "nnvm/core/tensor.h"

namespace nnvm {

// libtorch's spellings: torch::kPerTensorAffine is nnvm::kPerTensorAffine. A
// quantized tensor is affine; the symmetric schemes are observers' choices
// of scale and zero point (nnvm/quantization/observer.h).
enum class QScheme : uint8_t { kPerTensorAffine, kPerChannelAffine, kPerTensorSymmetric, kPerChannelSymmetric };
inline constexpr QScheme kPerTensorAffine = QScheme::kPerTensorAffine;
inline constexpr QScheme kPerChannelAffine = QScheme::kPerChannelAffine;
inline constexpr QScheme kPerTensorSymmetric = QScheme::kPerTensorSymmetric;
inline constexpr QScheme kPerChannelSymmetric = QScheme::kPerChannelSymmetric;
std::string_view qscheme_name(QScheme s);  // "per_tensor_affine", as libtorch's toString
inline std::ostream& operator<<(std::ostream& os, QScheme s) { return os << qscheme_name(s); }
inline bool is_per_channel(QScheme s) { return s == kPerChannelAffine || s == kPerChannelSymmetric; }

// The range of the integers a quantized dtype stores: [-128, 127] for qint8,
// [0, 255] for quint8, int32's for qint32.
int64_t quant_min(DType t);
int64_t quant_max(DType t);

struct Quantizer {
  QScheme scheme = kPerTensorAffine;
  DType dtype = kQInt8;
  double scale = 1.0;          // per tensor
  int64_t zero_point = 0;
  std::vector<double> scales;  // per channel: one for each index of `axis`
  std::vector<int64_t> zero_points;
  int64_t axis = 0;

  bool per_channel() const { return is_per_channel(scheme); }
  // "qint8, per-tensor scale 0.1 zero point 3" (error messages)
  std::string describe() const;
};

// libtorch's functions. The input is converted to float32 first (float64,
// float16, bfloat16); another dtype throws nnvm::Error, as do a scale that is
// not positive and finite, a zero point outside the dtype's range, a dtype
// that is not quantized, per-channel parameters of the wrong length or
// dtype, and an axis out of range. Per-channel scales and zero points are read
// at the call (in traced mode their pending values are computed first).
Tensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype);
Tensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                            DType dtype);
Tensor dequantize(const Tensor& q);
// A quantized tensor holding a copy of `int_tensor`'s integers (int8 -> qint8,
// uint8 -> quint8, int32 -> qint32): how a loader rebuilds one it stored.
Tensor _make_per_tensor_quantized_tensor(const Tensor& int_tensor, double scale, int64_t zero_point);
Tensor _make_per_channel_quantized_tensor(const Tensor& int_tensor, const Tensor& scales,
                                          const Tensor& zero_points, int64_t axis);

}  // namespace nnvm
