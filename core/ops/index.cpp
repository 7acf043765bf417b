// Data-movement ops driven by index tensors: gather, scatter (tensor and
// value forms), scatter_add, index_select, index_put, embedding and one_hot.
// Shape inference checks shapes and index dtypes; the index values themselves
// are run-time data, so the kernels bounds-check them.
// Kernels: kernels/cpu/index.cpp.
#include <algorithm>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm {

namespace {

void check_index_dtype(const Tensor& index, std::string_view op) {
  NNVM_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
             "expected an index tensor of dtype int64 (or int32) but got ", index.dtype(), " (shape ",
             shape_str(index.sizes()), ")");
}

void check_same_dtype(const Tensor& self, const Tensor& other, std::string_view what, std::string_view op) {
  NNVM_CHECK(other.dtype() == self.dtype(), op, "expected ", what, " of dtype ", self.dtype(),
             " (the input's) but got ", other.dtype());
}

// gather and scatter: index has self's rank and fits inside it outside `dim`.
int64_t check_gather_shapes(const Tensor& self, const Tensor& index, int64_t dim, std::string_view op) {
  check_index_dtype(index, op);
  NNVM_CHECK(index.dim() == self.dim(), op, "index of shape ", shape_str(index.sizes()),
             " must have the same rank as the input of shape ", shape_str(self.sizes()));
  const int64_t d = wrap_dim(dim, self.dim(), op);
  for (int64_t i = 0; i < self.dim(); ++i)
    NNVM_CHECK(i == d || index.size(i) <= self.size(i), op, "index of shape ", shape_str(index.sizes()),
               " must not be larger than the input of shape ", shape_str(self.sizes()), " outside dim ", d);
  return d;
}

// inputs: self, index; attrs: dim
OutputSpecs infer_gather(absl::Span<const Tensor> in, const Attrs& a) {
  check_gather_shapes(in[0], in[1], a.i(0), "gather");
  return {{dims(in[1].sizes()), in[0].dtype()}};
}

// inputs: self, index[, src]; attrs: dim[, value]
InferFn infer_scatter(std::string_view name) {
  return [name](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
    const Tensor &self = in[0], &index = in[1];
    check_gather_shapes(self, index, a.i(0), name);
    if (in.size() > 2) {
      const Tensor& src = in[2];
      check_same_dtype(self, src, "src", name);
      NNVM_CHECK(src.dim() == index.dim(), name, "src of shape ", shape_str(src.sizes()),
                 " must have the same rank as the index of shape ", shape_str(index.sizes()));
      for (int64_t i = 0; i < index.dim(); ++i)
        NNVM_CHECK(index.size(i) <= src.size(i), name, "index of shape ", shape_str(index.sizes()),
                   " must not be larger than src of shape ", shape_str(src.sizes()));
    }
    return {{dims(self.sizes()), self.dtype()}};
  };
}

// inputs: self, index (0-d or 1-d); attrs: dim
OutputSpecs infer_index_select(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor &self = in[0], &index = in[1];
  check_index_dtype(index, "index_select");
  NNVM_CHECK(index.dim() <= 1, "index_select", "expected a 0-d or 1-d index but got shape ",
             shape_str(index.sizes()));
  NNVM_CHECK(self.dim() > 0, "index_select", "cannot index a 0-d tensor");
  const int64_t d = wrap_dim(a.i(0), self.dim(), "index_select");
  DimVector shape = dims(self.sizes());
  shape[d] = index.numel();
  return {{std::move(shape), self.dtype()}};
}

