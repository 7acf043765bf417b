// Pointwise unary ops: declarations and the public API. Kernels: kernels/cpu/unary.cpp.
#include <cmath>
#include <limits>

#include "nnvm/core/functions.h"
#include "nnvm/core/ops/pointwise.h"

namespace nnvm {

#define NNVM_FLOATING_UNARY(X) \
  X(exp) X(exp2) X(log) X(log2) X(log1p) X(expm1) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) X(tanh) \
  X(sigmoid) X(erf) X(reciprocal)
#define NNVM_SAME_UNARY(X) X(neg) X(abs) X(relu) X(floor) X(ceil) X(round) X(trunc) X(sign) X(square)
#define NNVM_BOOL_UNARY(X) X(logical_not) X(isnan) X(isinf) X(isfinite)

namespace {

// Gradient helpers: g is the incoming gradient, x the input, y the output.
using Ctx = GradContext;
const Tensor& g_of(const Ctx& c) { return c.grad_outputs[0]; }
const Tensor& x_of(const Ctx& c) { return c.inputs[0]; }
const Tensor& y_of(const Ctx& c) { return c.outputs[0]; }

// Declares a unary op whose gradient is `df(ctx)`: one tensor, the input's gradient.
template <class F> void with_grad(OpDef& op, F df, bool saves_inputs = true, bool saves_outputs = false) {
  op.grad_with([df](const Ctx& c) -> std::vector<Tensor> {
    if (!g_of(c).defined()) return {Tensor()};
    return {df(c)};
  }, saves_inputs, saves_outputs);
}

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

Tensor zero_grad(const Ctx& c) { return zeros_like(g_of(c)); }

}  // namespace

