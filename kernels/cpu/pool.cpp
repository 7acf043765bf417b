// CPU kernels of the pooling and resampling ops declared in core/ops/pool.cpp.
// Each output plane (one image, one channel) depends on one input plane only,
// so planes are the unit of parallel work and every output element is
// computed by a single loop in a fixed order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "nnvm/core/op.h"
#include "nnvm/core/ops/image.h"
#include "nnvm/kernels/cpu/staging.h"
#include "nnvm/kernels/cpu/window.h"

namespace nnvm::cpu {

namespace {

struct Planes {
  int64_t height, width, out_height, out_width;
};

// Calls body(in, row_stride, col_stride, out) for every (image, channel)
// plane: `in` is the input plane read through its strides, `out` the
// contiguous output plane. Runs in double for float64 and in float otherwise.
template <class Body> void for_each_plane(const Tensor& x, const Tensor& y, Body body) {
  if (y.numel() == 0) return;
  const Planes p{x.size(2), x.size(3), y.size(2), y.size(3)};
  auto run = [&](auto zero, const Tensor& in, const Tensor& out) {
    using T = decltype(zero);
    const T* px = in.data_ptr<T>();
    T* py = out.data_ptr<T>();
    const int64_t channels = in.size(1), out_plane = p.out_height * p.out_width;
    const int64_t s0 = in.stride(0), s1 = in.stride(1), sh = in.stride(2), sw = in.stride(3);
    const int64_t work = std::max<int64_t>(1, out_plane + p.height * p.width);
    parallel_for(0, in.size(0) * channels, std::max<int64_t>(1, kGrain / work), [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q)
        body(p, px + (q / channels) * s0 + (q % channels) * s1, sh, sw, py + q * out_plane);
    });
  };
  if (y.dtype() == kFloat64) return run(double{}, x, y);
  if (y.dtype() == kFloat32) return run(float{}, x, y);
  const Tensor result = empty(y.sizes(), kFloat32);
  run(float{}, staged(x, kFloat32), result);
  convert_into(y, result);
}

// ---- max pooling ----
// A window's scan keeps its first largest value; NaN wins, as in libtorch:
// the scan takes a larger value or a NaN, so a window with NaN gives its
// last NaN (and the backward sends the gradient there).
//
// The kernels work an output row at a time: for each tap (kh, kw) of the
// window, one loop over the row's columns whose tap is inside the input,
// keeping `v > best ? v : best`. That loop is a branch-free max the compiler
// vectorises (a branch on it, with random data, is mispredicted half the
// time), and each output still meets its taps in the scan's order. NaN
// never passes `v > best`, so the loop also ORs together `v != v`, whether
// v is NaN (an OR, unlike a sum, the compiler may vectorise: it does not
// depend on the order); a row that met a NaN is scanned again in full by the
// rule, which is rare.

// A max pooling's axes, with each output row's taps and each column tap's
// outputs worked out once per call (they cost a division each).
struct MaxPoolGeometry {
  WindowAxis rows, cols;
  std::vector<std::pair<int64_t, int64_t>> row_taps;     // by output row: [first, last) of its row taps
  std::vector<std::pair<int64_t, int64_t>> tap_columns;  // by column tap: [lo, hi) of the outputs it feeds
  MaxPoolGeometry(const Attrs& a, const Planes& p) {
    const IntArrayRef k = a.ints(0), s = a.ints(1), pad = a.ints(2), dil = a.ints(3);
    rows = {k[0], s[0], pad[0], dil[0], p.height, p.out_height};
    cols = {k[1], s[1], pad[1], dil[1], p.width, p.out_width};
    for (int64_t o = 0; o < p.out_height; ++o) row_taps.push_back(rows.taps(o));
    for (int64_t t = 0; t < cols.k; ++t) tap_columns.push_back(cols.outputs_of_tap(t));
  }

