// View ops: each computes a new (shape, strides, offset) over its input's
// storage and never copies. In eager mode the result shares the storage; the
// tracer records them as view nodes.
#include <algorithm>
#include <optional>

#include "absl/strings/str_join.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm {

namespace {

// Resolves one -1 in a requested shape and checks the element count.
DimVector infer_size(IntArrayRef requested, int64_t numel, std::string_view op, IntArrayRef from) {
  DimVector shape(requested.begin(), requested.end());
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      NNVM_CHECK(infer_at < 0, op, "only one dimension can be -1, got ", shape_str(requested));
      infer_at = int64_t(i);
    } else {
      NNVM_CHECK(shape[i] >= 0, op, "invalid size ", shape[i], " in shape ", shape_str(requested));
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    NNVM_CHECK(known != 0 && numel % known == 0, op, "shape ", shape_str(requested),
               " is invalid for input of shape ", shape_str(from), " (", numel, " elements)");
    shape[infer_at] = numel / known;
  } else {
    NNVM_CHECK(known == numel, op, "shape ", shape_str(requested), " is invalid for input of shape ",
               shape_str(from), " (", numel, " elements; expected a shape with the same count)");
  }
  return shape;
}

ViewSpec view_view(const Tensor& in, const Attrs& a) {
  DimVector shape = infer_size(a.ints(0), in.numel(), "view", in.sizes());
  auto strides = view_strides(in.sizes(), in.strides(), shape);
  NNVM_CHECK(strides.has_value(), "view", "cannot view a tensor of shape ", shape_str(in.sizes()), " and strides ",
             shape_str(in.strides()), " as ", shape_str(shape),
             ": its memory is not laid out compatibly; use reshape() (which copies) or contiguous() first");
  return {std::move(shape), std::move(*strides), in.storage_offset()};
}

ViewSpec view_permute(const Tensor& in, const Attrs& a) {
  const IntArrayRef perm = a.ints(0);
  const int64_t nd = in.dim();
  NNVM_CHECK(int64_t(perm.size()) == nd, "permute", "expected ", nd, " dims for a tensor of shape ",
             shape_str(in.sizes()), " but got [", absl::StrJoin(perm, ", "), "]");
  ViewSpec v{DimVector(nd), DimVector(nd), in.storage_offset()};
  std::vector<bool> seen(nd, false);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = wrap_dim(perm[i], nd, "permute");
    NNVM_CHECK(!seen[d], "permute", "dim ", d, " appears twice in [", absl::StrJoin(perm, ", "), "]");
    seen[d] = true;
    v.shape[i] = in.size(d);
    v.strides[i] = in.stride(d);
  }
  return v;
}

ViewSpec view_transpose(const Tensor& in, const Attrs& a) {
  const int64_t nd = in.dim();
  const int64_t d0 = wrap_dim(a.i(0), nd, "transpose"), d1 = wrap_dim(a.i(1), nd, "transpose");
  ViewSpec v{dims(in.sizes()), dims(in.strides()), in.storage_offset()};
  if (nd == 0) return v;
  std::swap(v.shape[d0], v.shape[d1]);
  std::swap(v.strides[d0], v.strides[d1]);
  return v;
}

// attrs: dim, start, end, step (start/end already clamped by the caller)
ViewSpec view_slice(const Tensor& in, const Attrs& a) {
  NNVM_CHECK(in.dim() > 0, "slice", "cannot slice a 0-d tensor");
  const int64_t d = wrap_dim(a.i(0), in.dim(), "slice");
  const int64_t start = a.i(1), end = a.i(2), step = a.i(3);
  ViewSpec v{dims(in.sizes()), dims(in.strides()), in.storage_offset() + start * in.stride(d)};
  v.shape[d] = end > start ? (end - start - 1) / step + 1 : 0;  // no overflow for any step
  v.strides[d] *= step;
  return v;
}