NNVM_REGISTER(unary_ops) {
#define DECLARE_FLOATING(name) declare_pointwise(#name, 1, 0, ResultType::Floating);
#define DECLARE_SAME(name) declare_pointwise(#name, 1, 0, ResultType::Same);
#define DECLARE_BOOL(name) declare_pointwise(#name, 1, 0, ResultType::Bool);
  NNVM_FLOATING_UNARY(DECLARE_FLOATING)
  NNVM_SAME_UNARY(DECLARE_SAME)
  NNVM_BOOL_UNARY(DECLARE_BOOL)
  declare_pointwise("clamp", 1, 0, ResultType::Same);       // has_min, min, has_max, max
  declare_pointwise("nan_to_num", 1, 0, ResultType::Same);  // nan, posinf, neginf
  declare_pointwise("leaky_relu", 1, 0, ResultType::Floating);  // negative_slope
  declare_pointwise("elu", 1, 0, ResultType::Floating);         // alpha
  declare_pointwise("gelu", 1, 0, ResultType::Floating);        // exact erf form
  declare_pointwise("gelu_tanh", 1, 0, ResultType::Floating);   // tanh approximation
  declare_pointwise("silu", 1, 0, ResultType::Floating);
  declare_pointwise("softplus", 1, 0, ResultType::Floating);    // beta, threshold

  // Gradients that read the output only.
  auto from_output = [](const char* name, auto df) { with_grad(register_op(name), df, false, true); };
  from_output("exp", [](const Ctx& c) { return g_of(c) * y_of(c); });
  from_output("exp2", [](const Ctx& c) { return g_of(c) * y_of(c) * kLn2; });
  from_output("expm1", [](const Ctx& c) { return g_of(c) * (y_of(c) + 1); });
  from_output("sqrt", [](const Ctx& c) { return g_of(c) / (y_of(c) * 2); });
  from_output("rsqrt", [](const Ctx& c) { return g_of(c) * y_of(c).pow(3) * -0.5; });
  from_output("tan", [](const Ctx& c) { return g_of(c) * (y_of(c).square() + 1); });
  from_output("tanh", [](const Ctx& c) { return g_of(c) * (1 - y_of(c).square()); });
  from_output("sigmoid", [](const Ctx& c) { return g_of(c) * y_of(c) * (1 - y_of(c)); });
  from_output("reciprocal", [](const Ctx& c) { return -g_of(c) * y_of(c).square(); });
  from_output("neg", [](const Ctx& c) { return -g_of(c); });
  for (const char* name : {"floor", "ceil", "round", "trunc", "sign"}) from_output(name, zero_grad);

  // Gradients that read the input.
  auto from_input = [](const char* name, auto df) { with_grad(register_op(name), df); };
  from_input("log", [](const Ctx& c) { return g_of(c) / x_of(c); });
  from_input("log2", [](const Ctx& c) { return g_of(c) / (x_of(c) * kLn2); });
  from_input("log1p", [](const Ctx& c) { return g_of(c) / (x_of(c) + 1); });
  from_input("sin", [](const Ctx& c) { return g_of(c) * x_of(c).cos(); });
  from_input("cos", [](const Ctx& c) { return -g_of(c) * x_of(c).sin(); });
  from_input("erf", [](const Ctx& c) { return g_of(c) * (-x_of(c).square()).exp() * kTwoOverSqrtPi; });
  from_input("abs", [](const Ctx& c) { return g_of(c) * x_of(c).sign(); });
  from_input("relu", [](const Ctx& c) { return g_of(c).masked_fill(x_of(c) <= 0, 0); });
  from_input("square", [](const Ctx& c) { return g_of(c) * x_of(c) * 2; });
  from_input("clamp", [](const Ctx& c) {
    const Tensor& x = x_of(c);
    Tensor g = g_of(c);
    if (c.attrs.b(0)) g = g.masked_fill(x < c.attrs.s(1), 0);
    if (c.attrs.b(2)) g = g.masked_fill(x > c.attrs.s(3), 0);
    return g;
  });
  from_input("nan_to_num", [](const Ctx& c) { return g_of(c).masked_fill(x_of(c).isfinite().logical_not(), 0); });
  from_input("leaky_relu", [](const Ctx& c) {
    return where(x_of(c) > 0, g_of(c), g_of(c) * c.attrs.d(0));
  });
  // elu: alpha (e^x - 1) has slope alpha e^x for x <= 0
  from_input("elu", [](const Ctx& c) {
    return where(x_of(c) > 0, g_of(c), g_of(c) * x_of(c).exp() * c.attrs.d(0));
  });
  // d/dx x Phi(x) = Phi(x) + x phi(x)
  from_input("gelu", [](const Ctx& c) {
    const Tensor& x = x_of(c);
    const Tensor cdf = ((x * (1 / std::sqrt(2.0))).erf() + 1) * 0.5;
    const Tensor pdf = (x.square() * -0.5).exp() * kInvSqrt2Pi;
    return g_of(c) * (cdf + x * pdf);
  });
  // u = k (x + 0.044715 x^3), t = tanh u: d/dx 0.5 x (1 + t) = 0.5 (1 + t) + 0.5 x (1 - t^2) u'
  from_input("gelu_tanh", [](const Ctx& c) {
    const Tensor& x = x_of(c);
    const Tensor x2 = x.square();
    const Tensor t = ((x + x * x2 * 0.044715) * kSqrt2OverPi).tanh();
    const Tensor du = (x2 * (3 * 0.044715) + 1) * kSqrt2OverPi;
    return g_of(c) * ((t + 1) * 0.5 + x * (1 - t.square()) * du * 0.5);
  });
  from_input("silu", [](const Ctx& c) {
    const Tensor s = x_of(c).sigmoid();
    return g_of(c) * s * (x_of(c) * (1 - s) + 1);
  });
  from_input("softplus", [](const Ctx& c) {
    const double beta = c.attrs.d(0), threshold = c.attrs.d(1);
    const Tensor bx = x_of(c) * beta;
    return where(bx > threshold, g_of(c), g_of(c) * bx.sigmoid());
  });
}

