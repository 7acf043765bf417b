#include "random_program.h"

#include <cmath>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/match.h"

namespace nnvm::testing {

namespace {

constexpr int64_t kMaxNumel = 2048;  // keeps a few hundred programs within seconds

std::string reg(int i) { return absl::StrCat("r", i); }
std::string num(double c) { return absl::StrCat(c); }
std::string dims_text(IntArrayRef d) { return absl::StrCat("{", absl::StrJoin(d, ", "), "}"); }

Tensor make_input(const InputSpec& spec, DType dtype, bool float32_values) {
  EagerGuard eager;
  Tensor t = float32_values ? random(spec.shape, kFloat32, spec.seed).to(dtype) : random(spec.shape, dtype, spec.seed);
  if (spec.requires_grad) return t.requires_grad_();
  return with_layout(t, spec.layout);
}

std::optional<DimVector> broadcast_shape(IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

bool is_expanded(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) == 0) return true;
  return false;
}

using UnaryFn = std::function<Tensor(const Tensor&, const Machine&)>;
struct Unary {
  std::string text;  // with "X" for the operand
  UnaryFn fn;
};

// Draws programs (see the header): the candidate steps, each checked by
// running it on the eager machine.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {
    p_.seed = seed;
    p_.dtype = chance(0.2) ? kFloat64 : kFloat32;
    p_.lr = round2(real(0.05, 0.5));
    p_.backward_twice = chance(0.3);
  }

  Program generate(int max_steps) {
    EagerGuard eager;
    const int n_inputs = uniform(1, 3);
    for (int i = 0; i < n_inputs; ++i) add_input(chance(0.5));
    const int steps = n_inputs + uniform(max_steps / 2, max_steps);
    for (int tries = 0; int(p_.steps.size()) < steps && tries < 20 * steps; ++tries) draw_step();
    p_.loss_weights.resize(m_.regs.size());
    for (size_t i = 0; i < m_.regs.size(); ++i)
      if (m_.regs[i].requires_grad())
        p_.loss_weights[i] = random(m_.regs[i].sizes(), m_.regs[i].dtype(), p_.seed * 977 + i);
    return std::move(p_);
  }

 private:
  // ---- randomness ----
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  bool chance(double p) { return real(0, 1) < p; }
  static double round2(double x) { return std::round(x * 100) / 100; }
  template <class T> const T& pick(const std::vector<T>& v) { return v[size_t(uniform(0, int(v.size()) - 1))]; }
  int pick_reg() { return uniform(0, int(m_.regs.size()) - 1); }
  int64_t dim_size() {
    const double u = real(0, 1);
    if (u < 0.04) return 0;
    if (u < 0.25) return 1;
    return pick(std::vector<int64_t>{2, 3, 4, 5, 7});
  }
  DimVector shape(int rank) {
    DimVector s(static_cast<size_t>(rank));
    for (int64_t& d : s) d = dim_size();
    return s;
  }
  // A dim of a rank-`rank` tensor, sometimes negative.
  int64_t dim_of(int64_t rank) {
    const int64_t d = uniform(0, int(rank) - 1);
    return chance(0.3) ? d - rank : d;
  }

  // ---- the program being drawn ----
  // Whether the input's register was added (not when it is too big).
  bool add_input(bool requires_grad, std::optional<DimVector> fixed = std::nullopt) {
    InputSpec spec;
    spec.shape = fixed ? *fixed : shape(uniform(0, 3));
    spec.requires_grad = requires_grad;
    spec.layout = requires_grad ? Layout::Contiguous : pick(std::vector<Layout>(std::begin(kLayouts), std::end(kLayouts)));
    spec.seed = p_.seed * 131 + p_.inputs.size();
    const int k = int(p_.inputs.size());
    p_.inputs.push_back(spec);
    m_.inputs.push_back(make_input(spec, p_.dtype, p_.float32_values));
    const int r = int(m_.regs.size());
    return add({absl::StrCat(reg(r), " = input", k, "  /* ", shape_str(spec.shape),
                             requires_grad ? " requires_grad" : "", " ", layout_name(spec.layout), " */"),
                [k](Machine& m) { m.regs.push_back(m.inputs[size_t(k)]); }},
               {}, /*fresh=*/true);
  }

  // Runs `step` on the eager machine and keeps it unless it failed a size
  // bound. `reads`: the registers it reads (their storages are saved for
  // backward when a new register requires grad). A `fresh` step's outputs
  // are not saved by their own node, so they may be modified in place.
  bool add(Step step, std::vector<int> reads, bool fresh = false, int mutated = -1) {
    const size_t before = m_.regs.size();
    try {
      step.run(m_);
    } catch (const std::exception& e) {
      throw std::logic_error(absl::StrCat("the generator drew a failing step: ", step.text, ": ", e.what(),
                                          "\nprogram so far:\n", p_.text()));
    }
    bool too_big = false;
    for (size_t i = before; i < m_.regs.size(); ++i) too_big = too_big || m_.regs[i].numel() > kMaxNumel;
    if (too_big) {
      if (mutated >= 0) throw std::logic_error("a mutating step grew a register");
      m_.regs.resize(before);
      return false;
    }
    bool grad_out = false;
    for (size_t i = before; i < m_.regs.size(); ++i) grad_out = grad_out || m_.regs[i].requires_grad();
    if (mutated >= 0) grad_out = grad_out || m_.regs[size_t(mutated)].requires_grad();
    if (grad_out) {
      for (int r : reads)
        if (r != mutated) frozen_.insert(m_.regs[size_t(r)].storage().get());
      if (!fresh)
        for (size_t i = before; i < m_.regs.size(); ++i) frozen_.insert(m_.regs[i].storage().get());
    }
    p_.steps.push_back(std::move(step));
    return true;
  }

  void draw_step() {
    const double u = real(0, 1);
    if (u < 0.18) return unary_step();
    if (u < 0.36) return binary_step();
    if (u < 0.46) return reduction_step();
    if (u < 0.62) return view_step();
    if (u < 0.68) return matmul_step();
    if (u < 0.80) return inplace_step();
    if (u < 0.86) return control_step();
    if (u < 0.90) return cat_step();
    if (u < 0.94) return observe_step();
    if (u < 0.955) return cast_step();
    if (u < 0.97) return factory_step();
    if (u < 0.98) return indices_step();
    add_input(chance(0.4));
  }

  Unary unary() {
    static const std::vector<Unary> fixed = {
        {"X.neg()", [](const Tensor& x, const Machine&) { return x.neg(); }},
        {"X.abs()", [](const Tensor& x, const Machine&) { return x.abs(); }},
        {"X.tanh()", [](const Tensor& x, const Machine&) { return x.tanh(); }},
        {"X.sigmoid()", [](const Tensor& x, const Machine&) { return x.sigmoid(); }},
        {"X.sin()", [](const Tensor& x, const Machine&) { return x.sin(); }},
        {"X.cos()", [](const Tensor& x, const Machine&) { return x.cos(); }},
        {"X.relu()", [](const Tensor& x, const Machine&) { return x.relu(); }},
        {"X.square()", [](const Tensor& x, const Machine&) { return x.square(); }},
        {"X.erf()", [](const Tensor& x, const Machine&) { return x.erf(); }},
        {"X.abs().log1p()", [](const Tensor& x, const Machine&) { return x.abs().log1p(); }},
        {"gelu(X)", [](const Tensor& x, const Machine&) { return gelu(x); }},
        {"gelu(X, \"tanh\")", [](const Tensor& x, const Machine&) { return gelu(x, "tanh"); }},
        {"silu(X)", [](const Tensor& x, const Machine&) { return silu(x); }},
        {"softplus(X)", [](const Tensor& x, const Machine&) { return softplus(x); }},
        {"elu(X)", [](const Tensor& x, const Machine&) { return elu(x); }},
        {"X.clone()", [](const Tensor& x, const Machine&) { return x.clone(); }},
        {"X.contiguous()", [](const Tensor& x, const Machine&) { return x.contiguous(); }},
    };
    const double c = round2(real(0.3, 1.5)), c2 = round2(real(-1, 1));
    switch (uniform(0, 11)) {
      case 0: return {absl::StrCat("X.mul(", num(c), ")"), [c](const Tensor& x, const Machine& m) { return x.mul(m.s(c)); }};
      case 1: return {absl::StrCat("X.add(", num(c2), ", ", num(c), ")"),
                      [c, c2](const Tensor& x, const Machine& m) { return x.add(m.s(c2), m.s(c)); }};
      case 2: return {absl::StrCat("(", num(c2), " - X)"), [c2](const Tensor& x, const Machine& m) { return m.s(c2) - x; }};
      case 3: return {absl::StrCat("X.div(", num(c), ")"), [c](const Tensor& x, const Machine& m) { return x.div(m.s(c)); }};
      case 4: return {absl::StrCat("X.clamp(", num(-c), ", ", num(c), ")"),
                      [c](const Tensor& x, const Machine& m) { return x.clamp(m.s(-c), m.s(c)); }};
      case 5: return {absl::StrCat("X.abs().add(0.5).pow(", num(c + 0.5), ")"),
                      [c](const Tensor& x, const Machine& m) { return x.abs().add(0.5).pow(m.s(c + 0.5)); }};
      case 6: return {absl::StrCat("X.masked_fill(X > ", num(c2), ", ", num(c), ")"),
                      [c, c2](const Tensor& x, const Machine& m) { return x.masked_fill(x > m.s(c2), m.s(c)); }};
      case 7: return {absl::StrCat("where(X < ", num(c2), ", ", num(c), ", X)"),
                      [c, c2](const Tensor& x, const Machine& m) { return where(x < m.s(c2), m.s(c), x); }};
      case 8: return {absl::StrCat("leaky_relu(X, ", num(c / 10), ")"),
                      [c](const Tensor& x, const Machine&) { return leaky_relu(x, c / 10); }};
      case 9: return {"X.clamp(-3, 3).exp()", [](const Tensor& x, const Machine& m) { return x.clamp(m.s(-3), m.s(3)).exp(); }};
      default: return pick(fixed);
    }
  }

  static std::string apply(const std::string& text, const std::string& operand) {
    std::string out;
    for (char ch : text) out += ch == 'X' ? operand : std::string(1, ch);
    return out;
  }

  void unary_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    Unary u = unary();
    // clone, x * c and x + c do not save their output for backward
    const bool fresh =
        u.text == "X.clone()" || absl::StartsWith(u.text, "X.mul(") || absl::StartsWith(u.text, "X.add(");
    add({absl::StrCat(reg(r), " = ", apply(u.text, reg(a))),
         [a, fn = u.fn](Machine& m) { m.regs.push_back(fn(m.regs[size_t(a)], m)); }},
        {a}, fresh);
  }

  // A tensor broadcastable with register a: another register, or one made from a.
  struct Partner {
    std::string text;
    std::function<Tensor(const Machine&)> fn;
    std::vector<int> reads;
  };
  Partner partner(int a) {
    const Tensor& x = m_.regs[size_t(a)];
    for (int tries = 0; tries < 6; ++tries) {
      const int b = pick_reg();
      if (broadcast_shape(x.sizes(), m_.regs[size_t(b)].sizes()))
        return {reg(b), [b](const Machine& m) { return m.regs[size_t(b)]; }, {b}};
    }
    if (x.dim() > 0 && chance(0.7)) {
      const int64_t d = dim_of(x.dim());
      if (x.size(d) > 0 && chance(0.5))
        return {absl::StrCat(reg(a), ".amax({", d, "}, true)"),
                [a, d](const Machine& m) { return m.regs[size_t(a)].amax({d}, true); }, {a}};
      return {absl::StrCat(reg(a), ".sum({", d, "}, true).tanh()"),
              [a, d](const Machine& m) { return m.regs[size_t(a)].sum({d}, true).tanh(); }, {a}};
    }
    return {absl::StrCat(reg(a), ".cos()"), [a](const Machine& m) { return m.regs[size_t(a)].cos(); }, {a}};
  }

  void binary_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    Partner b = partner(a);
    const double c = round2(real(-1.5, 1.5));
    using BinFn = std::function<Tensor(const Tensor&, const Tensor&, const Machine&)>;
    const std::vector<std::pair<std::string, BinFn>> ops = {
        {"A + B", [](const Tensor& x, const Tensor& y, const Machine&) { return x + y; }},
        {absl::StrCat("A.add(B, ", num(c), ")"), [c](const Tensor& x, const Tensor& y, const Machine& m) { return x.add(y, m.s(c)); }},
        {absl::StrCat("A.sub(B, ", num(c), ")"), [c](const Tensor& x, const Tensor& y, const Machine& m) { return x.sub(y, m.s(c)); }},
        {"A * B", [](const Tensor& x, const Tensor& y, const Machine&) { return x * y; }},
        {"A / (B.abs() + 1)", [](const Tensor& x, const Tensor& y, const Machine&) { return x / (y.abs() + 1); }},
        {"maximum(A, B)", [](const Tensor& x, const Tensor& y, const Machine&) { return maximum(x, y); }},
        {"minimum(A, B)", [](const Tensor& x, const Tensor& y, const Machine&) { return minimum(x, y); }},
        {"atan2(A, B)", [](const Tensor& x, const Tensor& y, const Machine&) { return atan2(x, y); }},
        {"where(A > B, A, B * 0.5)", [](const Tensor& x, const Tensor& y, const Machine& m) { return where(x > y, x, y * m.s(0.5)); }},
        {"A * B.sigmoid()", [](const Tensor& x, const Tensor& y, const Machine&) { return x * y.sigmoid(); }},
    };
    const auto& [text, fn] = pick(ops);
    std::string line = absl::StrCat(reg(r), " = ", text);
    absl::StrReplaceAll({{"A", reg(a)}, {"B", b.text}}, &line);
    std::vector<int> reads = b.reads;
    reads.push_back(a);
    add({line, [a, fn = fn, bf = b.fn](Machine& m) { m.regs.push_back(fn(m.regs[size_t(a)], bf(m), m)); }}, reads);
  }

  void reduction_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    const Tensor& x = m_.regs[size_t(a)];
    DimVector ds;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (chance(0.5)) ds.push_back(chance(0.3) ? d - x.dim() : d);
    if (ds.empty() && x.dim() > 0) ds.push_back(dim_of(x.dim()));
    bool has_empty = x.numel() == 0;
    for (int64_t d : ds) has_empty = has_empty || x.size(d) == 0;
    const bool keep = chance(0.5);
    const int64_t corr = uniform(0, 1);
    using RedFn = std::function<Tensor(const Tensor&, const Machine&)>;
    std::vector<std::pair<std::string, RedFn>> ops = {
        {absl::StrCat("X.sum(", dims_text(ds), ", ", keep ? "true" : "false", ")"), [ds, keep](const Tensor& t, const Machine&) { return t.sum(ds, keep); }},
        {absl::StrCat("X.mean(", dims_text(ds), ", ", keep ? "true" : "false", ")"), [ds, keep](const Tensor& t, const Machine&) { return t.mean(ds, keep); }},
        {"X.sum()", [](const Tensor& t, const Machine&) { return t.sum(); }},
        {absl::StrCat("X.norm(2, ", dims_text(ds), ", ", keep ? "true" : "false", ")"), [ds, keep](const Tensor& t, const Machine&) { return t.norm(2, ds, keep); }},
    };
    if (!ds.empty()) {
      ops.push_back({absl::StrCat("X.logsumexp(", dims_text(ds), ", ", keep ? "true" : "false", ")"),
                     [ds, keep](const Tensor& t, const Machine&) { return t.logsumexp(ds, keep); }});
      ops.push_back({absl::StrCat("X.var(", dims_text(ds), ", ", corr, ", ", keep ? "true" : "false", ")"),
                     [ds, keep, corr](const Tensor& t, const Machine&) { return t.var(ds, corr, keep); }});
    }
    if (!has_empty) {
      ops.push_back({absl::StrCat("X.amax(", dims_text(ds), ", ", keep ? "true" : "false", ")"), [ds, keep](const Tensor& t, const Machine&) { return t.amax(ds, keep); }});
      ops.push_back({absl::StrCat("X.amin(", dims_text(ds), ", ", keep ? "true" : "false", ")"), [ds, keep](const Tensor& t, const Machine&) { return t.amin(ds, keep); }});
    }
    if (x.dim() > 0) {
      const int64_t d = dim_of(x.dim());
      ops.push_back({absl::StrCat("softmax(X, ", d, ")"), [d](const Tensor& t, const Machine&) { return softmax(t, d); }});
      ops.push_back({absl::StrCat("log_softmax(X, ", d, ")"), [d](const Tensor& t, const Machine&) { return log_softmax(t, d); }});
    }
    const auto& [text, fn] = pick(ops);
    add({absl::StrCat(reg(r), " = ", apply(text, reg(a))),
         [a, fn = fn](Machine& m) { m.regs.push_back(fn(m.regs[size_t(a)], m)); }},
        {a});
  }

  // A view of x drawn at random (x's rank and sizes permitting).
  std::optional<Unary> view_of(const Tensor& x) {
    const int64_t n = x.dim();
    switch (uniform(0, 11)) {
      case 11:
        return Unary{"X.detach()", [](const Tensor& t, const Machine&) { return t.detach(); }};
      case 0:
        if (n < 2) return std::nullopt;
        {
          const int64_t d0 = dim_of(n), d1 = dim_of(n);
          return Unary{absl::StrCat("X.transpose(", d0, ", ", d1, ")"), [d0, d1](const Tensor& t, const Machine&) { return t.transpose(d0, d1); }};
        }
      case 1: {
        DimVector perm(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
        std::shuffle(perm.begin(), perm.end(), rng_);
        return Unary{absl::StrCat("X.permute(", dims_text(perm), ")"), [perm](const Tensor& t, const Machine&) { return t.permute(perm); }};
      }
      case 2: {
        if (n < 1) return std::nullopt;
        const int64_t d = dim_of(n), size = x.size(d);
        const int64_t start = uniform(0, int(size)), end = uniform(int(start), int(size)), step = uniform(1, 3);
        return Unary{absl::StrCat("X.slice(", d, ", ", start, ", ", end, ", ", step, ")"),
                     [d, start, end, step](const Tensor& t, const Machine&) { return t.slice(d, start, end, step); }};
      }
      case 3: {
        if (n < 1) return std::nullopt;
        const int64_t d = dim_of(n);
        if (x.size(d) == 0) return std::nullopt;
        const int64_t i = uniform(0, int(x.size(d)) - 1) - (chance(0.3) ? x.size(d) : 0);
        return Unary{absl::StrCat("X.select(", d, ", ", i, ")"), [d, i](const Tensor& t, const Machine&) { return t.select(d, i); }};
      }
      case 4: {
        if (n < 1) return std::nullopt;
        const int64_t d = dim_of(n), size = x.size(d);
        const int64_t start = uniform(0, int(size)), len = uniform(0, int(size - start));
        return Unary{absl::StrCat("X.narrow(", d, ", ", start, ", ", len, ")"),
                     [d, start, len](const Tensor& t, const Machine&) { return t.narrow(d, start, len); }};
      }
      case 5: {
        DimVector to(x.sizes().begin(), x.sizes().end());
        for (int64_t& s : to)
          if (s == 1 && chance(0.7)) s = uniform(2, 4);
        if (chance(0.3)) to.insert(to.begin(), uniform(1, 3));
        return Unary{absl::StrCat("X.expand(", dims_text(to), ")"), [to](const Tensor& t, const Machine&) { return t.expand(to); }};
      }
      case 6: {
        DimVector to;
        if (n >= 2 && chance(0.6)) {  // merge two adjacent dims
          const int64_t d = uniform(0, int(n) - 2);
          to.assign(x.sizes().begin(), x.sizes().end());
          to[size_t(d)] *= to[size_t(d) + 1];
          to.erase(to.begin() + d + 1);
        } else if (x.numel() % 2 == 0 && x.numel() > 0) {
          to = {2, -1};
        } else {
          to = {-1};
        }
        const bool as_view = x.is_contiguous() && chance(0.5);
        return Unary{absl::StrCat("X.", as_view ? "view" : "reshape", "(", dims_text(to), ")"),
                     [to, as_view](const Tensor& t, const Machine&) { return as_view ? t.view(to) : t.reshape(to); }};
      }
      case 7: {
        const int64_t d = uniform(0, int(n)) - (chance(0.3) ? n + 1 : 0);
        return Unary{absl::StrCat("X.unsqueeze(", d, ")"), [d](const Tensor& t, const Machine&) { return t.unsqueeze(d); }};
      }
      case 8: {
        for (int64_t d = 0; d < n; ++d)
          if (x.size(d) == 1) return Unary{absl::StrCat("X.squeeze(", d, ")"), [d](const Tensor& t, const Machine&) { return t.squeeze(d); }};
        return Unary{"X.flatten()", [](const Tensor& t, const Machine&) { return t.flatten(); }};
      }
      case 9:
        if (n < 2) return std::nullopt;
        return Unary{"X.diagonal(0, -2, -1)", [](const Tensor& t, const Machine&) { return t.diagonal(0, -2, -1); }};
      default:
        if (n < 2) return std::nullopt;
        return Unary{"X.mT()", [](const Tensor& t, const Machine&) { return t.mT(); }};
    }
  }

  void view_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    std::optional<Unary> v = view_of(m_.regs[size_t(a)]);
    if (!v) return;
    add({absl::StrCat(reg(r), " = ", apply(v->text, reg(a))),
         [a, fn = v->fn](Machine& m) { m.regs.push_back(fn(m.regs[size_t(a)], m)); }},
        {a});
  }

  void matmul_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    const Tensor& x = m_.regs[size_t(a)];
    if (x.dim() == 0) return;
    if (x.dim() >= 2 && chance(0.4)) {
      add({absl::StrCat(reg(r), " = matmul(", reg(a), ", ", reg(a), ".mT())"),
           [a](Machine& m) { m.regs.push_back(matmul(m.regs[size_t(a)], m.regs[size_t(a)].mT())); }},
          {a});
      return;
    }
    // x @ w with w an input [k, n] or [k]
    const int64_t k = x.size(-1);
    const bool floating = is_floating(x.dtype());  // x is not used past the first add_input: regs may move
    DimVector w_shape = {k};
    if (chance(0.8)) w_shape.push_back(dim_size());
    if (!add_input(chance(0.6), w_shape)) return;  // too big: w is not a register
    const int w = int(m_.regs.size()) - 1;
    if (w_shape.size() == 2 && floating && chance(0.35) && add_input(chance(0.6), w_shape)) {
      // x @ w + sin(x) @ v: two products added (an RNN cell's x W + h U)
      const int v = w + 1;
      add({absl::StrCat(reg(v + 1), " = matmul(", reg(a), ", ", reg(w), ") + matmul(", reg(a), ".sin(), ", reg(v), ")"),
           [a, w, v](Machine& m) {
             const Tensor& in = m.regs[size_t(a)];
             m.regs.push_back(matmul(in, m.regs[size_t(w)]) + matmul(in.sin(), m.regs[size_t(v)]));
           }},
          {a, w, v});
      return;
    }
    add({absl::StrCat(reg(w + 1), " = matmul(", reg(a), ", ", reg(w), ")"),
         [a, w](Machine& m) { m.regs.push_back(matmul(m.regs[size_t(a)], m.regs[size_t(w)])); }},
        {a, w});
  }

  void cat_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    const Tensor& x = m_.regs[size_t(a)];
    if (x.dim() == 0) return;
    const int64_t d = dim_of(x.dim());
    const double c = round2(real(0.5, 2));
    if (chance(0.5))
      add({absl::StrCat(reg(r), " = cat({", reg(a), ", ", reg(a), ".mul(", num(c), ").narrow(", d, ", 0, ", x.size(d) / 2,
                        ")}, ", d, ")"),
           [a, d, c](Machine& m) {
             const Tensor& t = m.regs[size_t(a)];
             m.regs.push_back(cat({t, t.mul(m.s(c)).narrow(d, 0, t.size(d) / 2)}, d));
           }},
          {a});
    else
      add({absl::StrCat(reg(r), " = stack({", reg(a), ", ", reg(a), ".sin()}, ", d, ")"),
           [a, d](Machine& m) { m.regs.push_back(stack({m.regs[size_t(a)], m.regs[size_t(a)].sin()}, d)); }},
          {a});
  }

  // Creation functions make tensors the trace owns from the start: fresh
  // in-place targets (an accumulator, a mask).
  void factory_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    const double c = round2(real(-1, 1));
    switch (uniform(0, 3)) {
      case 0:
        add({absl::StrCat(reg(r), " = zeros_like(", reg(a), ")"), [a](Machine& m) { m.regs.push_back(zeros_like(m.regs[size_t(a)])); }}, {}, true);
        return;
      case 1:
        add({absl::StrCat(reg(r), " = full_like(", reg(a), ", ", num(c), ")"),
             [a, c](Machine& m) { m.regs.push_back(full_like(m.regs[size_t(a)], m.s(c))); }},
            {}, true);
        return;
      case 2:
        add({absl::StrCat(reg(r), " = ones(", shape_str(m_.regs[size_t(a)].sizes()), ")"),
             [a, dt = p_.dtype](Machine& m) { m.regs.push_back(ones(m.regs[size_t(a)].sizes(), dt)); }},
            {}, true);
        return;
      default: {
        const int64_t n = uniform(0, 6);
        add({absl::StrCat(reg(r), " = arange(", n, ", ", std::string(dtype_name(p_.dtype)), ")"),
             [n, dt = p_.dtype](Machine& m) { m.regs.push_back(arange(n, TensorOptions(dt))); }},
            {}, true);
        return;
      }
    }
  }

  // Ops with an int64 result, used inside the step: max(dim) with indices,
  // argmax feeding gather.
  void indices_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    const Tensor& x = m_.regs[size_t(a)];
    if (x.dim() == 0) return;
    const int64_t d = dim_of(x.dim());
    if (x.size(d) == 0) return;
    const bool keep = chance(0.5);
    if (chance(0.5)) {
      add({absl::StrCat("std::tie(", reg(r), ", i) = ", reg(a), ".max(", d, ", ", keep ? "true" : "false", "); ",
                        reg(r + 1), " = i.to(", std::string(dtype_name(p_.dtype)), ")"),
           [a, d, keep](Machine& m) {
             auto [values, indices] = m.regs[size_t(a)].max(d, keep);
             m.regs.push_back(values);
             m.regs.push_back(indices.to(values.dtype()));
           }},
          {a});
      return;
    }
    add({absl::StrCat(reg(r), " = ", reg(a), ".gather(", d, ", ", reg(a), ".argmin(", d, ", true))"),
         [a, d](Machine& m) {
           const Tensor& t = m.regs[size_t(a)];
           m.regs.push_back(t.gather(d, t.argmin(d, true)));
         }},
        {a});
  }

  void cast_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    const DType other = p_.dtype == kFloat32 ? kFloat64 : kFloat32;
    add({absl::StrCat(reg(r), " = (", reg(a), ".to(", std::string(dtype_name(other)), ").tanh().exp() * ", reg(a), ").to(",
                      std::string(dtype_name(p_.dtype)), ")"),
         [a, other, dt = p_.dtype](Machine& m) {
           const Tensor& t = m.regs[size_t(a)];
           m.regs.push_back((t.to(other).tanh().exp() * t).to(dt));
         }},
        {a});
  }

  void observe_step() {
    const int a = pick_reg();
    if (chance(0.3)) {
      add({"mark_step()", [](Machine&) { mark_step(); }}, {});
      return;
    }
    add({absl::StrCat("observe ", reg(a), ".to_vector<double>()"),
         [a](Machine& m) { m.observed.push_back(m.regs[size_t(a)].to_vector<double>()); }},
        {});
  }

  // item()-driven control flow: a branch on a sum, or a loop that runs until
  // a norm drops below a limit. The thresholds sit far from the values the
  // eager run sees, so rounding cannot flip them.
  void control_step() {
    const int a = pick_reg(), r = int(m_.regs.size());
    const Tensor& x = m_.regs[size_t(a)];
    if (chance(0.5)) {
      const int b = pick_reg();
      const double v = x.sum().item<double>();
      if (!std::isfinite(v)) return;
      const double margin = 0.25 * std::fabs(v) + 0.25;
      const double thr = round2(chance(0.5) ? v - margin : v + margin);
      Unary yes = unary(), no = unary();
      add({absl::StrCat(reg(r), " = ", reg(a), ".sum().item<double>() > ", num(thr), " ? ", apply(yes.text, reg(b)),
                        " : ", apply(no.text, reg(b))),
           [a, b, thr, y = yes.fn, n = no.fn](Machine& m) {
             const double value = m.regs[size_t(a)].sum().item<double>();
             const bool taken = value > thr;
             m.decisions.push_back({value, thr, taken});
             m.regs.push_back(taken ? y(m.regs[size_t(b)], m) : n(m.regs[size_t(b)], m));
           }},
          {a, b});
      return;
    }
    // x = body(x) until |x|.sum() < limit, at most kTrips times; body contracts.
    constexpr int kTrips = 6;
    const bool halve = chance(0.5);
    const UnaryFn body = halve ? UnaryFn([](const Tensor& t, const Machine& m) { return t.mul(m.s(0.5)); })
                               : UnaryFn([](const Tensor& t, const Machine& m) { return t.tanh().mul(m.s(0.6)); });
    std::vector<double> sums = {x.abs().sum().item<double>()};
    Tensor t = x;
    for (int i = 0; i < kTrips; ++i) {
      t = body(t, m_);
      sums.push_back(t.abs().sum().item<double>());
    }
    for (double s : sums)
      if (!std::isfinite(s)) return;
    const int trips = uniform(1, kTrips);
    // Sums shrink by at least 0.6 per trip: the geometric mean of the last
    // sum kept and the first one below is a safe limit.
    const double hi = sums[size_t(trips) - 1], lo = sums[size_t(trips)];
    const double limit = trips == kTrips ? 0.0 : hi == 0 ? 1.0 : lo == 0 ? hi / 2 : std::sqrt(hi * lo);
    add({absl::StrCat(reg(r), " = ", reg(a), "; do ", reg(r), " = ", halve ? "X.mul(0.5)" : "X.tanh().mul(0.6)",
                      " while (", reg(r), ".abs().sum().item<double>() >= ", limit, ", at most ", kTrips, " times)"),
         [a, limit, body](Machine& m) {
           Tensor t = m.regs[size_t(a)];
           for (int i = 0; i < kTrips; ++i) {
             t = body(t, m);
             const double value = t.abs().sum().item<double>();
             const bool stop = value < limit;
             m.decisions.push_back({value, limit, stop});
             if (stop) break;
           }
           m.regs.push_back(t);
         }},
        {a});
  }

  // In-place ops: on a register (whole or through a view made here), with a
  // Scalar, a broadcast register, the target itself, or an overlapping view
  // of the same storage. Under NoGradGuard where autograd would refuse
  // (views, leaves that require grad), as an optimizer or a buffer update does.
  void inplace_step() {
    std::vector<int> targets;
    for (int i = 0; i < int(m_.regs.size()); ++i) {
      const Tensor& t = m_.regs[size_t(i)];
      if (!frozen_.contains(t.storage().get()) && !is_expanded(t)) targets.push_back(i);
    }
    if (targets.empty()) return;
    const int a = pick(targets), r = int(m_.regs.size());
    const Tensor& x = m_.regs[size_t(a)];
    std::optional<Unary> view;
    if (chance(0.5)) {
      view = view_of(x);
      if (view && (view->text.find("expand") != std::string::npos)) view.reset();
    }
    const Tensor target = view ? view->fn(x, m_) : x;
    if (is_expanded(target)) return;
    const double c = round2(real(0.5, 1.5));
    using InFn = std::function<void(Tensor&, const Machine&)>;
    struct InOp {
      std::string text;  // "@" for the target
      InFn fn;
      int src = -1;           // the register read, if any
      bool self_ref = false;  // reads the target: autograd would see its saved input change
      bool no_grad = false;   // fill_/zero_ are not differentiable in nnvm (torch gives a zero gradient)
      bool saves_target = false;  // tanh_ saves its result for backward
    };
    std::vector<InOp> ops = {
        {absl::StrCat("@.add_(", num(c), ")"), [c](Tensor& t, const Machine& m) { t.add_(m.s(c)); }},
        {absl::StrCat("@.mul_(", num(c), ")"), [c](Tensor& t, const Machine& m) { t.mul_(m.s(c)); }},
        {"@.zero_()", [](Tensor& t, const Machine&) { t.zero_(); }, -1, false, true},
        {absl::StrCat("@.fill_(", num(c), ")"), [c](Tensor& t, const Machine& m) { t.fill_(m.s(c)); }, -1, false, true},
        {absl::StrCat("@.mul_(", num(c), ").add_(1).tanh_()"),
         [c](Tensor& t, const Machine& m) { t.mul_(m.s(c)).add_(1).tanh_(); }, -1, false, false, true},
        {"@.add_(@.sin())", [](Tensor& t, const Machine&) { t.add_(t.sin()); }, -1, true},
    };
    const int b = pick_reg();
    const Tensor& src = m_.regs[size_t(b)];
    if (broadcast_shape(target.sizes(), src.sizes()) == DimVector(target.sizes().begin(), target.sizes().end()) &&
        src.storage() != x.storage()) {
      ops.push_back({absl::StrCat("@.add_(", reg(b), ", ", num(c), ")"),
                     [b, c](Tensor& t, const Machine& m) { t.add_(m.regs[size_t(b)], m.s(c)); }, b});
      ops.push_back({absl::StrCat("@.mul_(", reg(b), ")"),
                     [b](Tensor& t, const Machine& m) { t.mul_(m.regs[size_t(b)]); }, b});
      ops.push_back({absl::StrCat("@.copy_(", reg(b), ")"),
                     [b](Tensor& t, const Machine& m) { t.copy_(m.regs[size_t(b)]); }, b});
    }
    if (target.dim() >= 2 && target.size(-1) == target.size(-2))
      ops.push_back({"@.copy_(@.mT())", [](Tensor& t, const Machine&) { t.copy_(t.mT()); }, -1, true});
    if (target.dim() >= 1 && target.size(-1) >= 2)
      ops.push_back({"@.narrow(-1, 0, n - 1).copy_(@.narrow(-1, 1, n - 1))",
                     [](Tensor& t, const Machine&) {
                       const int64_t n = t.size(-1);
                       t.narrow(-1, 0, n - 1).copy_(t.narrow(-1, 1, n - 1));
                     },
                     -1, true});
    const InOp& op = pick(ops);
    std::vector<int> reads = {a};
    if (op.src >= 0) reads.push_back(op.src);
    // Autograd records the op when grad mode is on and anything involved
    // requires grad; it refuses views and leaves that require grad.
    const bool recorded = x.requires_grad() || (op.src >= 0 && src.requires_grad());
    const bool no_grad = recorded && (view || x.impl()->is_view || (x.is_leaf() && x.requires_grad()) ||
                                      op.self_ref || op.no_grad || chance(0.2));
    std::string line;
    if (view) {
      line = absl::StrCat(reg(r), " = ", apply(view->text, reg(a)), "; ", op.text);
      absl::StrReplaceAll({{"@", reg(r)}}, &line);
    } else {
      line = op.text;
      absl::StrReplaceAll({{"@", reg(a)}}, &line);
    }
    if (no_grad) line = absl::StrCat("{ NoGradGuard g; ", line, "; }");
    add({line,
         [a, vfn = view ? view->fn : UnaryFn(), fn = op.fn, no_grad](Machine& m) {
           std::optional<NoGradGuard> guard;
           if (no_grad) guard.emplace();
           Tensor t = vfn ? vfn(m.regs[size_t(a)], m) : m.regs[size_t(a)];
           fn(t, m);
           if (vfn) m.regs.push_back(t);
         }},
        reads, /*fresh=*/true, a);
    if (recorded && !no_grad && op.saves_target) frozen_.insert(x.storage().get());
  }

  std::mt19937_64 rng_;
  Program p_;
  Machine m_;
  std::set<const Storage*> frozen_;  // storages autograd may have saved
};

}  // namespace

