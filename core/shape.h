// Shapes, strides and the small helpers every op's shape inference uses.
// Strides are in elements, like libtorch's.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"

namespace nnvm {

using DimVector = absl::InlinedVector<int64_t, 6>;

// Sizes or dims, viewed, not owned: libtorch's IntArrayRef. A braced list
// ({}, {2, 3}), a DimVector, a std::vector or a Span converts to one, and so
// does a bare integer, as one element (nnvm::randn(3), x.sum(1),
// max_pool2d(x, 2)), as c10::IntArrayRef's one-element constructor does: the
// view points at the integer, which a call's argument outlives, so a view
// made from a bare integer must not be kept past the call, nor made inside
// another object's constructor: std::optional<IntArrayRef>(n) would point at
// a copy gone when it returns (so nnvm::tensor(values, n) does not compile).
class IntArrayRef : public absl::Span<const int64_t> {
  using Span = absl::Span<const int64_t>;

 public:
  using Span::Span;
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(Span s) noexcept : Span(s) {}                    // NOLINT: implicit, as a Span
  constexpr IntArrayRef(const int64_t& one) noexcept : Span(&one, 1) {}  // NOLINT: implicit, as c10's
  // Comparisons exact for an IntArrayRef against an IntArrayRef, a
  // DimVector or a std::vector (either side, by C++20's reversed ==), where
  // absl's templates for Spans would otherwise compete as equally good.
  friend bool operator==(IntArrayRef a, IntArrayRef b) { return Span(a) == Span(b); }
  friend bool operator==(IntArrayRef a, const DimVector& b) { return Span(a) == Span(b); }
  friend bool operator==(IntArrayRef a, const std::vector<int64_t>& b) { return Span(a) == Span(b); }
};

// Multiplied in unsigned arithmetic, which wraps instead of overflowing: a
// shape with a 0 gives 0 even when its other sizes multiply past 2^63
// ([2^32, 2^32, 0]); a shape that is not empty and does not fit is the
// caller's to refuse (checked_nbytes).
inline int64_t numel_of(IntArrayRef shape) {
  uint64_t n = 1;
  for (int64_t s : shape) n *= uint64_t(s);
  return int64_t(n);
}
// The bytes a contiguous tensor of `shape` needs; throws nnvm::Error naming
// `op` when a size is negative or the count overflows.
size_t checked_nbytes(IntArrayRef shape, size_t itemsize, std::string_view op);
DimVector contiguous_strides(IntArrayRef shape);
bool is_contiguous_layout(IntArrayRef shape, IntArrayRef strides);
// Strides that let `shape` view memory laid out as (old_shape, old_strides),
// or nullopt when no such strides exist (the data would have to move).
std::optional<DimVector> view_strides(IntArrayRef old_shape, IntArrayRef old_strides, IntArrayRef shape);

// "[2, 3]"
std::string shape_str(IntArrayRef shape);

// Maps a possibly negative dim into [0, rank); throws naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t rank, std::string_view op);

// NumPy broadcasting of two shapes; throws naming `op` when they do not broadcast.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, std::string_view op);

// Whether `from` broadcasts to exactly `to` (NumPy rules, `to` unchanged).
bool broadcasts_to(IntArrayRef from, IntArrayRef to);

// Strides that view a tensor of (shape, strides) as broadcast to `target`
// (0 for broadcast dims). `target` must be a broadcast of `shape`.
DimVector broadcast_strides(IntArrayRef shape, IntArrayRef strides, IntArrayRef target);

// Reduction dims: wraps, sorts and deduplicates; empty `dims` means all dims.
DimVector reduction_dims(IntArrayRef dims, int64_t rank, std::string_view op);
// The shape left after reducing `dims` (kept as size 1 when keepdim).
DimVector reduced_shape(IntArrayRef shape, IntArrayRef dims, bool keepdim);

}  // namespace nnvm

namespace absl {
// Sizes print as libtorch's do: std::cout << x.sizes() writes "[2, 3]". In
// absl's namespace, where argument-dependent lookup looks for a Span's.
inline std::ostream& operator<<(std::ostream& os, Span<const int64_t> shape) { return os << nnvm::shape_str(shape); }
}  // namespace absl