namespace {
Tensor unary(const OpDef& op, const Tensor& x, const Attrs& attrs = {}) { return call1(op, {x}, attrs); }
Tensor& unary_(const OpDef& op, const Tensor& x, const Attrs& attrs = {}) {
  call_into(op, {x}, attrs, x);
  return const_cast<Tensor&>(x);  // a handle: in-place ops are const, as libtorch's
}
}  // namespace

#define DEFINE_UNARY(name)                                    \
  Tensor Tensor::name() const {                               \
    static const OpDef& op = find_op(#name);                  \
    return unary(op, *this);                                  \
  }                                                           \
  Tensor& Tensor::name##_() const {                           \
    static const OpDef& op = find_op(#name);                  \
    return unary_(op, *this);                                 \
  }
NNVM_FLOATING_UNARY(DEFINE_UNARY)
DEFINE_UNARY(abs) DEFINE_UNARY(relu) DEFINE_UNARY(floor) DEFINE_UNARY(ceil) DEFINE_UNARY(round)
DEFINE_UNARY(trunc) DEFINE_UNARY(sign) DEFINE_UNARY(square) DEFINE_UNARY(logical_not)
#undef DEFINE_UNARY

Tensor Tensor::neg() const {
  static const OpDef& op = find_op("neg");
  NNVM_CHECK(dtype() != kBool, "neg", "negation of a bool tensor is not supported; use logical_not()");
  return unary(op, *this);
}
Tensor& Tensor::neg_() const {
  static const OpDef& op = find_op("neg");
  NNVM_CHECK(dtype() != kBool, "neg_", "negation of a bool tensor is not supported; use logical_not_()");
  return unary_(op, *this);
}

Tensor Tensor::isnan() const { static const OpDef& op = find_op("isnan"); return unary(op, *this); }
Tensor Tensor::isinf() const { static const OpDef& op = find_op("isinf"); return unary(op, *this); }
Tensor Tensor::isfinite() const { static const OpDef& op = find_op("isfinite"); return unary(op, *this); }

namespace {
Attrs clamp_attrs(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  NNVM_CHECK(min || max, "clamp", "at least one of min and max must be given");
  return {min.has_value(), min.value_or(0), max.has_value(), max.value_or(0)};
}
}  // namespace

Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  static const OpDef& op = find_op("clamp");
  return unary(op, *this, clamp_attrs(min, max));
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  static const OpDef& op = find_op("clamp");
  return unary_(op, *this, clamp_attrs(min, max));
}

Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  static const OpDef& op = find_op("nan_to_num");
  // Infinities become the largest finite value of the tensor's own dtype by default.
  double big;
  switch (dtype()) {
    case kFloat16: big = 65504.0; break;
    case kBFloat16: big = 3.3895313892515355e38; break;
    case kFloat32: big = std::numeric_limits<float>::max(); break;
    default: big = std::numeric_limits<double>::max(); break;
  }
  return unary(op, *this, {Scalar(nan.value_or(0.0)), Scalar(posinf.value_or(big)), Scalar(neginf.value_or(-big))});
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  static const OpDef& op = find_op("leaky_relu");
  return unary(op, x, {Scalar(negative_slope)});
}
Tensor elu(const Tensor& x, double alpha) {
  static const OpDef& op = find_op("elu");
  return unary(op, x, {Scalar(alpha)});
}
Tensor gelu(const Tensor& x, std::string_view approximate) {
  static const OpDef& exact = find_op("gelu");
  static const OpDef& tanh = find_op("gelu_tanh");
  NNVM_CHECK(approximate == "none" || approximate == "tanh", "gelu", "approximate must be \"none\" or \"tanh\", got \"",
             approximate, "\"");
  return unary(approximate == "tanh" ? tanh : exact, x);
}
Tensor silu(const Tensor& x) {
  static const OpDef& op = find_op("silu");
  return unary(op, x);
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  static const OpDef& op = find_op("softplus");
  return unary(op, x, {Scalar(beta), Scalar(threshold)});
}

}  // namespace nnvm
