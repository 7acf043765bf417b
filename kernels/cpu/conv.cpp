// CPU kernels of "conv2d" and "conv_transpose2d" (core/ops/conv.cpp), on
// the GEMM of gemm.h:
//   conv2d (float32): out[o, p] = W[o, (c,kh,kw)] · im2col(x)[(c,kh,kw), p]
//                     with the im2col matrix never written: the image is
//                     copied once into windows whose shifted runs are its
//                     rows, which the GEMM reads in place (the direct
//                     convolution, conv_direct.cpp); a 1×1, stride-1 kernel
//                     reads the image itself. Other types, or no JIT: im2col
//                     written out.
//   conv_transpose2d: at stride 1 (the input gradient of a stride-1
//                     convolution) the direct convolution of the flipped
//                     kernel; otherwise col[(o,kh,kw), p] = Wᵀ · x[c, p],
//                     then col2im adds each column into the output pixels it
//                     touches, in a fixed order.
//   conv2d_backward_weight: dW[o, (c,kh,kw)] = Σ_images g[o, p] · im2col(x)[(c,kh,kw), p]:
//                     float32 on the direct convolution's windows (their rows
//                     the GEMM's A), in fixed blocks of images; with few
//                     columns (c·kh·kw <= 16, a first layer) as dot products
//                     image by image, without the GEMM; otherwise over blocks
//                     of images whose im2col columns sit side by side.
// Images go to threads whole when there are several; a single image gives its
// GEMM the whole pool (or, direct, its bands of rows).
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "nnvm/core/op.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/cpu_features.h"
#include "nnvm/kernels/cpu/conv_direct.h"
#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/kernels/cpu/staging.h"
#include "nnvm/kernels/cpu/window.h"

namespace nnvm::cpu {

namespace {

Geometry geometry(const Tensor& x, const Tensor& w, const Tensor& out, const Attrs& a, bool transposed) {
  const IntArrayRef stride = a.ints(0), pad = a.ints(1), dil = a.ints(transposed ? 4 : 2);
  return {x.size(0), x.size(1), x.size(2), x.size(3), out.size(1), out.size(2), out.size(3),
          w.size(2), w.size(3), a.i(3), stride[0], stride[1], pad[0], pad[1], dil[0], dil[1]};
}

// Whether each tap of g reads (im2col) or writes (col2im) a plane that is
// the other side's shifted: stride 1 and rows as wide as the input's.
bool taps_shift_planes(const Geometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.out_width == g.width;
}

// Calls f(tap, c, dh, dw) for each (c, kh, kw) of `channels` channels: the
// tap's index in (c, kh, kw) order, its channel and its offset.
template <class F> void for_each_tap(int64_t channels, const Geometry& g, F f) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < g.kernel_h; ++kh)
      for (int64_t kw = 0; kw < g.kernel_w; ++kw)
        f((c * g.kernel_h + kh) * g.kernel_w + kw, c, kh * g.dil_h - g.pad_h, kw * g.dil_w - g.pad_w);
}

// im2col of a stride-1 convolution whose output rows are as wide as the
// input's (a "same" convolution: 3x3 with padding 1) over contiguous planes:
// a tap's column block col[(c, kh, kw), (oh, ow)] is then the plane itself
// shifted by the tap's offset, so one copy of the whole block (a row's last
// |dw| elements wrapping into the next row) and zeros over the wrapped
// columns and the rows outside the image. Per output row the general
// loop's bookkeeping and short copies cost more than the copying.
template <class T> void im2col_shifted_planes(const T* x, int64_t sc, int64_t channels, const Geometry& g, T* col,
                                              int64_t ld) {
  for_each_tap(channels, g, [&](int64_t tap, int64_t c, int64_t dh, int64_t dw) {
    copy_shifted_plane(x + c * sc, dh, dw, g.width, g.out_height, g.height, col + tap * ld);
  });
}

