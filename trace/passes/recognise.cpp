#include "nnvm/trace/passes/recognise.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace nnvm::trace {

namespace {

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

// A pattern found at a root node: the nodes it covers and the op that
// replaces them. A non-empty reason means it was declined.
struct Match {
  std::string pattern;
  std::string reason;
  int32_t root = -1;
  std::vector<int32_t> nodes;  // the root and every node it computes from, inside the pattern
  ValueId x = -1;              // the composite's main input
  const OpDef* op = nullptr;
  std::vector<ValueId> inputs;  // of the new node, in the trace before the pass
  Attrs attrs;
  ScalarSlots slots;

  Match& decline(std::string why) {
    if (reason.empty()) reason = std::move(why);
    return *this;
  }
};

// Whether `got` is `want` as the kernels see it: within half an ulp in float
// (they compute float32 in float), within two ulps in double (1/std::sqrt(2.0)
// is one ulp from the correctly rounded 1/sqrt(2)).
bool same_constant(double got, double want, DType dtype) {
  return std::fabs(got - want) <= (dtype == kFloat64 ? 0x1p-52 : 0x1p-24) * std::fabs(want);
}

class Recogniser {
 public:
  explicit Recogniser(const Trace& t) : t_(t), uses_(t.values().size(), 0), claimed_(t.nodes().size(), false) {
    for (const Node& n : t.nodes())
      for (ValueId v : n.inputs) ++uses_[size_t(v)];
    for (ValueId v : t.outputs()) ++uses_[size_t(v)];
  }

  // Finds the patterns, last node first so that layer_norm's optional
  // `* w + b` joins the match before its core is tried alone.
  int run(Trace& out, std::vector<RecogniseDecision>& decisions) {
    std::vector<std::optional<Match>> at_root(t_.nodes().size());
    for (size_t n = t_.nodes().size(); n-- > 0;) {
      if (claimed_[n] || t_.nodes()[n].outputs.size() != 1) continue;
      std::optional<Match> m = find(t_.nodes()[n]);
      if (!m) continue;
      check(*m);
      decisions.push_back({n, m->pattern, m->reason.empty(), m->reason});
      if (!m->reason.empty()) continue;
      for (int32_t k : m->nodes) claimed_[size_t(k)] = true;
      at_root[n] = std::move(m);
    }
    std::reverse(decisions.begin(), decisions.end());
    int applied = 0;
    for (const auto& m : at_root) applied += m.has_value();
    if (applied) out = rebuild(at_root);
    return applied;
  }

 private:
  std::optional<Match> find(const Node& root) {
    for (auto matcher : {&Recogniser::layer_norm, &Recogniser::softmax, &Recogniser::log_softmax,
                         &Recogniser::gelu, &Recogniser::silu, &Recogniser::rms_norm, &Recogniser::matmul_sum})
      if (std::optional<Match> m = (this->*matcher)(root)) return m;
    return std::nullopt;
  }

  // ---- the trace before the pass ----

  int32_t index(const Node* n) const { return int32_t(n - t_.nodes().data()); }
  const Node* producer(ValueId v) const {
    const Value& x = t_.value(v);
    return x.node >= 0 ? &t_.nodes()[size_t(x.node)] : nullptr;
  }
  const Node* as(ValueId v, std::string_view op) const {
    const Node* p = producer(v);
    return p && p->op->name == op ? p : nullptr;
  }
  // A Scalar whose value another trace with this signature may change
  // (trace/ir.h: neither compile-time nor a pinned constant).
  static bool slotted(const Node& n, size_t attr) { return !scalar_is_known(n, attr); }
  std::string where(const Node& n) const { return absl::StrCat("node ", index(&n), " (", n.op->name, ")"); }
  DType dtype(ValueId v) const { return t_.value(v).dtype; }

