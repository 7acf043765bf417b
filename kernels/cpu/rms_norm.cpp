// CPU kernels of rms_norm and rms_norm_backward (core/ops/rms_norm.cpp).
//
// Rows are the leading indices, each normalised over its trailing
// normalized_shape elements; a row is reduced by one thread in order, and the
// weight's gradient adds fixed blocks of rows in block order (as
// layer_norm_backward), so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "nnvm/core/op.h"
#include "nnvm/kernels/cpu/floating.h"
#include "nnvm/kernels/cpu/loops.h"
#include "nnvm/kernels/cpu/norm.h"
#include "nnvm/kernels/cpu/row_sums.h"

namespace nnvm::cpu {

namespace {

// 1 / sqrt(mean(x^2) + eps) of one row (kernels/cpu/row_sums.h, the JIT's arithmetic).
template <class T, class S> T row_rstd(const S* x, int64_t cols, T eps) {
  return rms_norm_row_rstd<T>(cols, [x](int64_t j) { return convert<T>(x[j]); }, eps);
}

// attrs: normalized_shape, has_weight, eps
void rms_norm_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor x = in[0].contiguous();
  const int64_t cols = numel_of(a.ints(0));
  if (x.numel() == 0) return;
  const int64_t rows = x.numel() / cols;
  dispatch_floating(x.dtype(), "rms_norm", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const Tensor weight = a.b(1) ? contiguous_as<T>(in[1]) : Tensor();
    const T* w = a.b(1) ? weight.data_ptr<T>() : nullptr;
    const T eps = T(a.d(2));
    const S* px = x.data_ptr<S>();
    S* py = out[0].data_ptr<S>();
    for_each_row(px, py, rows, cols, [&](const S* xr, S* yr) {
      const T rstd = row_rstd<T>(xr, cols, eps);
      for (int64_t j = 0; j < cols; ++j)
        yr[j] = convert<S>(norm_value<T>(convert<T>(xr[j]), RowNorm<T>{T(0), rstd}, w ? w + j : nullptr, nullptr));
    });
  });
}

// inputs: g, x, [weight]; attrs: rms_norm's. outputs: dx, [dweight]
//   dx = rstd * (dxhat - xhat * mean(dxhat * xhat)), dxhat = g * weight, xhat = x * rstd.
void rms_norm_backward_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor g = in[0].contiguous(), x = in[1].contiguous();
  const bool has_weight = a.b(1);
  const int64_t cols = numel_of(a.ints(0));
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  const int64_t block = row_grain(cols), blocks = (rows + block - 1) / block;
  dispatch_floating(x.dtype(), "rms_norm_backward", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const Tensor weight = has_weight ? contiguous_as<T>(in[2]) : Tensor();
    const T* w = has_weight ? weight.data_ptr<T>() : nullptr;
    const T eps = T(a.d(2));
    const S *px = x.data_ptr<S>(), *pg = g.data_ptr<S>();
    S* pdx = out[0].data_ptr<S>();
    std::vector<T> partial(has_weight ? size_t(blocks * cols) : 0, T(0));  // per block: sum of g * xhat
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        T* dw = has_weight ? partial.data() + b * cols : nullptr;
        for (int64_t r = b * block, e = std::min(rows, r + block); r < e; ++r) {
          const S *xr = px + r * cols, *gr = pg + r * cols;
          const T rstd = row_rstd<T>(xr, cols, eps);
          auto xhat = [&](int64_t j) { return convert<T>(xr[j]) * rstd; };
          auto dxhat = [&](int64_t j) { return w ? convert<T>(gr[j]) * w[j] : convert<T>(gr[j]); };
          if (dw)
            for (int64_t j = 0; j < cols; ++j) dw[j] = std::fma(convert<T>(gr[j]), xhat(j), dw[j]);
          const T m_dx = mean_of_products<T>(cols, dxhat, xhat);
          S* dxr = pdx + r * cols;
          for (int64_t j = 0; j < cols; ++j) dxr[j] = convert<S>(norm_grad<T>(dxhat(j), xhat(j), rstd, m_dx, nullptr));
        }
      }
    });
    if (has_weight) store(out[1], sum_blocks(partial.data(), blocks, cols, cols));
  });
}

}  // namespace

NNVM_REGISTER(cpu_rms_norm_kernels) {
  register_kernel("rms_norm", kCPU, rms_norm_kernel);
  register_kernel("rms_norm_backward", kCPU, rms_norm_backward_kernel);
}

}  // namespace nnvm::cpu