  // The taps of output row oh's windows a column tap at a time, row taps
  // first: f(ih, lo, n, iw) for the n outputs from lo whose tap is inside
  // the input, ih the tap's input row and iw output lo's input column (the
  // next output's is iw + cols.stride).
  template <class F> void for_each_row_tap(int64_t oh, F f) const {
    const auto [h0, h1] = row_taps[size_t(oh)];
    for (int64_t kh = h0; kh < h1; ++kh)
      for (int64_t kw = 0; kw < cols.k; ++kw) {
        const auto [lo, hi] = tap_columns[size_t(kw)];
        // Written out: through WindowAxis::at the backward ran 15% slower
        // (BM_MaxPool2d/eager/backward, alternated three times, 3.1 against 2.7 ms).
        if (lo < hi)
          f(oh * rows.stride - rows.pad + kh * rows.dil, lo, hi - lo, lo * cols.stride - cols.pad + kw * cols.dil);
      }
  }
  // The taps of each window of output row oh in the scan's order: f(ow, ih, iw).
  template <class F> void for_each_tap(int64_t oh, F f) const {
    const auto [h0, h1] = row_taps[size_t(oh)];
    for (int64_t ow = 0; ow < cols.outputs; ++ow) {
      const auto [w0, w1] = cols.taps(ow);
      for (int64_t kh = h0; kh < h1; ++kh)
        for (int64_t kw = w0; kw < w1; ++kw)
          f(ow, rows.at(oh, kh), cols.at(ow, kw));
    }
  }
};

// best[o] = max(best[o], src[o·step]) for o < n, the first of equal values
// kept; returns whether a NaN went by (nonzero).
template <class T> unsigned max_into(T* best, const T* src, int64_t step, int64_t n) {
  unsigned nan = 0;
  with_step(step, [&](auto s) {
    for (int64_t o = 0; o < n; ++o) {
      const T v = src[o * s];
      nan |= unsigned(v != v);
      best[o] = v > best[o] ? v : best[o];
    }
  });
  return nan;
}

// The same keeping where each best came from, src[o·step] being element
// at + o·step of the plane; arg[o] < 0 (no tap yet) takes any value. I is
// int32_t where the plane allows: lanes as wide as a float's vectorise
// better.
template <class T, class I> unsigned argmax_into(T* best, I* arg, const T* src, int64_t step, I at, int64_t n) {
  unsigned nan = 0;
  with_step(step, [&](auto s) {
    for (int64_t o = 0; o < n; ++o) {
      const T v = src[o * s];
      nan |= unsigned(v != v);
      const bool take = (v > best[o]) | (arg[o] < 0);
      best[o] = take ? v : best[o];
      arg[o] = take ? I(at + o * s) : arg[o];
    }
  });
  return nan;
}

// 2x2 windows with stride 2, no padding or dilation, every window inside the
// input (most CNNs' pooling): one pass over an output row reads its two
// input rows and meets each window's four taps in the scan's order, taking a
// larger value or a NaN, which is the rule in full: no NaN rescan,
// and the backward writes every input gradient itself, without zeroing first.
bool is_2x2_stride_2(const Attrs& a, const Planes& p) {
  const IntArrayRef k = a.ints(0), s = a.ints(1), pad = a.ints(2), dil = a.ints(3);
  return k[0] == 2 && k[1] == 2 && s[0] == 2 && s[1] == 2 && pad[0] == 0 && pad[1] == 0 && dil[0] == 1 &&
         dil[1] == 1 && 2 * p.out_height <= p.height && 2 * p.out_width <= p.width;
}

// Eight windows at a time, each of columns 2j, 2j + 1 in two input rows, in
// GCC's vector types (lowered to whatever vectors the target has): an
// output row is short (14 in a 28-wide image), shorter than the 16 lanes
// the compiler's own vectorised loop would take before it fell back to
// scalar code (see blocks() for rows that are not a multiple of 8).
struct Window2x2 {
  typedef float V __attribute__((vector_size(32)));
  typedef int32_t Tap __attribute__((vector_size(32)));
  static constexpr int64_t kWindows = 8;

  // No function takes or returns a vector by value: without AVX in the
  // build's target, that would change how it is passed (-Wpsabi).
  static void load(V& v, const float* p) { std::memcpy(&v, p, sizeof(v)); }