// col[(c, kh, kw), (oh, ow)] for `channels` channels of one image (strides in
// elements; rows of col are `ld` apart). For each tap, the columns whose
// pixel is inside the image are one strided copy (with_step: at stride 1 or
// 2 a copy the compiler vectorises), the rest zeros.
template <class T>
void im2col(const T* x, int64_t sc, int64_t sh, int64_t sw, int64_t channels, const Geometry& g, T* col,
            int64_t ld) {
  if (taps_shift_planes(g) && sw == 1 && sh == g.width) return im2col_shifted_planes(x, sc, channels, g, col, ld);
  const WindowAxis rows{g.kernel_h, g.stride_h, g.pad_h, g.dil_h, g.height, g.out_height};
  const WindowAxis cols{g.kernel_w, g.stride_w, g.pad_w, g.dil_w, g.width, g.out_width};
  const int64_t step = g.stride_w * sw;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < g.kernel_h; ++kh)
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        T* dst = col + ((c * g.kernel_h + kh) * g.kernel_w + kw) * ld;
        const auto [lo, hi] = cols.outputs_of_tap(kw);
        for (int64_t oh = 0; oh < g.out_height; ++oh, dst += g.out_width) {
          const int64_t ih = rows.at(oh, kh);
          if (ih < 0 || ih >= g.height || lo == hi) {
            std::fill(dst, dst + g.out_width, T(0));
            continue;
          }
          const T* src = x + c * sc + ih * sh + cols.at(lo, kw) * sw;  // column lo's pixel
          std::fill(dst, dst + lo, T(0));
          T* inside = dst + lo;
          with_step(step, [&, lo = lo, hi = hi](auto s) {  // clang 14 cannot capture structured bindings
            for (int64_t j = 0; j < hi - lo; ++j) inside[j] = src[j * s];
          });
          std::fill(dst + hi, dst + g.out_width, T(0));
        }
      }
}

// col2im of a stride-1 transposed convolution whose output rows are as wide
// as the input's (the input gradient of a "same" convolution), the mirror
// of im2col_shifted_planes: a tap's block col[(o, kh, kw), (ih, iw)] adds
// into the output plane shifted by the tap's offset, one long run, after
// the block's wrapped columns (the pixels whose tap lands outside the
// output, which the run would add into the next row's edge) are zeroed in
// col, the caller's scratch. Adding those zeros changes no sum: each output
// starts at +0, and a sum from +0 is never -0.
template <class T> void col2im_shifted_planes(T* col, int64_t channels, const Geometry& g, T* out) {
  const int64_t width = g.width, pixels = g.height * width, plane = g.out_height * width;
  for_each_tap(channels, g, [&](int64_t tap, int64_t o, int64_t dh, int64_t dw) {
    const ShiftedTap t = shifted_tap(dh, dw, width, g.height, g.out_height);
    if (t.begin >= t.end) return;
    T* src = col + tap * pixels;
    zero_wrapped(src, t, width);
    T* dst = out + o * plane + t.shift;
    for (int64_t i = t.begin; i < t.end; ++i) dst[i] += src[i];
  });
}

// Adds col[(o, kh, kw), (ih, iw)] into out[o, oh, ow] (contiguous) for the
// pixels each reaches, in the same order whatever reaches none: the input
// rows and columns whose tap lands inside the output are worked out per tap.
// col is the caller's scratch (col2im_shifted_planes writes into it).
template <class T> void col2im(T* col, int64_t channels, const Geometry& g, T* out) {
  if (taps_shift_planes(g)) return col2im_shifted_planes(col, channels, g, out);
  const int64_t pixels = g.height * g.width;
  // Input pixel i's tap t lands on output position i·stride − pad + t·dilation.
  const WindowAxis rows{g.kernel_h, g.stride_h, g.pad_h, g.dil_h, g.out_height, g.height};
  const WindowAxis cols{g.kernel_w, g.stride_w, g.pad_w, g.dil_w, g.out_width, g.width};
  for (int64_t o = 0; o < channels; ++o)
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const auto [ih0, ih1] = rows.outputs_of_tap(kh);
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const auto [iw0, iw1] = cols.outputs_of_tap(kw);
        if (iw0 == iw1) continue;
        const T* src = col + ((o * g.kernel_h + kh) * g.kernel_w + kw) * pixels;
        T* plane = out + o * g.out_height * g.out_width;
        for (int64_t ih = ih0; ih < ih1; ++ih) {
          T* dst = plane + rows.at(ih, kh) * g.out_width + cols.at(iw0, kw);  // input column iw0's pixel
          const T* from = src + ih * g.width + iw0;
          with_step(g.stride_w, [&, iw0 = iw0, iw1 = iw1](auto s) {  // as above
            for (int64_t j = 0; j < iw1 - iw0; ++j) dst[j * s] += from[j];
          });
        }
      }
    }
}

template <class T> void add_bias(const T* pb, const Geometry& g, T* out) {
  const int64_t pixels = g.out_height * g.out_width;
  for (int64_t o = 0; o < g.out_channels; ++o)
    for (int64_t p = 0; p < pixels; ++p) out[o * pixels + p] += pb[o];
}

