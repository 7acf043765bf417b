// Pieces shared by the normalisation kernels (norm.cpp: layer, group and batch
// norm; rms_norm.cpp): how rows split over the pool, and how per-block
// partial sums of a weight's gradient add up in block order, so results do
// not depend on the thread count.
#pragma once

#include <algorithm>
#include <vector>

#include "nnvm/kernels/cpu/loops.h"

namespace nnvm::cpu {

// Rows of `len` elements per parallel task.
inline int64_t row_grain(int64_t len) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(len, 1)); }

// row(x_row, y_row) for each of the `rows` rows of `cols` elements of x and y
// (both contiguous), the rows split over the pool.
template <class S, class Row> void for_each_row(const S* x, S* y, int64_t rows, int64_t cols, Row row) {
  parallel_for(0, rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) row(x + r * cols, y + r * cols);
  });
}

// Per column j < cols, the sum over the blocks b < blocks (in block order) of
// partial[b * stride + j].
template <class T> std::vector<T> sum_blocks(const T* partial, int64_t blocks, int64_t stride, int64_t cols) {
  std::vector<T> sums(static_cast<size_t>(cols), T(0));
  parallel_for(0, cols, row_grain(blocks), [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t b = 0; b < blocks; ++b) sums[size_t(j)] += partial[b * stride + j];
  });
  return sums;
}

// Writes `values` (compute type T) into a contiguous tensor of any floating dtype.
template <class T> void store(const Tensor& dst, const std::vector<T>& values) {
  scatter<T>(values.data(), data_bytes(dst), int64_t(dst.element_size()), int64_t(values.size()), dst.dtype());
}

}  // namespace nnvm::cpu
