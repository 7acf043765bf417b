#include "nnvm/jit/lower_int64.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace nnvm::jit::lowering {

namespace {

struct Halves {
  int32_t low, high;
};

// An integer value as int64 halves: an int64's own, else its bits and their
// sign (an int32 input's bits as loaded; any other integer, exact in
// float32, through its float).
Halves halves(Builder& b, DType d, int32_t e) {
  if (d == kInt64) return {b.expr(e).a, b.expr(e).b};
  const int32_t low = d == kInt32 && b.expr(e).prim == Prim::kLoad
                          ? b.add(Expr{Prim::kLoadLow, -1, -1, -1, b.expr(e).arg})
                          : b.op(Prim::kToInt, e);
  return {low, b.op(Prim::kSignOf, low)};
}

// x > y: the highs' signed order, or equal highs and the lows' unsigned order.
// (Each expression is added in its own statement: the IR's order is fixed.)
int32_t greater(Builder& b, Halves x, Halves y) {
  const int32_t high_eq = b.op(Prim::kIntEq, x.high, y.high);
  const int32_t low_gt = b.op(Prim::kUIntGt, x.low, y.low);
  return b.op(Prim::kFma, high_eq, low_gt, b.op(Prim::kIntGt, x.high, y.high));
}

// x <op> y as 1.0/0.0; op is eq, ne, lt, le, gt or ge.
int32_t compare(Builder& b, std::string_view op, Halves x, Halves y) {
  auto negated = [&](int32_t e) { return b.op(Prim::kSub, b.constant(1), e); };
  if (op == "eq" || op == "ne") {
    const int32_t high_eq = b.op(Prim::kIntEq, x.high, y.high);
    const int32_t eq = b.op(Prim::kMul, high_eq, b.op(Prim::kIntEq, x.low, y.low));
    return op == "eq" ? eq : negated(eq);
  }
  if (op == "gt") return greater(b, x, y);
  if (op == "lt") return greater(b, y, x);
  return negated(op == "le" ? greater(b, x, y) : greater(b, y, x));
}

int32_t nonzero(Builder& b, int32_t pair) {
  const int32_t zero = b.bits(0);
  return compare(b, "ne", halves(b, kInt64, pair), {zero, zero});
}

Halves scalar_halves(Builder& b, const trace::Node& n, int32_t step, int32_t attr) {
  return {b.scalar(n, step, attr, ScalarPart::kLow), b.scalar(n, step, attr, ScalarPart::kHigh)};
}

int32_t select(Builder& b, int32_t cond, Halves yes, Halves no) {
  const int32_t low = b.op(Prim::kSelect, cond, yes.low, no.low);
  return b.op(Prim::kPair, low, b.op(Prim::kSelect, cond, yes.high, no.high));
}

}  // namespace

int32_t load_input(Builder& b, int32_t input, DType d) {
  if (d != kInt64) return b.add(Expr{Prim::kLoad, -1, -1, -1, input});
  const int32_t low = b.add(Expr{Prim::kLoadLow, -1, -1, -1, input});
  return b.op(Prim::kPair, low, b.add(Expr{Prim::kLoadHigh, -1, -1, -1, input}));
}

std::string lower_int64(Builder& b, const trace::Node& n, int32_t step, absl::InlinedVector<int32_t, 3>& in,
                        int32_t& out) {
  static const absl::flat_hash_set<std::string> compares = {"eq", "ne", "lt", "le", "gt", "ge"};
  static const absl::flat_hash_set<std::string> logical = {"logical_not", "logical_and", "logical_or", "logical_xor",
                                                           "isnan",       "isinf",       "isfinite"};
  const std::string& name = n.op->name;
  auto d = [&](size_t i) { return b.dtype(n.inputs[i]); };
  const DType to = b.dtype(n.outputs[0]);
  const bool scalar_form = absl::EndsWith(name, ".Scalar");
  const std::string base = scalar_form ? name.substr(0, name.size() - 7) : name;
  DType computes = to;  // what the reference computes in
  if (compares.contains(base)) {
    computes = scalar_form ? promote_with_scalar(d(0), n.attrs.s(0)) : promote_types(d(0), d(1));
    if (computes == kInt64) {
      out = compare(b, base, halves(b, d(0), in[0]),
                    scalar_form ? scalar_halves(b, n, step, 0) : halves(b, d(1), in[1]));
      return {};
    }
  }
  bool reads = false;
  for (size_t i = 0; i < in.size(); ++i) reads = reads || d(i) == kInt64;
  if (!reads && to != kInt64) return {};  // no int64 here: the float32 lowering's
  if (to == kInt64) {
    if (name == "copy") {
      const Halves x = is_floating(d(0)) ? Halves{b.add(Expr{Prim::kTruncInt64, in[0], -1, -1, 0}),
                                                  b.add(Expr{Prim::kTruncInt64, in[0], -1, -1, 1})}
                                         : halves(b, d(0), in[0]);
      out = b.op(Prim::kPair, x.low, x.high);
      return {};
    }
    if (name == "where") {  // a bool condition; integer branches (an int64 promotes no float)
      out = select(b, in[0], halves(b, d(1), in[1]), halves(b, d(2), in[2]));
      return {};
    }
    if (name == "masked_fill") {  // a bool mask
      out = select(b, in[1], scalar_halves(b, n, step, 0), halves(b, kInt64, in[0]));
      return {};
    }
    return absl::StrCat(name, " computes in int64: integer arithmetic runs in int64 in the reference");
  }
  if (logical.contains(name) || (name == "copy" && to == kBool))  // these read x != 0 only
    for (size_t i = 0; i < in.size(); ++i)
      if (d(i) == kInt64) in[i] = nonzero(b, in[i]);
  // static_cast<float>(x) first: the reference computes float16 and bfloat16 in float too
  if (computes == kFloat32 || computes == kFloat16 || computes == kBFloat16)
    for (size_t i = 0; i < in.size(); ++i)
      if (d(i) == kInt64 && b.expr(in[i]).prim == Prim::kPair)
        in[i] = b.op(Prim::kInt64ToFloat, b.expr(in[i]).b, b.expr(in[i]).a);
  return {};
}

}  // namespace nnvm::jit::lowering
