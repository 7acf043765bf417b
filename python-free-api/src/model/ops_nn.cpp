// Model ops of neural networks: matrix products, softmax and hardmax, and
// normalisation; the other families (convolution and pooling, resizing, the
// recurrent layers, Einsum) live in the files ops_nn.h lists.
#include "ops_nn.h"

#include <functional>

#include "nnvm/nn/functional.h"

namespace nnvm::model_detail {
namespace {

Tensor gemm(const OpContext& ctx) {
  Tensor a = ctx.input(0), b = ctx.input(1);
  NNVM_CHECK(a.dim() == 2 && b.dim() == 2, ctx.where(), "expected 2-D A and B, got ", a.sizes(), " and ", b.sizes());
  if (ctx.attr_int("transA", 0)) a = a.t();
  if (ctx.attr_int("transB", 0)) b = b.t();
  double alpha = ctx.attr_float("alpha", 1.0), beta = ctx.attr_float("beta", 1.0);
  Tensor y = a.matmul(b);
  if (alpha != 1.0) y = y * alpha;
  if (ctx.has_input(2) && beta != 0.0) y = beta == 1.0 ? y + ctx.input(2) : y + ctx.input(2) * beta;
  return y;
}

// Applies fn(x, axis) as the op's opset reads the axis: from opset 13 along
// `axis` (default -1); before, along dim 1 of the input flattened to 2-d at
// `axis` (default 1).
Tensor along_axis(const OpContext& ctx, const std::function<Tensor(const Tensor&, int64_t)>& fn) {
  const Tensor& x = ctx.input(0);
  if (ctx.opset() >= 13) return fn(x, normalize_axis(ctx, ctx.attr_int("axis", -1), x.dim()));
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 1), x.dim());
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= x.size(d);
  return fn(x.reshape({rows, x.numel() / std::max<int64_t>(rows, 1)}), 1).reshape(x.sizes());
}

// 1 at the first maximum along `axis`, 0 elsewhere.
Tensor hardmax(const Tensor& x, int64_t axis) {
  std::vector<int64_t> shape(size_t(x.dim()), 1);
  shape[size_t(axis)] = x.size(axis);
  return (arange(x.size(axis), kInt64).reshape(shape) == x.argmax(axis, true)).to(x.dtype());
}

Tensor reshaped_for(const Tensor& p, int64_t rank) {
  std::vector<int64_t> shape(size_t(rank), 1);
  shape[1] = -1;
  return p.reshape(shape);
}

// BatchNormalization. In inference it normalises by the given statistics. In
// training (training_mode=1 from opset 14, asked-for statistics outputs
// before) by the batch's, and it returns the running statistics updated by
// momentum; before opset 14 also the batch's mean and variance. Before opset 9,
// spatial=0 keeps statistics per activation ([C, D1, ...]) rather than per channel.
std::vector<Tensor> batch_norm_op(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() >= 2, ctx.where(), "expected an input X [N, C, ...], got ", x.sizes());
  const double eps = ctx.attr_float("epsilon", 1e-5), momentum = ctx.attr_float("momentum", 0.9);
  const bool spatial = ctx.opset() >= 9 || ctx.attr_int("spatial", 1) != 0;
  bool training = ctx.opset() >= 14 && ctx.attr_int("training_mode", 0) != 0;
  for (int64_t i = 1; ctx.opset() < 14 && i <= 4; ++i) training = training || uses_output(ctx, i);
  const std::vector<int64_t> param_shape =
      spatial ? std::vector<int64_t>{x.size(1)} : std::vector<int64_t>(x.sizes().begin() + 1, x.sizes().end());
  std::vector<Tensor> p;  // scale, B, mean, var
  for (int64_t i = 1; i <= 4; ++i) {
    const Tensor& v = ctx.input(i);
    NNVM_CHECK(v.sizes() == IntArrayRef(param_shape), ctx.where(), "input ", i, " has shape ", v.sizes(), ", expected ",
               shape_str(param_shape), " for input X ", x.sizes());
    p.push_back(v.to(x.dtype()));
  }
  if (!training && spatial) return {batch_norm(x, p[2], p[3], p[0], p[1], false, 0.0, eps), p[2], p[3]};
  auto bcast = [&](const Tensor& v) { return spatial ? reshaped_for(v, x.dim()) : v.unsqueeze(0); };
  if (!training) return {(x - bcast(p[2])) * (bcast(p[3]) + eps).rsqrt() * bcast(p[0]) + bcast(p[1]), p[2], p[3]};
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; spatial && d < x.dim(); ++d) dims.push_back(d);
  const Tensor mean = x.mean(dims, true), centered = x - mean, var = centered.square().mean(dims, true);
  const Tensor y = centered * (var + eps).rsqrt() * bcast(p[0]) + bcast(p[1]);
  const Tensor batch_mean = mean.reshape(param_shape), batch_var = var.reshape(param_shape);
  std::vector<Tensor> outs = {y, p[2] * momentum + batch_mean * (1.0 - momentum),
                              p[3] * momentum + batch_var * (1.0 - momentum)};
  if (ctx.opset() < 14) outs.insert(outs.end(), {batch_mean, batch_var});
  return outs;
}

