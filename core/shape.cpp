#include "nnvm/core/shape.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nnvm/core/error.h"

namespace nnvm {

size_t checked_nbytes(IntArrayRef shape, size_t itemsize, std::string_view op) {
  uint64_t bytes = itemsize;
  bool overflow = false, empty = false;  // an empty tensor needs no bytes, whatever its other sizes
  for (int64_t s : shape) {
    NNVM_CHECK(s >= 0, op, "negative size ", s, " in shape ", shape_str(shape), " (expected sizes >= 0)");
    empty = empty || s == 0;
    overflow = overflow || __builtin_mul_overflow(bytes, uint64_t(s), &bytes);
  }
  if (empty) return 0;
  NNVM_CHECK(!overflow && bytes <= uint64_t(INT64_MAX), op, "a tensor of shape ", shape_str(shape),
             " would need more than 2^63 bytes");
  return size_t(bytes);
}

// An empty tensor's other sizes may multiply past 2^63 (its storage is
// empty): a stride that does not fit int64 is an error, as in libtorch.
DimVector contiguous_strides(IntArrayRef shape) {
  DimVector strides(shape.size());
  int64_t s = 1;
  bool overflow = false;
  for (size_t i = shape.size(); i-- > 0;) {
    NNVM_CHECK(!overflow, "strides", "the strides of shape ", shape_str(shape),
               " overflow int64 (expected sizes whose products fit in 2^63)");
    strides[i] = s;
    overflow = __builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s);
  }
  return strides;
}

bool is_contiguous_layout(IntArrayRef shape, IntArrayRef strides) {
  int64_t expected = 1;
  bool overflow = false;  // then no stride equals `expected`
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && (overflow || strides[i] != expected)) return false;
    overflow = overflow || __builtin_mul_overflow(expected, shape[i], &expected);
  }
  return true;
}

std::string shape_str(IntArrayRef shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

int64_t wrap_dim(int64_t dim, int64_t rank, std::string_view op) {
  const int64_t r = std::max<int64_t>(rank, 1);  // a 0-d tensor accepts dim 0 and -1
  NNVM_CHECK(dim >= -r && dim < r, op, "dim ", dim, " is out of range for a tensor of rank ", rank,
             " (expected a dim in [", -r, ", ", r - 1, "])");
  return dim < 0 ? dim + r : dim;
}

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, std::string_view op) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    NNVM_CHECK(da == db || da == 1 || db == 1, op, "shapes ", shape_str(a), " and ", shape_str(b),
               " are not broadcastable (dim ", i, ": ", da, " vs ", db, "; expected equal sizes or 1)");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcasts_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

DimVector broadcast_strides(IntArrayRef shape, IntArrayRef strides, IntArrayRef target) {
  DimVector out(target.size(), 0);
  const size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    out[lead + i] = shape[i] == 1 ? 0 : strides[i];
  return out;
}

DimVector reduction_dims(IntArrayRef dims, int64_t rank, std::string_view op) {
  DimVector out;
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(wrap_dim(d, rank, op));
  std::sort(out.begin(), out.end());
  NNVM_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), op, "dim list [",
             absl::StrJoin(dims, ", "), "] names a dim twice");
  if (rank == 0) out.clear();
  return out;
}

DimVector reduced_shape(IntArrayRef shape, IntArrayRef dims, bool keepdim) {
  DimVector out;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    if (!reduced) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Strides that let `shape` view memory laid out as (old_shape, old_strides),
// or nullopt when no such strides exist (the data would have to move).
// Walks the input's dims in groups that are contiguous among themselves and
// maps the new dims onto each group in turn.
std::optional<DimVector> view_strides(IntArrayRef old_shape, IntArrayRef old_strides, IntArrayRef shape) {
  DimVector strides(shape.size());
  if (old_shape.empty()) {
    std::fill(strides.begin(), strides.end(), 1);
    return strides;
  }
  if (numel_of(old_shape) == 0) return contiguous_strides(shape);
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t chunk_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    const bool chunk_ends = d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
      strides[view_d] = view_numel * chunk_stride;
      view_numel *= shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

}  // namespace nnvm
