#include "nnvm/jit/loop_ir.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/error.h"
#include "nnvm/jit/loop_builder.h"
#include "nnvm/jit/lower_int64.h"
#include "nnvm/jit/op_lowering.h"

namespace nnvm::jit {

const char* prim_name(Prim p) {
  switch (p) {
    case Prim::kLoad: return "load";
    case Prim::kArg: return "arg";
    case Prim::kConst: return "const";
    case Prim::kAdd: return "add";
    case Prim::kSub: return "sub";
    case Prim::kMul: return "mul";
    case Prim::kDiv: return "div";
    case Prim::kMax: return "max";
    case Prim::kMin: return "min";
    case Prim::kClampMin: return "clamp_min";
    case Prim::kClampMax: return "clamp_max";
    case Prim::kFma: return "fma";
    case Prim::kNeg: return "neg";
    case Prim::kAbs: return "abs";
    case Prim::kRelu: return "relu";
    case Prim::kSqrt: return "sqrt";
    case Prim::kRecip: return "recip";
    case Prim::kExp: return "exp";
    case Prim::kLog: return "log";
    case Prim::kTanh: return "tanh";
    case Prim::kSigmoid: return "sigmoid";
    case Prim::kErf: return "erf";
    case Prim::kExpm1: return "expm1";
    case Prim::kLog1p: return "log1p";
    case Prim::kSoftplus: return "softplus";
    case Prim::kPow: return "pow";
    case Prim::kExp2: return "exp2";
    case Prim::kElu: return "elu";
    case Prim::kLeakyRelu: return "leaky_relu";
    case Prim::kSign: return "sign";
    case Prim::kRound: return "round";
    case Prim::kFloor: return "floor";
    case Prim::kCeil: return "ceil";
    case Prim::kTrunc: return "trunc";
    case Prim::kEq: return "eq";
    case Prim::kNe: return "ne";
    case Prim::kLt: return "lt";
    case Prim::kLe: return "le";
    case Prim::kGt: return "gt";
    case Prim::kGe: return "ge";
    case Prim::kSelect: return "select";
    case Prim::kCast: return "cast";
    case Prim::kBits: return "bits";
    case Prim::kLoadLow: return "load_low";
    case Prim::kLoadHigh: return "load_high";
    case Prim::kToInt: return "to_int";
    case Prim::kSignOf: return "sign_of";
    case Prim::kIntEq: return "int_eq";
    case Prim::kIntGt: return "int_gt";
    case Prim::kUIntGt: return "uint_gt";
    case Prim::kInt64ToFloat: return "int64_to_float";
    case Prim::kPair: return "pair";
    case Prim::kTruncInt64: return "trunc_int64";
  }
  return "?";
}

float scalar_lane(const ScalarArg& a, const Scalar& s) {
  if (a.part == ScalarPart::kFloat) return s.is_floating() ? float(s.to_double()) : float(s.to_int());
  const int64_t v = s.is_floating() ? int64_t(s.to_double()) : s.to_int();  // scalar_as<int64_t>
  return std::bit_cast<float>(uint32_t(uint64_t(v) >> (a.part == ScalarPart::kHigh ? 32 : 0)));
}

ScalarLanes scalar_lanes(const LoopIR& ir, absl::Span<const Attrs* const> attrs) {
  ScalarLanes lanes;
  for (const ScalarArg& a : ir.args) lanes.push_back(scalar_lane(a, attrs[size_t(a.step)]->s(size_t(a.attr))));
  return lanes;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kNone: return "none";
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMean: return "mean";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kLogSumExp: return "logsumexp";
    case ReduceOp::kArgMax: return "argmax";
    case ReduceOp::kArgMin: return "argmin";
    case ReduceOp::kNorm2: return "norm2";
  }
  return "?";
}

int prim_arity(Prim p) {
  switch (p) {
    case Prim::kLoad: case Prim::kArg: case Prim::kConst: case Prim::kBits: case Prim::kLoadLow:
    case Prim::kLoadHigh: return 0;
    case Prim::kIntEq: case Prim::kIntGt: case Prim::kUIntGt: case Prim::kInt64ToFloat: case Prim::kPair: return 2;
    case Prim::kAdd: case Prim::kSub: case Prim::kMul: case Prim::kDiv: case Prim::kMax: case Prim::kMin:
    case Prim::kClampMin: case Prim::kClampMax: return 2;
    case Prim::kFma: case Prim::kSelect: case Prim::kSoftplus: return 3;
    case Prim::kPow: case Prim::kElu: case Prim::kLeakyRelu: return 2;
    case Prim::kEq: case Prim::kNe: case Prim::kLt: case Prim::kLe: case Prim::kGt: case Prim::kGe: return 2;
    default: return 1;
  }
}