  Match start(std::string pattern, const Node& root, std::initializer_list<const Node*> nodes) const {
    Match m;
    m.pattern = std::move(pattern);
    m.root = index(&root);
    m.nodes.push_back(m.root);
    take(m, nodes);
    return m;
  }
  void take(Match& m, std::initializer_list<const Node*> nodes) const {
    for (const Node* n : nodes) m.nodes.push_back(index(n));
  }
  void replace_by(Match& m, std::string_view op, std::vector<ValueId> inputs, Attrs attrs) const {
    m.op = &find_op(op);
    m.inputs = std::move(inputs);
    m.attrs = std::move(attrs);
  }

  // Declines unless Scalar attribute `attr` of `n` is the compile-time
  // constant `want`; `what` names it in the pattern.
  void expect(Match& m, const Node& n, size_t attr, double want, const char* what) const {
    if (slotted(n, attr))
      m.decline(absl::StrCat(what, " in ", where(n), " is a run-time Scalar (now ", n.attrs.d(attr),
                             "): a later trace with this signature may bring another value"));
    else if (!same_constant(n.attrs.d(attr), want, dtype(m.x)))
      m.decline(absl::StrCat(what, " in ", where(n), " is ", n.attrs.d(attr), ", not ", want));
  }
  // The dims of a keepdim reduction, wrapped and sorted; nullopt when it drops them.
  std::optional<DimVector> kept_dims(const Node& red) const {
    if (!red.attrs.b(1)) return std::nullopt;
    return reduction_dims(red.attrs.ints(0), int64_t(t_.value(red.inputs[0]).shape.size()), red.op->name);
  }

  // ---- the patterns ----

  // e = exp(x - amax(x, {d}, true)); e / e.sum({d}, true)
  std::optional<Match> softmax(const Node& root) {
    if (root.op->name != "div") return std::nullopt;
    const Node* e = as(root.inputs[0], "exp");
    const Node* s = as(root.inputs[1], "sum");
    if (!e || !s || s->inputs[0] != root.inputs[0]) return std::nullopt;
    Match m = start("softmax", root, {e, s});
    const Node* sub = as(e->inputs[0], "add");
    const Node* max = sub ? as(sub->inputs[1], "amax") : nullptr;
    if (!max || max->inputs[0] != sub->inputs[0])
      return m.decline("exp(x) / sum(exp(x)) without the max subtracted overflows for large x where softmax "
                       "does not: a different function");
    take(m, {sub, max});
    m.x = sub->inputs[0];
    // Any alpha cancels between numerator and sum (see the header); today's
    // must be -1 so that this trace's results do not change.
    if (sub->attrs.d(0) != -1)
      return m.decline(absl::StrCat("x + ", sub->attrs.d(0), " * max in ", where(*sub),
                                    " is not the max subtraction"));
    const std::optional<DimVector> dm = kept_dims(*max), ds = kept_dims(*s);
    if (!dm || !ds) return m.decline("the max or the sum drops the reduced dim (keepdim false)");
    if (dm->size() != 1) return m.decline(absl::StrCat("the max reduces dims ", shape_str(*dm), "; softmax reduces one"));
    if (*ds != *dm)
      return m.decline(absl::StrCat("the sum reduces dims ", shape_str(*ds), " but the max dims ", shape_str(*dm)));
    replace_by(m, "softmax", {m.x}, {(*dm)[0], dtype(m.x)});
    return m;
  }