  // Each window's value and winning tap (0 to 3 in the scan's order, row by
  // row) for the 16 columns at r0 and r1.
  static void scan(const float* r0, const float* r1, V& best, Tap& tap) {
    V a0, a1, b0, b1;
    load(a0, r0);
    load(a1, r0 + 8);
    load(b0, r1);
    load(b1, r1 + 8);
    const V taps[4] = {__builtin_shufflevector(a0, a1, 0, 2, 4, 6, 8, 10, 12, 14),
                       __builtin_shufflevector(a0, a1, 1, 3, 5, 7, 9, 11, 13, 15),
                       __builtin_shufflevector(b0, b1, 0, 2, 4, 6, 8, 10, 12, 14),
                       __builtin_shufflevector(b0, b1, 1, 3, 5, 7, 9, 11, 13, 15)};
    best = taps[0];
    tap = Tap{};
    for (int32_t t = 1; t < 4; ++t) {
      const Tap take = (taps[t] > best) | (taps[t] != taps[t]);  // a larger value or a NaN: the rule in full
      best = take ? taps[t] : best;
      tap = take ? Tap{} + t : tap;
    }
  }

  // f(r0, r1, j, count) for the row's windows in blocks of kWindows from
  // window j, count of them valid. A row of kWindows or more ends with a
  // block overlapping the one before (its windows computed twice, to the
  // same results); a shorter row reads a zero-padded copy of its columns.
  template <class F> static void blocks(const float* r0, const float* r1, int64_t n, F f) {
    if (n < kWindows) {
      float p0[2 * kWindows] = {}, p1[2 * kWindows] = {};
      std::copy(r0, r0 + 2 * n, p0);
      std::copy(r1, r1 + 2 * n, p1);
      return f(p0, p1, 0, n);
    }
    for (int64_t j = 0;; j += kWindows) {
      j = std::min(j, n - kWindows);
      f(r0 + 2 * j, r1 + 2 * j, j, kWindows);
      if (j + kWindows == n) return;
    }
  }

  static void max(const float* r0, const float* r1, int64_t n, float* y) {
    blocks(r0, r1, n, [&](const float* a, const float* b, int64_t j, int64_t count) {
      V best;
      Tap tap;
      scan(a, b, best, tap);
      std::memcpy(y + j, &best, size_t(count) * sizeof(float));
    });
  }

  // o0 and o1, the input gradient's rows, get g[j] at each window's winning
  // tap and 0 at its other three.
  static void grad(const float* r0, const float* r1, const float* g, int64_t n, float* o0, float* o1) {
    blocks(r0, r1, n, [&](const float* a, const float* b, int64_t j, int64_t count) {
      V best, gj{};
      Tap tap;
      scan(a, b, best, tap);
      std::memcpy(&gj, g + j, size_t(count) * sizeof(float));
      gj += V{};  // as the general path's 0 += g[j]: -0 becomes +0 there too
      const V none{};
      const V out[4] = {tap == 0 ? gj : none, tap == 1 ? gj : none, tap == 2 ? gj : none, tap == 3 ? gj : none};
      const V row0[2] = {__builtin_shufflevector(out[0], out[1], 0, 8, 1, 9, 2, 10, 3, 11),
                         __builtin_shufflevector(out[0], out[1], 4, 12, 5, 13, 6, 14, 7, 15)};
      const V row1[2] = {__builtin_shufflevector(out[2], out[3], 0, 8, 1, 9, 2, 10, 3, 11),
                         __builtin_shufflevector(out[2], out[3], 4, 12, 5, 13, 6, 14, 7, 15)};
      std::memcpy(o0 + 2 * j, row0, size_t(2 * count) * sizeof(float));
      std::memcpy(o1 + 2 * j, row1, size_t(2 * count) * sizeof(float));
    });
  }
};

void max_pool_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor &x0 = in[0], &y0 = out[0];
  const Planes planes{x0.size(2), x0.size(3), y0.size(2), y0.size(3)};
  const MaxPoolGeometry g(a, planes);
  const bool two_by_two = is_2x2_stride_2(a, planes);
  for_each_plane(x0, y0, [&]<class T>(const Planes& p, const T* x, int64_t sh, int64_t sw, T* y) {
    if constexpr (std::is_same_v<T, float>) {
      if (two_by_two && sw == 1) {
        for (int64_t oh = 0; oh < p.out_height; ++oh)
          Window2x2::max(x + 2 * oh * sh, x + (2 * oh + 1) * sh, p.out_width, y + oh * p.out_width);
        return;
      }
    }
    for (int64_t oh = 0; oh < p.out_height; ++oh) {
      T* row = y + oh * p.out_width;
      // Padding is -inf: positions outside the input never win.
      std::fill(row, row + p.out_width, -std::numeric_limits<T>::infinity());
      unsigned nan = 0;
      g.for_each_row_tap(oh, [&](int64_t ih, int64_t lo, int64_t n, int64_t iw) {
        nan |= max_into(row + lo, x + ih * sh + iw * sw, g.cols.stride * sw, n);
      });
      if (nan) [[unlikely]]  // the rule in full
        g.for_each_tap(oh, [&](int64_t ow, int64_t ih, int64_t iw) {
          const T v = x[ih * sh + iw * sw];
          if (v != v) row[ow] = v;
        });
    }
  });
}

