// Model ops that work element by element: ONNX's unary and binary math,
// comparisons and logic, activations, casts, and the variadic Max/Min/Sum/Mean.
#include <cmath>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

void add_unary(OpTable& table, const std::string& op_type, std::function<Tensor(const Tensor&)> fn) {
  add(table, op_type, [fn = std::move(fn)](const OpContext& ctx) { return std::vector<Tensor>{fn(ctx.input(0))}; });
}

void add_binary(OpTable& table, const std::string& op_type,
                std::function<Tensor(const Tensor&, const Tensor&)> fn) {
  add(table, op_type, [fn = std::move(fn)](const OpContext& ctx) {
    return std::vector<Tensor>{fn(ctx.input(0), ctx.input(1))};
  });
}

// Variadic ops with multidirectional broadcasting (Max, Min, Sum, Mean).
void add_variadic(OpTable& table, const std::string& op_type,
                  std::function<Tensor(const Tensor&, const Tensor&)> fn, bool mean = false) {
  add(table, op_type, [fn = std::move(fn), mean](const OpContext& ctx) {
    NNVM_CHECK(ctx.num_inputs() >= 1, ctx.where(), "needs at least one input");
    Tensor acc = ctx.input(0);
    for (int64_t i = 1; i < ctx.num_inputs(); ++i) acc = fn(acc, ctx.input(i));
    if (mean) acc = acc / double(ctx.num_inputs());
    return std::vector<Tensor>{ctx.num_inputs() == 1 ? acc.clone() : acc};
  });
}

Tensor onnx_div(const Tensor& a, const Tensor& b) {
  // ONNX divides integers as C does (truncating); floating point truly.
  return is_floating(a.dtype()) ? a.div(b) : a.div(b, "trunc");
}

Tensor onnx_mod(const OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (ctx.attr_int("fmod", 0) == 0) {
    NNVM_CHECK(!is_floating(a.dtype()), ctx.where(), "fmod=0 needs integer inputs, got ", a.dtype());
    return a.remainder(b);  // the divisor's sign, as Python's %
  }
  // C's fmod: the dividend's sign.
  if (is_floating(a.dtype())) return a - (a / b).trunc() * b;
  return a - a.div(b, "trunc") * b;
}

// ONNX's Pow: the result has the base's type whatever the exponent's.
Tensor onnx_pow(const Tensor& a, const Tensor& b) {
  if (is_floating(a.dtype())) return a.pow(b.to(a.dtype()));
  Tensor r = a.to(kFloat64).pow(b.to(kFloat64));
  return r.round().to(a.dtype());
}

Tensor clip(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::optional<Scalar> lo, hi;
  if (ctx.opset() < 11) {
    lo = ctx.attr_float("min", -INFINITY);
    hi = ctx.attr_float("max", INFINITY);
  } else {
    if (ctx.has_input(1)) lo = ctx.input(1).item();
    if (ctx.has_input(2)) hi = ctx.input(2).item();
  }
  if (!lo && !hi) return x.clone();
  return x.clamp(lo, hi);
}

Tensor cast(const OpContext& ctx, int64_t code) {
  std::optional<DType> to = dtype_from_onnx(code);
  NNVM_CHECK(to.has_value(), ctx.where(), "cannot cast to ", onnx_dtype_name(code), ": nnvm has no such dtype");
  const Tensor& x = ctx.input(0);
  if (is_floating(x.dtype()) && is_integral(*to)) {
    // NaN and out-of-range values are undefined in ONNX; truncate toward zero as C does.
    return x.trunc().to(*to);
  }
  return x.to(*to);
}

Tensor hard_sigmoid(const Tensor& x, double alpha, double beta) { return (x * alpha + beta).clamp(0.0, 1.0); }


}  // namespace