  // x - logsumexp(x, {d}, true), or x - m - log(exp(x - m).sum({d}, true))
  // with m = amax(x, {d}, true)
  std::optional<Match> log_softmax(const Node& root) {
    if (root.op->name != "add") return std::nullopt;
    if (const Node* lse = as(root.inputs[1], "logsumexp"); lse && lse->inputs[0] == root.inputs[0]) {
      Match m = start("log_softmax", root, {lse});
      m.x = root.inputs[0];
      expect(m, root, 0, -1, "the sign of x - logsumexp(x)");
      return finish_log_softmax(m, {*lse});
    }
    const Node* log = as(root.inputs[1], "log");
    const Node* s = log ? as(log->inputs[0], "sum") : nullptr;
    const Node* e = s ? as(s->inputs[0], "exp") : nullptr;
    if (!e) return std::nullopt;
    Match m = start("log_softmax", root, {log, s, e});
    const Node* outer = as(root.inputs[0], "add");
    const Node* inner = as(e->inputs[0], "add");
    const Node* max1 = outer ? as(outer->inputs[1], "amax") : nullptr;
    const Node* max2 = inner ? as(inner->inputs[1], "amax") : nullptr;
    if (!max1 || !max2 || max1->inputs[0] != outer->inputs[0] || max2->inputs[0] != inner->inputs[0] ||
        outer->inputs[0] != inner->inputs[0])
      return m.decline("log(sum(exp(x))) without the max subtracted on both sides overflows for large x where "
                       "log_softmax does not: a different function");
    take(m, {outer, inner, max1, max2});
    m.x = outer->inputs[0];
    expect(m, root, 0, -1, "the sign of (x - m) - log(...)");
    expect(m, *outer, 0, -1, "the sign of x - m");
    if (inner != outer) expect(m, *inner, 0, -1, "the sign of x - m inside exp");
    return finish_log_softmax(m, {*max1, *max2, *s});
  }
  // Every reduction reduces the same single dim and keeps it.
  Match finish_log_softmax(Match& m, std::initializer_list<std::reference_wrapper<const Node>> reductions) const {
    std::optional<DimVector> d;
    for (const Node& r : reductions) {
      const std::optional<DimVector> rd = kept_dims(r);
      if (!rd || rd->size() != 1) return m.decline(absl::StrCat(where(r), " does not reduce one dim with keepdim"));
      if (d && *d != *rd)
        return m.decline(absl::StrCat(where(r), " reduces dims ", shape_str(*rd), ", not ", shape_str(*d)));
      d = rd;
    }
    replace_by(m, "log_softmax", {m.x}, {(*d)[0], dtype(m.x)});
    return m;
  }

  // (core * w) + b, core + b, core * w or core, each operand order.
  std::optional<Match> layer_norm(const Node& root) {
    if (root.op->name == "add" && !slotted(root, 0) && root.attrs.d(0) == 1) {
      for (int k : {0, 1}) {
        const Node* inner = producer(root.inputs[size_t(k)]);
        std::optional<Match> m = inner ? scaled_layer_norm(*inner) : std::nullopt;
        if (m && m->reason.empty() && add_param(*m, root, root.inputs[size_t(1 - k)], 2)) return m;
      }
    }
    return scaled_layer_norm(root);
  }
  // core * w, w * core or core
  std::optional<Match> scaled_layer_norm(const Node& root) {
    if (root.op->name == "mul") {
      for (int k : {0, 1}) {
        const Node* inner = producer(root.inputs[size_t(k)]);
        std::optional<Match> m = inner ? layer_norm_core(*inner) : std::nullopt;
        if (m && m->reason.empty() && add_param(*m, root, root.inputs[size_t(1 - k)], 1)) return m;
      }
    }
    return layer_norm_core(root);
  }
  // Makes `root` (reading parameter p) the match's root, p its weight
  // (attr 1) or bias (attr 2), when p has the normalised shape and x's dtype.
  bool add_param(Match& m, const Node& root, ValueId p, size_t attr) const {
    const Value& pv = t_.value(p);
    if (IntArrayRef(pv.shape) != m.attrs.ints(0) || pv.dtype != dtype(m.x)) return false;
    m.root = index(&root);
    m.nodes.push_back(m.root);
    m.inputs.push_back(p);
    m.attrs.set(attr, true);
    return true;
  }