ViewSpec view_expand(const Tensor& in, const Attrs& a) {
  const IntArrayRef target = a.ints(0);
  const int64_t nd = int64_t(target.size()), lead = nd - in.dim();
  NNVM_CHECK(lead >= 0, "expand", "the number of sizes (", nd, ") must be at least the tensor's rank (shape ",
             shape_str(in.sizes()), ")");
  ViewSpec v{DimVector(nd), DimVector(nd), in.storage_offset()};
  for (int64_t i = 0; i < nd; ++i) {
    if (i < lead) {
      NNVM_CHECK(target[i] >= 0, "expand", "size -1 is not allowed in a new leading dim (",
                 shape_str(target), ")");
      v.shape[i] = target[i];
      v.strides[i] = 0;
      continue;
    }
    const int64_t have = in.size(i - lead);
    NNVM_CHECK(target[i] >= -1, "expand", "invalid size ", target[i], " at dim ", i, " in ", shape_str(target),
               " (expected a size >= 0, or -1 to keep the existing one)");
    const int64_t want = target[i] == -1 ? have : target[i];
    NNVM_CHECK(have == want || have == 1, "expand", "the expanded size ", want, " must match the existing size ",
               have, " at dim ", i, " (shape ", shape_str(in.sizes()), " to ", shape_str(target),
               "); only size-1 dims can grow");
    v.shape[i] = want;
    v.strides[i] = have == want ? in.stride(i - lead) : 0;
  }
  return v;
}

// attrs: the (sorted, wrapped) dims to drop; each must have size 1
ViewSpec view_squeeze(const Tensor& in, const Attrs& a) {
  const IntArrayRef drop = a.ints(0);
  ViewSpec v{{}, {}, in.storage_offset()};
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (std::find(drop.begin(), drop.end(), d) != drop.end()) continue;
    v.shape.push_back(in.size(d));
    v.strides.push_back(in.stride(d));
  }
  return v;
}

ViewSpec view_unsqueeze(const Tensor& in, const Attrs& a) {
  const int64_t d = wrap_dim(a.i(0), in.dim() + 1, "unsqueeze");
  ViewSpec v{dims(in.sizes()), dims(in.strides()), in.storage_offset()};
  const int64_t stride = d < in.dim() ? in.stride(d) * in.size(d) : 1;
  v.shape.insert(v.shape.begin() + d, 1);
  v.strides.insert(v.strides.begin() + d, stride);
  return v;
}

// select's layout (the op's, and Tensor::select's without the dispatcher).
ViewSpec select_layout(const Tensor& in, int64_t dim, int64_t index) {
  NNVM_CHECK(in.dim() > 0, "select", "cannot select on a 0-d tensor");
  const int64_t d = wrap_dim(dim, in.dim(), "select");
  const int64_t size = in.size(d);
  NNVM_CHECK(index >= -size && index < size, "select", "index ", index, " is out of range for dim ", d,
             " of size ", size, " (shape ", shape_str(in.sizes()), ")");
  if (index < 0) index += size;
  const TensorImpl& t = *in.impl();
  ViewSpec v{{}, {}, t.offset + index * t.strides[size_t(d)]};
  for (size_t k = 0; k < t.shape.size(); ++k) {  // every dim but d
    if (k == size_t(d)) continue;
    v.shape.push_back(t.shape[k]);
    v.strides.push_back(t.strides[k]);
  }
  return v;
}

ViewSpec view_select(const Tensor& in, const Attrs& a) { return select_layout(in, a.i(0), a.i(1)); }

ViewSpec view_diagonal(const Tensor& in, const Attrs& a) {
  NNVM_CHECK(in.dim() >= 2, "diagonal", "expected a tensor of rank >= 2 but got shape ", shape_str(in.sizes()));
  const int64_t offset = a.i(0);
  const int64_t d1 = wrap_dim(a.i(1), in.dim(), "diagonal"), d2 = wrap_dim(a.i(2), in.dim(), "diagonal");
  NNVM_CHECK(d1 != d2, "diagonal", "dim1 and dim2 must differ, both are ", d1);
  int64_t len, start = in.storage_offset();
  if (offset >= 0) {
    len = std::max<int64_t>(0, std::min(in.size(d1), in.size(d2) - offset));
    if (len > 0) start += offset * in.stride(d2);
  } else {
    len = std::max<int64_t>(0, std::min(in.size(d1) + offset, in.size(d2)));
    if (len > 0) start -= offset * in.stride(d1);
  }
  ViewSpec v{{}, {}, start};
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    v.shape.push_back(in.size(d));
    v.strides.push_back(in.stride(d));
  }
  v.shape.push_back(len);
  v.strides.push_back(in.stride(d1) + in.stride(d2));
  return v;
}

