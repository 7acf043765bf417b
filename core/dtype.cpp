#include "nnvm/core/dtype.h"

#include "nnvm/core/error.h"

namespace nnvm {

std::string_view dtype_name(DType t) {
  switch (t) {
    case kBool: return "bool";
    case kUInt8: return "uint8";
    case kInt8: return "int8";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kFloat16: return "float16";
    case kBFloat16: return "bfloat16";
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kQInt8: return "qint8";
    case kQUInt8: return "quint8";
    case kQInt32: return "qint32";
  }
  return "?";
}

DType promote_types(DType a, DType b) {
  if (is_quantized(a) || is_quantized(b)) [[unlikely]]
    throw Error(detail::concat("promote_types: ", a, " and ", b,
                               ": a quantized type does not promote; dequantize() it first"));
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  if (is_floating(a) || is_floating(b)) {
    if (!is_floating(a)) return b;
    if (!is_floating(b)) return a;
    if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
    return uint8_t(a) > uint8_t(b) ? a : b;  // enum order is width order within floats
  }
  if ((a == kUInt8 && b == kInt8) || (a == kInt8 && b == kUInt8)) return kInt32;
  return uint8_t(a) > uint8_t(b) ? a : b;
}

// float <-> binary16 by bit manipulation (round to nearest even, subnormals,
// infinities and NaN preserved); portable and exact, so kernels and tests agree.
uint16_t Half::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow (rounds to inf) or inf
  if (abs < 0x38800000u) {                                  // result is subnormal or zero
    if (abs < 0x33000000u) return uint16_t(sign);           // below half the smallest subnormal
    // value / 2^-24 = mant * 2^(E - 126): shift right by 126 - E (14..24) and round
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int s = 126 - int(abs >> 23);
    uint32_t q = mant >> s;
    const uint32_t rem = mant & ((1u << s) - 1);
    const uint32_t halfway = 1u << (s - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    return uint16_t(sign | q);
  }
  // normal: rebias exponent from 127 to 15, round the 13 dropped mantissa bits
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

float Half::to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (uint32_t(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace nnvm