// inputs: self, values, then one int index per leading dim or one bool mask;
// attrs: accumulate
OutputSpecs infer_index_put(absl::Span<const Tensor> in, const Attrs&) {
  NNVM_CHECK(in.size() >= 3, "index_put", "expected at least one index tensor");
  const Tensor &self = in[0], &values = in[1];
  const absl::Span<const Tensor> indices = in.subspan(2);
  check_same_dtype(self, values, "values", "index_put");
  if (indices[0].dtype() == kBool) {
    const Tensor& mask = indices[0];
    NNVM_CHECK(indices.size() == 1, "index_put", "a bool mask must be the only index, got ", indices.size(),
               " index tensors");
    const bool leading = mask.dim() <= self.dim() &&
                         std::equal(mask.sizes().begin(), mask.sizes().end(), self.sizes().begin());
    NNVM_CHECK(leading, "index_put", "mask of shape ", shape_str(mask.sizes()),
               " does not match the leading dims of the input shape ", shape_str(self.sizes()));
    return {{dims(self.sizes()), self.dtype()}};
  }
  NNVM_CHECK(int64_t(indices.size()) <= self.dim(), "index_put", "too many indices (", indices.size(),
             ") for a tensor of shape ", shape_str(self.sizes()));
  DimVector target = dims(indices[0].sizes());
  for (const Tensor& index : indices) {
    check_index_dtype(index, "index_put");
    target = broadcast_shapes(target, index.sizes(), "index_put");
  }
  target.insert(target.end(), self.sizes().begin() + int64_t(indices.size()), self.sizes().end());
  NNVM_CHECK(broadcasts_to(values.sizes(), target), "index_put", "values of shape ",
             shape_str(values.sizes()), " cannot be broadcast to the indexed shape ", shape_str(target));
  return {{dims(self.sizes()), self.dtype()}};
}

// inputs: weight, indices; attrs: padding_idx (-1: none; only the gradient uses it)
OutputSpecs infer_embedding(absl::Span<const Tensor> in, const Attrs&) {
  const Tensor &weight = in[0], &indices = in[1];
  NNVM_CHECK(weight.dim() == 2, "embedding", "expected a 2-d weight but got shape ", shape_str(weight.sizes()));
  check_index_dtype(indices, "embedding");
  DimVector shape = dims(indices.sizes());
  shape.push_back(weight.size(1));
  return {{std::move(shape), weight.dtype()}};
}

// inputs: indices; attrs: num_classes (resolved, >= 0)
OutputSpecs infer_one_hot(absl::Span<const Tensor> in, const Attrs& a) {
  check_index_dtype(in[0], "one_hot");
  NNVM_CHECK(a.i(0) >= 0, "one_hot", "num_classes must be non-negative, got ", a.i(0));
  DimVector shape = dims(in[0].sizes());
  shape.push_back(a.i(0));
  return {{std::move(shape), kInt64}};
}

// ---- gradients ----
// Reading through an index (gather, index_select, embedding) has a gradient
// that adds g back through the same index (scatter_add, index_put with
// accumulate), and writing through one has a gradient that reads g through
// it. Index tensors get no gradient; one_hot has an integer output and none.

using Ctx = GradContext;

// The gradient of src (or values) when the index covers only its leading
// corner: the gathered g, zero-padded to src's shape.
Tensor pad_to(const Tensor& t, IntArrayRef shape) {
  DimVector pad;
  bool any = false;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    pad.push_back(0);
    pad.push_back(shape[size_t(d)] - t.size(d));
    any = any || pad.back() != 0;
  }
  return any ? nnvm::pad(t, pad) : t;
}

std::vector<Tensor> gather_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return {Tensor(), Tensor()};
  return {zeros_like(c.inputs[0], g.dtype()).scatter_add(c.attrs.i(0), c.inputs[1], g), Tensor()};
}

// scatter, scatter.value and scatter_add: self keeps g where it was not
// overwritten (everywhere for scatter_add); src's elements land at index.
GradFn scatter_grad(bool add, bool has_src) {
  return [add, has_src](const Ctx& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    std::vector<Tensor> grads(c.inputs.size());
    if (!g.defined()) return grads;
    const int64_t d = c.attrs.i(0);
    const Tensor& index = c.inputs[1];
    if (c.needs_input_grad[0]) grads[0] = add ? g : g.scatter(d, index, Scalar(0));
    if (has_src && c.needs_input_grad[2]) grads[2] = pad_to(g.gather(d, index), c.inputs[2].sizes());
    return grads;
  };
}

