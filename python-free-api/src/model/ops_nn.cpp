// Model ops of neural networks: matrix products, convolution, pooling,
// normalisation, softmax, resizing and the recurrent layers.
#include "nnvm/nn/functional.h"
#include "op_util.h"

namespace nnvm::model_detail {
namespace {

Tensor gemm(const OpContext& ctx) {
  Tensor a = ctx.input(0), b = ctx.input(1);
  if (ctx.attr_int("transA", 0)) a = a.t();
  if (ctx.attr_int("transB", 0)) b = b.t();
  double alpha = ctx.attr_float("alpha", 1.0), beta = ctx.attr_float("beta", 1.0);
  Tensor y = a.matmul(b);
  if (alpha != 1.0) y = y * alpha;
  if (ctx.has_input(2) && beta != 0.0) y = beta == 1.0 ? y + ctx.input(2) : y + ctx.input(2) * beta;
  return y;
}

// Softmax and LogSoftmax: before opset 13 over the input flattened to 2-d at `axis` (default 1).
Tensor softmax(const OpContext& ctx, bool log) {
  const Tensor& x = ctx.input(0);
  if (ctx.opset() >= 13) {
    int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), x.dim());
    return log ? x.log_softmax(axis) : x.softmax(axis);
  }
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 1), x.dim());
  Tensor flat = x.flatten(axis).flatten(0, std::max<int64_t>(axis - 1, 0));
  if (axis == 0) flat = x.reshape({1, -1});
  return (log ? flat.log_softmax(1) : flat.softmax(1)).reshape(x.sizes());
}

}  // namespace

void add_nn_ops(OpTable& table) {
  add(table, "MatMul", [](const OpContext& ctx) { return std::vector<Tensor>{ctx.input(0).matmul(ctx.input(1))}; });
  add(table, "Gemm", [](const OpContext& ctx) { return std::vector<Tensor>{gemm(ctx)}; });
  add(table, "Softmax", [](const OpContext& ctx) { return std::vector<Tensor>{softmax(ctx, false)}; });
  add(table, "LogSoftmax", [](const OpContext& ctx) { return std::vector<Tensor>{softmax(ctx, true)}; });
}

}  // namespace nnvm::model_detail