  // xc = x - x.mean(D, true); xc / sqrt(v + eps) or xc * rsqrt(v + eps)
  std::optional<Match> layer_norm_core(const Node& root) {
    const auto [xc, root_fn] = over_root(root);
    const Node* plus_eps = root_fn ? as(root_fn->inputs[0], "add.Scalar") : nullptr;
    const Node* centre = plus_eps ? as(xc, "add") : nullptr;
    const Node* mean = centre ? as(centre->inputs[1], "mean") : nullptr;
    if (!mean || mean->inputs[0] != centre->inputs[0]) return std::nullopt;
    Match m = start("layer_norm", root, {root_fn, plus_eps, centre, mean});
    m.x = centre->inputs[0];
    const ValueId v = plus_eps->inputs[0];
    std::optional<DimVector> vdims;
    if (const Node* var = as(v, "var"); var && var->inputs[0] == m.x) {
      take(m, {var});
      if (var->attrs.i(2) != 0)
        return m.decline(absl::StrCat("var with correction ", var->attrs.i(2),
                                      " is not layer_norm's biased variance (correction 0)"));
      vdims = kept_dims(*var);
    } else if (const Node* mean2 = as(v, "mean"); mean2 && square_of(m, mean2->inputs[0], xc)) {
      take(m, {mean2});
      vdims = kept_dims(*mean2);
    } else {
      return m.decline("the variance is neither mean((x - mean)^2) nor var(x, correction 0)");
    }
    expect(m, *centre, 0, -1, "the sign of x - mean");
    expect(m, *plus_eps, 1, 1, "the alpha of var + eps");
    const std::optional<DimVector> d = kept_dims(*mean);
    if (!d || !vdims) return m.decline("the mean or the variance drops the reduced dims (keepdim false)");
    if (*d != *vdims)
      return m.decline(absl::StrCat("the variance reduces dims ", shape_str(*vdims), " but the mean ", shape_str(*d)));
    const DimVector& shape = t_.value(m.x).shape;
    const int64_t k = int64_t(d->size());
    if (std::string why = not_trailing("layer_norm", *d, int64_t(shape.size())); !why.empty()) return m.decline(why);
    // eps keeps its slot: it is an argument of the new node, not a value a rule reads
    replace_by(m, "layer_norm", {m.x}, {DimVector(shape.end() - k, shape.end()), false, false, plus_eps->attrs.s(0)});
    for (const ScalarSlot& s : plus_eps->slots)
      if (s.attr == 0) m.slots.push_back({3, s.slot});
    return m;
  }
  // root = a / sqrt(s) or a * rsqrt(s), either side: a and the sqrt or rsqrt
  // node (null when root is neither).
  std::pair<ValueId, const Node*> over_root(const Node& root) const {
    if (root.op->name == "div") return {root.inputs[0], as(root.inputs[1], "sqrt")};
    if (root.op->name == "mul")
      for (int k : {0, 1})
        if (const Node* r = as(root.inputs[size_t(1 - k)], "rsqrt")) return {root.inputs[size_t(k)], r};
    return {-1, nullptr};
  }
  // Why a norm's reduced dims `d` of a rank-`rank` input are not its trailing
  // dims (at least one); empty when they are.
  static std::string not_trailing(const char* op, const DimVector& d, int64_t rank) {
    const int64_t k = int64_t(d.size());
    for (int64_t i = 0; i < k; ++i)
      if (d[size_t(i)] != rank - k + i)
        return absl::StrCat(op, " normalises trailing dims; the mean reduces dims ", shape_str(d), " of a rank-", rank,
                            " input");
    if (k == 0) return "the mean reduces no dims";
    return {};
  }
  // Whether `sq` is xc * xc, xc.square() or xc.pow(2); takes its node.
  bool square_of(Match& m, ValueId sq, ValueId xc) const {
    const Node* p = producer(sq);
    if (!p || p->inputs[0] != xc) return false;
    const std::string& name = p->op->name;
    if (!((name == "mul" && p->inputs[1] == xc) || name == "square" || name == "pow.Scalar")) return false;
    if (name == "pow.Scalar") expect(m, *p, 0, 2, "the exponent of a square");
    take(m, {p});
    return true;
  }

