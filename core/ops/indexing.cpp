// Tensor::index and index_put_ with libtorch's index lists (core/indexing.h):
// the basic indices become views (select, slice, unsqueeze); the tensor
// indices become one index_select (reading) or one index_put (writing) over
// the dims they index. As in PyTorch and NumPy, the dims of the indices'
// broadcast shape take the place of the indexed dims when those are
// adjacent, and go first when other indices separate them (x[i, :, j]).
#include "nnvm/core/indexing.h"

#include <algorithm>
#include <cstring>

#include "nnvm/core/functions.h"

namespace nnvm {

using indexing::Slice;
using indexing::TensorIndex;

namespace indexing {

TensorIndex::TensorIndex(const char* s) : v_(EllipsisIndex{}) {
  NNVM_CHECK(s != nullptr && std::strcmp(s, "...") == 0, "index", "the one string index is \"...\" (Ellipsis), got \"",
             s ? s : "null", "\"");
}

std::string TensorIndex::str() const {
  if (is_none()) return "None";
  if (is_ellipsis()) return "...";
  if (is_integer()) return std::to_string(integer());
  if (is_boolean()) return boolean() ? "True" : "False";
  if (is_tensor()) return detail::concat("tensor", shape_str(tensor().sizes()));
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on a chain of + here.
  const Slice& s = slice();
  std::string out;
  if (s.start) out += std::to_string(*s.start);
  out += ':';
  if (s.stop) out += std::to_string(*s.stop);
  if (s.step) {
    out += ':';
    out += std::to_string(*s.step);
  }
  return out;
}

}  // namespace indexing

namespace {

// A tensor index and the dim of the (basic-indexed) tensor it starts at.
struct Advanced {
  int64_t dim;
  Tensor index;
};

// A bool or uint8 tensor index is a mask (libtorch reads uint8 as bool).
bool is_mask(const Tensor& index) { return index.dtype() == kBool || index.dtype() == kUInt8; }

// Dims of the indexed tensor an index names (libtorch's
// count_specified_dimensions): a mask as many as it has, so a 0-dim one none.
int64_t consumed(const TensorIndex& i) {
  if (i.is_integer() || i.is_slice()) return 1;
  if (i.is_tensor()) return is_mask(i.tensor()) ? i.tensor().dim() : 1;
  return 0;
}

// The advanced index a bool stands for, on the dim of size 1 it inserts:
// [0] keeps that dim, [] empties it.
Tensor bool_index(bool keep) { return keep ? zeros({1}, kInt64) : zeros({0}, kInt64); }

std::string list_str(absl::Span<const TensorIndex> indices) {
  std::string s = "[";
  for (size_t k = 0; k < indices.size(); ++k) s += (k ? ", " : "") + indices[k].str();
  return s + "]";
}

// The integers, Slices, None and Ellipsis applied as views, and the dims
// bools insert; the tensor indices (and the bools' [0] or []) left in
// `advanced`, with the dims of the result they index.
Tensor apply_basic(const Tensor& x, absl::Span<const TensorIndex> indices, std::vector<Advanced>& advanced,
                   std::string_view op) {
  int64_t named = 0;
  int ellipses = 0;
  for (const TensorIndex& i : indices) {
    named += consumed(i);
    ellipses += i.is_ellipsis();
  }
  NNVM_CHECK(ellipses <= 1, op, "an index list holds at most one Ellipsis (\"...\"), got ", list_str(indices));
  NNVM_CHECK(named <= x.dim(), op, "too many indices for a tensor of shape ", shape_str(x.sizes()), ": ",
             list_str(indices), " names ", named, " dims");
  Tensor t = x;
  int64_t d = 0;  // the dim of t the next index applies to
  for (const TensorIndex& i : indices) {
    const bool tensor_index = i.is_tensor() && !(i.tensor().dim() == 0 && is_mask(i.tensor()));
    if (tensor_index)
      NNVM_CHECK(is_mask(i.tensor()) || i.tensor().dtype() == kInt64 || i.tensor().dtype() == kInt32, op,
                 "tensor indices must be int64, int32, bool or uint8, got ", i.tensor().dtype(), " in ",
                 list_str(indices));
    if (i.is_integer() || (tensor_index && i.tensor().dim() == 0)) {
      // A 0-dim integer tensor is an integer, as libtorch reads one.
      const int64_t size = t.size(d), k = i.is_integer() ? i.integer() : i.tensor().item<int64_t>();
      NNVM_CHECK(k >= -size && k < size, op, "index ", k, " is out of bounds for dim ", d, " of size ", size,
                 " (shape ", shape_str(x.sizes()), ", indices ", list_str(indices), ")");
      t = t.select(d, k);
    } else if (i.is_slice()) {
      const Slice& s = i.slice();
      const int64_t step = s.step.value_or(1);
      NNVM_CHECK(step > 0, op, "slice steps must be positive, got ", step, " in ", list_str(indices));
      t = t.slice(d, s.start, s.stop, step);
      ++d;
    } else if (i.is_none()) {
      t = t.unsqueeze(d++);
    } else if (i.is_ellipsis()) {
      d += x.dim() - named;
    } else if (i.is_boolean() || (i.is_tensor() && i.tensor().dim() == 0 && is_mask(i.tensor()))) {
      // libtorch's: a dim of size 1, indexed like the tensor indices, so it broadcasts with them.
      const bool keep = i.is_boolean() ? i.boolean() : i.tensor().to(kBool).item<bool>();
      t = t.unsqueeze(d);
      advanced.push_back({d++, bool_index(keep)});
    } else {
      const Tensor& index = i.tensor();
      advanced.push_back({d, is_mask(index) ? index.to(kBool) : index});
      d += consumed(i);
    }
  }
  return t;
}

// A bool mask over dims [dim, dim + mask.dim()) of t as one int64 index per
// dim (its true positions). The result's size depends on the mask's values,
// so they are read here, as libtorch reads them.
void mask_to_indices(const Tensor& t, const Advanced& a, std::vector<Advanced>& out, std::string_view op) {
  const Tensor& mask = a.index;
  const IntArrayRef covered = t.sizes().subspan(size_t(a.dim), size_t(mask.dim()));
  NNVM_CHECK(mask.sizes() == covered, op, "a bool mask of shape ", shape_str(mask.sizes()),
             " does not match the shape ", shape_str(covered), " of the dims it indexes (tensor shape ",
             shape_str(t.sizes()), ", from dim ", a.dim, ")");
  const std::vector<uint8_t> on = mask.to_vector<uint8_t>();
  std::vector<std::vector<int64_t>> coords(size_t(mask.dim()));
  for (int64_t p = 0; p < int64_t(on.size()); ++p) {
    if (!on[size_t(p)]) continue;
    int64_t rest = p;
    for (int64_t j = mask.dim() - 1; j >= 0; --j) {
      coords[size_t(j)].push_back(rest % covered[size_t(j)]);
      rest /= covered[size_t(j)];
    }
  }
  for (int64_t j = 0; j < mask.dim(); ++j) {
    out.push_back({a.dim + j, tensor(coords[size_t(j)])});
  }
}

// The tensor indices as int64 indices, one per dim, in the order of the dims,
// negatives wrapped and every index checked against its dim's size.
std::vector<Advanced> integer_indices(const Tensor& t, const std::vector<Advanced>& advanced,
                                      absl::Span<const TensorIndex> indices, std::string_view op) {
  std::vector<Advanced> ints;
  for (const Advanced& a : advanced) {
    if (a.index.dtype() == kBool) mask_to_indices(t, a, ints, op);
    else ints.push_back({a.dim, a.index.to(kInt64)});
  }
  for (Advanced& a : ints) {
    const int64_t size = t.size(a.dim);
    a.index = where(a.index < 0, a.index + size, a.index);
    NNVM_CHECK(a.index.numel() == 0 || ((a.index >= 0).logical_and(a.index < size)).all().item<bool>(), op,
               "an index is out of bounds for dim ", a.dim, " of size ", size, " (shape ", shape_str(t.sizes()),
               ", indices ", list_str(indices), ")");
  }
  return ints;
}

// The shape the integer indices broadcast to.
DimVector broadcast_index_shape(const std::vector<Advanced>& ints, std::string_view op) {
  DimVector shape;
  for (const Advanced& a : ints) shape = broadcast_shapes(shape, a.index.sizes(), op);
  return shape;
}

bool adjacent(const std::vector<Advanced>& ints) {
  for (size_t j = 1; j < ints.size(); ++j)
    if (ints[j].dim != ints[j - 1].dim + 1) return false;
  return true;
}

// The indexed dims first, in order, then the others: where separated indices
// put their broadcast dims.
DimVector indexed_first(const std::vector<Advanced>& ints, int64_t rank) {
  DimVector order;
  for (const Advanced& a : ints) order.push_back(a.dim);
  for (int64_t j = 0; j < rank; ++j)
    if (std::none_of(ints.begin(), ints.end(), [j](const Advanced& a) { return a.dim == j; })) order.push_back(j);
  return order;
}

// t's shape with dims [first, first + k) replaced by `with`.
DimVector replace_dims(IntArrayRef shape, int64_t first, int64_t k, IntArrayRef with) {
  DimVector out(shape.begin(), shape.begin() + first);
  out.insert(out.end(), with.begin(), with.end());
  out.insert(out.end(), shape.begin() + first + k, shape.end());
  return out;
}

}  // namespace

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(absl::MakeConstSpan(indices.begin(), indices.size()));
}