Tensor instance_norm(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() >= 3, ctx.where(), "expected an input [N, C, D1, ...], got ", x.sizes());
  return group_norm(x, x.size(1), ctx.input(1), ctx.input(2), ctx.attr_float("epsilon", 1e-5));
}

// LayerNormalization over the dims from `axis` on; Mean and InvStdDev (when
// asked for) keep those dims as 1s. Half-precision inputs are normalised in
// float32 (stash_type 1).
std::vector<Tensor> layer_norm_op(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), x.dim());
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const std::vector<int64_t> normalized(x.sizes().begin() + axis, x.sizes().end());
  auto param = [&](int64_t i) {
    if (!ctx.has_input(i)) return Tensor();
    const Tensor& p = ctx.input(i);
    NNVM_CHECK(p.dim() <= int64_t(normalized.size()), ctx.where(), "input ", i, " ", p.sizes(),
               " does not broadcast to the normalized dims ", shape_str(normalized));
    return p.sizes() == IntArrayRef(normalized) ? p : p.expand(normalized).contiguous();
  };
  const Tensor scale = param(1), bias = param(2);
  const bool wide = x.dtype() == kFloat32 || x.dtype() == kFloat64;
  if (!uses_output(ctx, 1) && !uses_output(ctx, 2) && wide) return {layer_norm(x, normalized, scale, bias, eps)};
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
  const Tensor xs = wide || ctx.attr_int("stash_type", 1) != 1 ? x : x.to(kFloat32);
  const Tensor mean = xs.mean(dims, true), centered = xs - mean;
  const Tensor inv_std = (centered.square().mean(dims, true) + eps).rsqrt();
  Tensor y = (centered * inv_std).to(x.dtype()) * scale;
  if (bias.defined()) y = y + bias;
  return {y, mean, inv_std};
}

// LRN: x / (bias + alpha / size * the sum of squares over `size` channels
// around each one)^beta, the channel sum an average pool over a [C, rest] plane.
Tensor lrn(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() >= 2, ctx.where(), "expected an input [N, C, ...], got ", x.sizes());
  const int64_t size = ctx.attr_int("size");
  NNVM_CHECK(size >= 1, ctx.where(), "size must be positive, got ", size);
  const double alpha = ctx.attr_float("alpha", 1e-4), beta = ctx.attr_float("beta", 0.75);
  const double bias = ctx.attr_float("bias", 1.0);
  const Tensor squares = x.square().reshape({x.size(0), 1, x.size(1), -1});
  const Tensor padded = pad(squares, {0, 0, (size - 1) / 2, size / 2});
  const Tensor mean = avg_pool2d(padded, {size, 1}, {1, 1}).reshape(x.sizes());
  return x / (mean * alpha + bias).pow(beta);
}

// MeanVarianceNormalization: (x - mean) / sqrt(variance + 1e-9) over `axes`.
Tensor mean_variance_norm(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes = ctx.attr_ints("axes", std::vector<int64_t>{0, 2, 3});
  for (int64_t& a : axes) a = normalize_axis(ctx, a, x.dim());
  const Tensor centered = x - x.mean(axes, true);
  return centered * (centered.square().mean(axes, true) + 1e-9).rsqrt();
}

}  // namespace

void add_nn_ops(OpTable& table) {
  add(table, "MatMul", [](const OpContext& ctx) { return std::vector<Tensor>{ctx.input(0).matmul(ctx.input(1))}; });
  add(table, "Gemm", [](const OpContext& ctx) { return std::vector<Tensor>{gemm(ctx)}; });
  add(table, "Softmax", [](const OpContext& ctx) {
    return std::vector<Tensor>{along_axis(ctx, [](const Tensor& x, int64_t axis) { return x.softmax(axis); })};
  });
  add(table, "LogSoftmax", [](const OpContext& ctx) {
    return std::vector<Tensor>{along_axis(ctx, [](const Tensor& x, int64_t axis) { return x.log_softmax(axis); })};
  });
  add(table, "Hardmax", [](const OpContext& ctx) { return std::vector<Tensor>{along_axis(ctx, hardmax)}; });
  add(table, "BatchNormalization", batch_norm_op);
  add(table, "InstanceNormalization", [](const OpContext& ctx) { return std::vector<Tensor>{instance_norm(ctx)}; });
  add(table, "LayerNormalization", layer_norm_op);
  add(table, "LRN", [](const OpContext& ctx) { return std::vector<Tensor>{lrn(ctx)}; });
  add(table, "MeanVarianceNormalization",
      [](const OpContext& ctx) { return std::vector<Tensor>{mean_variance_norm(ctx)}; });
  add_conv_ops(table);
  add_resize_ops(table);
  add_rnn_ops(table);
  add_einsum_op(table);
}

}  // namespace nnvm::model_detail