  // core * w, w * core or core (tried after layer_norm, whose core centres x first)
  std::optional<Match> rms_norm(const Node& root) {
    if (root.op->name == "mul") {
      for (int k : {0, 1}) {
        const Node* inner = producer(root.inputs[size_t(k)]);
        std::optional<Match> m = inner ? rms_norm_core(*inner) : std::nullopt;
        if (m && m->reason.empty() && add_param(*m, root, root.inputs[size_t(1 - k)], 1)) return m;
      }
    }
    return rms_norm_core(root);
  }
  // x / sqrt(ms + eps) or x * rsqrt(ms + eps), ms = (x * x).mean(D, true), x.square() or x.pow(2)
  std::optional<Match> rms_norm_core(const Node& root) {
    const auto [x, root_fn] = over_root(root);
    const Node* plus_eps = root_fn ? as(root_fn->inputs[0], "add.Scalar") : nullptr;
    const Node* mean = plus_eps ? as(plus_eps->inputs[0], "mean") : nullptr;
    const Node* sq = mean ? producer(mean->inputs[0]) : nullptr;
    if (!sq || sq->inputs[0] != x) return std::nullopt;
    Match m = start("rms_norm", root, {root_fn, plus_eps, mean});
    m.x = x;
    if (!square_of(m, mean->inputs[0], x)) return std::nullopt;
    expect(m, *plus_eps, 1, 1, "the alpha of mean(x^2) + eps");
    const std::optional<DimVector> d = kept_dims(*mean);
    if (!d) return m.decline("the mean square drops the reduced dims (keepdim false)");
    const DimVector& shape = t_.value(x).shape;
    const int64_t k = int64_t(d->size());
    if (std::string why = not_trailing("rms_norm", *d, int64_t(shape.size())); !why.empty()) return m.decline(why);
    // eps keeps its slot, as layer_norm's
    replace_by(m, "rms_norm", {x}, {DimVector(shape.end() - k, shape.end()), false, plus_eps->attrs.s(0)});
    for (const ScalarSlot& slot : plus_eps->slots)
      if (slot.attr == 0) m.slots.push_back({2, slot.slot});
    return m;
  }

  // 0.5 * x * (1 + f(...)) with f = erf (exact) or tanh, in any of the orders
  // 0.5 * x * a, a * (0.5 * x), 0.5 * (x * a), (a * x) * 0.5.
  std::optional<Match> gelu(const Node& root) {
    const Node *half = nullptr, *one_plus = nullptr, *product = nullptr;
    ValueId x = -1;
    if (root.op->name == "mul") {
      for (int k : {0, 1}) {
        const Node* h = as(root.inputs[size_t(k)], "mul.Scalar");
        const Node* a = one_plus_fn(root.inputs[size_t(1 - k)]);
        if (h && a) half = h, one_plus = a, x = h->inputs[0];
      }
    } else if (const Node* p = root.op->name == "mul.Scalar" ? as(root.inputs[0], "mul") : nullptr) {
      for (int k : {0, 1})
        if (const Node* a = one_plus_fn(p->inputs[size_t(1 - k)])) half = &root, one_plus = a, x = p->inputs[size_t(k)];
      product = p;
    }
    if (!one_plus) return std::nullopt;
    const Node& fn = *producer(one_plus->inputs[0]);
    const bool exact = fn.op->name == "erf";
    Match m = start(exact ? "gelu" : "gelu_tanh", root, {one_plus, &fn, half});
    if (product) take(m, {product});
    m.x = x;
    if (exact) {
      const Node* scaled = as(fn.inputs[0], "mul.Scalar");
      const Node* divided = as(fn.inputs[0], "div.Scalar");
      const Node* z = scaled ? scaled : divided;
      if (!z || z->inputs[0] != x) return m.decline("erf's argument is not x / sqrt(2)");
      take(m, {z});
      expect(m, *z, 0, scaled ? kInvSqrt2 : kSqrt2, scaled ? "1/sqrt(2)" : "sqrt(2)");
    } else {
      const Node* u = as(fn.inputs[0], "mul.Scalar");
      const Node* sum = u ? as(u->inputs[0], "add") : nullptr;
      const Node* cubic = nullptr;
      for (int k : {0, 1})
        if (sum && sum->inputs[size_t(k)] == x) cubic = as(sum->inputs[size_t(1 - k)], "mul.Scalar");
      if (!cubic || !cube_of(m, cubic->inputs[0], x))
        return m.decline("tanh's argument is not sqrt(2/pi) * (x + 0.044715 * x^3)");
      take(m, {u, sum, cubic});
      expect(m, *u, 0, kSqrt2OverPi, "sqrt(2/pi)");
      expect(m, *sum, 0, 1, "the alpha of x + 0.044715 x^3");
      expect(m, *cubic, 0, kGeluCubic, "0.044715");
    }
    expect(m, *half, 0, 0.5, "0.5");
    expect(m, *one_plus, 0, 1, "the 1 of 1 + f");
    expect(m, *one_plus, 1, 1, "the alpha of 1 + f");
    replace_by(m, exact ? "gelu" : "gelu_tanh", {x}, {});
    return m;
  }
  // The add.Scalar node of 1 + erf(..) or 1 + tanh(..), or null.
  const Node* one_plus_fn(ValueId v) const {
    const Node* a = as(v, "add.Scalar");
    return a && (as(a->inputs[0], "erf") || as(a->inputs[0], "tanh")) ? a : nullptr;
  }
  // Whether `c` is x.pow(3), x * x * x or x * x.square() in either order; takes its nodes.
  bool cube_of(Match& m, ValueId c, ValueId x) const {
    if (const Node* p = as(c, "pow.Scalar"); p && p->inputs[0] == x) {
      take(m, {p});
      expect(m, *p, 0, 3, "the exponent of x^3");
      return true;
    }
    const Node* p = as(c, "mul");
    if (!p) return false;
    for (int k : {0, 1}) {
      if (p->inputs[size_t(k)] != x) continue;
      const Node* sq = producer(p->inputs[size_t(1 - k)]);
      if (sq && sq->inputs[0] == x &&
          ((sq->op->name == "mul" && sq->inputs[1] == x) || sq->op->name == "square")) {
        take(m, {p, sq});
        return true;
      }
    }
    return false;
  }

