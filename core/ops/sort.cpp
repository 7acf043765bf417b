// sort and topk: declarations and the public API. Both return (values, int64
// indices). Kernels: kernels/cpu/sort.cpp.
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm {

namespace {

// The values' gradient goes back to where each value came from: the indices
// output. `dim_attr` is the position of the dim attribute.
GradFn values_grad(size_t dim_attr) {
  return [dim_attr](const GradContext& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    if (!g.defined()) return {Tensor()};
    const Tensor& x = c.inputs[0];
    if (x.dim() == 0) return {g};
    return {zeros(x.sizes(), g.dtype()).scatter(c.attrs.i(dim_attr), c.outputs[1], g)};
  };
}

}  // namespace

NNVM_REGISTER(sort_ops) {
  register_op("sort").infer_with([](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {  // dim, descending
    wrap_dim(a.i(0), in[0].dim(), "sort");
    return {{dims(in[0].sizes()), in[0].dtype()}, {dims(in[0].sizes()), kInt64}};
  }).grad_with(values_grad(0), true, true);
  // k, dim, largest, sorted
  register_op("topk").infer_with([](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
    const Tensor& x = in[0];
    const int64_t k = a.i(0), dim = wrap_dim(a.i(1), x.dim(), "topk");
    const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
    // A 0-d result always holds one element, so a 0-d input takes k = 1 only.
    const int64_t lo = x.dim() == 0 ? 1 : 0;
    NNVM_CHECK(k >= lo && k <= n, "topk", "k = ", k, " is out of range for dim ", dim, " of size ", n,
               " (input shape ", shape_str(x.sizes()), "; expected ", lo, " <= k <= ", n, ")");
    DimVector shape = dims(x.sizes());
    if (x.dim() > 0) shape[dim] = k;
    return {{shape, x.dtype()}, {shape, kInt64}};
  }).grad_with(values_grad(1), true, true);
}

namespace {
std::tuple<Tensor, Tensor> pair_of(std::vector<Tensor> out) { return {std::move(out[0]), std::move(out[1])}; }
}  // namespace

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  static const OpDef& op = find_op("sort");
  return pair_of(call(op, {*this}, {dim, descending}));
}

// Values come back sorted whether or not `sorted` is set; libtorch leaves the
// unsorted order unspecified.
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  static const OpDef& op = find_op("topk");
  return pair_of(call(op, {*this}, {k, dim, largest, sorted}));
}

}  // namespace nnvm