std::string Program::text() const {
  std::string out = absl::StrCat("// seed ", seed, ", ", std::string(dtype_name(dtype)), "\n");
  for (const Step& s : steps) absl::StrAppend(&out, s.text, ";\n");
  absl::StrAppend(&out, "loss = sum(r_i * w_i) over the registers that require grad; ",
                  backward_twice ? "loss.backward({}, true); loss.backward();\n" : "loss.backward();\n");
  absl::StrAppend(&out, "{ NoGradGuard g; for each input p with a grad: p.sub_(p.grad(), ", lr, "); }\n");
  return out;
}

Program generate_program(uint64_t seed, int max_steps) { return Generator(seed).generate(max_steps); }

std::optional<Program> resized(const Program& p, int64_t from, int64_t to) {
  Program q = p;
  bool changed = false;
  auto resize = [&](IntArrayRef shape) {
    DimVector s(shape.begin(), shape.end());
    for (int64_t& d : s)
      if (d == from) d = to;
    return s;
  };
  for (InputSpec& in : q.inputs) {
    const DimVector s = resize(in.shape);
    changed = changed || s != in.shape;
    in.shape = s;
  }
  if (!changed) return std::nullopt;
  for (size_t i = 0; i < q.loss_weights.size(); ++i) {
    Tensor& w = q.loss_weights[i];
    if (!w.defined()) continue;
    const DimVector s = resize(w.sizes());
    if (s != DimVector(w.sizes().begin(), w.sizes().end())) w = random(s, w.dtype(), p.seed * 977 + i + 1);
  }
  return q;
}