const OpDef& op(std::string_view name) { return find_op(name); }


// ---- gradients ----
// A view's gradient puts the incoming gradient back where the view's
// elements sit in the input: a reshape, an inverse permutation, a sum over
// expanded dims, or, for slice/select/diagonal, "view_scatter": zeros of the
// input's shape with the gradient written through the same view.

using Ctx = GradContext;

template <class F> GradFn view_grad(F df) {
  return [df](const Ctx& c) -> std::vector<Tensor> {
    if (!c.grad_outputs[0].defined()) return {Tensor()};
    return {df(c, c.grad_outputs[0], c.inputs[0].sizes())};
  };
}

// attrs of view_scatter: input shape, view op name, then the view op's own attrs.
Attrs scatter_attrs(IntArrayRef shape, std::string_view view_op, const Attrs& view_attrs) {
  Attrs a{dims(shape), std::string(view_op)};
  for (size_t i = 0; i < view_attrs.size(); ++i) a.push_back(view_attrs[i]);
  return a;
}


GradFn scatter_grad(std::string_view view_op) {
  const std::string name(view_op);
  return view_grad([name](const Ctx& c, const Tensor& g, IntArrayRef shape) {
    static const OpDef& scatter = find_op("view_scatter");
    return call1(scatter, {g}, scatter_attrs(shape, name, c.attrs));
  });
}

}  // namespace

NNVM_REGISTER(view_ops) {
  register_op("view").view_with(view_view).grad_with(
      view_grad([](const Ctx&, const Tensor& g, IntArrayRef shape) { return g.reshape(shape); }));
  register_op("permute").view_with(view_permute).grad_with(view_grad([](const Ctx& c, const Tensor& g, IntArrayRef) {
    const IntArrayRef perm = c.attrs.ints(0);
    DimVector inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[wrap_dim(perm[i], int64_t(perm.size()), "permute")] = int64_t(i);
    return g.permute(inverse);
  }));
  register_op("transpose").view_with(view_transpose).grad_with(
      view_grad([](const Ctx& c, const Tensor& g, IntArrayRef) { return g.transpose(c.attrs.i(0), c.attrs.i(1)); }));
  register_op("expand").view_with(view_expand).grad_with(
      view_grad([](const Ctx&, const Tensor& g, IntArrayRef shape) { return sum_to(g, shape); }));
  for (const char* name : {"squeeze", "unsqueeze"})
    register_op(name).grad_with(
        view_grad([](const Ctx&, const Tensor& g, IntArrayRef shape) { return g.reshape(shape); }));
  register_op("squeeze").view_with(view_squeeze);
  register_op("unsqueeze").view_with(view_unsqueeze);
  register_op("slice").view_with(view_slice).grad_with(scatter_grad("slice"));
  register_op("select").view_with(view_select).grad_with(scatter_grad("select"));
  register_op("diagonal").view_with(view_diagonal).grad_with(scatter_grad("diagonal"));
  // A per-tensor scale and zero point hold for any layout of the same integers;
  // a per-channel quantizer's axis would move (core/quantize.h).
  for (const char* name : {"view", "permute", "transpose", "expand", "squeeze", "unsqueeze", "slice", "select", "diagonal"})
    register_op(name).takes_quantized(QuantizedInputs::kPerTensor);

  // as_strided(x) [shape, strides, offset]: the view of x's storage at that
  // layout (offset in elements from the storage's start). The tracer reads
  // views of values it computes this way; it has no gradient.
  register_op("as_strided").view_with([](const Tensor& in, const Attrs& a) {
    ViewSpec v{dims(a.ints(0)), dims(a.ints(1)), a.i(2)};
    NNVM_CHECK(v.shape.size() == v.strides.size(), "as_strided", "shape ", shape_str(v.shape), " and strides ",
               shape_str(v.strides), " differ in rank");
    NNVM_CHECK(v.offset >= 0, "as_strided", "negative storage offset ", v.offset);
    int64_t last = v.offset;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      NNVM_CHECK(v.shape[d] >= 0 && v.strides[d] >= 0, "as_strided", "invalid shape ", shape_str(v.shape),
                 " or strides ", shape_str(v.strides));
      if (v.shape[d] == 0) last = -1;
      if (last >= 0) last += (v.shape[d] - 1) * v.strides[d];
    }
    if (in.impl()->storage && last >= 0)
      NNVM_CHECK(size_t(last + 1) * in.element_size() <= in.storage()->nbytes(), "as_strided", "the view ",
                 shape_str(v.shape), " strides ", shape_str(v.strides), " offset ", v.offset,
                 " reaches past the storage's ", in.storage()->nbytes() / in.element_size(), " elements");
    return v;
  });
  // strided_update(base, src) [shape, strides, offset]: a copy of the
  // contiguous `base` with src written over as_strided(shape, strides, offset)
  // of it: the functional form of an in-place write through a view.
  register_op("strided_update")
      .inputs(2)
      .infer_with([](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
        NNVM_CHECK(in[1].sizes() == a.ints(0), "strided_update", "the source ", shape_str(in[1].sizes()),
                   " does not have the view's shape ", shape_str(a.ints(0)));
        return {{dims(in[0].sizes()), in[0].dtype()}};
      })
      .kernel(kCPU, [](absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
        static const OpDef& copy = find_op("copy");
        static const OpDef& as_strided = find_op("as_strided");
        copy.kernels[size_t(kCPU)]({in[0]}, {out[0]}, {});
        const Tensor region = call1(as_strided, {out[0]}, a);
        copy.kernels[size_t(kCPU)]({in[1]}, {region}, {});
      });
  // view_scatter(g): zeros of the input's shape with g written through the view.
  register_op("view_scatter")
      .infer_with([](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
        return {{dims(a.ints(0)), in[0].dtype()}};
      })
      .grad_with([](const Ctx& c) -> std::vector<Tensor> {
        if (!c.grad_outputs[0].defined()) return {Tensor()};
        return {call1(find_op(c.attrs.str(1)), {c.grad_outputs[0]}, c.attrs.tail(2))};
      }, /*saves_inputs=*/false);
}

