// Model ops that draw random numbers (registered by add_more_ops): ONNX's
// RandomUniform, RandomNormal, their *Like forms, and Bernoulli.
//
// A node without a `seed` draws from nnvm's default generator, so
// nnvm::manual_seed makes a run reproducible and every call draws anew. A
// node with one draws from a generator seeded with it, made for each call:
// every call draws the same values, as a seeded op in a program does; an
// integral seed s draws what nnvm::manual_seed(s) and a plain draw would.
#include <bit>
#include <cmath>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

uint64_t seed_of(double seed) {
  if (seed == std::trunc(seed) && std::abs(seed) < 9.2e18) return uint64_t(int64_t(seed));
  return std::bit_cast<uint64_t>(seed);
}

// fn(generator) with the node's generator (null: the default one).
Tensor draw(const OpContext& ctx, const std::function<Tensor(Generator*)>& fn) {
  if (!ctx.has_attr("seed")) return fn(nullptr);
  Generator gen(seed_of(ctx.attr_float("seed")));
  return fn(&gen);
}

// The dtype attribute's dtype, else `fallback`; floating unless `any`.
DType dtype_attr(const OpContext& ctx, std::optional<DType> fallback, bool any = false) {
  std::optional<DType> dtype = fallback;
  if (ctx.has_attr("dtype")) {
    const int64_t code = ctx.attr_int("dtype");
    dtype = dtype_from_onnx(code);
    NNVM_CHECK(dtype.has_value(), ctx.where(), "dtype ", onnx_dtype_name(code), " is not one nnvm has");
  }
  NNVM_CHECK(dtype.has_value(), ctx.where(), "needs a dtype attribute");
  NNVM_CHECK(any || is_floating(*dtype), ctx.where(), "draws floating-point values, not ", *dtype,
             "; set the dtype attribute");
  return *dtype;
}

// The shape a node draws: its `shape` attribute, or (*Like) its input's.
std::vector<int64_t> shape_of(const OpContext& ctx, bool like) {
  if (like) return std::vector<int64_t>(ctx.input(0).sizes().begin(), ctx.input(0).sizes().end());
  std::vector<int64_t> shape = ctx.attr_ints("shape");
  for (int64_t s : shape)
    NNVM_CHECK(s >= 0, ctx.where(), "shape ", shape_str(shape), " must not have negative sizes");
  return shape;
}

Tensor random_uniform(const OpContext& ctx, bool like) {
  const DType dtype = dtype_attr(ctx, like ? std::optional(ctx.input(0).dtype()) : std::optional(kFloat32));
  const double low = ctx.attr_float("low", 0.0), high = ctx.attr_float("high", 1.0);
  NNVM_CHECK(low <= high, ctx.where(), "low ", low, " is above high ", high);
  const std::vector<int64_t> shape = shape_of(ctx, like);
  return draw(ctx, [&](Generator* gen) { return rand(shape, dtype, gen) * (high - low) + low; });
}

Tensor random_normal(const OpContext& ctx, bool like) {
  const DType dtype = dtype_attr(ctx, like ? std::optional(ctx.input(0).dtype()) : std::optional(kFloat32));
  const double mean = ctx.attr_float("mean", 0.0), scale = ctx.attr_float("scale", 1.0);
  const std::vector<int64_t> shape = shape_of(ctx, like);
  return draw(ctx, [&](Generator* gen) { return randn(shape, dtype, gen) * scale + mean; });
}

// Bernoulli: 1 with probability p (the input, each in [0, 1]), else 0, in
// the dtype attribute's dtype (any; the input's by default).
Tensor bernoulli_op(const OpContext& ctx) {
  const Tensor& p = ctx.input(0);
  NNVM_CHECK(is_floating(p.dtype()), ctx.where(), "expected floating-point probabilities, got ", p.dtype());
  const DType dtype = dtype_attr(ctx, p.dtype(), true);
  return draw(ctx, [&](Generator* gen) { return bernoulli(p, gen).to(dtype); });
}

}  // namespace

void add_random_ops(OpTable& table) {
  add_single(table, "RandomUniform", [](const OpContext& ctx) { return random_uniform(ctx, false); });
  add_single(table, "RandomUniformLike", [](const OpContext& ctx) { return random_uniform(ctx, true); });
  add_single(table, "RandomNormal", [](const OpContext& ctx) { return random_normal(ctx, false); });
  add_single(table, "RandomNormalLike", [](const OpContext& ctx) { return random_normal(ctx, true); });
  add_single(table, "Bernoulli", bernoulli_op);
}

}  // namespace nnvm::model_detail