void add_elementwise_ops(OpTable& table) {
  // unary math
  add_unary(table, "Abs", [](const Tensor& x) { return x.abs(); });
  add_unary(table, "Neg", [](const Tensor& x) { return x.neg(); });
  add_unary(table, "Exp", [](const Tensor& x) { return x.exp(); });
  add_unary(table, "Log", [](const Tensor& x) { return x.log(); });
  add_unary(table, "Sqrt", [](const Tensor& x) { return x.sqrt(); });
  add_unary(table, "Sin", [](const Tensor& x) { return x.sin(); });
  add_unary(table, "Cos", [](const Tensor& x) { return x.cos(); });
  add_unary(table, "Tan", [](const Tensor& x) { return x.tan(); });
  add_unary(table, "Tanh", [](const Tensor& x) { return x.tanh(); });
  add_unary(table, "Sigmoid", [](const Tensor& x) { return x.sigmoid(); });
  add_unary(table, "Relu", [](const Tensor& x) { return x.relu(); });
  add_unary(table, "Erf", [](const Tensor& x) { return x.erf(); });
  add_unary(table, "Floor", [](const Tensor& x) { return x.floor(); });
  add_unary(table, "Ceil", [](const Tensor& x) { return x.ceil(); });
  add_unary(table, "Round", [](const Tensor& x) { return x.round(); });  // half to even, as ONNX
  add_unary(table, "Sign", [](const Tensor& x) { return x.sign(); });
  add_unary(table, "Reciprocal", [](const Tensor& x) { return x.reciprocal(); });
  add_unary(table, "Not", [](const Tensor& x) { return x.logical_not(); });
  add_unary(table, "IsNaN", [](const Tensor& x) { return x.isnan(); });
  add_unary(table, "Identity", [](const Tensor& x) { return x; });
  add_unary(table, "Softsign", [](const Tensor& x) { return x / (x.abs() + 1.0); });
  add_unary(table, "Asin", [](const Tensor& x) { return atan2(x, (1.0 - x * x).sqrt()); });
  add_unary(table, "Acos", [](const Tensor& x) { return atan2((1.0 - x * x).sqrt(), x); });
  add_unary(table, "Atan", [](const Tensor& x) { return atan2(x, ones_like(x)); });
  add_unary(table, "Sinh", [](const Tensor& x) { return (x.exp() - (-x).exp()) * 0.5; });
  add_unary(table, "Cosh", [](const Tensor& x) { return (x.exp() + (-x).exp()) * 0.5; });
  add_unary(table, "Asinh", [](const Tensor& x) {
    Tensor a = x.abs();
    return (a + (a * a + 1.0).sqrt()).log() * x.sign();
  });
  add_unary(table, "Acosh", [](const Tensor& x) { return (x + (x * x - 1.0).sqrt()).log(); });
  add_unary(table, "Atanh", [](const Tensor& x) { return ((1.0 + x) / (1.0 - x)).log() * 0.5; });
  add(table, "IsInf", [](const OpContext& ctx) {
    const Tensor& x = ctx.input(0);
    bool neg = ctx.attr_int("detect_negative", 1) != 0, pos = ctx.attr_int("detect_positive", 1) != 0;
    Tensor r = zeros_like(x, kBool);
    if (pos) r = r.logical_or(x == INFINITY);
    if (neg) r = r.logical_or(x == -INFINITY);
    return std::vector<Tensor>{r};
  });

  // binary math, with multidirectional broadcasting
  add_binary(table, "Add", [](const Tensor& a, const Tensor& b) { return a + b; });
  add_binary(table, "Sub", [](const Tensor& a, const Tensor& b) { return a - b; });
  add_binary(table, "Mul", [](const Tensor& a, const Tensor& b) { return a * b; });
  add_binary(table, "Div", onnx_div);
  add_binary(table, "Pow", onnx_pow);
  add(table, "Mod", [](const OpContext& ctx) { return std::vector<Tensor>{onnx_mod(ctx)}; });
  add_binary(table, "PRelu", [](const Tensor& x, const Tensor& slope) { return where(x < 0.0, x * slope, x); });
  add_binary(table, "Equal", [](const Tensor& a, const Tensor& b) { return a.eq(b); });
  add_binary(table, "Greater", [](const Tensor& a, const Tensor& b) { return a.gt(b); });
  add_binary(table, "GreaterOrEqual", [](const Tensor& a, const Tensor& b) { return a.ge(b); });
  add_binary(table, "Less", [](const Tensor& a, const Tensor& b) { return a.lt(b); });
  add_binary(table, "LessOrEqual", [](const Tensor& a, const Tensor& b) { return a.le(b); });
  add_binary(table, "And", [](const Tensor& a, const Tensor& b) { return a.logical_and(b); });
  add_binary(table, "Or", [](const Tensor& a, const Tensor& b) { return a.logical_or(b); });
  add_binary(table, "Xor", [](const Tensor& a, const Tensor& b) { return a.logical_xor(b); });
  add(table, "Where", [](const OpContext& ctx) {
    return std::vector<Tensor>{where(ctx.input(0), ctx.input(1), ctx.input(2))};
  });
  add_variadic(table, "Max", [](const Tensor& a, const Tensor& b) { return maximum(a, b); });
  add_variadic(table, "Min", [](const Tensor& a, const Tensor& b) { return minimum(a, b); });
  add_variadic(table, "Sum", [](const Tensor& a, const Tensor& b) { return a + b; });
  add_variadic(table, "Mean", [](const Tensor& a, const Tensor& b) { return a + b; }, /*mean=*/true);

  // activations
  add(table, "Elu", [](const OpContext& ctx) {
    return std::vector<Tensor>{nnvm::elu(ctx.input(0), ctx.attr_float("alpha", 1.0))};
  });
  add(table, "Celu", [](const OpContext& ctx) {
    double alpha = ctx.attr_float("alpha", 1.0);
    const Tensor& x = ctx.input(0);
    return std::vector<Tensor>{x.clamp_min(0.0) + ((x / alpha).exp() - 1.0).clamp_max(0.0) * alpha};
  });
  add(table, "Selu", [](const OpContext& ctx) {
    double alpha = ctx.attr_float("alpha", 1.67326319217681884765625);
    double gamma = ctx.attr_float("gamma", 1.05070102214813232421875);
    return std::vector<Tensor>{nnvm::elu(ctx.input(0), alpha) * gamma};
  });
  add(table, "LeakyRelu", [](const OpContext& ctx) {
    return std::vector<Tensor>{nnvm::leaky_relu(ctx.input(0), ctx.attr_float("alpha", 0.01))};
  });
  add(table, "ThresholdedRelu", [](const OpContext& ctx) {
    const Tensor& x = ctx.input(0);
    return std::vector<Tensor>{where(x > ctx.attr_float("alpha", 1.0), x, zeros_like(x))};
  });
  add(table, "HardSigmoid", [](const OpContext& ctx) {
    return std::vector<Tensor>{
        hard_sigmoid(ctx.input(0), ctx.attr_float("alpha", 0.2), ctx.attr_float("beta", 0.5))};
  });
  add_unary(table, "HardSwish", [](const Tensor& x) { return x * hard_sigmoid(x, 1.0 / 6.0, 0.5); });
  add_unary(table, "Softplus", [](const Tensor& x) {
    // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
    return x.clamp_min(0.0) + (-x.abs()).exp().log1p();
  });
  add_unary(table, "Mish", [](const Tensor& x) { return x * (x.clamp_min(0.0) + (-x.abs()).exp().log1p()).tanh(); });
  add(table, "Gelu", [](const OpContext& ctx) {
    return std::vector<Tensor>{nnvm::gelu(ctx.input(0), ctx.attr_string("approximate", "none"))};
  });
  add(table, "Shrink", [](const OpContext& ctx) {
    const Tensor& x = ctx.input(0);
    double lambd = ctx.attr_float("lambd", 0.5), bias = ctx.attr_float("bias", 0.0);
    Tensor zero = zeros_like(x);
    return std::vector<Tensor>{where(x < -lambd, x + bias, where(x > lambd, x - bias, zero))};
  });
  add(table, "Clip", [](const OpContext& ctx) { return std::vector<Tensor>{clip(ctx)}; });

  // types
  add(table, "Cast", [](const OpContext& ctx) { return std::vector<Tensor>{cast(ctx, ctx.attr_int("to"))}; });
  add(table, "CastLike", [](const OpContext& ctx) {
    return std::vector<Tensor>{cast(ctx, dtype_to_onnx(ctx.input(1).dtype()))};
  });
  add(table, "Dropout", [](const OpContext& ctx) {
    // Inference (the default): the input unchanged and an all-true mask. In
    // training mode (opset 12's third input) elements drop with the ratio.
    const Tensor& x = ctx.input(0);
    bool training = ctx.has_input(2) && ctx.input(2).item<bool>();
    double ratio = ctx.has_input(1) ? ctx.input(1).item<double>() : ctx.attr_float("ratio", 0.5);
    NNVM_CHECK(ratio >= 0.0 && ratio < 1.0, ctx.where(), "ratio must be in [0, 1), got ", ratio);
    if (!training || ratio == 0.0) return std::vector<Tensor>{x, ones_like(x, kBool)};
    Tensor mask = bernoulli(full_like(x, 1.0 - ratio, kFloat32)).to(kBool);
    return std::vector<Tensor>{where(mask, x / (1.0 - ratio), zeros_like(x)), mask};
  });
}

}  // namespace nnvm::model_detail