std::vector<Tensor> index_select_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return {Tensor(), Tensor()};
  const Tensor& self = c.inputs[0];
  const int64_t d = c.attrs.i(0);
  // The index along d, the same for every position of the other dims.
  DimVector along(size_t(g.dim()), 1);
  along[size_t(d)] = -1;
  const Tensor index = c.inputs[1].reshape({-1}).view(along).expand(g.sizes());
  return {zeros_like(self, g.dtype()).scatter_add(d, index, g), Tensor()};
}

// g read at integer indices into its leading dims: the indexed shape
// (broadcast indices, then g's remaining dims), as index_put wrote it.
Tensor read_indexed(const Tensor& g, absl::Span<const Tensor> indices) {
  const int64_t k = int64_t(indices.size());
  Tensor position;  // row-major position in g's leading k dims
  for (int64_t i = 0; i < k; ++i) {
    Tensor index = indices[size_t(i)].to(kInt64);
    index = where(index < 0, index + g.size(i), index);
    position = i == 0 ? index : position * g.size(i) + index;
  }
  DimVector rows{-1}, shape = dims(position.sizes());
  for (int64_t d = k; d < g.dim(); ++d) {
    rows.push_back(g.size(d));
    shape.push_back(g.size(d));
  }
  if (g.numel() == 0) return zeros(shape, g.dtype());
  return g.reshape(rows).index_select(0, position.reshape({-1})).reshape(shape);
}

// g read at a bool mask over its leading dims: [true count, remaining dims].
// The k-th true position goes to row k (a running count of the mask); the
// false positions all go to a spare last row that is cut off.
Tensor read_masked(const Tensor& g, const Tensor& mask) {
  const Tensor flat = mask.reshape({-1});
  const Tensor counts = flat.to(kInt64).cumsum(0);
  const int64_t kept = flat.numel() == 0 ? 0 : counts[flat.numel() - 1].item<int64_t>();
  DimVector rows{flat.numel()}, picked{kept + 1};
  for (int64_t d = mask.dim(); d < g.dim(); ++d) {
    rows.push_back(g.size(d));
    picked.push_back(g.size(d));
  }
  const Tensor slot = where(flat, counts - 1, Scalar(kept));
  return zeros(picked, g.dtype()).index_put({slot}, g.reshape(rows), true).narrow(0, 0, kept);
}

// inputs: self, values, indices...; attrs: accumulate
std::vector<Tensor> index_put_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  std::vector<Tensor> grads(c.inputs.size());
  if (!g.defined()) return grads;
  const std::vector<Tensor> indices(c.inputs.begin() + 2, c.inputs.end());
  if (c.needs_input_grad[0]) grads[0] = c.attrs.b(0) ? g : g.index_put(indices, zeros({}, g.dtype()), false);
  if (c.needs_input_grad[1])
    grads[1] = indices[0].dtype() == kBool ? read_masked(g, indices[0]) : read_indexed(g, indices);
  return grads;
}

// Rows of weight add up the gradients of every lookup of them, except the
// padding row, which stays fixed.
std::vector<Tensor> embedding_grad(const Ctx& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined() || !c.needs_input_grad[0]) return {Tensor(), Tensor()};
  const Tensor &weight = c.inputs[0], rows = c.inputs[1].reshape({-1});
  Tensor per_row = g.reshape({-1, weight.size(1)});
  if (const int64_t padding_idx = c.attrs.i(0); padding_idx >= 0)
    per_row = per_row.masked_fill((rows == padding_idx).unsqueeze(1), 0);
  return {zeros_like(weight, g.dtype()).index_put({rows}, per_row, true), Tensor()};
}

}  // namespace

