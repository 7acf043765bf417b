// Reductions, scans and softmax: declarations and the public API, with
// libtorch's dtype rules. Every reduction takes (dims, keepdim, ...) as its
// first two attributes; an empty dims list reduces every dim.
// Kernels: kernels/cpu/reduce.cpp, moments.cpp, softmax.cpp, scan.cpp.
#include <cmath>

#include "absl/strings/str_join.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm {

namespace {

enum class Result {
  Attr,           // the dtype attribute at index 2 (sum, prod, mean)
  Same,           // the input's dtype
  Floating,       // the input's dtype, float32 for integral inputs (logsumexp)
  Int64,          // argmax, argmin
  Bool,           // all, any
  ValuesIndices,  // (input dtype, int64): max.dim, min.dim
  SameTwice,      // (input dtype, input dtype): var_mean
};

struct ReductionRule {
  Result result = Result::Same;
  bool needs_floating = false;  // var, std, norm, mean: libtorch rejects integral inputs
  bool needs_nonempty = false;  // no identity: max, min, argmax
};

int64_t reduced_numel(const Tensor& x, IntArrayRef dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  return n;
}

void check_nonempty(const Tensor& x, IntArrayRef dims, std::string_view op) {
  NNVM_CHECK(reduced_numel(x, dims) > 0, op, "cannot reduce over a zero-size extent (input shape ",
             shape_str(x.sizes()), ", dims [", absl::StrJoin(dims, ", "),
             "]); the op has no identity, so the reduced dims must be non-empty");
}

InferFn reduction(std::string name, ReductionRule rule) {
  return [name, rule](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
    const Tensor& x = in[0];
    const DimVector rdims = reduction_dims(a.ints(0), x.dim(), name);
    DimVector shape = reduced_shape(x.sizes(), rdims, a.b(1));
    const DType dt = rule.result == Result::Attr ? a.dtype(2) : x.dtype();
    NNVM_CHECK(!rule.needs_floating || is_floating(dt), name, "expected a floating-point input",
               rule.result == Result::Attr ? " or dtype" : "", " but got ", dt, " (input shape ",
               shape_str(x.sizes()), ")");
    if (rule.needs_nonempty) check_nonempty(x, rdims, name);
    switch (rule.result) {
      case Result::Attr: case Result::Same: return {{std::move(shape), dt}};
      case Result::Floating: return {{std::move(shape), is_floating(dt) ? dt : kFloat32}};
      case Result::Int64: return {{std::move(shape), kInt64}};
      case Result::Bool: return {{std::move(shape), kBool}};
      case Result::ValuesIndices: return {{shape, dt}, {shape, kInt64}};
      case Result::SameTwice: return {{shape, dt}, {shape, dt}};
    }
    return {};
  };
}

// attrs: dim, dtype. The output has the input's shape.
InferFn along_dim(std::string name, bool needs_floating) {
  return [name, needs_floating](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
    wrap_dim(a.i(0), in[0].dim(), name);
    NNVM_CHECK(!needs_floating || is_floating(a.dtype(1)), name, "expected a floating-point dtype but got ",
               a.dtype(1), " (input shape ", shape_str(in[0].sizes()), ")");
    return {{dims(in[0].sizes()), a.dtype(1)}};
  };
}

}  // namespace

// ---- gradients ----

Tensor expand_reduced(const Tensor& g, const Tensor& x, IntArrayRef reduced, bool keepdim) {
  Tensor r = g;
  if (!keepdim)
    for (int64_t d : reduced) r = r.unsqueeze(d);
  return r.expand(x.sizes());
}