std::string LoopIR::to_string() const {
  std::string s;
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr& e = exprs[i];
    absl::StrAppend(&s, "e", i, " = ", prim_name(e.prim));
    const bool load = e.prim == Prim::kLoad || e.prim == Prim::kLoadLow || e.prim == Prim::kLoadHigh;
    if (load) absl::StrAppend(&s, " in", e.arg);
    if (load && dtype(size_t(e.arg)) != kFloat32) absl::StrAppend(&s, " ", std::string(dtype_name(dtype(size_t(e.arg)))));
    else if (e.prim == Prim::kArg) absl::StrAppend(&s, " s", e.arg, " (node ", args[size_t(e.arg)].step, " attr ",
                                                    args[size_t(e.arg)].attr,
                                                    args[size_t(e.arg)].part == ScalarPart::kLow    ? " low"
                                                    : args[size_t(e.arg)].part == ScalarPart::kHigh ? " high"
                                                                                                     : "",
                                                    ")");
    else if (e.prim == Prim::kBits) absl::StrAppendFormat(&s, " 0x%08x", uint32_t(e.arg));
    else if (e.prim == Prim::kTruncInt64) absl::StrAppend(&s, e.arg ? " high" : " low");
    else if (e.prim == Prim::kConst) absl::StrAppendFormat(&s, " %.9g", e.value);
    else if (e.prim == Prim::kCast) absl::StrAppend(&s, " ", std::string(dtype_name(DType(e.arg))));
    const int32_t operands[] = {e.a, e.b, e.c};
    for (int k = 0; k < prim_arity(e.prim); ++k) absl::StrAppend(&s, k ? ", e" : " e", operands[k]);
    s += "\n";
  }
  for (size_t o = 0; o < stores.size(); ++o) {
    if (reduce == ReduceOp::kNone) absl::StrAppend(&s, "out", o, " = e", stores[o]);
    else absl::StrAppend(&s, "out", o, " = ", reduce_op_name(reduce), " e", stores[o], " over the reduction axis");
    const DType t = dtype(size_t(inputs) + o);
    absl::StrAppend(&s, t != kFloat32 ? absl::StrCat(" ", std::string(dtype_name(t))) : "", "\n");
  }
  return s;
}