Outcome run_program(const Program& p, Mode mode, double scalar_scale) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  struct Restore {
    Mode m;
    ~Restore() { set_mode(m); }
  } restore{previous};
  Machine m;
  m.scalar_scale = scalar_scale;
  for (const InputSpec& spec : p.inputs) m.inputs.push_back(make_input(spec, p.dtype, p.float32_values));
  for (const Step& s : p.steps) s.run(m);
  Tensor loss;
  for (size_t i = 0; i < m.regs.size() && i < p.loss_weights.size(); ++i) {
    if (!p.loss_weights[i].defined()) continue;
    const Tensor term = (m.regs[i] * p.loss_weights[i]).sum();
    loss = loss.defined() ? loss + term : term;
  }
  if (loss.defined() && p.backward_twice) loss.backward({}, true);
  if (loss.defined()) loss.backward();
  Outcome out;
  for (Tensor& in : m.inputs) {
    out.grads.push_back(in.grad());
    if (!in.grad().defined()) continue;
    NoGradGuard no_grad;
    in.sub_(in.grad(), m.s(p.lr));
  }
  mark_step();
  out.regs = std::move(m.regs);
  out.inputs = std::move(m.inputs);
  out.decisions = std::move(m.decisions);
  out.observed = std::move(m.observed);
  return out;
}

}  // namespace nnvm::testing
