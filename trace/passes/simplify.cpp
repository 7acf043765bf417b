#include "nnvm/trace/passes/simplify.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace nnvm::trace {

namespace {

bool same_layout(const Value& a, const Value& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.strides == b.strides;
}

bool is_shape_view(const OpDef& op) {
  return op.name == "view" || op.name == "squeeze" || op.name == "unsqueeze";
}

// Whether `op` applied to `src` with `attrs` gives exactly the layout `want`.
bool infers(const OpDef& op, const Value& src, const Attrs& attrs, const Value& want) {
  const Tensor meta = meta_tensor(src);
  try {
    if (op.view) {
      const ViewSpec s = op.view(meta, attrs);
      return s.shape == want.shape && s.strides == want.strides && src.dtype == want.dtype;
    }
    const OutputSpecs specs = op.infer({meta}, attrs);
    return specs.size() == 1 && specs[0].shape == want.shape && specs[0].dtype == want.dtype &&
           contiguous_strides(want.shape) == want.strides;
  } catch (const Error&) {
    return false;
  }
}

// c is ±2^k and both c and 1/c are exact in the kernel's compute type
// (float for float32/16 and bfloat16, double for float64).
bool has_exact_reciprocal(double c, DType dtype) {
  int exp = 0;
  if (!std::isfinite(c) || std::fabs(std::frexp(c, &exp)) != 0.5) return false;
  const double r = 1.0 / c;
  if (dtype == kFloat64) return std::isfinite(r) && r != 0;
  return double(float(c)) == c && double(float(r)) == r && float(r) != 0;
}

class Simplifier {
 public:
  Simplifier(const Trace& in, SimplifyReport* report)
      : in_(in), mapped_(in.values().size(), -1), report_(report) {}

  Trace run(int& applied) {
    out_.copy_scalars_from(in_);
    for (ValueId v : in_.inputs()) {
      const Value& x = in_.value(v);
      mapped_[size_t(v)] = out_.add_input(x.dtype, x.shape, x.strides);
    }
    for (ValueId v : in_.constants()) mapped_[size_t(v)] = out_.add_constant(in_.constant_value(v));
    for (n_ = 0; n_ < in_.nodes().size(); ++n_) {
      const Node& node = in_.nodes()[n_];
      if (!(node.outputs.size() == 1 && rewrite(node))) copy(node);
    }
    for (ValueId v : in_.outputs()) out_.mark_output(mapped_[size_t(v)]);
    applied = applied_;
    return std::move(out_);
  }

 private:
  const Node* producer(ValueId v) const {
    const Value& x = out_.value(v);
    return x.node >= 0 ? &out_.nodes()[size_t(x.node)] : nullptr;
  }
  bool produced_by(ValueId v, std::string_view name) const {
    const Node* p = producer(v);
    return p && p->op->name == name;
  }
  const Value& original_output(const Node& node) const { return in_.value(node.outputs[0]); }

  void record(const Node& node, std::string rule, std::string why_not) {
    if (report_) report_->decisions.push_back({n_, node.op->name, std::move(rule), why_not.empty(), std::move(why_not)});
  }
  bool decline(const Node& node, std::string rule, std::string why_not) {
    record(node, std::move(rule), std::move(why_not));
    return false;
  }
  // Uses existing value x (of the new trace) for the node's output.
  bool forward(const Node& node, std::string rule, ValueId x) {
    if (!same_layout(out_.value(x), original_output(node)))
      return decline(node, std::move(rule), "the result's dtype or layout would change");
    mapped_[size_t(node.outputs[0])] = x;
    record(node, std::move(rule), "");
    ++applied_;
    return true;
  }
  // Replaces the node by op(src, attrs) when that infers the same output.
  bool replace(const Node& node, std::string rule, const OpDef& op, ValueId src, Attrs attrs) {
    if (!infers(op, out_.value(src), attrs, original_output(node)))
      return decline(node, std::move(rule), "the result's dtype or layout would change");
    mapped_[size_t(node.outputs[0])] = out_.add_node1(op, {src}, std::move(attrs), ScalarBinding::kCompileTime);
    record(node, std::move(rule), "");
    ++applied_;
    return true;
  }

  void copy(const Node& node) {
    std::vector<ValueId> inputs;
    for (ValueId v : node.inputs) inputs.push_back(mapped_[size_t(v)]);
    const std::vector<ValueId> outs = out_.copy_node(node, inputs);
    for (size_t k = 0; k < outs.size(); ++k) mapped_[size_t(node.outputs[k])] = outs[k];
  }

  // A Scalar the rules may read: a compile-time value, or a pinned constant
  // (trace/ir.h). Any other recorded Scalar is a run-time argument (the next
  // replay may bring another value), so no rule may depend on what it is now.
  static bool fixed(const Node& node, size_t attr) { return scalar_is_known(node, attr); }