namespace {

// The reduced dims of a (dims, keepdim, ...) reduction of `x`, wrapped and sorted.
DimVector reduced_dims_of(const Tensor& x, const Attrs& a, std::string_view op) {
  return reduction_dims(a.ints(0), x.dim(), op);
}

std::vector<Tensor> sum_grad(const GradContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  const Tensor& x = c.inputs[0];
  return {expand_reduced(g, x, reduced_dims_of(x, c.attrs, "sum"), c.attrs.b(1))};
}

std::vector<Tensor> mean_grad(const GradContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  const Tensor& x = c.inputs[0];
  const DimVector reduced = reduced_dims_of(x, c.attrs, "mean");
  return {expand_reduced(g, x, reduced, c.attrs.b(1)) / double(std::max<int64_t>(1, reduced_numel(x, reduced)))};
}

// `t`, of a reduction's result shape, with the reduced dims back as size 1: it broadcasts against x.
Tensor unreduce(const Tensor& t, IntArrayRef reduced, bool keepdim) {
  Tensor r = t;
  if (!keepdim)
    for (int64_t d : reduced) r = r.unsqueeze(d);
  return r;
}

// Declares a single-output reduction's gradient df(c, x, dims, gu, out): gu is
// the incoming gradient expanded to x's shape, and out(t) unreduces a
// result-shaped tensor (a saved output) so that it broadcasts against x.
template <class F> GradFn reduction_grad(std::string name, F df) {
  return [name, df](const GradContext& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    if (!g.defined()) return {Tensor()};
    const Tensor& x = c.inputs[0];
    const DimVector d = reduced_dims_of(x, c.attrs, name);
    const bool keepdim = c.attrs.b(1);
    auto out = [&](const Tensor& t) { return unreduce(t, d, keepdim); };
    return {df(c, x, d, out(g).expand(x.sizes()), out)};
  };
}

// Where x equals its max/min: each tied position takes an equal share of the gradient.
Tensor split_among(const Tensor& gu, const Tensor& hit, IntArrayRef d, DType dtype) {
  return (gu / hit.sum(d, true, dtype)).masked_fill(hit.logical_not(), 0);
}

// d var / dx = 2 (x - mean) / (N - correction)
Tensor var_backward(const Tensor& gu, const Tensor& x, IntArrayRef d, int64_t correction) {
  const double n = double(std::max<int64_t>(0, reduced_numel(x, d) - correction));
  return gu * (x - x.mean(d, true)) * (2.0 / n);
}

// prod = P' (the product of the non-zero elements) when no element is 0, so
// the gradient is P' / x; with one zero only that element gets P'; with more
// every partial product holds a zero. One formula, no branch on the data.
Tensor prod_backward(const GradContext& c, const Tensor& x, IntArrayRef d, const Tensor& gu) {
  static const OpDef& prod = find_op("prod");
  const Tensor zero = x == 0;
  const Tensor nonzero = x.masked_fill(zero, 1);
  const Tensor others = call1(prod, {nonzero}, {dims(d), true, c.attrs.dtype(2)}).expand(x.sizes());
  const Tensor zeros_in_slice = zero.sum(d, true, kInt64);
  const Tensor if_zero = others.masked_fill(zeros_in_slice != 1, 0);
  const Tensor if_nonzero = (others / nonzero).masked_fill(zeros_in_slice != 0, 0);
  return gu * where(zero, if_zero, if_nonzero);
}

Tensor norm_backward(const GradContext& c, const Tensor& x, IntArrayRef d, const Tensor& gu, const Tensor& norm) {
  const double p = c.attrs.d(2);
  if (p == 0) return zeros_like(gu);
  if (p == 1) return gu * x.sign();  // 0 at x = 0
  const Tensor at_zero = (norm == 0).expand(x.sizes());
  if (p == 2) return (gu * x / norm).masked_fill(at_zero, 0);
  if (std::isinf(p)) return split_among(gu * x.sign(), x.abs() == norm, d, x.dtype());
  const Tensor scaled = (x.sign() * x.abs().pow(p - 1)).masked_fill(x == 0, 0);
  return (gu * scaled / norm.pow(p - 1)).masked_fill(at_zero, 0);
}

// max.dim / min.dim: the gradient goes to the returned index only.
std::vector<Tensor> indexed_extremum_grad(const GradContext& c) {
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  const Tensor& x = c.inputs[0];
  if (x.dim() == 0) return {g};
  const int64_t dim = wrap_dim(c.attrs.ints(0)[0], x.dim(), "max");
  const bool keepdim = c.attrs.b(1);
  DimVector shape(size_t(x.dim()), 1);
  shape[size_t(dim)] = x.size(dim);
  const Tensor hit = arange(x.size(dim), kInt64).view(shape) == unreduce(c.outputs[1], {dim}, keepdim);
  return {unreduce(g, {dim}, keepdim).expand(x.sizes()).masked_fill(hit.logical_not(), 0)};
}

std::vector<Tensor> var_mean_grad(const GradContext& c) {
  const Tensor& x = c.inputs[0];
  const DimVector d = reduced_dims_of(x, c.attrs, "var_mean");
  const bool keepdim = c.attrs.b(1);
  Tensor grad;
  if (c.grad_outputs[0].defined())
    grad = var_backward(unreduce(c.grad_outputs[0], d, keepdim), x, d, c.attrs.i(2));
  if (c.grad_outputs[1].defined()) {
    const Tensor from_mean = expand_reduced(c.grad_outputs[1], x, d, keepdim) /
                             double(std::max<int64_t>(1, reduced_numel(x, d)));
    grad = grad.defined() ? grad + from_mean : from_mean;
  }
  return {grad};
}

// Along-dim ops (cumsum, softmax): df(c, g) with the dim wrapped.
template <class F> GradFn along_dim_grad(F df) {
  return [df](const GradContext& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    if (!g.defined()) return {Tensor()};
    return {df(c, g, g.dim() == 0 ? int64_t(0) : wrap_dim(c.attrs.i(0), g.dim(), "softmax"))};
  };
}

void register_reduction_grads() {
  using Out = std::function<Tensor(const Tensor&)>;
  register_op("prod").grad_with(reduction_grad(
      "prod", [](const GradContext& c, const Tensor& x, IntArrayRef d, const Tensor& gu, const Out&) {
        return prod_backward(c, x, d, gu);
      }));
  for (const char* name : {"amax", "amin", "max", "min"})
    register_op(name).grad_with(
        reduction_grad(name,
                       [](const GradContext& c, const Tensor& x, IntArrayRef d, const Tensor& gu, const Out& out) {
                         return split_among(gu, x == out(c.outputs[0]), d, x.dtype());
                       }),
        true, true);
  register_op("max.dim").grad_with(indexed_extremum_grad, true, true);
  register_op("min.dim").grad_with(indexed_extremum_grad, true, true);
  register_op("var").grad_with(reduction_grad(
      "var", [](const GradContext& c, const Tensor& x, IntArrayRef d, const Tensor& gu, const Out&) {
        return var_backward(gu, x, d, c.attrs.i(2));
      }));
  // d std = d var / (2 std); a zero std gives a zero gradient, as in libtorch.
  register_op("std").grad_with(
      reduction_grad("std",
                     [](const GradContext& c, const Tensor& x, IntArrayRef d, const Tensor& gu, const Out& out) {
                       const Tensor s = out(c.outputs[0]);
                       const Tensor scaled = (gu / (s * 2)).masked_fill((s == 0).expand(x.sizes()), 0);
                       return var_backward(scaled, x, d, c.attrs.i(2));
                     }),
      true, true);
  register_op("var_mean").grad_with(var_mean_grad);
  register_op("logsumexp").grad_with(
      reduction_grad("logsumexp",
                     [](const GradContext& c, const Tensor& x, IntArrayRef, const Tensor& gu, const Out& out) {
                       return gu * (x - out(c.outputs[0])).exp();
                     }),
      true, true);
  register_op("norm").grad_with(
      reduction_grad("norm",
                     [](const GradContext& c, const Tensor& x, IntArrayRef d, const Tensor& gu, const Out& out) {
                       return norm_backward(c, x, d, gu, out(c.outputs[0]));
                     }),
      true, true);
  // The adjoint of a running sum is the running sum from the end, and back.
  register_op("cumsum").grad_with(along_dim_grad([](const GradContext&, const Tensor& g, int64_t dim) {
    static const OpDef& reverse = find_op("cumsum_reverse");
    return call1(reverse, {g}, {dim, g.dtype()});
  }), false);
  register_op("cumsum_reverse").grad_with(along_dim_grad([](const GradContext&, const Tensor& g, int64_t dim) {
    static const OpDef& cumsum = find_op("cumsum");
    return call1(cumsum, {g}, {dim, g.dtype()});
  }), false);
  // y (g - sum(g y)) and g - exp(y) sum(g), from the saved output y.
  register_op("softmax").grad_with(along_dim_grad([](const GradContext& c, const Tensor& g, int64_t dim) {
    const Tensor& y = c.outputs[0];
    return y * (g - (g * y).sum({dim}, true));
  }), false, true);
  register_op("log_softmax").grad_with(along_dim_grad([](const GradContext& c, const Tensor& g, int64_t dim) {
    return g - c.outputs[0].exp() * g.sum({dim}, true);
  }), false, true);
}

}  // namespace