// libtorch's rule: a window is clipped to the padded input to count its size
// (count_include_pad), then to the input to sum.
struct AvgWindow {
  int64_t h0, h1, w0, w1;  // the window clipped to the input
  int64_t count;           // the divisor
};

AvgWindow avg_window(const Planes& p, int64_t oh, int64_t ow, IntArrayRef k, IntArrayRef s, IntArrayRef pad,
                     bool count_include_pad) {
  int64_t h0 = oh * s[0] - pad[0], w0 = ow * s[1] - pad[1];
  int64_t h1 = std::min(h0 + k[0], p.height + pad[0]), w1 = std::min(w0 + k[1], p.width + pad[1]);
  const int64_t padded_count = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, p.height);
  w1 = std::min(w1, p.width);
  return {h0, h1, w0, w1, count_include_pad ? padded_count : (h1 - h0) * (w1 - w0)};
}

// Adaptive pooling's window of output pixel (oh, ow): libtorch's
// floor(o * in / out) to ceil((o + 1) * in / out), never empty.
AvgWindow adaptive_window(const Planes& p, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * p.height / p.out_height, h1 = ((oh + 1) * p.height + p.out_height - 1) / p.out_height;
  const int64_t w0 = ow * p.width / p.out_width, w1 = ((ow + 1) * p.width + p.out_width - 1) / p.out_width;
  return {h0, h1, w0, w1, (h1 - h0) * (w1 - w0)};
}

// Average pooling, fixed or adaptive: each output pixel is its window's sum
// over the window's divisor (an empty window gives 0). window(oh, ow) -> AvgWindow.
template <class T, class Window>
void window_means(const Planes& p, const T* x, int64_t sh, int64_t sw, T* y, Window window) {
  for (int64_t oh = 0; oh < p.out_height; ++oh)
    for (int64_t ow = 0; ow < p.out_width; ++ow) {
      const AvgWindow win = window(oh, ow);
      T sum = 0;
      for (int64_t ih = win.h0; ih < win.h1; ++ih)
        for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += x[ih * sh + iw * sw];
      y[oh * p.out_width + ow] = win.h0 < win.h1 && win.w0 < win.w1 ? sum / T(win.count) : T(0);
    }
}

void avg_pool_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const IntArrayRef k = a.ints(0), s = a.ints(1), pad = a.ints(2);
  const bool count_include_pad = a.b(4);
  for_each_plane(in[0], out[0], [&]<class T>(const Planes& p, const T* x, int64_t sh, int64_t sw, T* y) {
    window_means(p, x, sh, sw, y, [&](int64_t oh, int64_t ow) {
      return avg_window(p, oh, ow, k, s, pad, count_include_pad);
    });
  });
}

void adaptive_avg_pool_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs&) {
  for_each_plane(in[0], out[0], [&]<class T>(const Planes& p, const T* x, int64_t sh, int64_t sw, T* y) {
    window_means(p, x, sh, sw, y, [&](int64_t oh, int64_t ow) { return adaptive_window(p, oh, ow); });
  });
}

