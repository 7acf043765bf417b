// CPU kernels of var, std and var_mean (core/ops/reduce.cpp). Two passes over
// each extent: the mean, then the squared deviations from it, which is exact
// enough without Welford's per-element division. The divisor is
// max(0, N - correction), so a correction of N or more gives inf or NaN, as in libtorch.
#include "nnvm/kernels/cpu/reduce.h"

namespace nnvm::cpu {

namespace {

template <class T> struct SquaredDeviationReducer {
  using acc_t = double;
  double mean;
  double init() const { return 0.0; }
  double step(double a, T x, int64_t) const {
    const double d = double(x) - mean;
    return a + d * d;
  }
  double merge(double a, double b) const { return a + b; }
};

enum class Moment { Var, Std, VarMean };

template <class T, Moment kind> void moments(const ReduceLayout& L, int64_t correction, T* var, T* mean) {
  const T* x = L.base<T>();
  const int64_t R = L.reduced, I = L.inner;
  const double n = double(R), divisor = std::max(0.0, n - double(correction));
  auto store = [&](int64_t k, double mu, double ss) {
    const double v = ss / divisor;
    var[k] = T(kind == Moment::Std ? std::sqrt(v) : v);
    if constexpr (kind == Moment::VarMean) mean[k] = T(mu);
  };
  for_each_slice(
      L,
      [&](int64_t o) {
        const T* row = x + o * R;
        const double mu = reduce_run(SumReducer<T>{}, row, R, 0) / n;
        store(o, mu, reduce_run(SquaredDeviationReducer<T>{mu}, row, R, 0));
      },
      [&](int64_t o, int64_t i0, int64_t cols) {
        double mu[kMaxTile], ss[kMaxTile];
        const T* p = x + o * R * I + i0;
        for (int64_t i = 0; i < cols; ++i) mu[i] = 0.0, ss[i] = 0.0;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t i = 0; i < cols; ++i) mu[i] += double(p[r * I + i]);
        for (int64_t i = 0; i < cols; ++i) mu[i] /= n;
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t i = 0; i < cols; ++i) {
            const double d = double(p[r * I + i]) - mu[i];
            ss[i] += d * d;
          }
        }
        for (int64_t i = 0; i < cols; ++i) store(o * I + i0 + i, mu[i], ss[i]);
      });
}

template <Moment kind> void moments_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const ReduceLayout L = reduce_layout(x, reduction_dims(a.ints(0), x.dim(), "var"), compute_dtype(x.dtype()));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    write_output<T>(out[0], [&](T* var) {
      if constexpr (kind == Moment::VarMean)
        write_output<T>(out[1], [&](T* mean) { moments<T, kind>(L, a.i(2), var, mean); });
      else
        moments<T, kind>(L, a.i(2), var, nullptr);
    });
  };
  if (x.dtype() == kFloat64) run(double{});
  else run(float{});
}

}  // namespace

NNVM_REGISTER(cpu_moment_kernels) {
  register_kernel("var", kCPU, moments_kernel<Moment::Var>);
  register_kernel("std", kCPU, moments_kernel<Moment::Std>);
  register_kernel("var_mean", kCPU, moments_kernel<Moment::VarMean>);
}

}  // namespace nnvm::cpu
