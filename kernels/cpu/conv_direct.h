// The direct convolution of kernels/cpu/conv.cpp's float32 kernels: the
// image copied into windows whose shifted runs are the im2col matrix's
// rows, read by the GEMM in place through a table (gemm.h RowTable). Shared
// with conv.cpp: the convolution's geometry and the per-thread buffers.
#pragma once

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
