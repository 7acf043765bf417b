// The direct convolution of kernels/cpu/conv.cpp's float32 kernels: the
// image copied into windows whose shifted runs are the im2col matrix's
// rows, read by the GEMM in place through a table (gemm.h RowTable). Shared
// with conv.cpp: the convolution's geometry and the per-thread buffers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nnvm::cpu {

// A 2-D convolution's sizes (a transposed one's: input and output as it
// computes them).
struct Geometry {
  int64_t batch, channels, height, width;             // input
  int64_t out_channels, out_height, out_width;        // output
  int64_t kernel_h, kernel_w, groups;
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

// A per-thread buffer of `count` elements that only grows; distinct slots
// are distinct buffers.
template <class T, int slot = 0> T* thread_buffer(int64_t count) {
  thread_local std::vector<T> buf;
  if (int64_t(buf.size()) < count) buf.resize(size_t(count));
  return buf.data();
}

// A tap of a stride-1 window over planes `width` wide, offset (dh, dw):
// element i of a plane of `rows` rows pairs with element i + shift (shift =
// dh width + dw) of one of `other_rows` rows where row and column line up:
// in rows [first, last) of the first plane, every column but [wrap_from,
// wrap_to), which would pair with the other plane's next or last row. For
// i in [begin, end), both ends are inside their planes; empty when nothing
// pairs.
struct ShiftedTap {
  int64_t first = 0, last = 0, shift = 0, begin = 0, end = 0, wrap_from = 0, wrap_to = 0;
};
inline ShiftedTap shifted_tap(int64_t dh, int64_t dw, int64_t width, int64_t rows, int64_t other_rows) {
  ShiftedTap t;
  t.first = std::clamp<int64_t>(-dh, 0, rows);
  t.last = std::clamp<int64_t>(other_rows - dh, t.first, rows);
  if (t.first == t.last || dw <= -width || dw >= width) return {};
  t.shift = dh * width + dw;
  t.begin = std::max(t.first * width, -t.shift);
  t.end = std::min(t.last * width, other_rows * width - t.shift);
  t.wrap_from = dw > 0 ? width - dw : 0;
  t.wrap_to = dw > 0 ? width : -dw;
  return t;
}

// Zeros the wrapped columns of rows [first, last) of a plane: column by
// column, since a fill of a row's few elements would be a call to memset each.
template <class T> void zero_wrapped(T* plane, const ShiftedTap& t, int64_t width) {
  for (int64_t j = t.wrap_from; j < t.wrap_to; ++j)
    for (int64_t r = t.first; r < t.last; ++r) plane[r * width + j] = T(0);
}

// dst[0, rows · width) = the plane src (other_rows × width) shifted by
// (dh, dw): dst's (r, j) is src's (r + dh, j + dw), zero where that lies
// outside src. One copy of the whole run (a row's last |dw| elements
// wrapping into the next row), then zeros over the wrapped columns and the
// rows outside: per row, the bookkeeping and short copies of a late
// layer's 7- to 14-wide rows would cost more than the copying. im2col's and
// the direct convolution's windows of a "same" convolution (3x3, padding 1).
template <class T>
void copy_shifted_plane(const T* src, int64_t dh, int64_t dw, int64_t width, int64_t rows, int64_t other_rows,
                        T* dst) {
  const ShiftedTap t = shifted_tap(dh, dw, width, rows, other_rows);
  if (t.begin >= t.end) {
    std::fill(dst, dst + rows * width, T(0));
    return;
  }
  std::fill(dst, dst + t.first * width, T(0));
  std::fill(dst + t.last * width, dst + rows * width, T(0));
  std::copy(src + (t.begin + t.shift), src + (t.end + t.shift), dst + t.begin);
  zero_wrapped(dst, t, width);
}

// Images a weight gradient's fixed blocks hold at least: the blocks' partial
// sums merge in order, the same bits for every thread count.
inline constexpr int64_t kDotImages = 8;

// conv2d (float32, contiguous weights and bias or null) over the batch, the
// image read through strides (in elements); false, nothing written, where
// the GEMM has no provider that reads row tables.
bool conv2d_direct_batch(const float* x, int64_t sn, int64_t sc, int64_t sh, int64_t sw, const float* w,
                         const float* bias, const Geometry& g, float* out);

// conv_transpose2d (float32, contiguous) at stride 1, as conv2d_direct_batch
// of the flipped kernel; false where it does not apply or is not available.
bool conv_transpose2d_direct(const float* x, const float* w, const float* bias, const Geometry& g, float* out);

// conv2d_backward_weight (float32, contiguous) on the windows; false where
// it is not available.
bool conv2d_backward_weight_direct(const float* px, const float* pg, const Geometry& g, float* dw);

}  // namespace nnvm::cpu
