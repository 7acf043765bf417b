// CPU kernels of the pointwise binary ops declared in core/ops/binary.cpp.
// Each op's element function is written once, over two operands; the tensor
// form reads both from tensors, the ".Scalar" form binds the second to the
// scalar attribute.
#include <cmath>

#include "nnvm/kernels/cpu/pointwise.h"

namespace nnvm::cpu {

namespace {

using R = ResultType;

// Python semantics: the result of a remainder takes the divisor's sign.
template <class T> T remainder(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else if constexpr (std::is_same_v<T, bool>) {
    return a && !b ? a : false;
  } else {
    if (b == 0) throw Error("remainder: integer division by zero");
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
}

template <class T> T div_floor(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::floor(a / b);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!b) throw Error("div: integer division by zero");
    return a;
  } else {
    if (b == 0) throw Error("div: integer division by zero");
    T q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
}

template <class T> T div_trunc(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::trunc(a / b);
  } else {
    if (!b) throw Error("div: integer division by zero");
    return T(a / b);
  }
}

template <class T> T power(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(a, b);
  } else if constexpr (std::is_same_v<T, bool>) {
    return a || !b;
  } else {
    if (b < 0) {
      if (a == 1) return 1;
      if (a == -1) return (b & 1) ? -1 : 1;
      throw Error("pow: integers to negative integer powers are not allowed");
    }
    T r = 1;
    for (; b; b >>= 1, a *= a)
      if (b & 1) r *= a;
    return r;
  }
}

// NaN-propagating max/min (libtorch's maximum/minimum).
template <class T> T maximum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return a > b ? a : b;
}
template <class T> T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return a < b ? a : b;
}

// Registers "name" (tensor, tensor) and "name.Scalar" (tensor, scalar) from
// one element function fn(T, T).
template <R rule, Types types, class Fn> void binary(const std::string& name, Fn fn) {
  register_kernel(name, kCPU, pointwise_kernel<rule, types, 2>(0, [fn]<class T>(const Attrs&) {
    return [fn](T a, T b) { return fn(a, b); };
  }));
  register_kernel(name + ".Scalar", kCPU, pointwise_kernel<rule, types, 1>(1, [fn]<class T>(const Attrs& a) {
    const T s = scalar_as<T>(a.s(0));
    return [fn, s](T x) { return fn(x, s); };
  }));
}

#define FN(expr) [](auto a, auto b) { return expr; }

}  // namespace

NNVM_REGISTER(cpu_binary_kernels) {
  // x + alpha y rounded once, as PyTorch's add (vec::fmadd) and the JIT's
  // lowering (jit/loop_ir.cpp) compute it: written out, not left to the
  // compiler's contraction, so a fused plan and this kernel agree bit for bit.
  register_kernel("add", kCPU, pointwise_kernel<R::Same, Types::All, 2>(0, []<class T>(const Attrs& a) {
    const T alpha = scalar_as<T>(a.s(0));
    return [alpha](T x, T y) {
      if constexpr (std::is_floating_point_v<T>) return std::fma(alpha, y, x);
      else return T(x + alpha * y);
    };
  }));
  register_kernel("add.Scalar", kCPU, pointwise_kernel<R::Same, Types::All, 1>(1, []<class T>(const Attrs& a) {
    const T other = scalar_as<T>(a.s(0)), alpha = scalar_as<T>(a.s(1));
    const T s = std::is_same_v<T, bool> ? T(other && alpha) : T(other * alpha);
    return [s](T x) { return x + s; };
  }));
  register_kernel("pow.ScalarBase", kCPU, pointwise_kernel<R::Same, Types::All, 1>(1, []<class T>(const Attrs& a) {
    const T base = scalar_as<T>(a.s(0));
    return [base](T x) { return power(base, x); };
  }));
  binary<R::Same, Types::All>("mul", FN(a * b));
  binary<R::Same, Types::All>("remainder", FN(remainder(a, b)));
  binary<R::Same, Types::All>("pow", FN(power(a, b)));
  binary<R::Same, Types::All>("maximum", FN(maximum(a, b)));
  binary<R::Same, Types::All>("minimum", FN(minimum(a, b)));
  binary<R::Same, Types::All>("div_floor", FN(div_floor(a, b)));
  binary<R::Same, Types::All>("div_trunc", FN(div_trunc(a, b)));
  binary<R::Floating, Types::Floating>("div", FN(a / b));
  binary<R::Floating, Types::Floating>("atan2", FN(std::atan2(a, b)));
  binary<R::Bool, Types::All>("eq", FN(a == b));
  binary<R::Bool, Types::All>("ne", FN(a != b));
  binary<R::Bool, Types::All>("lt", FN(a < b));
  binary<R::Bool, Types::All>("le", FN(a <= b));
  binary<R::Bool, Types::All>("gt", FN(a > b));
  binary<R::Bool, Types::All>("ge", FN(a >= b));
  binary<R::Bool, Types::All>("logical_and", FN(bool(a) && bool(b)));
  binary<R::Bool, Types::All>("logical_or", FN(bool(a) || bool(b)));
  binary<R::Bool, Types::All>("logical_xor", FN(bool(a) != bool(b)));

  // where: promoted dtype of the branches; the condition is read as that type.
  register_kernel("where", kCPU, [](absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs&) {
    with_compute_type(promote_types(in[1].dtype(), in[2].dtype()), [&](auto zero) {
      using T = decltype(zero);
      pointwise<T, 3>(out[0], {&in[0], &in[1], &in[2]}, [](T c, T a, T b) { return c ? a : b; });
    });
  });
  register_kernel("masked_fill", kCPU, [](absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
    with_compute_type(in[0].dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T value = scalar_as<T>(a.s(0));
      pointwise<T, 2>(out[0], {&in[0], &in[1]}, [value](T x, T m) { return m ? value : x; });
    });
  });
}

}  // namespace nnvm::cpu