namespace {

using lowering::Builder;

// One node's primitives: its input expressions in, its result out.
using Inputs = absl::Span<const int32_t>;
using LowerFn = std::function<int32_t(Builder&, const trace::Node&, int32_t step, Inputs in)>;

const absl::flat_hash_map<std::string, LowerFn>& lowerings() {
  static const auto* table = [] {
    auto* m = new absl::flat_hash_map<std::string, LowerFn>();
    auto unary = [m](const char* name, Prim p) {
      (*m)[name] = [p](Builder& b, const trace::Node&, int32_t, Inputs in) { return b.op(p, in[0]); };
    };
    // p(x, the node's first Scalar attribute)
    auto with_scalar = [m](const std::string& name, Prim p) {
      (*m)[name] = [p](Builder& b, const trace::Node& n, int32_t step, Inputs in) {
        return b.op(p, in[0], b.scalar(n, step, 0));
      };
    };
    auto binary = [m, with_scalar](const char* name, Prim p) {
      (*m)[name] = [p](Builder& b, const trace::Node&, int32_t, Inputs in) { return b.op(p, in[0], in[1]); };
      with_scalar(absl::StrCat(name, ".Scalar"), p);
    };
    // A lowering that reads only the node's inputs.
    auto inputs_only = [m](const char* name, int32_t (*lower)(Builder&, Inputs)) {
      (*m)[name] = [lower](Builder& b, const trace::Node&, int32_t, Inputs in) { return lower(b, in); };
    };
    binary("mul", Prim::kMul);
    binary("div", Prim::kDiv);
    binary("maximum", Prim::kMax);
    binary("minimum", Prim::kMin);
    // add(x, y; alpha) = x + alpha * y, one rounding for floats as the
    // reference kernel (kernels/cpu/binary.cpp) and PyTorch compute it, so an
    // optimizer's update is the same hot and cold; add.Scalar(x; other,
    // alpha) = x + other * alpha
    (*m)["add"] = [](Builder& b, const trace::Node& n, int32_t step, Inputs in) {
      if (is_floating(b.dtype(n.outputs[0]))) return b.op(Prim::kFma, b.scalar(n, step, 0), in[1], in[0]);
      return b.op(Prim::kAdd, in[0], b.op(Prim::kMul, b.scalar(n, step, 0), in[1]));
    };
    (*m)["add.Scalar"] = [](Builder& b, const trace::Node& n, int32_t step, Inputs in) {
      return b.op(Prim::kAdd, in[0], b.op(Prim::kMul, b.scalar(n, step, 0), b.scalar(n, step, 1)));
    };
    unary("neg", Prim::kNeg);
    unary("abs", Prim::kAbs);
    unary("relu", Prim::kRelu);
    unary("sqrt", Prim::kSqrt);
    unary("reciprocal", Prim::kRecip);
    unary("exp", Prim::kExp);
    unary("log", Prim::kLog);
    unary("tanh", Prim::kTanh);
    unary("sigmoid", Prim::kSigmoid);
    inputs_only("square", [](Builder& b, Inputs in) { return b.op(Prim::kMul, in[0], in[0]); });
    inputs_only("rsqrt", [](Builder& b, Inputs in) {
      return b.op(Prim::kDiv, b.constant(1), b.op(Prim::kSqrt, in[0]));
    });
    inputs_only("silu", [](Builder& b, Inputs in) { return b.op(Prim::kMul, in[0], b.op(Prim::kSigmoid, in[0])); });
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) as
    // x (sqrt(2/pi) + sqrt(2/pi) 0.044715 x^2) and 0.5x + 0.5x tanh(..): three
    // roundings fewer than the reference's order (the gelu chain is
    // compute-bound); the composed error is measured in activation_accuracy_test.
    inputs_only("gelu_tanh", [](Builder& b, Inputs in) {
      const int32_t x = in[0];
      const int32_t scale = b.op(Prim::kFma, b.op(Prim::kMul, x, x), b.constant(float(0.79788456080286535588 * 0.044715)),
                                 b.constant(0.79788456080286535588f));
      const int32_t inner = b.op(Prim::kMul, x, scale);
      const int32_t half_x = b.op(Prim::kMul, b.constant(0.5f), x);
      return b.op(Prim::kFma, half_x, b.op(Prim::kTanh, inner), half_x);
    });
    // clamp(x; has_min, min, has_max, max)
    (*m)["clamp"] = [](Builder& b, const trace::Node& n, int32_t step, Inputs in) {
      int32_t x = in[0];
      if (n.attrs.b(0)) x = b.op(Prim::kClampMin, x, b.scalar(n, step, 1));
      if (n.attrs.b(2)) x = b.op(Prim::kClampMax, x, b.scalar(n, step, 3));
      return x;
    };
    // copy(x; dtype): a float dtype keeps the value (a 16-bit one rounds on
    // store only), bool is x != 0, an integer truncates and wraps
    (*m)["copy"] = [](Builder& b, const trace::Node& n, int32_t, Inputs in) {
      const DType to = b.dtype(n.outputs[0]);
      if (is_floating(to)) return in[0];
      if (to == kBool) return b.nonzero(in[0]);
      return b.add(Expr{Prim::kCast, in[0], -1, -1, int32_t(to)});
    };
    binary("eq", Prim::kEq);
    binary("ne", Prim::kNe);
    binary("lt", Prim::kLt);
    binary("le", Prim::kLe);
    binary("gt", Prim::kGt);
    binary("ge", Prim::kGe);
    inputs_only("logical_not", [](Builder& b, Inputs in) { return b.op(Prim::kEq, in[0], b.constant(0)); });
    inputs_only("logical_and", [](Builder& b, Inputs in) {
      return b.op(Prim::kMul, b.nonzero(in[0]), b.nonzero(in[1]));
    });
    inputs_only("logical_or", [](Builder& b, Inputs in) {
      return b.op(Prim::kMax, b.nonzero(in[0]), b.nonzero(in[1]));
    });
    inputs_only("logical_xor", [](Builder& b, Inputs in) {
      return b.op(Prim::kNe, b.nonzero(in[0]), b.nonzero(in[1]));
    });
    inputs_only("isnan", [](Builder& b, Inputs in) { return b.op(Prim::kNe, in[0], in[0]); });
    inputs_only("isinf", [](Builder& b, Inputs in) {
      return b.op(Prim::kEq, b.op(Prim::kAbs, in[0]), b.constant(INFINITY));
    });
    inputs_only("isfinite", [](Builder& b, Inputs in) {
      return b.op(Prim::kLt, b.op(Prim::kAbs, in[0]), b.constant(INFINITY));
    });
    inputs_only("where", [](Builder& b, Inputs in) { return b.op(Prim::kSelect, in[0], in[1], in[2]); });
    // masked_fill(x, mask; value): the value is read as x's dtype (bool: value != 0)
    (*m)["masked_fill"] = [](Builder& b, const trace::Node& n, int32_t step, Inputs in) {
      int32_t value = b.scalar(n, step, 0);
      if (b.dtype(n.inputs[0]) == kBool) value = b.nonzero(value);
      return b.op(Prim::kSelect, in[1], value, in[0]);
    };
    unary("erf", Prim::kErf);
    unary("expm1", Prim::kExpm1);
    unary("log1p", Prim::kLog1p);
    // 0.5 x (1 + erf(x / sqrt(2))) as 0.5x + 0.5x erf(..): one rounding fewer
    inputs_only("gelu", [](Builder& b, Inputs in) {
      const int32_t x = in[0];
      const int32_t erf = b.op(Prim::kErf, b.op(Prim::kMul, x, b.constant(0.70710678118654752440f)));
      const int32_t half_x = b.op(Prim::kMul, b.constant(0.5f), x);
      return b.op(Prim::kFma, half_x, erf, half_x);
    });
    // pow(x, y) and base ** x in general; x ** y for a compile-time exponent
    // of 0, ±1, ±2 or 3 as products, within an ulp or so of std::pow (x ** -2
    // as (1 / x)^2: it overflows where the result does). Not for a pinned
    // run-time one: the group key, which finds a compiled kernel, leaves its
    // value out.
    binary("pow", Prim::kPow);
    (*m)["pow.Scalar"] = [](Builder& b, const trace::Node& n, int32_t step, Inputs in) {
      const int32_t x = in[0];
      if (std::none_of(n.slots.begin(), n.slots.end(), [](const trace::ScalarSlot& s) { return s.attr == 0; })) {
        const float y = float(n.attrs.d(0));
        if (y == 0) return b.constant(1);
        if (y == 1) return x;
        if (y == 2) return b.op(Prim::kMul, x, x);
        if (y == 3) return b.op(Prim::kMul, b.op(Prim::kMul, x, x), x);
        if (y == -1) return b.op(Prim::kRecip, x);
        if (y == -2) return b.op(Prim::kMul, b.op(Prim::kRecip, x), b.op(Prim::kRecip, x));
      }
      return b.op(Prim::kPow, x, b.scalar(n, step, 0));
    };
    (*m)["pow.ScalarBase"] = [](Builder& b, const trace::Node& n, int32_t step, Inputs in) {
      return b.op(Prim::kPow, b.scalar(n, step, 0), in[0]);
    };
    unary("exp2", Prim::kExp2);
    unary("sign", Prim::kSign);
    unary("round", Prim::kRound);
    unary("floor", Prim::kFloor);
    unary("ceil", Prim::kCeil);
    unary("trunc", Prim::kTrunc);
    // log2 x = log x * log2(e): two roundings past log's
    inputs_only("log2", [](Builder& b, Inputs in) {
      return b.op(Prim::kMul, b.op(Prim::kLog, in[0]), b.constant(1.44269504088896340736f));
    });
    with_scalar("elu", Prim::kElu);
    with_scalar("leaky_relu", Prim::kLeakyRelu);
    // softplus(x; beta, threshold)
    (*m)["softplus"] = [](Builder& b, const trace::Node& n, int32_t step, Inputs in) {
      return b.op(Prim::kSoftplus, in[0], b.scalar(n, step, 0), b.scalar(n, step, 1));
    };
    return m;
  }();
  return *table;
}

