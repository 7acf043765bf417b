// Model ops that reduce along axes: ONNX's Reduce* family, ArgMax/ArgMin,
// TopK and CumSum (registered by add_tensor_ops).
//
// ONNX reduces integer tensors too and keeps their dtype; where nnvm's op is
// floating-point only (mean, logsumexp) an integer input is reduced in float64
// and truncated back, as ONNX's reference (numpy's astype) does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

using Shape = std::vector<int64_t>;

// One reduction over sorted, distinct, non-empty dims of x.
using ReduceFn = std::function<Tensor(const Tensor& x, IntArrayRef dims, bool keep)>;

struct Reduction {
  int64_t axes_input_opset;  // from this opset on, axes is input 1 (else the attribute)
  bool floating;             // nnvm computes it in floating point only
  ReduceFn fn;
};

Tensor reduce(const OpContext& ctx, const Reduction& r) {
  const Tensor& x = ctx.input(0);
  std::optional<Shape> axes = axes_of(ctx, ctx.opset() >= r.axes_input_opset ? 1 : -1, x.dim());
  bool keep = ctx.attr_int("keepdims", 1) != 0;
  if (!axes || axes->empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) return x;
    axes.emplace();
    for (int64_t d = 0; d < x.dim(); ++d) axes->push_back(d);
  }
  Shape dims = *axes;
  std::sort(dims.begin(), dims.end());
  NNVM_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(), ctx.where(), "axes ", shape_str(*axes),
             " name an axis twice");
  if (!r.floating || is_floating(x.dtype())) return r.fn(x, dims, keep);
  return r.fn(x.to(kFloat64), dims, keep).trunc().to(x.dtype());
}

// A product over several dims, one dim at a time (nnvm's prod takes one).
Tensor prod_over(const Tensor& x, IntArrayRef dims, bool keep) {
  Tensor y = x;
  for (int64_t d : dims) y = y.prod(d, true, x.dtype());
  if (keep || dims.empty()) return y;
  Shape out;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!std::count(dims.begin(), dims.end(), d)) out.push_back(x.size(d));
  return y.reshape(out);
}

// ReduceMax and ReduceMin: over an empty set of values, ONNX gives the
// identity, -inf or +inf (the dtype's lowest or highest value if it has no infinity).
Tensor extreme(const Tensor& x, IntArrayRef dims, bool keep, bool max) {
  Shape out;
  int64_t count = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool reduced = std::count(dims.begin(), dims.end(), d) != 0;
    if (reduced) count *= x.size(d);
    if (!reduced || keep) out.push_back(reduced ? 1 : x.size(d));
  }
  if (count > 0) return max ? x.amax(dims, keep) : x.amin(dims, keep);
  if (is_floating(x.dtype())) return full(out, max ? -INFINITY : INFINITY, x.dtype());
  auto limit = [max]<class T>(T) { return Scalar(max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max()); };
  Scalar identity = x.dtype() == kInt64   ? limit(int64_t{})
                    : x.dtype() == kInt32 ? limit(int32_t{})
                    : x.dtype() == kInt8  ? limit(int8_t{})
                    : x.dtype() == kUInt8 ? limit(uint8_t{})
                                          : limit(bool{});
  return full(out, identity, x.dtype());
}

void add_reduction(OpTable& table, const std::string& op_type, Reduction r) {
  add_single(table, op_type, [r = std::move(r)](const OpContext& ctx) { return reduce(ctx, r); });
}

// ArgMax and ArgMin; select_last_index picks the last of equal extremes.
Tensor arg_extreme(const OpContext& ctx, bool max) {
  const Tensor& x = ctx.input(0);
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.dim());
  bool keep = ctx.attr_int("keepdims", 1) != 0;
  if (x.dim() == 0) return zeros({}, kInt64);
  auto arg = [&](const Tensor& t) { return max ? t.argmax(axis, keep) : t.argmin(axis, keep); };
  if (ctx.attr_int("select_last_index", 0) == 0) return arg(x);
  return (x.size(axis) - 1) - arg(x.flip(axis));
}

std::vector<Tensor> top_k(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() >= 1, ctx.where(), "needs an input of rank >= 1");
  int64_t k = ctx.opset() < 10 ? ctx.attr_int("k") : ints_input(ctx, 1, "K", 1)[0];
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), x.dim());
  NNVM_CHECK(k >= 0 && k <= x.size(axis), ctx.where(), "k = ", k, " is out of range for axis ", axis, " of size ",
             x.size(axis));
  auto [values, indices] = x.topk(k, axis, ctx.attr_int("largest", 1) != 0, ctx.attr_int("sorted", 1) != 0);
  return {values, indices};
}

Tensor cum_sum(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() >= 1, ctx.where(), "needs an input of rank >= 1");
  int64_t axis = normalize_axis(ctx, ints_input(ctx, 1, "axis", 1)[0], x.dim());
  bool reverse = ctx.attr_int("reverse", 0) != 0;
  Tensor y = reverse ? x.flip(axis) : x;
  Tensor sums = y.cumsum(axis, x.dtype());
  if (ctx.attr_int("exclusive", 0) != 0 && x.size(axis) > 0) {
    // Each sum moves one place on; the first is 0.
    Shape first(x.sizes().begin(), x.sizes().end());
    first[size_t(axis)] = 1;
    sums = cat({zeros(first, x.dtype()), sums.narrow(axis, 0, x.size(axis) - 1)}, axis);
  }
  return reverse ? sums.flip(axis) : sums;
}

}  // namespace

void add_reduce_ops(OpTable& table) {
  // ReduceSum's axes became an input at opset 13, the others' at 18.
  add_reduction(table, "ReduceSum", {13, false, [](const Tensor& x, IntArrayRef d, bool keep) {
    return x.sum(d, keep, x.dtype());
  }});
  add_reduction(table, "ReduceSumSquare", {18, false, [](const Tensor& x, IntArrayRef d, bool keep) {
    return (x * x).sum(d, keep, x.dtype());
  }});
  add_reduction(table, "ReduceL1", {18, false, [](const Tensor& x, IntArrayRef d, bool keep) {
    return x.abs().sum(d, keep, x.dtype());
  }});
  add_reduction(table, "ReduceL2", {18, true, [](const Tensor& x, IntArrayRef d, bool keep) {
    return (x * x).sum(d, keep).sqrt();
  }});
  add_reduction(table, "ReduceLogSum", {18, true, [](const Tensor& x, IntArrayRef d, bool keep) {
    return x.sum(d, keep).log();
  }});
  add_reduction(table, "ReduceLogSumExp", {18, true, [](const Tensor& x, IntArrayRef d, bool keep) {
    return x.logsumexp(d, keep);
  }});
  add_reduction(table, "ReduceMean", {18, true, [](const Tensor& x, IntArrayRef d, bool keep) {
    return x.mean(d, keep);
  }});
  add_reduction(table, "ReduceMax", {18, false, [](const Tensor& x, IntArrayRef d, bool keep) {
    return extreme(x, d, keep, true);
  }});
  add_reduction(table, "ReduceMin", {18, false, [](const Tensor& x, IntArrayRef d, bool keep) {
    return extreme(x, d, keep, false);
  }});
  add_reduction(table, "ReduceProd", {18, false, prod_over});
  add_single(table, "ArgMax", [](const OpContext& ctx) { return arg_extreme(ctx, true); });
  add_single(table, "ArgMin", [](const OpContext& ctx) { return arg_extreme(ctx, false); });
  add(table, "TopK", top_k);
  add_single(table, "CumSum", cum_sum);
}

}  // namespace nnvm::model_detail