template <class T>
void conv2d(const Tensor& x, const Tensor& weight, const Tensor* bias, const Geometry& g, T* out) {
  const Tensor w = staged(weight, dtype_of_v<T>);
  const T* pw = w.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const Tensor b = bias ? staged(*bias, dtype_of_v<T>) : Tensor();
  const T* pb = bias ? b.data_ptr<T>() : nullptr;
  const int64_t cg = g.channels / g.groups, og = g.out_channels / g.groups;
  const int64_t k = cg * g.kernel_h * g.kernel_w, pixels = g.out_height * g.out_width;
  const int64_t sn = x.stride(0), sc = x.stride(1), sh = x.stride(2), sw = x.stride(3);
  // A 1×1, stride-1, unpadded kernel reads the image itself as the GEMM's right operand.
  const bool pointwise = g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
                         g.pad_h == 0 && g.pad_w == 0 && (g.height == 1 || sh == g.width * sw);
  if constexpr (std::is_same_v<T, float>)
    if (!pointwise && conv2d_direct_batch(px, sn, sc, sh, sw, pw, pb, g, out)) return;
  parallel_for(0, g.batch, 1, [&](int64_t begin, int64_t end) {
    T* col = nullptr;  // im2col's matrix
    for (int64_t n = begin; n < end; ++n) {
      T* image_out = out + n * g.out_channels * pixels;
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const T* image = px + n * sn + grp * cg * sc;
        MatrixRef<T> rhs{image, sc, sw};
        if (!pointwise) {
          if (!col) col = thread_buffer<T>(k * pixels);
          im2col(image, sc, sh, sw, cg, g, col, pixels);
          rhs = {col, pixels, 1};
        }
        gemm(og, pixels, k, MatrixRef<T>{pw + grp * og * k, k, 1}, rhs, T(0), image_out + grp * og * pixels,
             pixels);
      }
      if (pb) add_bias(pb, g, image_out);
    }
  });
}

template <class T>
void conv_transpose2d(const Tensor& xs, const Tensor& weight, const Tensor* bias, const Geometry& g, T* out) {
  const Tensor x = staged(xs, dtype_of_v<T>), w = staged(weight, dtype_of_v<T>);
  const T* pw = w.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const Tensor b = bias ? staged(*bias, dtype_of_v<T>) : Tensor();
  const T* pb = bias ? b.data_ptr<T>() : nullptr;
  const int64_t cg = g.channels / g.groups, og = g.out_channels / g.groups;
  const int64_t rows = og * g.kernel_h * g.kernel_w, pixels = g.height * g.width;
  const int64_t out_pixels = g.out_height * g.out_width;
  if constexpr (std::is_same_v<T, float>)
    if (conv_transpose2d_direct(px, pw, pb, g, out)) return;
  parallel_for(0, g.batch, 1, [&](int64_t begin, int64_t end) {
    T* col = thread_buffer<T>(rows * pixels);
    for (int64_t n = begin; n < end; ++n) {
      T* image_out = out + n * g.out_channels * out_pixels;
      std::fill(image_out, image_out + g.out_channels * out_pixels, T(0));
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        // weight[g·cg + c, (o, kh, kw)] read transposed: row (o, kh, kw), column c.
        gemm(rows, pixels, cg, MatrixRef<T>{pw + grp * cg * rows, 1, rows},
             MatrixRef<T>{px + (n * g.channels + grp * cg) * pixels, pixels, 1}, T(0), col, pixels);
        col2im(col, og, g, image_out + grp * og * out_pixels);
      }
      if (pb) add_bias(pb, g, image_out);
    }
  });
}

// Column buffers of the weight gradient hold about this many elements (2 MB
// of floats): im2col writes a block and the GEMM's packing reads it back
// while it is still in the caches. 16 MB blocks made the Fashion-MNIST CNN's
// training step ~10% slower on one thread (docs/BENCHMARKS.md).
constexpr int64_t kColumnBudget = int64_t(1) << 19;

// A weight gradient with few columns per output channel (k = c·kh·kw: 9 for
// a one-channel 3x3 first layer) as dot products: a GEMM would pad its tiles
// with zeros and pack (after copying) the whole output gradient for few
// products each. dw[o, j] is the sum over images of the output gradient's
// plane o dotted with row j of the image's im2col matrix, kLanes-wide
// partial sums in registers, added in a fixed order; the images add in
// fixed blocks of kDotImages whose sums merge in order, so the result is the
// same for every thread count.
constexpr int64_t kDotColumns = 16;  // (kDotImages: conv_direct.h)

