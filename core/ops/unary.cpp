// Pointwise unary ops: declarations and the public API. Kernels: kernels/cpu/unary.cpp.
#include <limits>

#include "nnvm/core/functions.h"
#include "nnvm/core/ops/pointwise.h"

namespace nnvm {

#define NNVM_FLOATING_UNARY(X) \
  X(exp) X(exp2) X(log) X(log2) X(log1p) X(expm1) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) X(tanh) \
  X(sigmoid) X(erf) X(reciprocal)
#define NNVM_SAME_UNARY(X) X(neg) X(abs) X(relu) X(floor) X(ceil) X(round) X(trunc) X(sign) X(square)
#define NNVM_BOOL_UNARY(X) X(logical_not) X(isnan) X(isinf) X(isfinite)

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
}

namespace {
Tensor unary(const OpDef& op, const Tensor& x, const Attrs& attrs = {}) { return call1(op, {x}, attrs); }
Tensor& unary_(const OpDef& op, Tensor& x, const Attrs& attrs = {}) {
  call_into(op, {x}, attrs, x);
  return x;
}
}  // namespace

#define DEFINE_UNARY(name)                                    \
  Tensor Tensor::name() const {                               \
    static const OpDef& op = find_op(#name);                  \
    return unary(op, *this);                                  \
  }                                                           \
  Tensor& Tensor::name##_() {                                 \
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
Tensor& Tensor::neg_() {
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
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
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