NNVM_REGISTER(reduce_ops) {
  using R = Result;
  register_op("sum").infer_with(reduction("sum", {R::Attr})).grad_with(sum_grad);  // dims, keepdim, dtype
  register_op("prod").infer_with(reduction("prod", {R::Attr}));  // dims, keepdim, dtype
  register_op("mean").infer_with(reduction("mean", {R::Attr, true})).grad_with(mean_grad);
  for (const char* name : {"amax", "amin", "max", "min"})  // max, min: every dim
    register_op(name).infer_with(reduction(name, {R::Same, false, true}));
  register_op("max.dim").infer_with(reduction("max", {R::ValuesIndices, false, true}));
  register_op("min.dim").infer_with(reduction("min", {R::ValuesIndices, false, true}));
  register_op("argmax").infer_with(reduction("argmax", {R::Int64, false, true}));
  register_op("argmin").infer_with(reduction("argmin", {R::Int64, false, true}));
  register_op("all").infer_with(reduction("all", {R::Bool}));
  register_op("any").infer_with(reduction("any", {R::Bool}));
  register_op("var").infer_with(reduction("var", {R::Same, true}));  // dims, keepdim, correction
  register_op("std").infer_with(reduction("std", {R::Same, true}));
  register_op("var_mean").infer_with(reduction("var_mean", {R::SameTwice, true}));
  register_op("logsumexp").infer_with(reduction("logsumexp", {R::Floating}));
  // dims, keepdim, p. The inf norms are a max/min and have no identity.
  register_op("norm").infer_with([base = reduction("norm", {R::Same, true})](absl::Span<const Tensor> in,
                                                                                const Attrs& a) {
    if (std::isinf(a.d(2))) check_nonempty(in[0], reduction_dims(a.ints(0), in[0].dim(), "norm"), "norm");
    return base(in, a);
  });
  register_op("cumsum").infer_with(along_dim("cumsum", false));  // dim, dtype
  register_op("cumsum_reverse").infer_with(along_dim("cumsum", false));  // y[i] = sum of x[j >= i]; cumsum's gradient
  register_op("softmax").infer_with(along_dim("softmax", true));
  register_op("log_softmax").infer_with(along_dim("log_softmax", true));
  register_reduction_grads();
}