// The widest vector the build's target has registers for: GCC lowers a
// wider generic vector piece by piece through the stack (Note [GEMM widths]).
#if defined(__AVX512F__)
constexpr size_t kDotVectorBytes = 64;
#elif defined(__AVX__)
constexpr size_t kDotVectorBytes = 32;
#else
constexpr size_t kDotVectorBytes = 16;
#endif

// acc[j] += Σ_p a[p] · rows[j·pixels + p] for j < K, p < pixels: the K
// dot products side by side, one vector of partial sums each.
template <int64_t K, class T> void add_dots(const T* a, const T* rows, int64_t pixels, T* acc) {
  typedef T V __attribute__((vector_size(kDotVectorBytes)));
  constexpr int64_t L = int64_t(sizeof(V) / sizeof(T));
  V lanes[K] = {};
  int64_t p = 0;
  for (; p + L <= pixels; p += L) {
    V x;
    std::memcpy(&x, a + p, sizeof x);
#pragma GCC unroll 16
    for (int64_t j = 0; j < K; ++j) {
      V r;
      std::memcpy(&r, rows + j * pixels + p, sizeof r);
      lanes[j] += x * r;
    }
  }
  for (int64_t l = 0; p + l < pixels; ++l)
    for (int64_t j = 0; j < K; ++j) lanes[j][l] += a[p + l] * rows[j * pixels + p + l];
  for (int64_t j = 0; j < K; ++j) {
    T sum = lanes[j][0];
    for (int64_t l = 1; l < L; ++l) sum += lanes[j][l];
    acc[j] += sum;
  }
}

template <class T, int64_t K = 1>
void add_dots(int64_t k, const T* a, const T* rows, int64_t pixels, T* acc) {
  if constexpr (K < kDotColumns)
    if (k != K) return add_dots<T, K + 1>(k, a, rows, pixels, acc);
  add_dots<K>(a, rows, pixels, acc);
}

template <class T>
void backward_weight_dots(const T* px, const T* pg, const Geometry& g, int64_t k, T* dw) {
  const int64_t og = g.out_channels / g.groups, pixels = g.out_height * g.out_width, plane = g.height * g.width;
  const int64_t blocks = (g.batch + kDotImages - 1) / kDotImages, size = g.out_channels * k;
  std::vector<T> part(size_t(blocks * size), T(0));
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    T* col = thread_buffer<T>(g.groups * k * pixels);
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t n = b * kDotImages; n < std::min(g.batch, (b + 1) * kDotImages); ++n) {
        im2col(px + n * g.channels * plane, plane, g.width, int64_t(1), g.channels, g, col, pixels);
        for (int64_t o = 0; o < g.out_channels; ++o)
          add_dots(k, pg + (n * g.out_channels + o) * pixels, col + (o / og) * k * pixels, pixels,
                   part.data() + b * size + o * k);
      }
  });
  for (int64_t i = 0; i < size; ++i) {
    T sum = part[size_t(i)];
    for (int64_t b = 1; b < blocks; ++b) sum += part[size_t(b * size + i)];
    dw[i] = sum;
  }
}