Tensor Tensor::index(absl::Span<const TensorIndex> indices) const {
  std::vector<Advanced> advanced;
  const Tensor t = apply_basic(*this, indices, advanced, "index");
  if (advanced.empty()) return t;
  const std::vector<Advanced> ints = integer_indices(t, advanced, indices, "index");
  const int64_t k = int64_t(ints.size());
  const DimVector shape = broadcast_index_shape(ints, "index");
  // Separated indices: the indexed dims moved to the front, where the
  // broadcast dims belong, then indexed as adjacent ones.
  const bool in_place = adjacent(ints);
  const Tensor source = in_place ? t : t.permute(indexed_first(ints, t.dim()));
  const int64_t first = in_place ? ints[0].dim : 0;
  // One linear index into the k dims flattened: a single index_select.
  Tensor linear = zeros({}, kInt64);
  for (const Advanced& a : ints) linear = linear * t.size(a.dim) + a.index;
  const Tensor picked = source.flatten(first, first + k - 1).index_select(first, linear.expand(shape).reshape({-1}));
  return picked.reshape(replace_dims(picked.sizes(), first, 1, shape));
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& values) const {
  return index_put_(absl::MakeConstSpan(indices.begin(), indices.size()), values);
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value) const {
  return index_put_(absl::MakeConstSpan(indices.begin(), indices.size()), scalar_tensor(value, dtype()));
}

