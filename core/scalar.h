// A number passed to an op (a learning rate, a fill value, the 2 in x + 2).
// Like libtorch's c10::Scalar it remembers whether it is floating, integral or
// bool, because that decides the result dtype of `int_tensor + 2.5`.
#pragma once

#include <cstdint>
#include <type_traits>

#include "nnvm/core/dtype.h"

namespace nnvm {

class Scalar {
 public:
  enum class Kind : uint8_t { Float, Int, Bool };

  Scalar() : Scalar(int64_t(0)) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(int64_t(v)) {}  // NOLINT: implicit, like libtorch
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float), d_(double(v)) {}  // NOLINT
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}        // NOLINT
  Scalar(Half v) : Scalar(float(v)) {}                // NOLINT
  Scalar(BFloat16 v) : Scalar(float(v)) {}            // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  template <class T> T to() const {
    if (kind_ == Kind::Float) return static_cast<T>(d_);
    return static_cast<T>(i_);
  }
  double to_double() const { return to<double>(); }
  // libtorch's spellings (loss.item().toFloat()).
  float toFloat() const { return to<float>(); }
  double toDouble() const { return to<double>(); }
  int toInt() const { return to<int>(); }
  int64_t toLong() const { return to<int64_t>(); }
  bool toBool() const { return to<bool>(); }
  Scalar operator-() const { return kind_ == Kind::Float ? Scalar(-d_) : Scalar(-i_); }
  int64_t to_int() const { return to<int64_t>(); }

  // The dtype a bare scalar has on its own: float32, int64 or bool.
  DType default_dtype() const { return kind_ == Kind::Float ? kFloat32 : kind_ == Kind::Int ? kInt64 : kBool; }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

// Result dtype of `tensor op scalar`: the scalar only changes the category
// (an integral tensor with a floating scalar becomes float32; bool with int becomes int64).
inline DType promote_with_scalar(DType t, const Scalar& s) {
  if (s.is_floating() && !is_floating(t)) return kFloat32;
  if (s.is_integral() && t == kBool) return kInt64;
  return t;
}

}  // namespace nnvm
