// Pointwise binary ops with broadcasting and type promotion: declarations,
// the public API and the operators. Each op X has a tensor-scalar twin
// "X.Scalar" whose scalar is a promoting run-time attribute.
// Kernels: kernels/cpu/binary.cpp.
#include "nnvm/core/functions.h"
#include "nnvm/core/ops/pointwise.h"

namespace nnvm {

#define NNVM_SAME_BINARY(X) X(mul) X(remainder) X(pow) X(maximum) X(minimum) X(div_floor) X(div_trunc)
#define NNVM_FLOATING_BINARY(X) X(div) X(atan2)
#define NNVM_BOOL_BINARY(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) X(logical_or) X(logical_xor)

NNVM_REGISTER(binary_ops) {
#define DECLARE(name, rule)                                     \
  declare_pointwise(#name, 2, 0, ResultType::rule);             \
  declare_pointwise(#name ".Scalar", 1, 1, ResultType::rule);
#define DECLARE_SAME(name) DECLARE(name, Same)
#define DECLARE_FLOATING(name) DECLARE(name, Floating)
#define DECLARE_BOOL(name) DECLARE(name, Bool)
  NNVM_SAME_BINARY(DECLARE_SAME)
  NNVM_FLOATING_BINARY(DECLARE_FLOATING)
  NNVM_BOOL_BINARY(DECLARE_BOOL)
  DECLARE_SAME(add)                                        // attr: alpha (add.Scalar: other, alpha)
  declare_pointwise("pow.ScalarBase", 1, 1, ResultType::Same);  // base ** x
  // where(condition, a, b): the condition does not take part in promotion.
  register_op("where").inputs(3).is_elementwise().infer_with(
      [](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs {
        NNVM_CHECK(in[0].dtype() == kBool, "where", "expected a bool condition but got ", in[0].dtype());
        DimVector shape = broadcast_shapes(in[0].sizes(), in[1].sizes(), "where");
        shape = broadcast_shapes(shape, in[2].sizes(), "where");
        return {{std::move(shape), promote_types(in[1].dtype(), in[2].dtype())}};
      });
  // masked_fill(self, mask; value): self's shape and dtype.
  register_op("masked_fill").inputs(2).is_elementwise().infer_with(
      [](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs {
        NNVM_CHECK(in[1].dtype() == kBool, "masked_fill", "expected a bool mask but got ", in[1].dtype());
        const DimVector shape = broadcast_shapes(in[0].sizes(), in[1].sizes(), "masked_fill");
        NNVM_CHECK(shape == in[0].sizes(), "masked_fill", "mask of shape ", shape_str(in[1].sizes()),
                   " must broadcast to the tensor's shape ", shape_str(in[0].sizes()));
        return {{dims(in[0].sizes()), in[0].dtype()}};
      });
}

namespace {

const OpDef& div_op(std::string_view mode, bool scalar) {
  static const OpDef* ops[3][2] = {{&find_op("div"), &find_op("div.Scalar")},
                                  {&find_op("div_floor"), &find_op("div_floor.Scalar")},
                                  {&find_op("div_trunc"), &find_op("div_trunc.Scalar")}};
  int m = 0;
  if (mode == "floor") m = 1;
  else if (mode == "trunc") m = 2;
  else NNVM_CHECK(mode.empty(), "div", "rounding_mode must be \"\", \"floor\" or \"trunc\", got \"", mode, "\"");
  return *ops[m][scalar];
}

Tensor& into(const OpDef& op, Tensor& self, absl::Span<const Tensor> inputs, const Attrs& attrs) {
  call_into(op, inputs, attrs, self);
  return self;
}

}  // namespace

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const {
  static const OpDef& op = find_op("add");
  return call1(op, {*this, o}, {alpha});
}
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const {
  static const OpDef& op = find_op("add.Scalar");
  return call1(op, {*this}, {o, alpha});
}
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  static const OpDef& op = find_op("add");
  return into(op, *this, {*this, o}, {alpha});
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) {
  static const OpDef& op = find_op("add.Scalar");
  return into(op, *this, {*this}, {o, alpha});
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return add(o, -alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return add(o, -alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return add_(o, -alpha); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) { return add_(o, -alpha); }

Tensor Tensor::div(const Tensor& o, std::string_view mode) const { return call1(div_op(mode, false), {*this, o}); }
Tensor Tensor::div(const Scalar& o, std::string_view mode) const { return call1(div_op(mode, true), {*this}, {o}); }
Tensor& Tensor::div_(const Tensor& o, std::string_view mode) { return into(div_op(mode, false), *this, {*this, o}, {}); }
Tensor& Tensor::div_(const Scalar& o, std::string_view mode) { return into(div_op(mode, true), *this, {*this}, {o}); }

#define DEFINE_BINARY(name)                                              \
  Tensor Tensor::name(const Tensor& o) const {                          \
    static const OpDef& op = find_op(#name);                            \
    return call1(op, {*this, o});                                       \
  }                                                                     \
  Tensor Tensor::name(const Scalar& o) const {                          \
    static const OpDef& op = find_op(#name ".Scalar");                  \
    return call1(op, {*this}, {o});                                     \
  }                                                                     \
  Tensor& Tensor::name##_(const Tensor& o) {                            \
    static const OpDef& op = find_op(#name);                            \
    return into(op, *this, {*this, o}, {});                             \
  }                                                                     \
  Tensor& Tensor::name##_(const Scalar& o) {                            \
    static const OpDef& op = find_op(#name ".Scalar");                  \
    return into(op, *this, {*this}, {o});                               \
  }
DEFINE_BINARY(mul) DEFINE_BINARY(remainder) DEFINE_BINARY(pow) DEFINE_BINARY(maximum) DEFINE_BINARY(minimum)
DEFINE_BINARY(atan2)
NNVM_BOOL_BINARY(DEFINE_BINARY)
#undef DEFINE_BINARY

Tensor pow(const Scalar& base, const Tensor& exponent) {
  static const OpDef& op = find_op("pow.ScalarBase");
  return call1(op, {exponent}, {base});
}
Tensor atan2(const Tensor& a, const Tensor& b) { return a.atan2(b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return a.maximum(b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return a.minimum(b); }

Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
  static const OpDef& op = find_op("where");
  return call1(op, {c, a, b});
}
// A scalar branch becomes a 0-d tensor of the dtype libtorch's promotion gives it.
Tensor where(const Tensor& c, const Scalar& a, const Tensor& b) {
  return where(c, scalar_tensor(a, promote_with_scalar(b.dtype(), a)), b);
}
Tensor where(const Tensor& c, const Tensor& a, const Scalar& b) {
  return where(c, a, scalar_tensor(b, promote_with_scalar(a.dtype(), b)));
}

Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  static const OpDef& op = find_op("masked_fill");
  return call1(op, {*this, mask}, {value});
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  static const OpDef& op = find_op("masked_fill");
  return into(op, *this, {*this, mask}, {value});
}

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return a.add(b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return b.add(a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return a.sub(b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return b.neg().add(a); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return a.mul(b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return b.mul(a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return a.div(b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return b.reciprocal().mul(a); }
Tensor operator%(const Tensor& a, const Tensor& b) { return a.remainder(b); }
Tensor operator%(const Tensor& a, const Scalar& b) { return a.remainder(b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return a.eq(b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return a.ne(b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return a.ge(b); }
Tensor operator&&(const Tensor& a, const Tensor& b) { return a.logical_and(b); }
Tensor operator||(const Tensor& a, const Tensor& b) { return a.logical_or(b); }

}  // namespace nnvm