Tensor Tensor::view(IntArrayRef shape) const {
  static const OpDef& o = op("view");
  return call1(o, {*this}, {dims(shape)});
}

Tensor Tensor::reshape(IntArrayRef shape) const {
  const DimVector resolved = infer_size(shape, numel(), "reshape", sizes());
  if (view_strides(sizes(), strides(), resolved)) return view(resolved);
  return contiguous().view(resolved);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  static const OpDef& o = op("transpose");
  return call1(o, {*this}, {dim0, dim1});
}

Tensor Tensor::permute(IntArrayRef perm) const {
  static const OpDef& o = op("permute");
  return call1(o, {*this}, {dims(perm)});
}

Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  static const OpDef& o = op("slice");
  NNVM_CHECK(this->dim() > 0, "slice", "cannot slice a 0-d tensor");
  NNVM_CHECK(step > 0, "slice", "step must be positive, got ", step);
  const int64_t d = wrap_dim(dim, this->dim(), "slice");
  const int64_t size = this->size(d);
  // Python slice semantics: negative bounds count from the end, then clamp.
  auto clamp_bound = [&](std::optional<int64_t> b, int64_t fallback) {
    if (!b) return fallback;
    int64_t v = *b < 0 ? *b + size : *b;
    return std::clamp<int64_t>(v, 0, size);
  };
  const int64_t s = clamp_bound(start, 0);
  const int64_t e = std::max(s, clamp_bound(end, size));
  return call1(o, {*this}, {d, s, e, step});
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  NNVM_CHECK(this->dim() > 0, "narrow", "cannot narrow a 0-d tensor");
  const int64_t d = wrap_dim(dim, this->dim(), "narrow");
  const int64_t size = this->size(d);
  if (start < 0) start += size;
  NNVM_CHECK(start >= 0 && start <= size && length >= 0 && length <= size - start, "narrow", "start ", start, " and length ",
             length, " exceed dim ", d, " of size ", size, " (shape ", shape_str(sizes()), ")");
  return slice(d, start, start + length);
}

Tensor Tensor::expand(IntArrayRef shape) const {
  static const OpDef& o = op("expand");
  return call1(o, {*this}, {dims(shape)});
}

Tensor Tensor::squeeze() const {
  static const OpDef& o = op("squeeze");
  DimVector drop;
  for (int64_t d = 0; d < dim(); ++d)
    if (size(d) == 1) drop.push_back(d);
  return call1(o, {*this}, {drop});
}