// Source pixels per output pixel: a user's scale factor maps back by its
// inverse, otherwise by in/out (libtorch's area_pixel_compute_scale).
template <class T> T source_scale(int64_t in, int64_t out, double user_scale, bool align_corners) {
  if (align_corners) return out > 1 ? T(in - 1) / T(out - 1) : T(0);
  return user_scale > 0 ? T(1.0 / user_scale) : T(in) / T(out);
}

// Calls f(oh, ow, ih, iw) for every output pixel with the input pixel
// nearest-neighbour sampling reads for it (nearest_source, core/ops/interpolate.h):
// the forward gathers, the backward scatters, over the same pairs.
template <class F> void for_each_nearest(const Planes& p, double user_h, double user_w, F f) {
  for (int64_t oh = 0; oh < p.out_height; ++oh) {
    const int64_t ih = nearest_source(oh, p.height, p.out_height, user_h, false);
    for (int64_t ow = 0; ow < p.out_width; ++ow) f(oh, ow, ih, nearest_source(ow, p.width, p.out_width, user_w, false));
  }
}

void nearest_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const double user_h = a.d(1), user_w = a.d(2);
  for_each_plane(in[0], out[0], [&]<class T>(const Planes& p, const T* x, int64_t sh, int64_t sw, T* y) {
    for_each_nearest(p, user_h, user_w, [&](int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
      y[oh * p.out_width + ow] = x[ih * sh + iw * sw];
    });
  });
}

// The two source indices and weights of one output coordinate.
template <class T> struct Lerp {
  int64_t i0, i1;
  T w0, w1;
};
template <class T> Lerp<T> lerp_at(int64_t dst, int64_t in, T scale, bool align_corners) {
  T src = align_corners ? scale * T(dst) : scale * (T(dst) + T(0.5)) - T(0.5);
  if (src < T(0)) src = T(0);
  const int64_t i0 = std::min(int64_t(src), in - 1);
  const T w1 = src - T(i0);
  return {i0, i0 < in - 1 ? i0 + 1 : i0, T(1) - w1, w1};
}

// Calls f(oh, ow, h, w) for every output pixel with its two source rows h and
// columns w and their weights: the forward gathers, the backward scatters,
// over the same four pixels.
template <class T, class F>
void for_each_bilinear(const Planes& p, double user_h, double user_w, bool align_corners, F f) {
  const T scale_h = source_scale<T>(p.height, p.out_height, user_h, align_corners);
  const T scale_w = source_scale<T>(p.width, p.out_width, user_w, align_corners);
  for (int64_t oh = 0; oh < p.out_height; ++oh) {
    const Lerp<T> h = lerp_at(oh, p.height, scale_h, align_corners);
    for (int64_t ow = 0; ow < p.out_width; ++ow) f(oh, ow, h, lerp_at(ow, p.width, scale_w, align_corners));
  }
}

void bilinear_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const double user_h = a.d(1), user_w = a.d(2);
  const bool align_corners = a.b(3);
  for_each_plane(in[0], out[0], [&]<class T>(const Planes& p, const T* x, int64_t sh, int64_t sw, T* y) {
    auto at = [&](int64_t oh, int64_t ow, const Lerp<T>& h, const Lerp<T>& w) {
      const T top = w.w0 * x[h.i0 * sh + w.i0 * sw] + w.w1 * x[h.i0 * sh + w.i1 * sw];
      const T bottom = w.w0 * x[h.i1 * sh + w.i0 * sw] + w.w1 * x[h.i1 * sh + w.i1 * sw];
      y[oh * p.out_width + ow] = h.w0 * top + h.w1 * bottom;
    };
    for_each_bilinear<T>(p, user_h, user_w, align_corners, at);
  });
}

// ---- backward kernels ----
// A gradient plane is the `in` of for_each_plane and the input-gradient plane
// its `out`; body(p, g, sh, sw, gx) sees the forward's geometry and adds into
// a zeroed gx, one plane per task, so sums keep a fixed order.
template <class Body> void for_each_grad_plane(const Tensor& grad, const Tensor& grad_input, Body body) {
  for_each_plane(grad, grad_input, [&]<class T>(const Planes& p, const T* g, int64_t sh, int64_t sw, T* gx) {
    std::fill(gx, gx + p.out_height * p.out_width, T(0));
    body(Planes{p.out_height, p.out_width, p.height, p.width}, g, sh, sw, gx);
  });
}

