// CPU kernels of layer_norm, group_norm and batch_norm (core/ops/nn.cpp).
//
// Each kernel makes the input contiguous, splits its rows (layer norm: one per
// leading index; group norm: one per (sample, group); batch norm: one per
// channel) over the thread pool and, per row, computes the mean and variance
// and writes the normalised, affine-transformed values. A row is reduced by
// one thread in a fixed order, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "nnvm/core/op.h"
#include "nnvm/kernels/cpu/floating.h"
#include "nnvm/kernels/cpu/loops.h"
#include "nnvm/kernels/cpu/norm.h"
#include "nnvm/kernels/cpu/row_sums.h"

namespace nnvm::cpu {

namespace {

// Mean and biased variance of `blocks` runs of `len` elements, `stride` apart.
// Two passes (the mean first) keep the variance accurate when the mean is large.
template <class T, class S> std::pair<T, T> moments(const S* p, int64_t blocks, int64_t len, int64_t stride) {
  T sum = 0;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t j = 0; j < len; ++j) sum += convert<T>(p[b * stride + j]);
  const T n = T(blocks * len);
  const T mean = sum / n;
  T squares = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t j = 0; j < len; ++j) {
      const T d = convert<T>(p[b * stride + j]) - mean;
      squares += d * d;
    }
  }
  return {mean, squares / n};
}

// y = x * scale + shift over `len` elements: one channel of a group or batch norm.
template <class T, class S> void scale_shift(const S* x, S* y, int64_t len, T scale, T shift) {
  for (int64_t j = 0; j < len; ++j) y[j] = convert<S>(convert<T>(x[j]) * scale + shift);
}

// The optional weight and bias inputs that follow the `first` inputs, as T.
template <class T> struct Affine {
  Tensor weight, bias;  // keep the converted copies alive
  const T* w = nullptr;
  const T* b = nullptr;

  Affine(absl::Span<const Tensor> in, size_t first, bool has_weight, bool has_bias) {
    if (has_weight) {
      weight = contiguous_as<T>(in[first]);
      w = weight.data_ptr<T>();
    }
    if (has_bias) {
      bias = contiguous_as<T>(in[first + has_weight]);
      b = bias.data_ptr<T>();
    }
  }
  // The (scale, shift) of channel c normalised with (mean, rstd).
  std::pair<T, T> channel(int64_t c, T mean, T rstd) const {
    const T scale = w ? rstd * w[c] : rstd;
    return {scale, (b ? b[c] : T(0)) - mean * scale};
  }
};

// attrs: normalized_shape, has_weight, has_bias, eps
void layer_norm_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor x = in[0].contiguous();
  const int64_t cols = numel_of(a.ints(0));
  if (x.numel() == 0) return;
  const int64_t rows = x.numel() / cols;
  dispatch_floating(x.dtype(), "layer_norm", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const Affine<T> affine(in, 1, a.b(1), a.b(2));
    const T eps = T(a.d(3));
    const S* px = x.data_ptr<S>();
    S* py = out[0].data_ptr<S>();
    for_each_row(px, py, rows, cols, [&](const S* xr, S* yr) {
      const RowNorm<T> stats = layer_norm_row<T>(cols, [xr](int64_t j) { return convert<T>(xr[j]); }, eps);
      for (int64_t j = 0; j < cols; ++j)
        yr[j] = convert<S>(norm_value(convert<T>(xr[j]), stats, affine.w ? affine.w + j : nullptr,
                                      affine.b ? affine.b + j : nullptr));
    });
  });
}

// attrs: num_groups, has_weight, has_bias, eps. x: [N, C, *]
void group_norm_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor x = in[0].contiguous();
  if (x.numel() == 0) return;
  const int64_t n = x.size(0), c = x.size(1), groups = a.i(0);
  const int64_t spatial = x.numel() / (n * c), per_group = c / groups, len = per_group * spatial;
  dispatch_floating(x.dtype(), "group_norm", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const Affine<T> affine(in, 1, a.b(1), a.b(2));
    const T eps = T(a.d(3));
    const S* px = x.data_ptr<S>();
    S* py = out[0].data_ptr<S>();
    // Row r = (sample, group) covers channels [g * per_group, (g + 1) * per_group): contiguous.
    parallel_for(0, n * groups, row_grain(len), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const auto [mean, var] = moments<T>(px + r * len, 1, len, 0);
        const T rstd = T(1) / std::sqrt(var + eps);
        const int64_t first_channel = (r % groups) * per_group;
        for (int64_t k = 0; k < per_group; ++k) {
          const auto [scale, shift] = affine.channel(first_channel + k, mean, rstd);
          const int64_t off = r * len + k * spatial;
          scale_shift(px + off, py + off, spatial, scale, shift);
        }
      }
    });
  });
}