template <class T> void conv2d_backward_weight(const Tensor& xs, const Tensor& gs, const Geometry& g, T* dw) {
  const Tensor x = staged(xs, dtype_of_v<T>), gy = staged(gs, dtype_of_v<T>);
  const T* px = x.data_ptr<T>();
  const T* pg = gy.data_ptr<T>();
  const int64_t cg = g.channels / g.groups, og = g.out_channels / g.groups;
  const int64_t k = cg * g.kernel_h * g.kernel_w, pixels = g.out_height * g.out_width;
  const int64_t plane = g.height * g.width;
  if (k <= kDotColumns) return backward_weight_dots(px, pg, g, k, dw);
  if constexpr (std::is_same_v<T, float>)
    if (conv2d_backward_weight_direct(px, pg, g, dw)) return;
  const int64_t per_image = std::max<int64_t>(1, g.channels * g.kernel_h * g.kernel_w * pixels);
  const int64_t block = std::clamp<int64_t>(kColumnBudget / per_image, 1, g.batch);
  // col[(c, kh, kw), (n, p)] and grad[o, (n, p)] for the images of one block,
  // every element written before it is read: from the caching allocator,
  // not zeroed (a zeroed std::vector of a block's 16 MB was 4% of a CNN
  // training step, its fresh pages' faults besides).
  const Tensor col_buffer = empty({g.groups * k * block * pixels}, dtype_of_v<T>);
  const Tensor grad_buffer = empty({g.out_channels * block * pixels}, dtype_of_v<T>);
  T* const col = col_buffer.data_ptr<T>();
  T* const grad = grad_buffer.data_ptr<T>();
  // dW = grad · colᵀ, or dWᵀ = col · gradᵀ (the same bits), whichever puts
  // the operand with more rows on the right: both are read along the pixels,
  // and the GEMM packs its right operand's panels through in-register
  // transposes, its left one's element by element. The 288 rows of a 3x3
  // layer of 32 channels against 64 output channels: dW, 6% faster on one
  // thread than dWᵀ, which pads fewer tiles (docs/BENCHMARKS.md). An RGB
  // first layer's 27 rows against 64 channels: dWᵀ, accumulated here.
  const bool transposed = og > k;
  const Tensor dwt_buffer = transposed ? empty({g.groups * k * og}, dtype_of_v<T>) : Tensor();
  T* const dwt = transposed ? dwt_buffer.data_ptr<T>() : nullptr;
  for (int64_t n0 = 0; n0 < g.batch; n0 += block) {
    const int64_t nb = std::min(block, g.batch - n0), ld = nb * pixels;
    parallel_for(0, nb, 1, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        im2col(px + (n0 + n) * g.channels * plane, plane, g.width, int64_t(1), g.channels, g,
               col + n * pixels, ld);
        for (int64_t o = 0; o < g.out_channels; ++o) {
          const T* src = pg + ((n0 + n) * g.out_channels + o) * pixels;
          std::copy(src, src + pixels, grad + o * ld + n * pixels);
        }
      }
    });
    // Blocks add in order, so the sum over images is the same for every thread count.
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const MatrixRef<T> gr{grad + grp * og * ld, ld, 1}, cl{col + grp * k * ld, ld, 1};
      const T beta(n0 == 0 ? 0 : 1);
      if (transposed) gemm(k, og, ld, cl, {gr.data, 1, ld}, beta, dwt + grp * k * og, og);
      else gemm(og, k, ld, gr, {cl.data, 1, ld}, beta, dw + grp * og * k, k);
    }
  }
  if (transposed)
    for (int64_t grp = 0; grp < g.groups; ++grp)
      for (int64_t o = 0; o < og; ++o)
        for (int64_t j = 0; j < k; ++j) dw[(grp * og + o) * k + j] = dwt[(grp * k + j) * og + o];
}

// inputs: image, grad; attrs: kernel, stride, padding, dilation, groups
void backward_weight_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor &x = in[0], &gy = in[1], &dw = out[0];
  if (dw.numel() == 0) return;
  const IntArrayRef kernel = a.ints(0), stride = a.ints(1), pad = a.ints(2), dil = a.ints(3);
  const Geometry g{x.size(0), x.size(1), x.size(2), x.size(3), gy.size(1), gy.size(2), gy.size(3),
                   kernel[0], kernel[1], a.i(4), stride[0], stride[1], pad[0], pad[1], dil[0], dil[1]};
  if (g.batch * g.out_height * g.out_width == 0) {
    std::fill_n(static_cast<char*>(dw.data_ptr()), dw.nbytes(), 0);
    return;
  }
  if (dw.dtype() == kFloat64) return conv2d_backward_weight<double>(x, gy, g, dw.data_ptr<double>());
  if (dw.dtype() == kFloat32) return conv2d_backward_weight<float>(x, gy, g, dw.data_ptr<float>());
  const Tensor result = empty(dw.sizes(), kFloat32);
  conv2d_backward_weight<float>(x, gy, g, result.data_ptr<float>());
  convert_into(dw, result);
}

template <bool transposed> void conv_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                                            const Attrs& a) {
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  const Geometry g = geometry(in[0], in[1], y, a, transposed);
  const Tensor* bias = in.size() == 3 ? &in[2] : nullptr;
  auto run = [&](auto zero, const Tensor& x, const Tensor& result) {
    using T = decltype(zero);
    if constexpr (transposed) conv_transpose2d<T>(x, in[1], bias, g, result.data_ptr<T>());
    else conv2d<T>(x, in[1], bias, g, result.data_ptr<T>());
  };
  if (y.dtype() == kFloat64) return run(double{}, in[0], y);
  if (y.dtype() == kFloat32) return run(float{}, in[0], y);
  const Tensor result = empty(y.sizes(), kFloat32);
  run(float{}, staged(in[0], kFloat32), result);
  convert_into(y, result);
}

}  // namespace

NNVM_REGISTER(cpu_conv_kernels) {
  register_kernel("conv2d", kCPU, conv_kernel<false>);
  register_kernel("conv_transpose2d", kCPU, conv_kernel<true>);
  register_kernel("conv2d_backward_weight", kCPU, backward_weight_kernel);
}

}  // namespace nnvm::cpu