// Lowerings registered at run time (register_lowerings): read on a miss in
// the built-in table, only while a group is lowered.
struct OpLowerings {
  std::mutex mutex;
  absl::flat_hash_map<std::string, std::vector<Expr>> by_op;
};

OpLowerings& op_lowerings() {
  static OpLowerings* l = new OpLowerings;  // never destroyed: compiles may run during exit
  return *l;
}

// Whether p computes on float32 values alone (no int64 halves, no cast).
bool float_prim(Prim p) {
  switch (p) {
    case Prim::kCast: case Prim::kBits: case Prim::kLoadLow: case Prim::kLoadHigh: case Prim::kToInt:
    case Prim::kSignOf: case Prim::kIntEq: case Prim::kIntGt: case Prim::kUIntGt: case Prim::kInt64ToFloat:
    case Prim::kPair: case Prim::kTruncInt64: return false;
    default: return true;
  }
}

// Why `expr` is not a registrable lowering (empty: it is).
std::string malformed(const std::vector<Expr>& expr) {
  if (expr.empty()) return "the expression is empty";
  for (size_t i = 0; i < expr.size(); ++i) {
    const Expr& e = expr[i];
    if (!float_prim(e.prim)) return absl::StrCat("entry ", i, " is ", prim_name(e.prim), ": float32 primitives only");
    if ((e.prim == Prim::kLoad || e.prim == Prim::kArg) && e.arg < 0)
      return absl::StrCat("entry ", i, " (", prim_name(e.prim), ") names no input or attribute");
    const int32_t operands[] = {e.a, e.b, e.c};
    for (int k = 0; k < prim_arity(e.prim); ++k)
      if (operands[k] < 0 || size_t(operands[k]) >= i)
        return absl::StrCat("entry ", i, " (", prim_name(e.prim), ") reads entry ", operands[k],
                            ", not an earlier one");
  }
  return {};
}