// inputs: x, [running_mean, running_var], [weight], [bias]
// attrs: training, has_running, has_weight, has_bias, momentum, eps
// outputs: y, and (training with running stats) the updated running mean and var
void batch_norm_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor x = in[0].contiguous();
  const bool training = a.b(0), has_running = a.b(1);
  const int64_t n = x.size(0), c = x.size(1);
  const int64_t spatial = n * c == 0 ? 0 : x.numel() / (n * c);
  const int64_t count = n * spatial;  // values per channel
  dispatch_floating(x.dtype(), "batch_norm", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const Affine<T> affine(in, has_running ? 3 : 1, a.b(2), a.b(3));
    const T momentum = T(a.d(4)), eps = T(a.d(5));
    Tensor running_mean, running_var;
    if (has_running) {
      running_mean = contiguous_as<T>(in[1]);
      running_var = contiguous_as<T>(in[2]);
    }
    const T* rm = has_running ? running_mean.data_ptr<T>() : nullptr;
    const T* rv = has_running ? running_var.data_ptr<T>() : nullptr;
    std::vector<T> new_mean(static_cast<size_t>(c)), new_var(static_cast<size_t>(c));
    const S* px = x.data_ptr<S>();
    S* py = out[0].data_ptr<S>();
    parallel_for(0, c, row_grain(count), [&](int64_t c0, int64_t c1) {
      for (int64_t ch = c0; ch < c1; ++ch) {
        const int64_t first = ch * spatial, stride = c * spatial;
        T mean, var;
        if (training) {
          std::tie(mean, var) = moments<T>(px + first, n, spatial, stride);
          // An empty batch leaves the running statistics as they were (libtorch's rule).
          if (rm) {
            new_mean[ch] = count == 0 ? rm[ch] : (T(1) - momentum) * rm[ch] + momentum * mean;
            const T unbiased = var * T(count) / T(count - 1);
            new_var[ch] = count == 0 ? rv[ch] : (T(1) - momentum) * rv[ch] + momentum * unbiased;
          }
        } else {
          mean = rm[ch];
          var = rv[ch];
        }
        const auto [scale, shift] = affine.channel(ch, mean, T(1) / std::sqrt(var + eps));
        for (int64_t i = 0; i < n; ++i) scale_shift(px + first + i * stride, py + first + i * stride, spatial, scale, shift);
      }
    });
    if (out.size() == 3) {
      store(out[1], new_mean);
      store(out[2], new_var);
    }
  });
}

// inputs: g, x, [weight]; attrs: normalized_shape, has_weight, has_bias, eps
// outputs: dx, [dweight], [dbias]
//
// One pass over the rows: each row recomputes its mean and rstd as the
// forward did (kernels/cpu/row_sums.h, the JIT's arithmetic), writes dx and
// adds g * xhat and g into per-block partial sums
// of dweight and dbias. Blocks are fixed runs of rows (not per-thread), and
// their partials are added in block order, so the sums do not depend on the
// thread count.
void layer_norm_backward_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor g = in[0].contiguous(), x = in[1].contiguous();
  const bool has_weight = a.b(1), has_bias = a.b(2);
  const int64_t cols = numel_of(a.ints(0));
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  const int64_t block = row_grain(cols), blocks = (rows + block - 1) / block;
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const Affine<T> affine(in, 2, has_weight, false);
    const T eps = T(a.d(3));
    const S *px = x.data_ptr<S>(), *pg = g.data_ptr<S>();
    S* pdx = out[0].data_ptr<S>();
    const bool params = has_weight || has_bias;
    // partial[b]: dweight then dbias of block b.
    std::vector<T> partial(params ? size_t(blocks * 2 * cols) : 0, T(0));
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      std::vector<T> dxhat(static_cast<size_t>(cols));
      for (int64_t b = b0; b < b1; ++b) {
        T* dw = params ? partial.data() + b * 2 * cols : nullptr;
        for (int64_t r = b * block, e = std::min(rows, r + block); r < e; ++r) {
          const S *xr = px + r * cols, *gr = pg + r * cols;
          const RowNorm<T> stats = layer_norm_row<T>(cols, [xr](int64_t j) { return convert<T>(xr[j]); }, eps);
          auto xhat = [&](int64_t j) { return (convert<T>(xr[j]) - stats.mean) * stats.rstd; };
          for (int64_t j = 0; j < cols; ++j) {
            const T gj = convert<T>(gr[j]);
            dxhat[size_t(j)] = affine.w ? gj * affine.w[j] : gj;
            if (dw) {
              dw[j] = std::fma(gj, xhat(j), dw[j]);
              dw[cols + j] += gj;
            }
          }
          auto d = [&](int64_t j) { return dxhat[size_t(j)]; };
          const T m_dx = mean_of_products<T>(cols, d, xhat), m_d = mean_of_values<T>(cols, d);
          S* dxr = pdx + r * cols;
          for (int64_t j = 0; j < cols; ++j)
            dxr[j] = convert<S>(norm_grad(dxhat[size_t(j)], xhat(j), stats.rstd, m_dx, &m_d));
        }
      }
    });
    size_t k = 1;
    if (has_weight) store(out[k++], sum_blocks(partial.data(), blocks, 2 * cols, cols));
    if (has_bias) store(out[k], sum_blocks(partial.data() + cols, blocks, 2 * cols, cols));
  });
}

}  // namespace

NNVM_REGISTER(cpu_norm_kernels) {
  register_kernel("layer_norm", kCPU, layer_norm_kernel);
  register_kernel("layer_norm_backward", kCPU, layer_norm_backward_kernel);
  register_kernel("group_norm", kCPU, group_norm_kernel);
  register_kernel("batch_norm", kCPU, batch_norm_kernel);
}

}  // namespace nnvm::cpu
