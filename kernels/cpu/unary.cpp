// CPU kernels of the pointwise unary ops declared in core/ops/unary.cpp.
#include <cmath>

#include "nnvm/kernels/cpu/exp.h"
#include "nnvm/kernels/cpu/pointwise.h"
#include "nnvm/kernels/cpu/trig.h"

namespace nnvm::cpu {

namespace {

using R = ResultType;

// An element function that needs no attributes.
#define ELEMENT(expr) []<class T>(const Attrs&) { return [](T x) { return expr; }; }

// exp_of, log_of, tanh_of, erf_of, ... are the vectorisable float functions of kernels/cpu/exp.h, libm for
// double.
template <class T> T sigmoid(T x) { return T(1) / (T(1) + exp_of(-x)); }

// sin, cos and tan: for float, kernels/cpu/trig.h's vectorised loop over
// each run, libm for the arguments it leaves out; libm for double.
enum class Trig { kSin, kCos, kTan };
template <class T, Trig kFn> struct TrigFunction {
  static T libm(T x) {
    if constexpr (kFn == Trig::kSin) return std::sin(x);
    else if constexpr (kFn == Trig::kCos) return std::cos(x);
    else return std::tan(x);
  }
  static float fast(float x) {
    if constexpr (kFn == Trig::kTan) return tan_reduced(x);
    else return sin_quarter(x, kFn == Trig::kCos ? 1 : 0);
  }
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return trig_needs_libm(x) ? libm(x) : fast(x);
    else return libm(x);
  }
  void run(const T* const* src, T* dst, int64_t m) const {
    if constexpr (std::is_same_v<T, float>) {
      trig_run(src[0], dst, m, fast, libm);
    } else {
      for (int64_t j = 0; j < m; ++j) dst[j] = libm(src[0][j]);
    }
  }
};

}  // namespace

NNVM_REGISTER(cpu_unary_kernels) {
  auto floating = [](const char* name, auto make) {
    register_kernel(name, kCPU, pointwise_kernel<R::Floating, Types::Floating, 1>(0, make));
  };
  floating("exp", ELEMENT(exp_of(x)));
  floating("exp2", ELEMENT(exp2_of(x)));
  floating("log", ELEMENT(log_of(x)));
  floating("log2", ELEMENT(log2_of(x)));
  floating("log1p", ELEMENT(log1p_of(x)));
  floating("expm1", ELEMENT(expm1_of(x)));
  floating("sqrt", ELEMENT(std::sqrt(x)));
  floating("rsqrt", ELEMENT(T(1) / std::sqrt(x)));
  floating("sin", []<class T>(const Attrs&) { return TrigFunction<T, Trig::kSin>{}; });
  floating("cos", []<class T>(const Attrs&) { return TrigFunction<T, Trig::kCos>{}; });
  floating("tan", []<class T>(const Attrs&) { return TrigFunction<T, Trig::kTan>{}; });
  floating("tanh", ELEMENT(tanh_of(x)));
  floating("sigmoid", ELEMENT(sigmoid(x)));
  floating("erf", ELEMENT(erf_of(x)));
  floating("reciprocal", ELEMENT(T(1) / x));
  floating("silu", ELEMENT(x * sigmoid(x)));
  floating("gelu", ELEMENT(T(0.5) * x * (T(1) + erf_of(x * T(0.70710678118654752440)))));
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  floating("gelu_tanh",
           ELEMENT(T(0.5) * x * (T(1) + tanh_of(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)))));
  floating("leaky_relu", []<class T>(const Attrs& a) {
    const T slope = T(a.d(0));
    return [slope](T x) { return x > T(0) ? x : x * slope; };
  });
  floating("elu", []<class T>(const Attrs& a) {
    const T alpha = T(a.d(0));
    return [alpha](T x) { return x > T(0) ? x : alpha * expm1_of(x); };
  });
  // log(1 + exp(beta x)) / beta, linear above threshold for stability (libtorch's rule)
  floating("softplus", []<class T>(const Attrs& a) {
    const T beta = T(a.d(0)), threshold = T(a.d(1));
    return [beta, threshold](T x) { return x * beta > threshold ? x : log1p_of(exp_of(x * beta)) / beta; };
  });

  auto any = [](const char* name, auto make) {
    register_kernel(name, kCPU, pointwise_kernel<R::Same, Types::All, 1>(0, make));
  };
  any("neg", ELEMENT(-x));
  any("abs", ELEMENT(x < T(0) ? T(-x) : x));
  any("relu", ELEMENT(x > T(0) ? x : T(0)));
  any("square", ELEMENT(x * x));
  any("sign", ELEMENT(T((T(0) < x) - (x < T(0)))));
  any("floor", []<class T>(const Attrs&) {
    if constexpr (std::is_floating_point_v<T>) return [](T x) { return std::floor(x); };
    else return [](T x) { return x; };
  });
  any("ceil", []<class T>(const Attrs&) {
    if constexpr (std::is_floating_point_v<T>) return [](T x) { return std::ceil(x); };
    else return [](T x) { return x; };
  });
  // round half to even, like libtorch (nearbyint in the default rounding mode)
  any("round", []<class T>(const Attrs&) {
    if constexpr (std::is_floating_point_v<T>) return [](T x) { return std::nearbyint(x); };
    else return [](T x) { return x; };
  });
  any("trunc", []<class T>(const Attrs&) {
    if constexpr (std::is_floating_point_v<T>) return [](T x) { return std::trunc(x); };
    else return [](T x) { return x; };
  });
  // NaN stays NaN: every comparison with it is false.
  any("clamp", []<class T>(const Attrs& a) {
    const bool has_min = a.b(0), has_max = a.b(2);
    const T lo = scalar_as<T>(a.s(1)), hi = scalar_as<T>(a.s(3));
    return [=](T x) {
      x = has_min && x < lo ? lo : x;
      return has_max && x > hi ? hi : x;
    };
  });
  any("nan_to_num", []<class T>(const Attrs& a) {
    if constexpr (std::is_floating_point_v<T>) {
      const T nan = T(a.d(0)), pos = T(a.d(1)), neg = T(a.d(2));
      return [=](T x) { return std::isnan(x) ? nan : x == INFINITY ? pos : x == -INFINITY ? neg : x; };
    } else {
      return [](T x) { return x; };
    }
  });

  auto predicate = [](const char* name, auto make) {
    register_kernel(name, kCPU, pointwise_kernel<R::Bool, Types::All, 1>(0, make));
  };
  predicate("logical_not", ELEMENT(!bool(x)));
  predicate("isnan", []<class T>(const Attrs&) {
    if constexpr (std::is_floating_point_v<T>) return [](T x) { return std::isnan(x); };
    else return [](T) { return false; };
  });
  predicate("isinf", []<class T>(const Attrs&) {
    if constexpr (std::is_floating_point_v<T>) return [](T x) { return std::isinf(x); };
    else return [](T) { return false; };
  });
  predicate("isfinite", []<class T>(const Attrs&) {
    if constexpr (std::is_floating_point_v<T>) return [](T x) { return std::isfinite(x); };
    else return [](T) { return true; };
  });
}

}  // namespace nnvm::cpu