// The registered lowering of `op`, or null.
std::optional<std::vector<Expr>> registered_lowering(const std::string& op) {
  OpLowerings& l = op_lowerings();
  std::lock_guard<std::mutex> lock(l.mutex);
  auto it = l.by_op.find(op);
  if (it == l.by_op.end()) return std::nullopt;
  return it->second;
}

// A registered lowering of node n over its input expressions `in`, or why not.
std::string lower_registered(Builder& b, const trace::Node& n, int32_t step, Inputs in, const std::vector<Expr>& expr,
                             int32_t& out) {
  std::vector<int32_t> at(expr.size());
  for (size_t i = 0; i < expr.size(); ++i) {
    const Expr& e = expr[i];
    if (e.prim == Prim::kLoad) {
      if (size_t(e.arg) >= in.size())
        return absl::StrCat(n.op->name, "'s expression reads input ", e.arg, " of ", in.size());
      at[i] = in[size_t(e.arg)];
    } else if (e.prim == Prim::kArg) {
      if (size_t(e.arg) >= n.attrs.size() || !std::holds_alternative<Scalar>(n.attrs[size_t(e.arg)]))
        return absl::StrCat(n.op->name, "'s expression reads attribute ", e.arg, ", not a Scalar of the node");
      at[i] = b.scalar(n, step, e.arg);
    } else if (e.prim == Prim::kConst) {
      at[i] = b.constant(e.value);
    } else {
      auto operand = [&](int32_t k) { return k < 0 ? -1 : at[size_t(k)]; };
      at[i] = b.op(e.prim, operand(e.a), operand(e.b), operand(e.c));
    }
  }
  out = at.back();
  return {};
}

}  // namespace

void register_lowerings(std::vector<OpLowering> added) {
  OpLowerings& l = op_lowerings();
  std::lock_guard<std::mutex> lock(l.mutex);
  absl::flat_hash_set<std::string> names;
  for (const OpLowering& a : added) {
    NNVM_CHECK(!lowerings().contains(a.op) && !l.by_op.contains(a.op) && names.insert(a.op).second,
               "register_lowering", "the JIT lowers an op named '", a.op, "' already");
    const std::string why = malformed(a.expr);
    NNVM_CHECK(why.empty(), "register_lowering", a.op, "'s pointwise expression: ", why);
  }
  for (OpLowering& a : added) l.by_op.emplace(std::move(a.op), std::move(a.expr));
}

bool has_lowering(std::string_view op) {
  const std::string name(op);
  if (lowerings().contains(name)) return true;
  OpLowerings& l = op_lowerings();
  std::lock_guard<std::mutex> lock(l.mutex);
  return l.by_op.contains(name);
}