NNVM_REGISTER(index_ops) {
  register_op("gather").checks_input_values().inputs(2).infer_with(infer_gather).grad_with(gather_grad);
  register_op("scatter").checks_input_values().inputs(3).infer_with(infer_scatter("scatter")).grad_with(scatter_grad(false, true));
  register_op("scatter.value").checks_input_values().inputs(2).infer_with(infer_scatter("scatter")).grad_with(scatter_grad(false, false));
  register_op("scatter_add").checks_input_values().inputs(3).infer_with(infer_scatter("scatter_add")).grad_with(scatter_grad(true, true));
  register_op("index_select").checks_input_values().inputs(2).infer_with(infer_index_select).grad_with(index_select_grad);
  register_op("index_put").checks_input_values().inputs(-1).infer_with(infer_index_put).grad_with(index_put_grad);
  register_op("embedding").checks_input_values().inputs(2).infer_with(infer_embedding).grad_with(embedding_grad);
  register_op("one_hot").checks_input_values().inputs(1).infer_with(infer_one_hot);
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  static const OpDef& op = find_op("gather");
  return call1(op, {*this, index}, {wrap_dim(dim, this->dim(), "gather")});
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  static const OpDef& op = find_op("scatter");
  return call1(op, {*this, index, src}, {wrap_dim(dim, this->dim(), "scatter")});
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  static const OpDef& op = find_op("scatter.value");
  return call1(op, {*this, index}, {wrap_dim(dim, this->dim(), "scatter"), value});
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  static const OpDef& op = find_op("scatter_add");
  return call1(op, {*this, index, src}, {wrap_dim(dim, this->dim(), "scatter_add")});
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
  static const OpDef& op = find_op("scatter");
  call_into(op, {*this, index, src}, {wrap_dim(dim, this->dim(), "scatter")}, *this);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  static const OpDef& op = find_op("scatter_add");
  call_into(op, {*this, index, src}, {wrap_dim(dim, this->dim(), "scatter_add")}, *this);
  return const_cast<Tensor&>(*this);
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  static const OpDef& op = find_op("index_select");
  return call1(op, {*this, index}, {wrap_dim(dim, this->dim(), "index_select")});
}

namespace {
std::vector<Tensor> index_put_inputs(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values) {
  std::vector<Tensor> in{self, values};
  in.insert(in.end(), indices.begin(), indices.end());
  return in;
}
}  // namespace

Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) const {
  static const OpDef& op = find_op("index_put");
  call_into(op, index_put_inputs(*this, indices, values), {accumulate}, *this);
  return const_cast<Tensor&>(*this);
}

Tensor Tensor::index_put(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) const {
  static const OpDef& op = find_op("index_put");
  return call1(op, index_put_inputs(*this, indices, values), {accumulate});
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  static const OpDef& op = find_op("embedding");
  int64_t pad = -1;
  if (padding_idx) {
    NNVM_CHECK(weight.defined() && weight.dim() == 2, "embedding", "expected a 2-d weight but got shape ",
               weight.defined() ? shape_str(weight.sizes()) : "undefined");
    const int64_t rows = weight.size(0);
    pad = *padding_idx < 0 ? *padding_idx + rows : *padding_idx;
    NNVM_CHECK(pad >= 0 && pad < rows, "embedding", "padding_idx ", *padding_idx,
               " is out of range for a weight with ", rows, " rows");
  }
  return call1(op, {weight, indices}, {pad});
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  static const OpDef& op = find_op("one_hot");
  NNVM_CHECK(num_classes >= -1, "one_hot", "num_classes must be -1 (infer) or non-negative, got ", num_classes);
  if (num_classes == -1) {
    NNVM_CHECK(indices.defined(), "one_hot", "the index tensor is undefined");
    check_index_dtype(indices, "one_hot");
    NNVM_CHECK(indices.numel() > 0, "one_hot", "cannot infer the number of classes from an empty tensor (shape ",
               shape_str(indices.sizes()), "); pass num_classes");
    const std::vector<int64_t> v = indices.to_vector<int64_t>();
    num_classes = std::max<int64_t>(0, *std::max_element(v.begin(), v.end()) + 1);
  }
  return call1(op, {indices}, {num_classes});
}

}  // namespace nnvm
