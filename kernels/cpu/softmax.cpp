// CPU kernels of softmax, log_softmax and logsumexp (core/ops/reduce.cpp):
// each row is a max, an exp-sum and a normalisation, all in one kernel. The
// max is subtracted before exp, so no finite input overflows. Softmax along
// the last dim computes the JIT's row kernel's bits (kernels/cpu/row_sums.h).
#include "nnvm/kernels/cpu/exp.h"
#include "nnvm/kernels/cpu/reduce.h"
#include "nnvm/kernels/cpu/row_sums.h"

namespace nnvm::cpu {

namespace {

template <class T> struct ExpSumReducer {
  using acc_t = double;
  T shift;
  double init() const { return 0.0; }
  double step(double a, T x, int64_t) const { return a + double(exp_of<T>(x - shift)); }
  double merge(double a, double b) const { return a + b; }
};

// The max subtracted before exp. A NaN is skipped here (x > a is false, and
// the compare vectorises) but still makes its whole row NaN through the
// exp-sum, as in libtorch.
template <class T> struct ShiftReducer {
  using acc_t = T;
  T init() const { return lowest<T>(); }
  T step(T a, T x, int64_t) const { return x > a ? x : a; }
  T merge(T a, T b) const { return step(a, b, 0); }
};

// Runs fn(T{}) with T the floating compute type of `t` (float or double).
template <class Fn> void with_floating_type(DType t, Fn fn) {
  if (t == kFloat64) fn(double{});
  else fn(float{});
}

// y = softmax(x) or log_softmax(x) along the reduced extent of L; y has L's layout.
template <class T, bool kLog> void softmax_into(const ReduceLayout& L, T* y) {
  const T* x = L.base<T>();
  const int64_t R = L.reduced, I = L.inner;
  const ShiftReducer<T> max;
  for_each_slice(
      L,
      [&](int64_t o) {
        const T* xr = x + o * R;
        T* yr = y + o * R;
        const T m = reduce_run(max, xr, R, 0);
        for (int64_t j = 0; j < R; ++j) yr[j] = exp_nonpositive_of<T>(xr[j] - m);
        const T s = row_fold<T>(R, [yr](T acc, int64_t j) { return acc + yr[j]; });
        if constexpr (kLog) {
          const T log_s = log_of<T>(s);
          for (int64_t j = 0; j < R; ++j) yr[j] = (xr[j] - m) - log_s;
        } else {
          const T inv = T(1) / s;
          for (int64_t j = 0; j < R; ++j) yr[j] *= inv;
        }
      },
      [&](int64_t o, int64_t i0, int64_t n) {
        T m[kMaxTile], k[kMaxTile], s[kMaxTile];
        const T* xp = x + o * R * I + i0;
        T* yp = y + o * R * I + i0;
        for (int64_t i = 0; i < n; ++i) m[i] = max.init(), s[i] = 0;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t i = 0; i < n; ++i) m[i] = max.step(m[i], xp[r * I + i], r);
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t i = 0; i < n; ++i) {
            const T e = exp_nonpositive_of<T>(xp[r * I + i] - m[i]);
            yp[r * I + i] = e;
            s[i] += e;
          }
        }
        for (int64_t i = 0; i < n; ++i) k[i] = kLog ? log_of<T>(s[i]) : T(1) / s[i];
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t i = 0; i < n; ++i) {
            if constexpr (kLog) yp[r * I + i] = (xp[r * I + i] - m[i]) - k[i];
            else yp[r * I + i] *= k[i];
          }
        }
      });
}

// The input is cast to the output's dtype first, like libtorch's softmax(x, dim, dtype).
template <bool kLog> void softmax_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const ReduceLayout L = dim_layout(x, wrap_dim(a.i(0), x.dim(), "softmax"), compute_dtype(out[0].dtype()));
  with_floating_type(out[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    write_output<T>(out[0], [&](T* y) { softmax_into<T, kLog>(L, y); });
  });
}

// log(sum(exp(x - m))) + m with m the max, or 0 when the max is infinite
// (libtorch's rule: an all -inf extent gives -inf, a +inf element gives +inf).
void logsumexp_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const ReduceLayout L =
      reduce_layout(x, reduction_dims(a.ints(0), x.dim(), "logsumexp"), compute_dtype(out[0].dtype()));
  with_floating_type(out[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* xd = L.base<T>();
    const int64_t R = L.reduced, I = L.inner;
    const ExtremumReducer<T, true> max;
    auto finite = [](T m) { return std::isinf(m) ? T(0) : m; };
    write_output<T>(out[0], [&](T* y) {
      for_each_slice(
          L,
          [&](int64_t o) {
            const T m = finite(reduce_run(max, xd + o * R, R, 0));
            y[o] = T(std::log(reduce_run(ExpSumReducer<T>{m}, xd + o * R, R, 0)) + m);
          },
          [&](int64_t o, int64_t i0, int64_t n) {
            T m[kMaxTile];
            double s[kMaxTile];
            const T* xp = xd + o * R * I + i0;
            for (int64_t i = 0; i < n; ++i) m[i] = max.init(), s[i] = 0.0;
            for (int64_t r = 0; r < R; ++r)
              for (int64_t i = 0; i < n; ++i) m[i] = max.step(m[i], xp[r * I + i], r);
            for (int64_t i = 0; i < n; ++i) m[i] = finite(m[i]);
            for (int64_t r = 0; r < R; ++r)
              for (int64_t i = 0; i < n; ++i) s[i] += double(exp_of<T>(xp[r * I + i] - m[i]));
            for (int64_t i = 0; i < n; ++i) y[o * I + i0 + i] = T(std::log(s[i]) + m[i]);
          });
    });
  });
}

}  // namespace

NNVM_REGISTER(cpu_softmax_kernels) {
  register_kernel("softmax", kCPU, softmax_kernel<false>);
  register_kernel("log_softmax", kCPU, softmax_kernel<true>);
  register_kernel("logsumexp", kCPU, logsumexp_kernel);
}

}  // namespace nnvm::cpu