// Window2x2's backward: every input gradient written, none added to.
void max_pool_backward_2x2(const float* px, const float* pg, const Planes& p, int64_t planes, int64_t grain,
                           float* gx) {
  const int64_t plane = p.height * p.width, out_plane = p.out_height * p.out_width;
  parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const float* x = px + q * plane;
      float* out = gx + q * plane;
      for (int64_t oh = 0; oh < p.out_height; ++oh) {
        float* o0 = out + 2 * oh * p.width;
        float* o1 = o0 + p.width;
        Window2x2::grad(x + 2 * oh * p.width, x + (2 * oh + 1) * p.width, pg + q * out_plane + oh * p.out_width,
                        p.out_width, o0, o1);
        std::fill(o0 + 2 * p.out_width, o0 + p.width, 0.0f);  // columns no window reads
        std::fill(o1 + 2 * p.out_width, o1 + p.width, 0.0f);
      }
      std::fill(out + 2 * p.out_height * p.width, out + plane, 0.0f);  // rows no window reads
    }
  });
}

template <class T, class I>
void max_pool_backward_indexed(const Tensor& grad, const Tensor& input, const Attrs& a, T* gx) {
  const Tensor gs = staged(grad, dtype_of_v<T>), xs = staged(input, dtype_of_v<T>);
  const T* pg = gs.data_ptr<T>();
  const T* px = xs.data_ptr<T>();
  const Planes p{input.size(2), input.size(3), grad.size(2), grad.size(3)};
  const MaxPoolGeometry geo(a, p);
  const int64_t plane = p.height * p.width, out_plane = p.out_height * p.out_width;
  const int64_t work = plane + out_plane * geo.rows.k * geo.cols.k;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work));
  if constexpr (std::is_same_v<T, float>) {
    if (is_2x2_stride_2(a, p)) return max_pool_backward_2x2(px, pg, p, input.size(0) * input.size(1), grain, gx);
  }
  parallel_for(0, input.size(0) * input.size(1), grain, [&](int64_t begin, int64_t end) {
    std::vector<T> best(size_t(p.out_width));
    std::vector<I> arg(size_t(p.out_width));
    for (int64_t q = begin; q < end; ++q) {
      const T* x = px + q * plane;
      const T* g = pg + q * out_plane;
      T* out = gx + q * plane;
      std::fill(out, out + plane, T(0));
      for (int64_t oh = 0; oh < p.out_height; ++oh) {
        std::fill(arg.begin(), arg.end(), -1);
        unsigned nan = 0;
        geo.for_each_row_tap(oh, [&](int64_t ih, int64_t lo, int64_t n, int64_t iw) {
          const int64_t at = ih * p.width + iw;
          nan |= argmax_into(best.data() + lo, arg.data() + lo, x + at, geo.cols.stride, I(at), n);
        });
        if (nan) [[unlikely]]  // the rule in full: a NaN takes the gradient
          geo.for_each_tap(oh, [&](int64_t ow, int64_t ih, int64_t iw) {
            if (x[ih * p.width + iw] != x[ih * p.width + iw]) arg[size_t(ow)] = I(ih * p.width + iw);
          });
        const T* grow = g + oh * p.out_width;
        for (int64_t ow = 0; ow < p.out_width; ++ow)
          if (arg[size_t(ow)] >= 0) out[arg[size_t(ow)]] += grow[ow];
      }
    }
  });
}

template <class T> void max_pool_backward(const Tensor& grad, const Tensor& input, const Attrs& a, T* gx) {
  if (input.size(2) * input.size(3) <= std::numeric_limits<int32_t>::max())
    return max_pool_backward_indexed<T, int32_t>(grad, input, a, gx);
  max_pool_backward_indexed<T, int64_t>(grad, input, a, gx);
}

// inputs: grad, input
void max_pool_backward_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& gx = out[0];
  if (gx.numel() == 0) return;
  if (gx.dtype() == kFloat64) return max_pool_backward<double>(in[0], in[1], a, gx.data_ptr<double>());
  if (gx.dtype() == kFloat32) return max_pool_backward<float>(in[0], in[1], a, gx.data_ptr<float>());
  const Tensor result = empty(gx.sizes(), kFloat32);
  max_pool_backward<float>(in[0], in[1], a, result.data_ptr<float>());
  convert_into(gx, result);
}