namespace {

bool float_compute(DType d) { return d == kFloat32 || d == kFloat16 || d == kBFloat16; }
// Every value exact in float32, and no comparison of them rounds.
bool small_integer(DType d) { return d == kBool || d == kUInt8 || d == kInt8; }
// A dtype the kernels load (converted to float32) and store.
bool loadable(DType d) { return float_compute(d) || small_integer(d) || d == kInt32; }

// Whether a reduction of a `value` dtype into an `out` dtype computes as the
// reference does (kernels/cpu/reduce.cpp: the value converted to the output's
// compute dtype, float32 or int64, sums accumulated in double or int64); else
// why not. Integer sums: every partial sum of bool, uint8 or int8 values is
// exact in double, and of int32 ones below 2^22 elements (ReduceJit checks the
// extent); extrema of bool, uint8 and int8 are exact in float32.
std::string reduction_dtypes(ReduceOp op, DType value, DType out) {
  auto dt = [](DType d) { return std::string(dtype_name(d)); };
  const std::string what = absl::StrCat(reduce_op_name(op), " of ", dt(value), " into ", dt(out));
  if (op == ReduceOp::kLogSumExp)
    return value == kFloat32 && out == kFloat32 ? "" : absl::StrCat(what, ": the JIT's logsumexp is float32 only");
  if (op == ReduceOp::kArgMax || op == ReduceOp::kArgMin)
    return float_compute(value) || small_integer(value)
               ? ""
               : absl::StrCat(what, ": the JIT compares float32 values (int32 rounds past 2^24)");
  if (float_compute(out)) return {};
  if (out == kInt64)
    return op == ReduceOp::kSum && (small_integer(value) || value == kInt32)
               ? ""
               : absl::StrCat(what, ": int64 results of integer sums only (the reference wraps in int64)");
  if (small_integer(out) && (op == ReduceOp::kMax || op == ReduceOp::kMin)) return {};
  return absl::StrCat(what, ": not exact in float32");
}

// Whether float32 gives node n's reference result exactly (the reference
// computes in the promoted dtype, int64 for integers); else why not.
std::string exact_in_float32(const trace::Trace& t, const trace::Node& n) {
  static const absl::flat_hash_set<std::string> logical = {"logical_not", "logical_and", "logical_or", "logical_xor",
                                                           "isnan",       "isinf",       "isfinite"};
  static const absl::flat_hash_set<std::string> compare = {"eq", "ne", "lt", "le", "gt", "ge"};
  const std::string& name = n.op->name;
  auto in = [&](size_t i) { return t.value(n.inputs[i]).dtype; };
  auto dt = [](DType d) { return std::string(dtype_name(d)); };
  // these read x != 0 or finiteness only, which every loaded dtype keeps
  if (logical.contains(name)) return {};
  const bool scalar_form = absl::EndsWith(name, ".Scalar");
  if (compare.contains(scalar_form ? name.substr(0, name.size() - 7) : name)) {
    const DType c = scalar_form ? promote_with_scalar(in(0), n.attrs.s(0)) : promote_types(in(0), in(1));
    if (float_compute(c) || (!scalar_form && small_integer(in(0)) && small_integer(in(1)))) return {};
    return absl::StrCat(name, " compares in ", dt(c), ": exact in float32 for floats, bool, uint8 and int8 only");
  }
  if (name == "where") {
    const DType c = promote_types(in(1), in(2));
    if (float_compute(c) || (small_integer(in(1)) && small_integer(in(2)))) return {};
    return absl::StrCat("where selects ", dt(c), " values, not all exact in float32");
  }
  if (name == "masked_fill") {
    if (float_compute(in(0)) || in(0) == kBool) return {};
    return absl::StrCat("masked_fill fills ", dt(in(0)), " with a Scalar read as int64");
  }
  const DType out = t.value(n.outputs[0]).dtype;
  if (name == "copy") {
    if (is_floating(out) || out == kBool || float_compute(in(0)) || small_integer(in(0))) return {};
    return absl::StrCat("copy from ", dt(in(0)), " to ", dt(out), " wraps integers wider than float32 holds");
  }
  if (float_compute(out)) return {};  // arithmetic: computed in float32 (its output's dtype, or promoted to it)
  return absl::StrCat(name, " computes in ", dt(out), ": integer arithmetic runs in int64 in the reference");
}

// Lowers nodes[0, count) of g over the group's inputs (loaded); the result
// of each node output in expr_of. Empty, or why a node does not lower.
bool is_floating_16(DType d) { return d == kFloat16 || d == kBFloat16; }

std::string lower_nodes(const trace::Trace& t, const trace::FusionGroup& g, size_t count,
                        const trace::GroupValues& values, Builder& b, LoopIR& ir,
                        absl::flat_hash_map<trace::ValueId, int32_t>& expr_of) {
  ir.inputs = values.inputs;
  for (int32_t i = 0; i < values.inputs; ++i)
    expr_of[values.ids[size_t(i)]] = lowering::load_input(b, i, t.value(values.ids[size_t(i)]).dtype);
  for (size_t k = 0; k < count; ++k) {
    const trace::Node& node = t.nodes()[size_t(g.nodes[k])];
    auto it = lowerings().find(node.op->name);
    std::optional<std::vector<Expr>> registered;
    if (it == lowerings().end()) registered = registered_lowering(node.op->name);
    if ((it == lowerings().end() && !registered) || node.outputs.size() != 1)
      return absl::StrCat(node.op->name, " has no JIT primitive");
    absl::InlinedVector<int32_t, 3> in;
    for (trace::ValueId v : node.inputs) in.push_back(expr_of.at(v));
    int32_t out = -1;
    std::string why = lowering::lower_int64(b, node, int32_t(k), in, out);
    if (!why.empty()) return why;
    if (out >= 0) {
      expr_of[node.outputs[0]] = out;
      continue;
    }
    why = exact_in_float32(t, node);
    if (!why.empty()) return why;
    // An explicit cast into a 16-bit float asks for the rounding, which the
    // JIT makes on store only: a later node of the group may only select the
    // value into the same dtype (where), which rounds it on its own store.
    if (const DType to = t.value(node.outputs[0]).dtype;
        node.op->name == "copy" && (to == kFloat16 || to == kBFloat16) && !is_floating_16(t.value(node.inputs[0]).dtype))
      for (size_t later = k + 1; later < g.nodes.size(); ++later) {
        const trace::Node& reader = t.nodes()[size_t(g.nodes[later])];
        const bool selects = reader.op->name == "where" && t.value(reader.outputs[0]).dtype == to;
        for (trace::ValueId v : reader.inputs)
          if (v == node.outputs[0] && !selects)
            return absl::StrCat("copy into ", std::string(dtype_name(to)), " read by ", reader.op->name,
                                " in the group: the JIT rounds 16-bit values on store only");
      }
    for (size_t i = 0; i < in.size(); ++i)
      if (b.expr(in[i]).prim == Prim::kPair)
        return absl::StrCat(node.op->name, " reads int64 %", node.inputs[i], " into ",
                            std::string(dtype_name(t.value(node.outputs[0]).dtype)), ": not lowered");
    if (registered) {
      why = lower_registered(b, node, int32_t(k), in, *registered, out);
      if (!why.empty()) return why;
      expr_of[node.outputs[0]] = out;
      continue;
    }
    expr_of[node.outputs[0]] = it->second(b, node, int32_t(k), in);
  }
  return {};
}

ReduceOp reduce_op_of(const std::string& name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "mean") return ReduceOp::kMean;
  if (name == "amax" || name == "max") return ReduceOp::kMax;
  if (name == "amin" || name == "min") return ReduceOp::kMin;
  if (name == "prod") return ReduceOp::kProd;
  if (name == "logsumexp") return ReduceOp::kLogSumExp;
  if (name == "argmax") return ReduceOp::kArgMax;
  if (name == "argmin") return ReduceOp::kArgMin;
  if (name == "norm") return ReduceOp::kNorm2;  // p = 2 only: lower_reduction checks
  return ReduceOp::kNone;
}

}  // namespace