namespace {

DType widened(DType t) { return is_integral(t, true) ? kInt64 : t; }

// (dims, keepdim, extra...): every reduction's attributes, each made in place.
template <class... Extra>
Tensor reduce1(const OpDef& op, const Tensor& x, IntArrayRef d, bool keepdim, Extra&&... extra) {
  return call1(op, absl::MakeConstSpan(&x, 1), Attrs(dims(d), keepdim, std::forward<Extra>(extra)...));
}

template <class... Extra>
std::tuple<Tensor, Tensor> reduce2(const OpDef& op, const Tensor& x, IntArrayRef d, bool keepdim, Extra&&... extra) {
  std::vector<Tensor> out =
      call(op, absl::MakeConstSpan(&x, 1), Attrs(dims(d), keepdim, std::forward<Extra>(extra)...));
  return {std::move(out[0]), std::move(out[1])};
}

}  // namespace

Tensor Tensor::sum(std::optional<DType> dtype) const { return sum({}, false, dtype); }
Tensor Tensor::sum(IntArrayRef d, bool keepdim, std::optional<DType> dtype) const {
  static const OpDef& op = find_op("sum");
  return reduce1(op, *this, d, keepdim, dtype.value_or(widened(this->dtype())));
}
Tensor Tensor::mean(std::optional<DType> dtype) const { return mean({}, false, dtype); }
Tensor Tensor::mean(IntArrayRef d, bool keepdim, std::optional<DType> dtype) const {
  static const OpDef& op = find_op("mean");
  return reduce1(op, *this, d, keepdim, dtype.value_or(this->dtype()));
}
Tensor Tensor::prod(std::optional<DType> dtype) const {
  static const OpDef& op = find_op("prod");
  return reduce1(op, *this, {}, false, dtype.value_or(widened(this->dtype())));
}
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype) const {
  static const OpDef& op = find_op("prod");
  return reduce1(op, *this, {dim}, keepdim, dtype.value_or(widened(this->dtype())));
}
Tensor Tensor::max() const { static const OpDef& op = find_op("max");
  return reduce1(op, *this, {}, false); }
