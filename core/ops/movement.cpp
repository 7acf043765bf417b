// Data-movement ops that rearrange whole tensors: cat, stack, pad, repeat,
// flip, roll, tril and triu. Each is one op of the table (one node when
// traced), however its kernel moves the data. Dims are wrapped by the public
// functions so that -1 and rank-1 give the same attributes.
// Kernels: kernels/cpu/movement.cpp. Index-driven ops: core/ops/index.cpp.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm {

namespace {

std::string list_str(IntArrayRef v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }

// libtorch skips 1-d tensors of shape [0] in cat whatever the other ranks are
// (a legacy rule code still relies on to grow a tensor from an empty one).
bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

DType promoted_dtype(absl::Span<const Tensor> in) {
  DType t = in[0].dtype();
  for (const Tensor& x : in) t = promote_types(t, x.dtype());
  return t;
}

// The rank cat's dim refers to: that of the first tensor cat does not skip.
int64_t cat_rank(absl::Span<const Tensor> in) {
  for (const Tensor& t : in)
    if (t.defined() && !skipped_in_cat(t)) return t.dim();
  return 1;
}

// attrs: dim
OutputSpecs infer_cat(absl::Span<const Tensor> in, const Attrs& a) {
  NNVM_CHECK(!in.empty(), "cat", "expected a non-empty list of tensors");
  for (size_t k = 0; k < in.size(); ++k)
    NNVM_CHECK(in[k].dim() > 0, "cat", "zero-dimensional tensor (at position ", k, ") cannot be concatenated");
  const auto ref = std::find_if(in.begin(), in.end(), [](const Tensor& t) { return !skipped_in_cat(t); });
  if (ref == in.end()) return {{dims(in[0].sizes()), promoted_dtype(in)}};
  const int64_t d = wrap_dim(a.i(0), ref->dim(), "cat");
  DimVector shape = dims(ref->sizes());
  shape[d] = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const Tensor& t = in[k];
    if (skipped_in_cat(t)) continue;
    NNVM_CHECK(t.dim() == ref->dim(), "cat", "tensors must have the same rank, but tensor number ", k,
               " has shape ", shape_str(t.sizes()), " and tensor number ", ref - in.begin(), " has shape ",
               shape_str(ref->sizes()));
    for (int64_t i = 0; i < t.dim(); ++i)
      NNVM_CHECK(i == d || t.size(i) == ref->size(i), "cat", "sizes of tensors must match except in dim ", d,
                 ": tensor number ", k, " has shape ", shape_str(t.sizes()), " but tensor number ",
                 ref - in.begin(), " has shape ", shape_str(ref->sizes()));
    shape[d] += t.size(d);
  }
  return {{std::move(shape), promoted_dtype(in)}};
}

// attrs: dim (in [0, rank])
OutputSpecs infer_stack(absl::Span<const Tensor> in, const Attrs& a) {
  NNVM_CHECK(!in.empty(), "stack", "expected a non-empty list of tensors");
  for (size_t k = 1; k < in.size(); ++k)
    NNVM_CHECK(in[k].sizes() == in[0].sizes(), "stack", "expects each tensor to be equal size, but got ",
               shape_str(in[0].sizes()), " at entry 0 and ", shape_str(in[k].sizes()), " at entry ", k);
  const int64_t d = wrap_dim(a.i(0), in[0].dim() + 1, "stack");
  DimVector shape = dims(in[0].sizes());
  shape.insert(shape.begin() + d, int64_t(in.size()));
  return {{std::move(shape), promoted_dtype(in)}};
}

// attrs: pad (before, after pairs from the last dim), mode, value
OutputSpecs infer_pad(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef pad = a.ints(0);
  const std::string& mode = a.str(1);
  NNVM_CHECK(mode == "constant" || mode == "reflect", "pad", "mode must be \"constant\" or \"reflect\", got \"",
             mode, "\"");
  NNVM_CHECK(pad.size() % 2 == 0, "pad", "the padding must be (before, after) pairs, got ", pad.size(),
             " values ", list_str(pad));
  const int64_t pairs = int64_t(pad.size()) / 2;
  NNVM_CHECK(pairs <= x.dim(), "pad", "padding ", list_str(pad), " has ", pairs,
             " (before, after) pairs but the input of shape ", shape_str(x.sizes()), " has only ", x.dim(),
             " dims");
  DimVector shape = dims(x.sizes());
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t d = x.dim() - 1 - p, before = pad[2 * p], after = pad[2 * p + 1], n = x.size(d);
    if (mode == "reflect") {
      NNVM_CHECK(before >= 0 && after >= 0 && ((before < n && after < n) || before + after == 0), "pad",
                 "reflect padding (", before, ", ", after, ") of dim ", d, " must be non-negative and less than ",
                 "the dim's size ", n, " (input shape ", shape_str(x.sizes()), ")");
    }
    shape[d] = n + before + after;
    NNVM_CHECK(shape[d] >= 0, "pad", "padding (", before, ", ", after, ") of dim ", d, " of the input shape ",
               shape_str(x.sizes()), " gives a negative size ", shape[d]);
  }
  return {{std::move(shape), x.dtype()}};
}

