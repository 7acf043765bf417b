// Model ops that make, reshape, index and reduce tensors: ONNX's shape
// arithmetic (Shape, Reshape, Concat, Slice, Gather, ...), reductions and
// control flow.
#include "op_util.h"

namespace nnvm::model_detail {
namespace {

Tensor constant(const OpContext& ctx) {
  if (ctx.has_attr("value")) return ctx.attr_tensor("value");
  if (ctx.has_attr("value_float")) return scalar_tensor(ctx.attr_float("value_float"), kFloat32);
  if (ctx.has_attr("value_floats")) return tensor(ctx.attr_floats("value_floats")).to(kFloat32);
  if (ctx.has_attr("value_int")) return scalar_tensor(ctx.attr_int("value_int"), kInt64);
  if (ctx.has_attr("value_ints")) return int_tensor(ctx.attr_ints("value_ints"));
  throw Error(ctx.where() + ": needs one of value, value_float(s), value_int(s) (sparse and string values are "
              "not supported)");
}

Tensor shape(const OpContext& ctx) {
  IntArrayRef sizes = ctx.input(0).sizes();
  int64_t rank = int64_t(sizes.size());
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  return int_tensor(std::vector<int64_t>(sizes.begin() + start, sizes.begin() + end));
}

Tensor reshape(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> target = ctx.opset() < 5 ? ctx.attr_ints("shape") : to_ints(ctx.input(1));
  bool allow_zero = ctx.attr_int("allowzero", 0) != 0;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allow_zero) {
      NNVM_CHECK(int64_t(i) < x.dim(), ctx.where(), "shape entry ", i, " is 0 (copy the input's size) but the input ",
                 shape_str(x.sizes()), " has only ", x.dim(), " dimensions");
      target[i] = x.sizes()[i];
    }
  }
  return x.reshape(target);
}

}  // namespace

void add_tensor_ops(OpTable& table) {
  add(table, "Constant", [](const OpContext& ctx) { return std::vector<Tensor>{constant(ctx)}; });
  add(table, "Shape", [](const OpContext& ctx) { return std::vector<Tensor>{shape(ctx)}; });
  add(table, "Size", [](const OpContext& ctx) {
    return std::vector<Tensor>{scalar_tensor(ctx.input(0).numel(), kInt64)};
  });
  add(table, "Reshape", [](const OpContext& ctx) { return std::vector<Tensor>{reshape(ctx)}; });
  add(table, "Transpose", [](const OpContext& ctx) {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> perm;
    for (int64_t d = x.dim() - 1; d >= 0; --d) perm.push_back(d);
    return std::vector<Tensor>{x.permute(ctx.attr_ints("perm", perm))};
  });
  add(table, "Concat", [](const OpContext& ctx) {
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < ctx.num_inputs(); ++i) parts.push_back(ctx.input(i));
    NNVM_CHECK(!parts.empty(), ctx.where(), "needs at least one input");
    int64_t axis = normalize_axis(ctx, ctx.attr_int("axis"), parts[0].dim());
    return std::vector<Tensor>{cat(parts, axis)};
  });
}

}  // namespace nnvm::model_detail