Tensor Tensor::squeeze(int64_t dim) const {
  static const OpDef& o = op("squeeze");
  if (this->dim() == 0) return call1(o, {*this}, {DimVector{}});
  const int64_t d = wrap_dim(dim, this->dim(), "squeeze");
  return call1(o, {*this}, {size(d) == 1 ? DimVector{d} : DimVector{}});
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  static const OpDef& o = op("unsqueeze");
  return call1(o, {*this}, {dim});
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int64_t s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
  NNVM_CHECK(s <= e, "flatten", "start_dim ", s, " must not come after end_dim ", e);
  DimVector shape(sizes().begin(), sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= size(d);
  shape.push_back(n);
  shape.insert(shape.end(), sizes().begin() + e + 1, sizes().end());
  return reshape(shape);
}

Tensor Tensor::unflatten(int64_t dim, IntArrayRef sizes_) const {
  NNVM_CHECK(this->dim() > 0, "unflatten", "a 0-d tensor has no dim to unflatten");
  const int64_t d = wrap_dim(dim, this->dim(), "unflatten");
  const DimVector inner = infer_size(sizes_, size(d), "unflatten", sizes());
  DimVector shape(sizes().begin(), sizes().begin() + d);
  shape.insert(shape.end(), inner.begin(), inner.end());
  shape.insert(shape.end(), sizes().begin() + d + 1, sizes().end());
  return view(shape);
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  static const OpDef& o = op("select");
  // Indexing in a loop (xs[t]) most often has no gradient to record: then
  // the view is made here, without the dispatcher's Attrs (half its cost).
  if (impl_ && !impl_->autograd) return view_of(*this, select_layout(*this, dim, index));
  return call1(o, {*this}, {dim, index});
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  static const OpDef& o = op("diagonal");
  return call1(o, {*this}, {offset, dim1, dim2});
}

Tensor Tensor::t() const {
  NNVM_CHECK(dim() <= 2, "t", "expects a tensor with <= 2 dims but got shape ", shape_str(sizes()));
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::mT() const {
  NNVM_CHECK(dim() >= 2, "mT", "expects a tensor with >= 2 dims but got shape ", shape_str(sizes()));
  return transpose(-2, -1);
}

std::vector<Tensor> Tensor::unbind(int64_t dim) const {
  NNVM_CHECK(this->dim() > 0, "unbind", "a 0-d tensor has no dim to unbind");
  const int64_t d = wrap_dim(dim, this->dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < size(d); ++i) out.push_back(select(d, i));
  return out;
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  NNVM_CHECK(this->dim() > 0, "split", "a 0-d tensor has no dim to split");
  const int64_t d = wrap_dim(dim, this->dim(), "split");
  NNVM_CHECK(split_size > 0 || size(d) == 0, "split", "split_size must be positive, got ", split_size);
  std::vector<Tensor> out;
  for (int64_t s = 0; s < size(d); s += split_size) out.push_back(slice(d, s, std::min(size(d), s + split_size)));
  if (out.empty()) out.push_back(*this);
  return out;
}

std::vector<Tensor> Tensor::split(IntArrayRef split_sizes, int64_t dim) const {
  NNVM_CHECK(this->dim() > 0, "split", "a 0-d tensor has no dim to split");
  const int64_t d = wrap_dim(dim, this->dim(), "split");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    NNVM_CHECK(s >= 0, "split", "split sizes must be non-negative, got [", absl::StrJoin(split_sizes, ", "), "]");
    total += s;
  }
  NNVM_CHECK(total == size(d), "split", "split sizes [", absl::StrJoin(split_sizes, ", "), "] sum to ", total,
             " but dim ", d, " has size ", size(d));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(slice(d, start, start + s));
    start += s;
  }
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  NNVM_CHECK(chunks > 0, "chunk", "chunks must be positive, got ", chunks);
  NNVM_CHECK(this->dim() > 0, "chunk", "a 0-d tensor has no dim to chunk");
  const int64_t d = wrap_dim(dim, this->dim(), "chunk");
  const int64_t per = std::max<int64_t>(1, (size(d) + chunks - 1) / chunks);
  return split(per, d);
}

}  // namespace nnvm
