// CPU kernels of cumsum and cumsum_reverse (core/ops/reduce.cpp): a running
// sum along one dim, from the start or from the end, in double for floating
// types (libtorch's CPU accumulate type) and int64 for integers.
#include "nnvm/kernels/cpu/reduce.h"

namespace nnvm::cpu {

namespace {

template <bool reverse> void cumsum_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const DType dt = out[0].dtype();
  const ReduceLayout L = dim_layout(x, wrap_dim(a.i(0), x.dim(), "cumsum"), compute_dtype(dt));
  with_compute_type(dt, [&](auto zero) {
    using T = decltype(zero);
    using A = acc_of<T>;
    const T* xd = L.base<T>();
    const int64_t R = L.reduced, I = L.inner;
    write_output<T>(out[0], [&](T* y) {
      for_each_slice(
          L,
          [&](int64_t o) {
            A acc = A(0);
            for (int64_t step = 0; step < R; ++step) {
              const int64_t r = reverse ? R - 1 - step : step;
              acc = A(acc + A(xd[o * R + r]));
              y[o * R + r] = T(acc);
            }
          },
          [&](int64_t o, int64_t i0, int64_t n) {
            A acc[kMaxTile];
            for (int64_t i = 0; i < n; ++i) acc[i] = A(0);
            const int64_t base = o * R * I + i0;
            for (int64_t step = 0; step < R; ++step) {
              const int64_t r = reverse ? R - 1 - step : step;
              for (int64_t i = 0; i < n; ++i) {
                acc[i] = A(acc[i] + A(xd[base + r * I + i]));
                y[base + r * I + i] = T(acc[i]);
              }
            }
          });
    });
  });
}

}  // namespace

NNVM_REGISTER(cpu_scan_kernels) {
  register_kernel("cumsum", kCPU, cumsum_kernel<false>);
  register_kernel("cumsum_reverse", kCPU, cumsum_kernel<true>);
}

}  // namespace nnvm::cpu