  // x * sigmoid(x), either order
  std::optional<Match> silu(const Node& root) {
    if (root.op->name != "mul") return std::nullopt;
    for (int k : {0, 1}) {
      const Node* s = as(root.inputs[size_t(1 - k)], "sigmoid");
      if (!s || s->inputs[0] != root.inputs[size_t(k)]) continue;
      Match m = start("silu", root, {s});
      m.x = root.inputs[size_t(k)];
      replace_by(m, "silu", {m.x}, {});
      return m;
    }
    return std::nullopt;
  }

  // matmul(a, b) + matmul(c, d), alpha 1
  std::optional<Match> matmul_sum(const Node& root) {
    if (root.op->name != "add") return std::nullopt;
    const Node* ab = as(root.inputs[0], "matmul");
    const Node* cd = as(root.inputs[1], "matmul");
    if (!ab || !cd) return std::nullopt;
    Match m = start("matmul_sum", root, {ab, cd});
    m.x = ab->inputs[0];
    expect(m, root, 0, 1, "alpha of a b + alpha c d");
    replace_by(m, "matmul_sum", {ab->inputs[0], ab->inputs[1], cd->inputs[0], cd->inputs[1]}, {});
    return m;
  }

  // ---- checks every pattern shares ----

  void check(Match& m) const {
    std::sort(m.nodes.begin(), m.nodes.end());
    m.nodes.erase(std::unique(m.nodes.begin(), m.nodes.end()), m.nodes.end());
    if (!m.reason.empty()) return;
    const DType dt = dtype(m.x);
    if (dt != kFloat32 && dt != kFloat64) {
      m.decline(absl::StrCat("x is ", std::string(dtype_name(dt)), ": only float32 and float64, where the fused kernel "
                             "rounds as the chain does"));
      return;
    }
    auto inside = [&](ValueId v) {
      const int32_t p = t_.value(v).node;
      return p >= 0 && std::binary_search(m.nodes.begin(), m.nodes.end(), p);
    };
    absl::flat_hash_map<ValueId, int> inner_uses;
    for (int32_t n : m.nodes) {
      const Node& node = t_.nodes()[size_t(n)];
      if (claimed_[size_t(n)]) {
        m.decline(absl::StrCat(where(node), " belongs to another recognised pattern"));
        return;
      }
      for (ValueId in : node.inputs)
        if (inside(in)) ++inner_uses[in];
      if (dtype(node.outputs[0]) != dt) {
        m.decline(absl::StrCat(where(node), " computes in ", std::string(dtype_name(dtype(node.outputs[0]))), ", not x's ",
                               std::string(dtype_name(dt))));
        return;
      }
    }
    for (int32_t n : m.nodes) {
      const Node& node = t_.nodes()[size_t(n)];
      for (ValueId out : node.outputs)
        if (n != m.root && uses_[size_t(out)] != inner_uses[out]) {
          m.decline(absl::StrCat(where(node), " is also used outside the pattern"));
          return;
        }
    }
    std::vector<Tensor> metas;
    for (ValueId in : m.inputs) {
      if (inside(in)) {
        m.decline("an input of the new op is computed inside the pattern");
        return;
      }
      metas.push_back(meta_tensor(t_.value(in)));
    }
    const Value& want = t_.value(t_.nodes()[size_t(m.root)].outputs[0]);
    try {
      const OutputSpecs specs = m.op->infer(metas, m.attrs);
      if (specs.size() == 1 && specs[0].shape == want.shape && specs[0].dtype == want.dtype &&
          contiguous_strides(want.shape) == want.strides)
        return;
    } catch (const Error&) {
    }
    m.decline("the result's shape or dtype would change");
  }

