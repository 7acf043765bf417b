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

// The padding is (before, after) pairs, at most one per dim of x.
void check_pad_pairs(const Tensor& x, IntArrayRef pad) {
  NNVM_CHECK(pad.size() % 2 == 0, "pad", "the padding must be (before, after) pairs, got ", pad.size(),
             " values ", list_str(pad));
  const int64_t pairs = int64_t(pad.size()) / 2;
  NNVM_CHECK(pairs <= x.dim(), "pad", "padding ", list_str(pad), " has ", pairs,
             " (before, after) pairs but the input of shape ", shape_str(x.sizes()), " has only ", x.dim(),
             " dims");
}

// attrs: pad (before, after pairs from the last dim), mode, value
OutputSpecs infer_pad(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef pad = a.ints(0);
  const std::string& mode = a.str(1);
  NNVM_CHECK(mode == "constant" || mode == "reflect", "pad", "the pad op's mode must be \"constant\" or ",
             "\"reflect\", got \"", mode, "\"");
  check_pad_pairs(x, pad);
  const int64_t pairs = int64_t(pad.size()) / 2;
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

// ---- gradients ----
// Each gradient moves g back the way the op moved the data: slices for cat
// and stack, the opposite shift or the same flip, and sums where one input
// element fed several outputs (repeat, reflect padding).

using Ctx = GradContext;

// A one-input op's gradient df(ctx, g); no gradient reaches the input when none reached the output.
template <class F> GradFn grad_of_g(F df) {
  return [df](const Ctx& c) -> std::vector<Tensor> {
    if (!c.grad_outputs[0].defined()) return {Tensor()};
    return {df(c, c.grad_outputs[0])};
  };
}

std::vector<Tensor> cat_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined()) return grads;
  const auto ref = std::find_if(c.inputs.begin(), c.inputs.end(), [](const Tensor& t) { return !skipped_in_cat(t); });
  if (ref == c.inputs.end()) return grads;  // every input is an empty 1-d tensor
  const int64_t d = wrap_dim(c.attrs.i(0), ref->dim(), "cat");
  int64_t offset = 0;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const Tensor& t = c.inputs[k];
    if (skipped_in_cat(t)) continue;
    if (c.needs_input_grad[k]) grads[k] = g.narrow(d, offset, t.size(d));
    offset += t.size(d);
  }
  return grads;
}

std::vector<Tensor> stack_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.needs_input_grad.size());
  if (!g.defined()) return grads;
  for (size_t k = 0; k < grads.size(); ++k)
    if (c.needs_input_grad[k]) grads[k] = g.select(c.attrs.i(0), int64_t(k));
  return grads;
}

// Padding of dim `d` alone, (before, after), in pad's last-dim-first pairs for a rank-`rank` tensor.
DimVector pad_of_dim(int64_t rank, int64_t d, int64_t before, int64_t after) {
  DimVector p(size_t(2 * (rank - d)), 0);
  p[p.size() - 2] = before;
  p[p.size() - 1] = after;
  return p;
}

// Reflect padding copies x[1 .. before] (reversed) in front and
// x[n-1-after .. n-2] (reversed) behind, so the gradient adds the padded
// parts of g, flipped back, onto those elements: one dim at a time.
Tensor reflect_pad_grad(const Tensor& g, const Tensor& x, IntArrayRef pad) {
  Tensor r = g;
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    const int64_t d = x.dim() - 1 - int64_t(p), n = x.size(d), before = pad[2 * p], after = pad[2 * p + 1];
    if (before == 0 && after == 0) continue;
    Tensor core = r.narrow(d, before, n);
    if (before > 0)
      core = core + nnvm::pad(r.narrow(d, 0, before).flip({d}), pad_of_dim(x.dim(), d, 1, n - 1 - before));
    if (after > 0)
      core = core + nnvm::pad(r.narrow(d, before + n, after).flip({d}), pad_of_dim(x.dim(), d, n - 1 - after, 1));
    r = core;
  }
  return r;
}

Tensor pad_grad(const Ctx& c, const Tensor& g) {
  const IntArrayRef pad = c.attrs.ints(0);
  if (c.attrs.str(1) == "reflect") return reflect_pad_grad(g, c.inputs[0], pad);
  // Constant padding by -pad crops exactly what padding by pad added.
  DimVector crop;
  for (int64_t v : pad) crop.push_back(-v);
  return nnvm::pad(g, crop);
}

// g viewed as [lead repeats..., r0, s0, r1, s1, ...], summed over the repeats.
Tensor repeat_grad(const Ctx& c, const Tensor& g) {
  const Tensor& x = c.inputs[0];
  const IntArrayRef repeats = c.attrs.ints(0);
  const int64_t lead = int64_t(repeats.size()) - x.dim();
  DimVector split, summed;
  for (int64_t d = 0; d < lead; ++d) {
    summed.push_back(int64_t(split.size()));
    split.push_back(repeats[size_t(d)]);
  }
  for (int64_t d = 0; d < x.dim(); ++d) {
    summed.push_back(int64_t(split.size()));
    split.push_back(repeats[size_t(lead + d)]);
    split.push_back(x.size(d));
  }
  if (summed.empty()) return g;
  return g.reshape(split).sum(summed).reshape(x.sizes());
}

Tensor roll_grad(const Ctx& c, const Tensor& g) {
  DimVector back;
  for (int64_t s : c.attrs.ints(0)) back.push_back(-s);
  return g.roll(back, c.attrs.ints(1));
}

}  // namespace