Tensor& Tensor::index_put_(absl::Span<const TensorIndex> indices, const Tensor& values) const {
  NNVM_CHECK(values.defined(), "index_put_", "the values tensor is undefined");
  std::vector<Advanced> advanced;
  const Tensor t = apply_basic(*this, indices, advanced, "index_put_");
  if (advanced.empty()) {
    t.copy_(values);
    return const_cast<Tensor&>(*this);
  }
  // Tensor indices of this tensor's leading dims, nothing else: the op as it is.
  bool leading = t.is_same(*this);
  for (size_t j = 0; j < advanced.size(); ++j)
    leading = leading && advanced[j].dim == int64_t(j) && (advanced[j].index.dtype() != kBool || advanced.size() == 1);
  if (leading) {
    std::vector<Tensor> raw;
    for (const Advanced& a : advanced) raw.push_back(a.index.dtype() == kBool ? a.index : a.index.to(kInt64));
    return index_put_(raw, values.to(dtype()), false);
  }
  // Otherwise the indexed dims are moved to the front of a view, where the
  // op writes them, and the values with them.
  // The values have the shape indexing gives: the broadcast dims in place of
  // adjacent indexed dims, or first for separated ones (then no reordering).
  const std::vector<Advanced> ints = integer_indices(t, advanced, indices, "index_put_");
  const bool in_place = adjacent(ints);
  const int64_t first = in_place ? ints[0].dim : 0, k = int64_t(ints.size());
  const DimVector shape = broadcast_index_shape(ints, "index_put_");
  const DimVector order = indexed_first(ints, t.dim());
  const DimVector result = in_place ? replace_dims(t.sizes(), first, k, shape)
                                    : replace_dims(t.permute(order).sizes(), 0, k, shape);
  DimVector value_order;
  const int64_t b = int64_t(shape.size());
  for (int64_t j = 0; j < b; ++j) value_order.push_back(first + j);
  for (int64_t j = 0; j < int64_t(result.size()); ++j)
    if (j < first || j >= first + b) value_order.push_back(j);
  std::vector<Tensor> raw;
  for (const Advanced& a : ints) raw.push_back(a.index);
  t.permute(order).index_put_(raw, values.to(dtype()).expand(result).permute(value_order), false);
  return const_cast<Tensor&>(*this);
}

}  // namespace nnvm