bool norm_is_euclidean(const Attrs& attrs) {
  return attrs.size() == 3 && std::holds_alternative<Scalar>(attrs[2]) && attrs.d(2) == 2.0;
}

Lowering lower_pointwise(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values) {
  Lowering l;
  if (g.kind != trace::GroupKind::kPointwise) {
    l.declined = absl::StrCat("a ", trace::group_kind_name(g.kind), " group, not a pointwise one");
    return l;
  }
  absl::flat_hash_map<trace::ValueId, int32_t> expr_of;
  for (size_t i = 0; i < values.ids.size(); ++i) {
    const trace::Value& v = t.value(values.ids[i]);
    if (!float_compute(v.dtype) && !small_integer(v.dtype) && v.dtype != kInt32 && v.dtype != kInt64) {
      l.declined = absl::StrCat("%", values.ids[i], " is ", std::string(dtype_name(v.dtype)),
                                ": the JIT computes in float32 (operands float32, float16, bfloat16, bool, uint8, "
                                "int8, int32 or int64)");
      return l;
    }
  }
  for (int32_t k = 0; k < values.inputs + values.outputs; ++k) l.ir.dtypes.push_back(t.value(values.ids[size_t(k)]).dtype);
  Builder b(t, l.ir);
  l.declined = lower_nodes(t, g, g.nodes.size(), values, b, l.ir, expr_of);
  if (!l.ok()) return l;
  for (int32_t o = 0; o < values.outputs; ++o)
    l.ir.stores.push_back(expr_of.at(values.ids[size_t(values.inputs + o)]));
  return l;
}

