// Element types. float16 and bfloat16 are stored natively (2 bytes) and
// computed in float32; every other type is computed in itself, or in a wider
// type chosen by the op (see promote_types and the kernels' compute types).
// qint8, quint8 and qint32 are PyTorch's quantized types: stored as int8,
// uint8 and int32, read only through a tensor's quantizer (core/quantize.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string_view>

namespace nnvm {

// The quantized types come last: promote_types relies on the order of the others.
enum class DType : uint8_t { Bool, UInt8, Int8, Int32, Int64, Float16, BFloat16, Float32, Float64, QInt8, QUInt8, QInt32 };
inline constexpr int kNumDTypes = 12;

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kByte = DType::UInt8;
inline constexpr DType kInt8 = DType::Int8;
inline constexpr DType kChar = DType::Int8;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kLong = DType::Int64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kHalf = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kDouble = DType::Float64;
inline constexpr DType kQInt8 = DType::QInt8;
inline constexpr DType kQUInt8 = DType::QUInt8;
inline constexpr DType kQInt32 = DType::QInt32;

// Inline: every op's dispatch, lazy output and data pointer asks.
inline constexpr size_t itemsize(DType t) {
  switch (t) {
    case kBool: case kUInt8: case kInt8: case kQInt8: case kQUInt8: return 1;
    case kFloat16: case kBFloat16: return 2;
    case kInt32: case kFloat32: case kQInt32: return 4;
    case kInt64: case kFloat64: return 8;
  }
  return 0;
}
std::string_view dtype_name(DType t);  // "float32", "int64", ...
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

inline bool is_floating(DType t) {
  return t == kFloat16 || t == kBFloat16 || t == kFloat32 || t == kFloat64;
}
inline bool is_integral(DType t, bool include_bool = false) {
  return t == kUInt8 || t == kInt8 || t == kInt32 || t == kInt64 || (include_bool && t == kBool);
}

inline constexpr bool is_quantized(DType t) { return t == kQInt8 || t == kQUInt8 || t == kQInt32; }
// The integer type a quantized type is stored as (libtorch's toUnderlying); any other type itself.
inline constexpr DType underlying(DType t) {
  return t == kQInt8 ? kInt8 : t == kQUInt8 ? kUInt8 : t == kQInt32 ? kInt32 : t;
}

// NumPy/PyTorch-style promotion: bool < integers < floating; within a category
// the wider type wins; uint8 with int8 gives int32 (there is no int16);
// float16 with bfloat16 gives float32. A quantized type throws nnvm::Error.
DType promote_types(DType a, DType b);

// IEEE binary16, round to nearest even on conversion from float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a builtin type
  operator float() const { return to_float(bits); }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

// bfloat16: the top half of a float32, round to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static uint16_t from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = kBool; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = kUInt8; };
template <> struct dtype_of<int8_t> { static constexpr DType value = kInt8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = kInt32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = kInt64; };
template <> struct dtype_of<Half> { static constexpr DType value = kFloat16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = kBFloat16; };
template <> struct dtype_of<float> { static constexpr DType value = kFloat32; };
template <> struct dtype_of<double> { static constexpr DType value = kFloat64; };
template <class T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

// Runs `body` with `scalar_t` bound to the C++ type of `dtype`:
//   NNVM_DISPATCH_ALL(t.dtype(), "sum", [&] { use<scalar_t>(); });
#define NNVM_DTYPE_CASE(D, T, ...) \
  case D: {                        \
    using scalar_t = T;            \
    return __VA_ARGS__();          \
  }
#define NNVM_DISPATCH_ALL(DT, OPNAME, ...)                                               \
  [&] {                                                                                  \
    switch (DT) {                                                                        \
      NNVM_DTYPE_CASE(::nnvm::kBool, bool, __VA_ARGS__)                                  \
      NNVM_DTYPE_CASE(::nnvm::kUInt8, uint8_t, __VA_ARGS__)                              \
      NNVM_DTYPE_CASE(::nnvm::kInt8, int8_t, __VA_ARGS__)                                \
      NNVM_DTYPE_CASE(::nnvm::kInt32, int32_t, __VA_ARGS__)                              \
      NNVM_DTYPE_CASE(::nnvm::kInt64, int64_t, __VA_ARGS__)                              \
      NNVM_DTYPE_CASE(::nnvm::kFloat16, ::nnvm::Half, __VA_ARGS__)                       \
      NNVM_DTYPE_CASE(::nnvm::kBFloat16, ::nnvm::BFloat16, __VA_ARGS__)                  \
      NNVM_DTYPE_CASE(::nnvm::kFloat32, float, __VA_ARGS__)                              \
      NNVM_DTYPE_CASE(::nnvm::kFloat64, double, __VA_ARGS__)                             \
      case ::nnvm::kQInt8: case ::nnvm::kQUInt8: case ::nnvm::kQInt32: break;            \
    }                                                                                    \
    throw ::nnvm::Error(::nnvm::detail::concat(OPNAME, ": not supported for dtype ", DT, \
                                               "; dequantize() a quantized tensor first")); \
  }()

}  // namespace nnvm
