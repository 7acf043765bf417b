// Model ops of the recurrent layers: RNN, GRU and LSTM, forward, reverse or
// bidirectional, with ONNX's activations, clip, sequence_lens and layouts.
//
// Each direction projects the whole input through W at once (one matmul over
// every step) and then steps through time with one matmul by R per step. A
// batch entry past its sequence length keeps its state and outputs zeros,
// so the reverse direction starts at each entry's own last step.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "ops_nn.h"

namespace nnvm::model_detail {
namespace {

enum class Cell { RNN, GRU, LSTM };

using Activation = std::function<Tensor(const Tensor&)>;

// ONNX's activation functions of the recurrent ops, by name (any case), with
// how many of activation_alpha and activation_beta each takes and their defaults.
struct ActivationDef {
  const char* name;
  int params;
  double alpha, beta;
  Tensor (*fn)(const Tensor&, double, double);
};
constexpr ActivationDef kActivations[] = {
    {"relu", 0, 0, 0, [](const Tensor& x, double, double) { return x.relu(); }},
    {"tanh", 0, 0, 0, [](const Tensor& x, double, double) { return x.tanh(); }},
    {"sigmoid", 0, 0, 0, [](const Tensor& x, double, double) { return x.sigmoid(); }},
    {"affine", 2, 1.0, 0.0, [](const Tensor& x, double a, double b) { return x * a + b; }},
    {"leakyrelu", 1, 0.01, 0, [](const Tensor& x, double a, double) { return where(x >= 0.0, x, x * a); }},
    {"thresholdedrelu", 1, 1.0, 0, [](const Tensor& x, double a, double) { return where(x >= a, x, zeros_like(x)); }},
    {"scaledtanh", 2, 1.0, 1.0, [](const Tensor& x, double a, double b) { return (x * b).tanh() * a; }},
    {"hardsigmoid", 2, 0.2, 0.5, [](const Tensor& x, double a, double b) { return (x * a + b).clamp(0.0, 1.0); }},
    {"elu", 1, 1.0, 0, [](const Tensor& x, double a, double) { return elu(x, a); }},
    {"softsign", 0, 0, 0, [](const Tensor& x, double, double) { return x / (x.abs() + 1.0); }},
    {"softplus", 0, 0, 0, [](const Tensor& x, double, double) { return x.clamp_min(0.0) + (-x.abs()).exp().log1p(); }},
};

// The node's activations, `per_direction` for each direction, with the
// activation_alpha and activation_beta values each consumes in turn.
std::vector<Activation> activations(const OpContext& ctx, std::vector<std::string> names, int64_t directions) {
  const size_t per_direction = names.size();
  if (ctx.has_attr("activations")) {
    names = ctx.attr_strings("activations");
  } else if (directions == 2) {
    const std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  NNVM_CHECK(names.size() == per_direction * size_t(directions), ctx.where(), "activations lists ", names.size(),
             " functions; expected ", per_direction, " per direction");
  const std::vector<double> alphas = ctx.attr_floats("activation_alpha", std::vector<double>{});
  const std::vector<double> betas = ctx.attr_floats("activation_beta", std::vector<double>{});
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> fns;
  for (const std::string& name : names) {
    std::string key = name;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const ActivationDef* def = nullptr;
    for (const ActivationDef& d : kActivations)
      if (key == d.name) def = &d;
    NNVM_CHECK(def != nullptr, ctx.where(), "activation '", name, "' is not one of ONNX's recurrent activations");
    double alpha = def->alpha, beta = def->beta;
    if (def->params >= 1 && next_alpha < alphas.size()) alpha = alphas[next_alpha++];
    if (def->params >= 2 && next_beta < betas.size()) beta = betas[next_beta++];
    fns.push_back([fn = def->fn, alpha, beta](const Tensor& x) { return fn(x, alpha, beta); });
  }
  return fns;
}

// What one direction needs: its weights (gates along dim 0) and activations.
struct Weights {
  Tensor w, r, wb, rb, p;  // p: LSTM's peepholes [3 * hidden], undefined without
  std::vector<Activation> f;
};

struct Layer {
  Cell cell;
  int64_t hidden = 0;
  std::optional<double> clip;
  bool linear_before_reset = false, input_forget = false;

  Tensor act(const Activation& f, const Tensor& x) const { return f(clip ? x.clamp(-*clip, *clip) : x); }

  // One step from state (h, c) given this step's projected input xw [batch, gates * hidden].
  void step(const Weights& d, const Tensor& xw, Tensor& h, Tensor& c) const {
    if (cell == Cell::RNN) {
      h = act(d.f[0], xw + h.matmul(d.r.t()) + d.rb);
      return;
    }
    if (cell == Cell::GRU) {
      const Tensor r_zr = d.r.narrow(0, 0, 2 * hidden), r_h = d.r.narrow(0, 2 * hidden, hidden);
      const Tensor hr = h.matmul(r_zr.t()) + d.rb.narrow(0, 0, 2 * hidden);
      const Tensor z = act(d.f[0], xw.narrow(1, 0, hidden) + hr.narrow(1, 0, hidden));
      const Tensor reset = act(d.f[0], xw.narrow(1, hidden, hidden) + hr.narrow(1, hidden, hidden));
      const Tensor rb_h = d.rb.narrow(0, 2 * hidden, hidden);
      const Tensor recurrent =
          linear_before_reset ? reset * (h.matmul(r_h.t()) + rb_h) : (reset * h).matmul(r_h.t()) + rb_h;
      const Tensor candidate = act(d.f[1], xw.narrow(1, 2 * hidden, hidden) + recurrent);
      h = (1.0 - z) * candidate + z * h;
      return;
    }
    const Tensor gates = xw + h.matmul(d.r.t()) + d.rb;  // i, o, f, c
    auto gate = [&](int64_t k) { return gates.narrow(1, k * hidden, hidden); };
    auto peep = [&](int64_t k, const Tensor& state) {
      return d.p.defined() ? state * d.p.narrow(0, k * hidden, hidden) : Tensor();
    };
    auto with = [](const Tensor& x, const Tensor& extra) { return extra.defined() ? x + extra : x; };
    const Tensor in = act(d.f[0], with(gate(0), peep(0, c)));
    const Tensor forget = input_forget ? 1.0 - in : act(d.f[0], with(gate(2), peep(2, c)));
    c = forget * c + in * act(d.f[1], gate(3));
    const Tensor out = act(d.f[0], with(gate(1), peep(1, c)));
    h = out * act(d.f[2], c);
  }
};

int64_t gates_of(Cell cell) { return cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4; }

// Checks that input `i` has `shape`.
void expect_shape(const OpContext& ctx, int64_t i, const char* name, const std::vector<int64_t>& shape) {
  NNVM_CHECK(ctx.input(i).sizes() == IntArrayRef(shape), ctx.where(), name, " has shape ", ctx.input(i).sizes(),
             ", expected ", shape_str(shape));
}

std::vector<Tensor> recurrent(const OpContext& ctx, Cell cell) {
  const bool batch_first = ctx.attr_int("layout", 0) != 0;
  Tensor x = ctx.input(0);
  NNVM_CHECK(x.dim() == 3, ctx.where(), "expected a 3-d input X, got ", x.sizes());
  if (batch_first) x = x.transpose(0, 1);
  const Tensor &w = ctx.input(1), &r = ctx.input(2);
  const std::string direction = ctx.attr_string("direction", "forward");
  NNVM_CHECK(direction == "forward" || direction == "reverse" || direction == "bidirectional", ctx.where(),
             "direction must be forward, reverse or bidirectional, got '", direction, "'");
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  const int64_t steps = x.size(0), batch = x.size(1), gates = gates_of(cell);
  NNVM_CHECK(r.dim() == 3, ctx.where(), "expected a 3-d R, got ", r.sizes());
  const int64_t hidden = ctx.attr_int("hidden_size", r.size(2));
  expect_shape(ctx, 1, "W", {directions, gates * hidden, x.size(2)});
  expect_shape(ctx, 2, "R", {directions, gates * hidden, hidden});
  if (ctx.has_input(3)) expect_shape(ctx, 3, "B", {directions, 2 * gates * hidden});
  const int64_t first_state = 5;  // initial_h, then LSTM's initial_c
  std::vector<Tensor> initial;
  for (int64_t i = first_state; i < first_state + (cell == Cell::LSTM ? 2 : 1); ++i) {
    Tensor s = ctx.has_input(i) ? ctx.input(i) : zeros({directions, batch, hidden}, x.dtype());
    if (ctx.has_input(i) && batch_first) s = s.transpose(0, 1);
    NNVM_CHECK(s.sizes() == IntArrayRef({directions, batch, hidden}), ctx.where(), "initial state ", i, " has shape ",
               ctx.input(i).sizes(), ", expected [num_directions, batch, hidden] = [", directions, ", ", batch, ", ",
               hidden, "] (layout ", batch_first, ")");
    initial.push_back(s);
  }
  if (cell == Cell::LSTM && ctx.has_input(7)) expect_shape(ctx, 7, "P", {directions, 3 * hidden});
  Tensor lengths;  // [batch, 1]: each entry's sequence length
  if (ctx.has_input(4)) {
    expect_shape(ctx, 4, "sequence_lens", {batch});
    lengths = ctx.input(4).to(kInt64).reshape({batch, 1});
  }

  Layer layer{cell, hidden, std::nullopt, ctx.attr_int("linear_before_reset", 0) != 0,
              ctx.attr_int("input_forget", 0) != 0};
  if (ctx.has_attr("clip")) layer.clip = ctx.attr_float("clip");
  const std::vector<std::string> defaults = cell == Cell::RNN   ? std::vector<std::string>{"Tanh"}
                                            : cell == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const std::vector<Activation> fns = activations(ctx, defaults, directions);
  std::vector<Tensor> ys, hs, cs;
  for (int64_t dir = 0; dir < directions; ++dir) {
    Weights d;
    d.w = w[dir];
    d.r = r[dir];
    const Tensor b = ctx.has_input(3) ? ctx.input(3)[dir] : zeros({2 * gates * hidden}, x.dtype());
    d.wb = b.narrow(0, 0, gates * hidden);
    d.rb = b.narrow(0, gates * hidden, gates * hidden);
    if (cell == Cell::LSTM && ctx.has_input(7)) d.p = ctx.input(7)[dir];
    d.f.assign(fns.begin() + dir * int64_t(defaults.size()), fns.begin() + (dir + 1) * int64_t(defaults.size()));
    const Tensor xw = x.matmul(d.w.t()) + d.wb;  // every step's input projection
    Tensor h = initial[0][dir], c = cell == Cell::LSTM ? initial[1][dir] : Tensor();
    std::vector<Tensor> y(static_cast<size_t>(steps));
    const bool reverse = direction == "reverse" || dir == 1;
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t t = reverse ? steps - 1 - s : s;
      Tensor h_next = h, c_next = c;
      layer.step(d, xw[t], h_next, c_next);
      if (lengths.defined()) {
        const Tensor running = lengths > t;
        y[size_t(t)] = where(running, h_next, zeros_like(h_next));
        h = where(running, h_next, h);
        if (c.defined()) c = where(running, c_next, c);
      } else {
        y[size_t(t)] = h = h_next;
        c = c_next;
      }
    }
    ys.push_back(steps > 0 ? stack(y, 0) : zeros({0, batch, hidden}, x.dtype()));
    hs.push_back(h);
    if (c.defined()) cs.push_back(c);
  }
  Tensor y = stack(ys, 1);  // [steps, directions, batch, hidden]
  std::vector<Tensor> outs = {batch_first ? y.permute({2, 0, 1, 3}) : y};
  for (const std::vector<Tensor>* states : {&hs, &cs}) {
    if (states->empty()) continue;
    const Tensor s = stack(*states, 0);
    outs.push_back(batch_first ? s.transpose(0, 1) : s);
  }
  return outs;
}

}  // namespace

void add_rnn_ops(OpTable& table) {
  add(table, "RNN", [](const OpContext& ctx) { return recurrent(ctx, Cell::RNN); });
  add(table, "GRU", [](const OpContext& ctx) { return recurrent(ctx, Cell::GRU); });
  add(table, "LSTM", [](const OpContext& ctx) { return recurrent(ctx, Cell::LSTM); });
}

}  // namespace nnvm::model_detail