// window_means' backward: each output pixel's gradient over its divisor,
// added to every input pixel of its window.
template <class T, class Window>
void spread_over_windows(const Planes& p, const T* g, int64_t sh, int64_t sw, T* gx, Window window) {
  for (int64_t oh = 0; oh < p.out_height; ++oh)
    for (int64_t ow = 0; ow < p.out_width; ++ow) {
      const AvgWindow win = window(oh, ow);
      if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
      const T share = g[oh * sh + ow * sw] / T(win.count);
      for (int64_t ih = win.h0; ih < win.h1; ++ih)
        for (int64_t iw = win.w0; iw < win.w1; ++iw) gx[ih * p.width + iw] += share;
    }
}

// The linear backward kernels' attributes are the input shape, then the forward's.
void avg_pool_backward_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const IntArrayRef k = a.ints(1), s = a.ints(2), pad = a.ints(3);
  const bool count_include_pad = a.b(5);
  for_each_grad_plane(in[0], out[0], [&]<class T>(const Planes& p, const T* g, int64_t sh, int64_t sw, T* gx) {
    spread_over_windows(p, g, sh, sw, gx, [&](int64_t oh, int64_t ow) {
      return avg_window(p, oh, ow, k, s, pad, count_include_pad);
    });
  });
}

void adaptive_avg_pool_backward_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs&) {
  for_each_grad_plane(in[0], out[0], [&]<class T>(const Planes& p, const T* g, int64_t sh, int64_t sw, T* gx) {
    spread_over_windows(p, g, sh, sw, gx, [&](int64_t oh, int64_t ow) { return adaptive_window(p, oh, ow); });
  });
}

void nearest_backward_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const double user_h = a.d(2), user_w = a.d(3);
  for_each_grad_plane(in[0], out[0], [&]<class T>(const Planes& p, const T* g, int64_t sh, int64_t sw, T* gx) {
    for_each_nearest(p, user_h, user_w, [&](int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
      gx[ih * p.width + iw] += g[oh * sh + ow * sw];
    });
  });
}

void bilinear_backward_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const double user_h = a.d(2), user_w = a.d(3);
  const bool align_corners = a.b(4);
  for_each_grad_plane(in[0], out[0], [&]<class T>(const Planes& p, const T* g, int64_t sh, int64_t sw, T* gx) {
    auto at = [&](int64_t oh, int64_t ow, const Lerp<T>& h, const Lerp<T>& w) {
      const T v = g[oh * sh + ow * sw];
      gx[h.i0 * p.width + w.i0] += h.w0 * w.w0 * v;
      gx[h.i0 * p.width + w.i1] += h.w0 * w.w1 * v;
      gx[h.i1 * p.width + w.i0] += h.w1 * w.w0 * v;
      gx[h.i1 * p.width + w.i1] += h.w1 * w.w1 * v;
    };
    for_each_bilinear<T>(p, user_h, user_w, align_corners, at);
  });
}

}  // namespace

NNVM_REGISTER(cpu_pool_kernels) {
  register_kernel("max_pool2d", kCPU, max_pool_kernel);
  register_kernel("avg_pool2d", kCPU, avg_pool_kernel);
  register_kernel("adaptive_avg_pool2d", kCPU, adaptive_avg_pool_kernel);
  register_kernel("upsample_nearest2d", kCPU, nearest_kernel);
  register_kernel("upsample_bilinear2d", kCPU, bilinear_kernel);
  register_kernel("max_pool2d_backward", kCPU, max_pool_backward_kernel);
  register_kernel("avg_pool2d_backward", kCPU, avg_pool_backward_kernel);
  register_kernel("adaptive_avg_pool2d_backward", kCPU, adaptive_avg_pool_backward_kernel);
  register_kernel("upsample_nearest2d_backward", kCPU, nearest_backward_kernel);
  register_kernel("upsample_bilinear2d_backward", kCPU, bilinear_backward_kernel);
}

}  // namespace nnvm::cpu