  Trace rebuild(const std::vector<std::optional<Match>>& at_root) const {
    Trace out;
    out.copy_scalars_from(t_);
    std::vector<ValueId> mapped(t_.values().size(), -1);
    for (ValueId v : t_.inputs()) {
      const Value& x = t_.value(v);
      mapped[size_t(v)] = out.add_input(x.dtype, x.shape, x.strides);
    }
    for (ValueId v : t_.constants()) mapped[size_t(v)] = out.add_constant(t_.constant_value(v));
    for (size_t n = 0; n < t_.nodes().size(); ++n) {
      const Node& node = t_.nodes()[n];
      if (claimed_[n] && !at_root[n]) continue;  // inside a pattern: nothing else reads it
      Node like;
      const Node* src = &node;
      std::vector<ValueId> inputs;
      if (const std::optional<Match>& m = at_root[n]) {
        like.op = m->op;
        like.attrs = m->attrs;
        like.slots = m->slots;
        src = &like;
        for (ValueId v : m->inputs) inputs.push_back(mapped[size_t(v)]);
      } else {
        for (ValueId v : node.inputs) inputs.push_back(mapped[size_t(v)]);
      }
      const std::vector<ValueId> outs = out.copy_node(*src, inputs);
      for (size_t k = 0; k < outs.size(); ++k) mapped[size_t(node.outputs[k])] = outs[k];
    }
    for (ValueId v : t_.outputs()) out.mark_output(mapped[size_t(v)]);
    return out;
  }

  const Trace& t_;
  std::vector<int> uses_;       // per value: reads by nodes, plus one per trace output
  std::vector<bool> claimed_;   // per node: inside a pattern that will be replaced
};

}  // namespace

int RecogniseReport::applied() const {
  int n = 0;
  for (const RecogniseDecision& d : decisions) n += d.applied;
  return n;
}

std::string RecogniseReport::to_string() const {
  std::string s;
  for (const RecogniseDecision& d : decisions)
    absl::StrAppend(&s, "node ", d.node, ": ", d.pattern, d.applied ? "" : " declined: " + d.reason, "\n");
  return s;
}

int recognise(Trace& t, RecogniseReport* report) {
  Trace out;
  std::vector<RecogniseDecision> decisions;
  const int applied = Recogniser(t).run(out, decisions);
  if (report) report->decisions.insert(report->decisions.end(), decisions.begin(), decisions.end());
  if (applied) t = std::move(out);
  return applied;
}

}  // namespace nnvm::trace
