// Pointwise binary ops with broadcasting and type promotion: declarations,
// the public API and the operators. Each op X has a tensor-scalar twin
// "X.Scalar" whose scalar is a promoting run-time attribute.
// Kernels: kernels/cpu/binary.cpp.
#include <cmath>

#include "nnvm/core/functions.h"
#include "nnvm/core/ops/pointwise.h"

namespace nnvm {

#define NNVM_SAME_BINARY(X) X(mul) X(remainder) X(pow) X(maximum) X(minimum) X(div_floor) X(div_trunc)
#define NNVM_FLOATING_BINARY(X) X(div) X(atan2)
#define NNVM_BOOL_BINARY(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) X(logical_or) X(logical_xor)

namespace {

using Ctx = GradContext;

// Declares the gradient of a two-tensor op: df(ctx, g, a, b) -> {ga, gb}.
template <class F> void grad2(const char* name, F df) {
  register_op(name).grad_with([df](const Ctx& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    if (!g.defined()) return {Tensor(), Tensor()};
    return df(c, g, c.inputs[0], c.inputs[1]);
  });
}
// The same for a tensor-scalar op: df(ctx, g, x, scalar) -> gx.
template <class F> void grad1(const char* name, F df) {
  register_op(name).grad_with([df](const Ctx& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    if (!g.defined()) return {Tensor()};
    return {df(c, g, c.inputs[0], c.attrs.s(0))};
  });
}

// maximum/minimum: the winner takes the gradient, a tie splits it.
std::vector<Tensor> select_grad(const Tensor& g, const Tensor& a, const Tensor& b, bool max) {
  const Tensor a_wins = max ? a > b : a < b, b_wins = max ? b > a : b < a, tie = a == b;
  const Tensor half = g * 0.5;
  return {where(tie, half, g.masked_fill(a_wins.logical_not(), 0)),
          where(tie, half, g.masked_fill(b_wins.logical_not(), 0))};
}

void register_binary_grads() {
  grad2("add", [](const Ctx& c, const Tensor& g, const Tensor&, const Tensor&) {
    return std::vector<Tensor>{g, g * c.attrs.s(0)};
  });
  grad1("add.Scalar", [](const Ctx&, const Tensor& g, const Tensor&, const Scalar&) { return g; });
  grad2("mul", [](const Ctx&, const Tensor& g, const Tensor& a, const Tensor& b) {
    return std::vector<Tensor>{g * b, g * a};
  });
  grad1("mul.Scalar", [](const Ctx&, const Tensor& g, const Tensor&, const Scalar& s) { return g * s; });
  grad2("div", [](const Ctx&, const Tensor& g, const Tensor& a, const Tensor& b) {
    return std::vector<Tensor>{g / b, -g * a / b.square()};
  });
  grad1("div.Scalar", [](const Ctx&, const Tensor& g, const Tensor&, const Scalar& s) { return g / s; });
  for (const char* name : {"div_floor", "div_trunc"}) {
    grad2(name, [](const Ctx&, const Tensor& g, const Tensor&, const Tensor&) {
      return std::vector<Tensor>{zeros_like(g), zeros_like(g)};
    });
  }
  for (const char* name : {"div_floor.Scalar", "div_trunc.Scalar"})
    grad1(name, [](const Ctx&, const Tensor& g, const Tensor&, const Scalar&) { return zeros_like(g); });
  // a - b * floor(a / b)
  grad2("remainder", [](const Ctx&, const Tensor& g, const Tensor& a, const Tensor& b) {
    return std::vector<Tensor>{g, -g * a.div(b, "floor")};
  });
  grad1("remainder.Scalar", [](const Ctx&, const Tensor& g, const Tensor&, const Scalar&) { return g; });
  // d/da a^b = b a^(b-1) (0 where b == 0); d/db a^b = a^b ln a (0 where a == 0 and b >= 0)
  grad2("pow", [](const Ctx&, const Tensor& g, const Tensor& a, const Tensor& b) {
    const Tensor ga = (g * b * a.pow(b - 1)).masked_fill(b == 0, 0);
    const Tensor gb = (g * a.pow(b) * a.log()).masked_fill((a == 0) && (b >= 0), 0);
    return std::vector<Tensor>{ga, gb};
  });
  grad1("pow.Scalar", [](const Ctx&, const Tensor& g, const Tensor& x, const Scalar& s) {
    return s.to_double() == 0 ? zeros_like(g) : g * s * x.pow(s.to_double() - 1);
  });
  grad1("pow.ScalarBase", [](const Ctx&, const Tensor& g, const Tensor& x, const Scalar& base) {
    const double b = base.to_double();
    if (b == 0) return (g * 0).masked_fill(x < 0, NAN);
    return g * pow(base, x) * std::log(b);
  });
  grad2("maximum", [](const Ctx&, const Tensor& g, const Tensor& a, const Tensor& b) {
    return select_grad(g, a, b, true);
  });
  grad2("minimum", [](const Ctx&, const Tensor& g, const Tensor& a, const Tensor& b) {
    return select_grad(g, a, b, false);
  });
  grad1("maximum.Scalar", [](const Ctx&, const Tensor& g, const Tensor& x, const Scalar& s) {
    return where(x == s, g * 0.5, g.masked_fill(x < s, 0));
  });
  grad1("minimum.Scalar", [](const Ctx&, const Tensor& g, const Tensor& x, const Scalar& s) {
    return where(x == s, g * 0.5, g.masked_fill(x > s, 0));
  });
  grad2("atan2", [](const Ctx&, const Tensor& g, const Tensor& a, const Tensor& b) {
    const Tensor r = a.square() + b.square();
    return std::vector<Tensor>{g * b / r, -g * a / r};
  });
  grad1("atan2.Scalar", [](const Ctx&, const Tensor& g, const Tensor& x, const Scalar& s) {
    return g * s / (x.square() + s.to_double() * s.to_double());
  });
  register_op("where").grad_with([](const Ctx& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    if (!g.defined()) return {Tensor(), Tensor(), Tensor()};
    const Tensor& cond = c.inputs[0];
    return {Tensor(), g.masked_fill(cond.logical_not(), 0), g.masked_fill(cond, 0)};
  });
  register_op("masked_fill").grad_with([](const Ctx& c) -> std::vector<Tensor> {
    const Tensor& g = c.grad_outputs[0];
    if (!g.defined()) return {Tensor(), Tensor()};
    return {g.masked_fill(c.inputs[1], 0), Tensor()};
  });
}

}  // namespace

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
  for (const char* name : {"remainder", "remainder.Scalar", "div_floor", "div_floor.Scalar", "div_trunc",
                           "div_trunc.Scalar", "pow", "pow.Scalar", "pow.ScalarBase"})
    register_op(name).checks_integer_input_values();
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
  register_binary_grads();
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

Tensor& into(const OpDef& op, const Tensor& self, absl::Span<const Tensor> inputs, const Attrs& attrs) {
  call_into(op, inputs, attrs, self);
  return const_cast<Tensor&>(self);  // a handle: in-place ops are const, as libtorch's
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
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const {
  static const OpDef& op = find_op("add");
  return into(op, *this, {*this, o}, {alpha});
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const {
  static const OpDef& op = find_op("add.Scalar");
  return into(op, *this, {*this}, {o, alpha});
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return add(o, -alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return add(o, -alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const { return add_(o, -alpha); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const { return add_(o, -alpha); }

Tensor Tensor::div(const Tensor& o, std::string_view mode) const { return call1(div_op(mode, false), {*this, o}); }
Tensor Tensor::div(const Scalar& o, std::string_view mode) const { return call1(div_op(mode, true), {*this}, {o}); }
Tensor& Tensor::div_(const Tensor& o, std::string_view mode) const { return into(div_op(mode, false), *this, {*this, o}, {}); }
Tensor& Tensor::div_(const Scalar& o, std::string_view mode) const { return into(div_op(mode, true), *this, {*this}, {o}); }

#define DEFINE_BINARY(name)                                              \
  Tensor Tensor::name(const Tensor& o) const {                          \
    static const OpDef& op = find_op(#name);                            \
    return call1(op, {*this, o});                                       \
  }                                                                     \
  Tensor Tensor::name(const Scalar& o) const {                          \
    static const OpDef& op = find_op(#name ".Scalar");                  \
    return call1(op, {*this}, {o});                                     \
  }                                                                     \
  Tensor& Tensor::name##_(const Tensor& o) const {                      \
    static const OpDef& op = find_op(#name);                            \
    return into(op, *this, {*this, o}, {});                             \
  }                                                                     \
  Tensor& Tensor::name##_(const Scalar& o) const {                      \
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
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  static const OpDef& op = find_op("masked_fill");
  return into(op, *this, {*this, mask}, {value});
}

Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  constexpr std::string_view op = "isclose";
  NNVM_CHECK(defined() && other.defined(), op, "self and other must be defined tensors");
  NNVM_CHECK(dtype() == other.dtype(), op, "expected self and other of one dtype, got ", dtype(), " ",
             shape_str(sizes()), " and ", other.dtype(), " ", shape_str(other.sizes()));
  NNVM_CHECK(rtol >= 0 && atol >= 0, op, "rtol and atol must be non-negative, got rtol ", rtol, " and atol ", atol);
  broadcast_shapes(sizes(), other.sizes(), op);  // names isclose, not the sub inside it
  // As libtorch: equal values (infinities too) are close; otherwise the error
  // must be finite, so an infinity is never within an infinite tolerance.
  const Tensor error = (*this - other).abs();
  const Tensor close = eq(other) || (error.isfinite() && error <= other.abs() * rtol + atol);
  return equal_nan ? close || (isnan() && other.isnan()) : close;
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return isclose(other, rtol, atol, equal_nan).all().item<bool>();
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