NNVM_REGISTER(movement_ops) {
  register_op("cat").inputs(-1).infer_with(infer_cat).grad_with(cat_grad);
  register_op("stack").inputs(-1).infer_with(infer_stack).grad_with(stack_grad, /*saves_inputs=*/false);
  register_op("pad").inputs(1).infer_with(infer_pad).grad_with(grad_of_g(pad_grad));
  register_op("repeat").inputs(1).infer_with(infer_repeat).grad_with(grad_of_g(repeat_grad));
  register_op("flip").inputs(1).infer_with(infer_flip).grad_with(
      grad_of_g([](const Ctx& c, const Tensor& g) { return g.flip(c.attrs.ints(0)); }), false);
  register_op("roll").inputs(1).infer_with(infer_roll).grad_with(grad_of_g(roll_grad), false);
  // attrs: diagonal
  register_op("tril").inputs(1).infer_with(infer_triangle("tril")).grad_with(
      grad_of_g([](const Ctx& c, const Tensor& g) { return g.tril(c.attrs.i(0)); }), false);
  register_op("triu").inputs(1).infer_with(infer_triangle("triu")).grad_with(
      grad_of_g([](const Ctx& c, const Tensor& g) { return g.triu(c.attrs.i(0)); }), false);
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

namespace {

// Replicate and circular padding are views and a cat per padded dim, so they
// differentiate (the cat's and expand's gradients add the copies back) and
// trace as those ops do. As in PyTorch, a negative pad crops first and the
// padding copies from what is left (replicate: the edge, even when the crop
// takes the whole dim).
Tensor copy_pad(const Tensor& x, IntArrayRef pad, bool circular) {
  const std::string_view mode = circular ? "circular" : "replicate";
  check_pad_pairs(x, pad);
  Tensor r = x;
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    const int64_t d = x.dim() - 1 - int64_t(p), before = pad[2 * p], after = pad[2 * p + 1], size = r.size(d);
    if (!circular && size > 0 && (before <= -size || after <= -size) && size + before + after >= 0) {
      // PyTorch's replication_pad reads input[clamp(j - before, 0, size - 1)]: a crop past the whole dim
      // leaves the edge on its other side, copied to every output element.
      DimVector out = dims(r.sizes());
      out[size_t(d)] = size + before + after;
      r = r.narrow(d, before <= -size ? size - 1 : 0, 1).expand(out);
      continue;
    }
    const int64_t n = size - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
    NNVM_CHECK(n >= 0, "pad", mode, " padding (", before, ", ", after, ") of dim ", d, " crops more than the ",
               "dim's size ", size, " (input shape ", shape_str(x.sizes()), ")");
    r = r.narrow(d, std::max<int64_t>(-before, 0), n);
    const int64_t head = std::max<int64_t>(before, 0), tail = std::max<int64_t>(after, 0);
    if (head == 0 && tail == 0) continue;
    if (circular) {
      NNVM_CHECK(head <= n && tail <= n, "pad", "circular padding (", before, ", ", after, ") of dim ", d,
                 " wraps around more than once: expected each side at most the dim's size ", n,
                 " (input shape ", shape_str(x.sizes()), ")");
      r = cat({r.narrow(d, n - head, head), r, r.narrow(d, 0, tail)}, d);
    } else {
      NNVM_CHECK(n > 0, "pad", "replicate padding (", before, ", ", after, ") of dim ", d,
                 " needs a non-empty dim to copy (input shape ", shape_str(x.sizes()), ")");
      DimVector edge = dims(r.sizes());
      edge[size_t(d)] = head;
      const Tensor front = r.narrow(d, 0, 1).expand(edge);
      edge[size_t(d)] = tail;
      r = cat({front, r, r.narrow(d, n - 1, 1).expand(edge)}, d);
    }
  }
  return r;
}

// Reflect padding with negative pads, as PyTorch's reflection_pad: output
// element j reads the input at j - before reflected into [0, n), so the
// positive pads reflect the whole input and the negative ones crop the
// result (a crop may reach into the reflected part). Each pad must be less
// than the input's size.
Tensor reflect_pad_cropped(const Tensor& x, IntArrayRef pad, const OpDef& op) {
  check_pad_pairs(x, pad);
  DimVector grow, crop;
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    const int64_t d = x.dim() - 1 - int64_t(p), before = pad[2 * p], after = pad[2 * p + 1], n = x.size(d);
    NNVM_CHECK(before < n && after < n, "pad", "reflect padding (", before, ", ", after, ") of dim ", d,
               " must be less than the dim's size ", n, " on each side (input shape ", shape_str(x.sizes()), ")");
    for (int64_t v : {before, after}) {
      grow.push_back(std::max<int64_t>(v, 0));
      crop.push_back(std::min<int64_t>(v, 0));
    }
  }
  return nnvm::pad(call1(op, {x}, {grow, std::string("reflect"), Scalar(0.0)}), crop);
}

}  // namespace

Tensor pad(const Tensor& x, IntArrayRef pad, std::string_view mode, double value) {
  static const OpDef& op = find_op("pad");
  if (mode == "replicate" || mode == "circular") return copy_pad(x, pad, mode == "circular");
  NNVM_CHECK(mode == "constant" || mode == "reflect", "pad", "mode must be \"constant\", \"reflect\", ",
             "\"replicate\" or \"circular\", got \"", mode, "\" (input shape ", shape_str(x.sizes()), ")");
  if (mode == "reflect" && std::any_of(pad.begin(), pad.end(), [](int64_t v) { return v < 0; }))
    return reflect_pad_cropped(x, pad, op);
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