Lowering lower_reduction(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values) {
  Lowering l;
  const trace::Node& last = t.nodes()[size_t(g.nodes.back())];
  const bool single = g.kind == trace::GroupKind::kSingle && g.nodes.size() == 1;
  if (g.kind != trace::GroupKind::kReduction && !single) {
    l.declined = absl::StrCat("a ", trace::group_kind_name(g.kind), " group, not a reduction");
    return l;
  }
  l.ir.reduce = reduce_op_of(last.op->name);
  if (l.ir.reduce == ReduceOp::kNone || last.inputs.size() != 1 || last.outputs.size() != 1 || values.outputs != 1 ||
      g.outputs[0] != last.outputs[0]) {
    l.declined = absl::StrCat(last.op->name,
                              " is not a reduction the JIT runs (sum, mean, amax, amin, max, min, prod, logsumexp, "
                              "argmax, argmin, norm with p = 2)");
    return l;
  }
  if (l.ir.reduce == ReduceOp::kNorm2 && !norm_is_euclidean(last.attrs)) {
    l.declined = "norm with p other than 2: the JIT runs p = 2 only";
    return l;
  }
  const trace::ValueId out = values.ids[size_t(values.inputs)];
  for (trace::ValueId id : values.ids) {
    const DType d = t.value(id).dtype;
    if (!loadable(d) && !(id == out && d == kInt64)) {
      l.declined = absl::StrCat("%", id, " is ", std::string(dtype_name(d)),
                                ": the JIT computes in float32 (operands float32, float16, bfloat16, bool, uint8, "
                                "int8 or int32; an int64 sum)");
      return l;
    }
  }
  const DType value = t.value(last.inputs[0]).dtype;
  l.declined = reduction_dtypes(l.ir.reduce, value, t.value(out).dtype);
  if (!l.ok()) return l;
  for (int32_t k = 0; k <= values.inputs; ++k) l.ir.dtypes.push_back(t.value(values.ids[size_t(k)]).dtype);
  absl::flat_hash_map<trace::ValueId, int32_t> expr_of;
  Builder b(t, l.ir);
  l.declined = lower_nodes(t, g, g.nodes.size() - 1, values, b, l.ir, expr_of);
  if (!l.ok()) return l;
  l.ir.stores.push_back(expr_of.at(last.inputs[0]));
  const Expr& stored = l.ir.exprs[size_t(l.ir.stores[0])];
  if (value == kInt32 && stored.prim != Prim::kLoad)  // a loaded int32 is summed exactly, as an integer
    l.declined = "an int32 value computed in the prologue: float32 rounds it past 2^24";
  if (l.ir.reduce == ReduceOp::kArgMax || l.ir.reduce == ReduceOp::kArgMin)
    for (size_t k = 0; k + 1 < g.nodes.size() && l.ok(); ++k) {
      const trace::Node& n = t.nodes()[size_t(g.nodes[k])];
      const DType d = t.value(n.outputs[0]).dtype;
      if (d == kFloat16 || d == kBFloat16)  // the JIT rounds 16-bit values on store only: ties would move
        l.declined = absl::StrCat(last.op->name, " after ", n.op->name, " into ", std::string(dtype_name(d)),
                                  ": the reference compares the rounded values");
    }
  return l;
}

char access_code(Access a) { return a == Access::kContiguous ? 'c' : a == Access::kBroadcast ? 'b' : 's'; }

int64_t LoopSpace::numel() const { return numel_of(sizes); }

Access LoopSpace::access(size_t operand) const {
  const int64_t inner = strides[operand].back();
  return inner == 1 ? Access::kContiguous : inner == 0 ? Access::kBroadcast : Access::kStrided;
}

std::string LoopSpace::accesses() const {
  std::string s;
  for (size_t k = 0; k < strides.size(); ++k) s += access_code(access(k));
  return s;
}

std::string LoopSpace::to_string(int32_t inputs) const {
  std::string s = shape_str(sizes);
  for (size_t k = 0; k < strides.size(); ++k)
    absl::StrAppend(&s, int32_t(k) < inputs ? " in" : " out", int32_t(k) < inputs ? k : k - size_t(inputs), " ",
                    shape_str(strides[k]));
  return s;
}

LoopSpace merge_loop_dims(IntArrayRef loop, absl::Span<const DimVector> full, const std::vector<bool>& reduced,
                          std::vector<bool>* merged_reduced) {
  const size_t n = full.size();
  LoopSpace s;
  s.strides.resize(n);
  for (size_t d = 0; d < loop.size(); ++d) {
    if (loop[d] == 1) continue;
    const bool cls = !reduced.empty() && reduced[d];
    // dim d joins the previous kept dim when each operand steps over it exactly as over the merged dim
    bool merge = !s.sizes.empty() && (!merged_reduced || merged_reduced->back() == cls);
    for (size_t k = 0; k < n && merge; ++k) merge = s.strides[k].back() == full[k][d] * loop[d];
    if (merge) {
      s.sizes.back() *= loop[d];
      for (size_t k = 0; k < n; ++k) s.strides[k].back() = full[k][d];
    } else {
      s.sizes.push_back(loop[d]);
      if (merged_reduced) merged_reduced->push_back(cls);
      for (size_t k = 0; k < n; ++k) s.strides[k].push_back(full[k][d]);
    }
  }
  return s;
}

OperandLayouts operand_layouts(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env, size_t count) {
  OperandLayouts l;
  for (size_t k = 0; k < count; ++k) {
    const Tensor& x = env[size_t(ids[k])];
    l.shapes.push_back(x.sizes());
    l.strides.push_back(x.strides());
  }
  return l;
}

LoopSpace loop_space(IntArrayRef loop, absl::Span<const IntArrayRef> shapes, absl::Span<const IntArrayRef> strides) {
  std::vector<DimVector> full(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) full[k] = broadcast_strides(shapes[k], strides[k], loop);
  LoopSpace s = merge_loop_dims(loop, full, {}, nullptr);
  if (s.sizes.empty()) {  // one element: any stride reads it; contiguous is the simplest kernel
    s.sizes.push_back(1);
    for (DimVector& st : s.strides) st.push_back(1);
  }
  return s;
}

}  // namespace nnvm::jit
