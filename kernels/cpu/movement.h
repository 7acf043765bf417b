// Building blocks of the data-movement kernels (kernels/cpu/movement.cpp and
// index.cpp). Kernels here address their operands through views they build
// themselves (`restride`) rather than through view ops, so a kernel never
// calls back into the op table.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "nnvm/core/op.h"
#include "nnvm/kernels/cpu/loops.h"

namespace nnvm::cpu {

// A view of t's storage with the given layout (strides and offset in elements).
Tensor restride(const Tensor& t, IntArrayRef shape, IntArrayRef strides, int64_t offset);

// dst = src, converting to dst's dtype; src broadcasts to dst's shape and
// either may have any layout (they must not overlap).
void copy_values(const Tensor& dst, const Tensor& src);

// Runs write(dst) on a contiguous tensor of out's shape and dtype: out itself
// when contiguous, else a temporary that is then copied into out.
void write_contiguous(const Tensor& out, const std::function<void(const Tensor&)>& write);

// out[i_0, ..., i_n] = in[tables[0][i_0], ..., tables[n][i_n]], or `fill` where
// any table entry is -1. `out` is contiguous with one table per dim (of its
// size); `in` has the same rank and any layout. Flip, roll, repeat, pad and
// index_select are all this with different tables.
void remap(const Tensor& out, const Tensor& in, const std::vector<std::vector<int64_t>>& tables,
           const Scalar& fill = 0);

// 0, 1, ..., n-1: the table of a dim that is not remapped; one per dim of `shape`.
std::vector<int64_t> identity_table(int64_t n);
std::vector<std::vector<int64_t>> identity_tables(IntArrayRef shape);

// The offset (in elements, from the first element) of every element of a
// (shape, strides) layout, in row-major order.
std::vector<int64_t> element_offsets(IntArrayRef shape, IntArrayRef strides);

// The values of an int64 or int32 tensor of any layout, in row-major order.
std::vector<int64_t> read_indices(const Tensor& index);

// `index` itself when it addresses a dim of `size`, else throws nnvm::Error
// "<op>: index 7 is out of bounds for dim 1 with size 5". With `wrap`, a
// negative index counts from the end (index_put's rule).
inline int64_t checked_index(int64_t index, int64_t size, int64_t dim, std::string_view op, bool wrap = false) {
  const int64_t i = wrap && index < 0 ? index + size : index;
  NNVM_CHECK(i >= 0 && i < size, op, "index ", index, " is out of bounds for dim ", dim, " with size ", size);
  return i;
}

// A scalar as the C++ type of a dtype, without going through double for
// integers (so large int64 fill values survive).
template <class T> T scalar_to(const Scalar& s) {
  return s.is_floating() ? convert<T>(s.to_double()) : convert<T>(s.to_int());
}

}  // namespace nnvm::cpu
