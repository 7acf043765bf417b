// Builds CPU kernels for pointwise ops from one element function.
//
// An op supplies a *maker*: a template lambda that, given the compute type T
// and the op's attributes, returns the element function over T. The maker runs
// once per kernel call, so attributes (alpha, a clamp bound, the 2 in x + 2)
// are read once and captured, and the element function is a plain lambda the
// compiler inlines into the vectorised loop of `pointwise`:
//
//   pointwise_kernel<ResultType::Same, Types::All, 2>(0,
//       []<class T>(const Attrs& a) { T alpha = scalar_as<T>(a.s(0));
//                                     return [alpha](T x, T y) { return x + alpha * y; }; });
#pragma once

#include <array>
#include <cmath>
#include <type_traits>

#include "nnvm/core/op.h"
#include "nnvm/core/ops/pointwise.h"
#include "nnvm/kernels/cpu/loops.h"

namespace nnvm::cpu {

// Which compute types a kernel is instantiated for.
enum class Types {
  Floating,  // float and double (ops only defined on floats: exp, sigmoid)
  All,       // bool, int64, float, double
};

template <class T> T scalar_as(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>) return s.is_floating() ? s.to_double() != 0 : s.to_int() != 0;
  else if constexpr (std::is_integral_v<T>) return s.is_floating() ? T(s.to_double()) : T(s.to_int());
  else return s.is_floating() ? T(s.to_double()) : T(s.to_int());
}

template <ResultType rule, Types types, size_t N, class Make>
KernelFn pointwise_kernel(int num_scalars, Make make) {
  return [num_scalars, make](absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
    const DType common = pointwise_common_dtype(in, a, num_scalars, rule);
    auto run = [&](auto zero) {
      using T = decltype(zero);
      using R = std::conditional_t<rule == ResultType::Bool, bool, T>;
      const auto f = make.template operator()<T>(a);
      std::array<const Tensor*, N> inputs;
      for (size_t k = 0; k < N; ++k) inputs[k] = &in[k];
      if constexpr (requires(const T* const* src, R* dst) { f.run(src, dst, int64_t(0)); })
        pointwise<T, N>(out[0], inputs, f);  // computes whole runs (loops.h)
      else
        pointwise<T, N>(out[0], inputs, [f](auto... x) -> R { return static_cast<R>(f(x...)); });
    };
    if constexpr (types == Types::Floating) {
      if (common == kFloat64) run(double{});
      else run(float{});
    } else {
      with_compute_type(common, run);
    }
  };
}

}  // namespace nnvm::cpu