Tensor Tensor::min() const { static const OpDef& op = find_op("min");
  return reduce1(op, *this, {}, false); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  static const OpDef& op = find_op("max.dim");
  return reduce2(op, *this, {dim}, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  static const OpDef& op = find_op("min.dim");
  return reduce2(op, *this, {dim}, keepdim);
}
Tensor Tensor::amax(IntArrayRef d, bool keepdim) const { static const OpDef& op = find_op("amax");
  return reduce1(op, *this, d, keepdim); }
Tensor Tensor::amin(IntArrayRef d, bool keepdim) const { static const OpDef& op = find_op("amin");
  return reduce1(op, *this, d, keepdim); }
// Without a dim, the index is into the flattened tensor.
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  static const OpDef& op = find_op("argmax");
  return reduce1(op, *this, dim ? IntArrayRef(&*dim, 1) : IntArrayRef(), keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  static const OpDef& op = find_op("argmin");
  return reduce1(op, *this, dim ? IntArrayRef(&*dim, 1) : IntArrayRef(), keepdim);
}
Tensor Tensor::var(IntArrayRef d, int64_t correction, bool keepdim) const {
  static const OpDef& op = find_op("var");
  return reduce1(op, *this, d, keepdim, correction);
}
Tensor Tensor::std(IntArrayRef d, int64_t correction, bool keepdim) const {
  static const OpDef& op = find_op("std");
  return reduce1(op, *this, d, keepdim, correction);
}
Tensor Tensor::logsumexp(IntArrayRef d, bool keepdim) const {
  static const OpDef& op = find_op("logsumexp");
  return reduce1(op, *this, d, keepdim);
}
Tensor Tensor::norm(const Scalar& p, IntArrayRef d, bool keepdim) const {
  static const OpDef& op = find_op("norm");
  return reduce1(op, *this, d, keepdim, Scalar(p.to_double()));
}
Tensor Tensor::all() const { static const OpDef& op = find_op("all");
  return reduce1(op, *this, {}, false); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { static const OpDef& op = find_op("all");
  return reduce1(op, *this, {dim}, keepdim); }
Tensor Tensor::any() const { static const OpDef& op = find_op("any");
  return reduce1(op, *this, {}, false); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { static const OpDef& op = find_op("any");
  return reduce1(op, *this, {dim}, keepdim); }
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const {
  static const OpDef& op = find_op("cumsum");
  return call1(op, {*this}, {dim, dtype.value_or(widened(this->dtype()))});
}
Tensor Tensor::softmax(int64_t dim) const { return nnvm::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return nnvm::log_softmax(*this, dim); }

// Integral inputs compute in float32, like libtorch's softmax.
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  static const OpDef& op = find_op("softmax");
  return call1(op, {x}, {dim, dtype.value_or(x.is_floating_point() ? x.dtype() : kFloat32)});
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  static const OpDef& op = find_op("log_softmax");
  return call1(op, {x}, {dim, dtype.value_or(x.is_floating_point() ? x.dtype() : kFloat32)});
}
Tensor logsumexp(const Tensor& x, IntArrayRef d, bool keepdim) { return x.logsumexp(d, keepdim); }
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntArrayRef d, int64_t correction, bool keepdim) {
  static const OpDef& op = find_op("var_mean");
  return reduce2(op, x, d, keepdim, correction);
}

}  // namespace nnvm