// attrs: repeats
OutputSpecs infer_repeat(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef repeats = a.ints(0);
  NNVM_CHECK(int64_t(repeats.size()) >= x.dim(), "repeat", "the number of repeats ", list_str(repeats),
             " must be at least the tensor's rank (shape ", shape_str(x.sizes()), ")");
  const int64_t lead = int64_t(repeats.size()) - x.dim();
  DimVector shape(repeats.size());
  for (size_t d = 0; d < repeats.size(); ++d) {
    NNVM_CHECK(repeats[d] >= 0, "repeat", "repeats must be non-negative, got ", list_str(repeats));
    shape[d] = repeats[d] * (int64_t(d) < lead ? 1 : x.size(int64_t(d) - lead));
  }
  return {{std::move(shape), x.dtype()}};
}

// Wraps a list of dims, refusing repeats.
DimVector distinct_dims(IntArrayRef list, int64_t rank, std::string_view op) {
  DimVector out;
  for (int64_t d : list) {
    const int64_t w = wrap_dim(d, rank, op);
    NNVM_CHECK(std::find(out.begin(), out.end(), w) == out.end(), op, "dim ", w, " appears twice in ",
               list_str(list));
    out.push_back(w);
  }
  return out;
}

// attrs: dims
OutputSpecs infer_flip(absl::Span<const Tensor> in, const Attrs& a) {
  distinct_dims(a.ints(0), in[0].dim(), "flip");
  return {{dims(in[0].sizes()), in[0].dtype()}};
}

// attrs: shifts, dims (empty: roll the flattened tensor by the one shift)
OutputSpecs infer_roll(absl::Span<const Tensor> in, const Attrs& a) {
  const IntArrayRef shifts = a.ints(0), dims_ = a.ints(1);
  if (dims_.empty()) {
    NNVM_CHECK(shifts.size() == 1, "roll", "expected one shift when no dims are given, got ", list_str(shifts));
  } else {
    NNVM_CHECK(shifts.size() == dims_.size(), "roll", "shifts ", list_str(shifts), " and dims ", list_str(dims_),
               " must have the same length");
    for (int64_t d : dims_) wrap_dim(d, in[0].dim(), "roll");
  }
  return {{dims(in[0].sizes()), in[0].dtype()}};
}

InferFn infer_triangle(std::string_view name) {
  return [name](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs {
    NNVM_CHECK(in[0].dim() >= 2, name, "expected a tensor with at least 2 dims but got shape ",
               shape_str(in[0].sizes()));
    return {{dims(in[0].sizes()), in[0].dtype()}};
  };
}

}  // namespace

NNVM_REGISTER(movement_ops) {
  register_op("cat").inputs(-1).infer_with(infer_cat);
  register_op("stack").inputs(-1).infer_with(infer_stack);
  register_op("pad").inputs(1).infer_with(infer_pad);
  register_op("repeat").inputs(1).infer_with(infer_repeat);
  register_op("flip").inputs(1).infer_with(infer_flip);
  register_op("roll").inputs(1).infer_with(infer_roll);
  register_op("tril").inputs(1).infer_with(infer_triangle("tril"));  // attrs: diagonal
  register_op("triu").inputs(1).infer_with(infer_triangle("triu"));
}

Tensor cat(TensorList tensors, int64_t dim) {
  static const OpDef& op = find_op("cat");
  const int64_t rank = cat_rank(tensors);
  const int64_t d = rank > 0 && dim >= -rank && dim < 0 ? dim + rank : dim;
  return call1(op, tensors, {d});
}

Tensor stack(TensorList tensors, int64_t dim) {
  static const OpDef& op = find_op("stack");
  NNVM_CHECK(!tensors.empty(), "stack", "expected a non-empty list of tensors");
  return call1(op, tensors, {wrap_dim(dim, tensors[0].dim() + 1, "stack")});
}

Tensor pad(const Tensor& x, IntArrayRef pad, std::string_view mode, double value) {
  static const OpDef& op = find_op("pad");
  return call1(op, {x}, {dims(pad), std::string(mode), Scalar(value)});
}

Tensor Tensor::repeat(IntArrayRef repeats) const {
  static const OpDef& op = find_op("repeat");
  return call1(op, {*this}, {dims(repeats)});
}

Tensor Tensor::flip(IntArrayRef dims_) const {
  static const OpDef& op = find_op("flip");
  DimVector d = distinct_dims(dims_, dim(), "flip");
  std::sort(d.begin(), d.end());
  return call1(op, {*this}, {d});
}

Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims_) const {
  static const OpDef& op = find_op("roll");
  DimVector d;
  for (int64_t x : dims_) d.push_back(wrap_dim(x, dim(), "roll"));
  return call1(op, {*this}, {dims(shifts), d});
}

Tensor Tensor::tril(int64_t diagonal) const {
  static const OpDef& op = find_op("tril");
  return call1(op, {*this}, {diagonal});
}

Tensor Tensor::triu(int64_t diagonal) const {
  static const OpDef& op = find_op("triu");
  return call1(op, {*this}, {diagonal});
}

Tensor tril(const Tensor& x, int64_t diagonal) { return x.tril(diagonal); }
Tensor triu(const Tensor& x, int64_t diagonal) { return x.triu(diagonal); }

}  // namespace nnvm