  bool rewrite(const Node& node) {
    const std::string& name = node.op->name;
    if (node.inputs.empty()) return false;
    if ((name == "mul.Scalar" || name == "div.Scalar") && !fixed(node, 0))
      return decline(node, name == "mul.Scalar" ? "x * c" : "x / c", "c is a run-time Scalar");
    if ((name == "add.Scalar" && !(fixed(node, 0) && fixed(node, 1))) || (name == "add" && !fixed(node, 0)))
      return decline(node, name == "add" ? "x + alpha * y" : "x + c", "the Scalars are run-time arguments");
    const ValueId x = mapped_[size_t(node.inputs[0])];
    const DType dtype = out_.value(x).dtype;
    if (name == "mul.Scalar") {
      const double s = node.attrs.d(0);
      if (s == 1) return forward(node, "x * 1 -> x", x);
      if (s == 0)
        return decline(node, "x * 0 -> 0",
                       is_floating(dtype) ? "NaN * 0 and inf * 0 are NaN, and -x * 0 is -0.0"
                                          : "there is no zero constant of this layout to forward to");
    } else if (name == "div.Scalar") {
      const double c = node.attrs.d(0);
      if (c == 1) return forward(node, "x / 1 -> x", x);
      if (is_floating(dtype)) {
        if (!has_exact_reciprocal(c, dtype))
          return decline(node, "x / c -> x * (1/c)", absl::StrCat("1/", c, " is not exact, so x * (1/c) may differ"));
        static const OpDef& mul = find_op("mul.Scalar");
        return replace(node, "x / c -> x * (1/c)", mul, x, {Scalar(1.0 / c)});
      }
    } else if (name == "add.Scalar") {
      const double s = node.attrs.d(0) * node.attrs.d(1);
      if (s == 0) {
        if (is_floating(dtype) && !std::signbit(s))
          return decline(node, "x + 0 -> x", "x + 0.0 maps -0.0 to +0.0; only x + (-0.0) is x");
        return forward(node, "x + 0 -> x", x);
      }
    } else if (name == "add") {
      if (node.inputs[0] == node.inputs[1] && node.attrs.d(0) == -1)
        return decline(node, "x - x -> 0", "inf - inf and NaN - NaN are NaN");
    } else if (name == "neg") {
      if (produced_by(x, "neg")) return forward(node, "neg(neg(x)) -> x", producer(x)->inputs[0]);
    } else if (name == "transpose") {
      if (produced_by(x, "transpose")) {
        const Node& inner = *producer(x);
        const int64_t rank = int64_t(out_.value(x).shape.size());
        auto wrap = [rank](int64_t d) { return d < 0 ? d + rank : d; };
        const int64_t a = wrap(node.attrs.i(0)), b = wrap(node.attrs.i(1));
        const int64_t c = wrap(inner.attrs.i(0)), d = wrap(inner.attrs.i(1));
        if ((a == c && b == d) || (a == d && b == c))
          return forward(node, "transpose(transpose(x)) -> x", inner.inputs[0]);
      }
    } else if (is_shape_view(*node.op)) {
      const Node* inner = producer(x);
      if (inner && is_shape_view(*inner->op)) {
        static const OpDef& view = find_op("view");
        const ValueId src = inner->inputs[0];
        if (same_layout(out_.value(src), original_output(node)))
          return forward(node, "view(view(x)) -> x", src);
        return replace(node, "view(view(x)) -> view(x)", view, src, {original_output(node).shape});
      }
    } else if (name == "copy") {
      const DType to = node.attrs.dtype(0);
      if (produced_by(x, "copy")) {
        const ValueId src = producer(x)->inputs[0];
        const DType from = out_.value(src).dtype;
        if (!is_lossless_cast(from, dtype))
          return decline(node, "copy(copy(x)) -> copy(x)",
                         absl::StrCat(std::string(dtype_name(from)), " -> ", std::string(dtype_name(dtype)), " rounds"));
        if (to == from && same_layout(out_.value(src), original_output(node)))
          return forward(node, "copy(copy(x)) -> x", src);
        return replace(node, "copy(copy(x)) -> copy(x)", *node.op, src, {to});
      }
      if (to == dtype && same_layout(out_.value(x), original_output(node)))
        return forward(node, "copy(x) to its own dtype -> x", x);
    }
    return false;
  }

  const Trace& in_;
  Trace out_;
  std::vector<ValueId> mapped_;  // value of in_ -> value of out_
  SimplifyReport* report_;
  size_t n_ = 0;
  int applied_ = 0;
};

}  // namespace

bool is_lossless_cast(DType from, DType to) {
  if (from == to || from == kBool) return true;
  switch (from) {
    case kUInt8:
    case kInt8:  // |x| <= 255 fits the 8 significant bits of bfloat16
      return to == kInt32 || to == kInt64 || is_floating(to);
    case kInt32: return to == kInt64 || to == kFloat64;
    case kFloat16:
    case kBFloat16: return to == kFloat32 || to == kFloat64;
    case kFloat32: return to == kFloat64;
    default: return false;
  }
}

int SimplifyReport::applied() const {
  int n = 0;
  for (const SimplifyDecision& d : decisions) n += d.applied;
  return n;
}

std::string SimplifyReport::to_string() const {
  std::string s;
  for (const SimplifyDecision& d : decisions)
    absl::StrAppend(&s, "node ", d.node, " (", d.op, "): ", d.rule, d.applied ? "" : " declined: " + d.reason, "\n");
  return s;
}

int simplify(Trace& t, SimplifyReport* report) {
  int applied = 0;
  Trace out = Simplifier(t, report).run(applied);
  if (applied) t = std::move(out);
  return applied;
}

}  // namespace nnvm::trace
