#include "nnvm/core/autograd.h"
#include "nnvm/core/custom_function.h"

#include <cctype>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "nnvm/core/autocast_state.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/hot_tls.h"
#include "nnvm/core/memory_monitor.h"
#include "nnvm/core/op.h"

namespace nnvm::autograd {

namespace {

NNVM_HOT_TLS thread_local bool t_grad_enabled = true;  // read by every op

AutogradMeta* meta_of(const Tensor& t) { return t.defined() ? t.impl()->autograd.get() : nullptr; }

AutogradMeta& ensure_meta(const Tensor& t) {
  auto& m = t.impl()->autograd;
  if (!m) m = std::make_shared<AutogradMeta>();
  return *m;
}

bool needs_grad(const Tensor& t) {
  const AutogradMeta* m = meta_of(t);
  return m && m->requires_grad;
}

// A new handle on the same data with no autograd meta.
Tensor alias(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

// libtorch's name for the gradient of op `name` ("add" -> AddBackward0,
// "log_softmax" -> LogSoftmaxBackward0); an overload taking a Scalar is
// libtorch's second (mul.Scalar -> MulBackward1).
std::string backward_name(std::string_view name) {
  const size_t dot = name.find('.');
  std::string out;
  bool upper = true;
  for (char c : name.substr(0, dot)) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? char(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + (dot == std::string_view::npos ? "Backward0" : "Backward1");
}

struct OpNode : Node {
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<SavedTensor> inputs, outputs;
  bool released = false;

  std::string name() const override { return backward_name(op->name); }

  std::vector<Tensor> apply(std::vector<Tensor> grads, bool retain) override {
    NNVM_CHECK(op->grad != nullptr, op->name,
               "is not differentiable, but a gradient reached it; detach() its inputs or compute it under "
               "nnvm::NoGradGuard");
    NNVM_CHECK(!released, op->name,
               "trying to backward through the graph a second time (its saved tensors were freed); pass "
               "retain_graph=true to the first backward");
    const auto self = shared_from_this();
    std::vector<Tensor> ins(next_edges.size()), outs(static_cast<size_t>(num_outputs));
    for (size_t i = 0; i < inputs.size(); ++i) ins[i] = inputs[i].unpack(op->name, self);
    for (size_t i = 0; i < outputs.size(); ++i) outs[i] = outputs[i].unpack(op->name, self);
    std::vector<bool> needs(next_edges.size());
    for (size_t i = 0; i < next_edges.size(); ++i) needs[i] = next_edges[i].node != nullptr;
    const GradContext ctx{ins, outs, grads, attrs, std::move(needs)};
    std::vector<Tensor> result = op->grad(ctx);
    NNVM_DCHECK(result.size() == next_edges.size());
    if (!retain) {
      inputs.clear();
      outputs.clear();
      released = true;
    }
    return result;
  }
};

// Adds the incoming gradient into a leaf's .grad().
struct AccumulateGrad : Node {
  std::shared_ptr<TensorImpl> leaf;

  std::string name() const override { return "AccumulateGrad"; }

  std::vector<Tensor> apply(std::vector<Tensor> grads, bool) override {
    const Tensor& g = grads[0];
    if (!g.defined()) return {};
    Tensor& acc = leaf->autograd->grad;
    if (grad_enabled()) {
      acc = acc.defined() ? acc + g : g;  // create_graph: keep the gradient differentiable
    } else if (acc.defined()) {
      acc = acc + g.detach();
    } else {
      // Own the buffer: the same gradient tensor may reach several leaves
      // (add's backward passes it to both inputs), and optimizers scale
      // gradients in place.
      const bool exclusive = g.impl_ptr().use_count() == 1 && g.storage().use_count() == 1;
      acc = exclusive ? g.detach() : g.detach().clone();
    }
    return {};
  }
};

Edge edge_of(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (!m || !m->requires_grad) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  auto acc = m->grad_accumulator.lock();
  if (!acc) {
    auto node = std::make_shared<AccumulateGrad>();
    node->leaf = t.impl_ptr();
    node->input_shapes.push_back(dims(t.sizes()));
    node->input_dtypes.push_back(t.dtype());
    acc = node;
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

std::shared_ptr<OpNode> make_node(const OpDef& op, TensorRefs inputs, const Attrs& attrs,
                                  size_t num_outputs) {
  auto node = std::make_shared<OpNode>();
  node->op = &op;
  node->attrs = attrs;
  node->num_outputs = int(num_outputs);
  for (const Tensor& in : inputs) {
    node->next_edges.push_back(edge_of(in));
    node->input_shapes.push_back(dims(in.sizes()));
    node->input_dtypes.push_back(in.dtype());
  }
  return node;
}

void attach_outputs(const std::shared_ptr<OpNode>& node, absl::Span<const Tensor> outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!is_floating(outputs[i].dtype())) continue;  // indices, masks: never differentiable
    AutogradMeta& m = ensure_meta(outputs[i]);
    // An in-place op gives a tensor that retains its gradient a new node: move the registration.
    if (m.retains_grad && m.grad_fn && m.grad_fn != node) {
      auto& old = m.grad_fn->retained;
      const TensorImpl* self = outputs[i].impl();
      old.erase(std::remove_if(old.begin(), old.end(), [&](const auto& r) { return r.second.lock().get() == self; }),
                old.end());
      node->retained.emplace_back(int(i), outputs[i].impl_ptr());
    }
    m.requires_grad = true;
    m.grad_fn = node;
    m.output_nr = int(i);
    m.grad = Tensor();
  }
  if (node->op->grad_saves_outputs)
    for (const Tensor& out : outputs) node->outputs.emplace_back(out, /*is_output=*/true);
}

bool any_needs_grad(TensorRefs tensors) {
  for (const Tensor& t : tensors)
    if (needs_grad(t)) return true;
  return false;
}

}  // namespace

// ---- custom functions (core/custom_function.h) ----
namespace internal {
Edge gradient_edge(const Tensor& t) { return edge_of(t); }
void set_gradient_edge(const Tensor& t, const std::shared_ptr<Node>& node, int output_nr) {
  AutogradMeta& m = ensure_meta(t);
  m.requires_grad = true;
  m.grad_fn = node;
  m.output_nr = output_nr;
  m.grad = Tensor();
}
}  // namespace internal

// ---- grad mode ----
bool grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }
GradModeGuard::GradModeGuard(bool enabled) : previous_(t_grad_enabled) { t_grad_enabled = enabled; }
GradModeGuard::~GradModeGuard() { t_grad_enabled = previous_; }

// ---- saved tensors ----
SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  version_ = t.storage()->version();
  const AutogradMeta* m = meta_of(t);
  requires_grad_ = m && m->requires_grad;
  output_nr_ = m ? m->output_nr : 0;
  data_ = is_output ? alias(t) : t;
}

Tensor SavedTensor::unpack(const std::string& op, const std::shared_ptr<Node>& owner) const {
  if (!data_.defined()) return {};
  NNVM_CHECK(data_.storage()->version() == version_, op,
             "a tensor of shape ", shape_str(data_.sizes()),
             " needed to compute the gradient was modified by an in-place operation after it was saved (version ",
             data_.storage()->version(), ", saved at version ", version_, "); clone() it before modifying it");
  if (!is_output_ || !requires_grad_) return data_;
  Tensor t = alias(data_);  // re-attach the output to its own node (Note [Saved tensors])
  AutogradMeta& m = ensure_meta(t);
  m.requires_grad = true;
  m.grad_fn = owner;
  m.output_nr = output_nr_;
  return t;
}

// ---- recording ----
void record_node(const OpDef& op, TensorRefs inputs, const Attrs& attrs, absl::Span<const Tensor> outputs) {
  if (!t_grad_enabled || !any_needs_grad(inputs)) return;
  auto node = make_node(op, inputs, attrs, outputs.size());
  if (op.grad_saves_inputs)
    for (const Tensor& in : inputs) node->inputs.emplace_back(in, /*is_output=*/false);
  attach_outputs(node, outputs);
}

std::optional<std::vector<Tensor>> prepare_inplace(const OpDef& op, TensorRefs inputs,
                                                   const Tensor& out) {
  if (!t_grad_enabled || (!needs_grad(out) && !any_needs_grad(inputs))) return std::nullopt;
  const AutogradMeta* m = meta_of(out);
  NNVM_CHECK(!(m && m->requires_grad && !m->grad_fn), op.name,
             "a leaf tensor that requires grad (shape ", shape_str(out.sizes()),
             ") cannot be modified in place; update it under nnvm::NoGradGuard");
  NNVM_CHECK(!out.impl()->is_view, op.name, "in-place modification of a view (shape ", shape_str(out.sizes()),
             ") is not supported while gradients are recorded; use the out-of-place op");
  std::vector<Tensor> saved(inputs.begin(), inputs.end());
  if (op.grad_saves_inputs) {
    NoGradGuard no_grad;
    for (Tensor& t : saved)
      if (t.storage() == out.storage()) t = t.clone();  // the op is about to overwrite it
  } else {
    saved.assign(inputs.size(), Tensor());
  }
  return saved;
}

void record_inplace(const OpDef& op, absl::Span<const Tensor> saved_inputs, TensorRefs inputs,
                    const Attrs& attrs, const Tensor& out) {
  auto node = make_node(op, inputs, attrs, 1);
  for (const Tensor& in : saved_inputs) node->inputs.emplace_back(in, /*is_output=*/false);
  NNVM_CHECK(is_floating(out.dtype()), op.name, "cannot record an in-place op on a ", out.dtype(), " tensor");
  attach_outputs(node, absl::MakeConstSpan(&out, 1));
}

// ---- the engine ----
namespace {

struct EdgeHash {
  size_t operator()(const std::pair<Node*, int>& e) const {
    return std::hash<Node*>()(e.first) * 31 + size_t(e.second);
  }
};

// Runs the graph behind `roots` in dependency order. With `capture` (for
// grad()), returns the gradients arriving at those edges and leaves .grad()
// alone; otherwise accumulates into the leaves.
std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
                                 bool retain_graph, bool create_graph, const std::vector<Edge>* capture,
                                 bool allow_unused, std::string_view api) {
  GradModeGuard mode(create_graph);
  memory::PhaseGuard phase(memory::Phase::kBackward);
  detail::AutocastSuspend no_autocast;  // each gradient op in its forward op's types (core/autocast.h)
  NNVM_CHECK(root_grads.empty() || root_grads.size() == roots.size(), api, "got ", roots.size(), " outputs but ",
             root_grads.size(), " gradients");
  std::vector<Edge> root_edges;
  std::vector<Tensor> root_values;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    NNVM_CHECK(r.defined() && needs_grad(r), api, "output ", i,
               " does not require grad and has no grad_fn (did an input call requires_grad_()?)");
    Tensor g = root_grads.empty() ? Tensor() : root_grads[i];
    if (!g.defined()) {
      NNVM_CHECK(r.numel() == 1, api, "a gradient can be created implicitly only for a scalar output, but output ",
                 i, " has shape ", shape_str(r.sizes()), "; pass a gradient of that shape");
      g = ones_like(r);
    }
    NNVM_CHECK(g.sizes() == r.sizes(), api, "gradient of shape ", shape_str(g.sizes()),
               " does not match output ", i, " of shape ", shape_str(r.sizes()));
    root_edges.push_back(edge_of(r));
    root_values.push_back(g);
  }

  // Which nodes run: with capture, only those from which a captured edge is reachable.
  std::unordered_map<std::pair<Node*, int>, size_t, EdgeHash> capture_at;
  if (capture)
    for (size_t i = 0; i < capture->size(); ++i)
      if ((*capture)[i].node) capture_at.emplace(std::make_pair((*capture)[i].node.get(), (*capture)[i].output_nr), i);
  std::unordered_map<Node*, bool> useful;
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> order;  // DFS post-order, for the usefulness pass
  {
    std::vector<std::pair<Node*, size_t>> stack;
    std::unordered_set<Node*> seen;
    for (const Edge& e : root_edges)
      if (seen.insert(e.node.get()).second) stack.push_back({e.node.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->next_edges.size()) {
        Node* child = n->next_edges[next++].node.get();
        if (!child) continue;
        ++deps[child];
        if (seen.insert(child).second) stack.push_back({child, 0});
      } else {
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  // A node runs when a captured gradient lies below it: its own captured
  // gradients are read from its buffer before it would run.
  auto is_captured = [&](Node* n) {
    return std::any_of(capture_at.begin(), capture_at.end(), [&](const auto& kv) { return kv.first.first == n; });
  };
  for (Node* n : order) {  // children come before parents in post-order
    bool u = !capture;
    for (const Edge& e : n->next_edges) u = u || (e.node && (useful[e.node.get()] || is_captured(e.node.get())));
    useful[n] = u;
  }

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_to = [&](const Edge& e, const Tensor& g) {
    auto& buf = buffers[e.node.get()];
    if (buf.empty()) buf.resize(size_t(e.node->num_outputs));
    Tensor& slot = buf[size_t(e.output_nr)];
    slot = slot.defined() ? slot + g : g;
  };
  for (size_t i = 0; i < root_edges.size(); ++i) add_to(root_edges[i], root_values[i]);

  std::vector<Tensor> captured(capture ? capture->size() : 0);
  std::deque<Node*> ready;
  for (const Edge& e : root_edges)
    if (deps[e.node.get()] == 0 && std::find(ready.begin(), ready.end(), e.node.get()) == ready.end())
      ready.push_back(e.node.get());
  while (!ready.empty()) {
    Node* n = ready.front();
    ready.pop_front();
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(size_t(n->num_outputs));
    for (auto& [slot, weak] : n->retained) {
      auto impl = weak.lock();
      if (!impl || !grads[size_t(slot)].defined()) continue;
      Tensor& acc = impl->autograd->grad;
      const Tensor g = create_graph ? grads[size_t(slot)] : grads[size_t(slot)].detach();
      acc = acc.defined() ? acc + g : g.clone();
    }
    for (int k = 0; k < n->num_outputs; ++k) {
      auto it = capture_at.find({n, k});
      if (it != capture_at.end() && grads[size_t(k)].defined()) captured[it->second] = grads[size_t(k)];
    }
    const bool is_leaf_sink = dynamic_cast<AccumulateGrad*>(n) != nullptr;
    const bool any_grad = std::any_of(grads.begin(), grads.end(), [](const Tensor& g) { return g.defined(); });
    std::vector<Tensor> results;
    if (useful[n] && any_grad && !(capture && is_leaf_sink)) results = n->apply(std::move(grads), retain_graph);
    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.node) continue;
      if (i < results.size() && results[i].defined()) {
        Tensor g = results[i];
        if (g.sizes() != IntArrayRef(n->input_shapes[i])) g = sum_to(g, n->input_shapes[i]);
        if (g.dtype() != n->input_dtypes[i]) g = g.to(n->input_dtypes[i]);
        add_to(e, g);
      }
      if (--deps[e.node.get()] == 0) ready.push_back(e.node.get());
    }
  }

  if (capture && !allow_unused)
    for (size_t i = 0; i < captured.size(); ++i)
      NNVM_CHECK(captured[i].defined(), api, "input ", i,
                 " was not used to compute the outputs (or does not require grad); pass allow_unused=true");
  return captured;
}

}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  std::vector<Edge> targets;
  for (size_t i = 0; i < inputs.size(); ++i) {
    NNVM_CHECK(inputs[i].defined() && needs_grad(inputs[i]), "autograd::grad", "input ", i,
               " does not require grad");
    targets.push_back(edge_of(inputs[i]));
  }
  return run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, &targets,
                      allow_unused, "autograd::grad");
}

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph) {
  run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, nullptr, false,
               "backward");
}

}  // namespace nnvm::autograd

namespace nnvm {

using autograd::AutogradMeta;

Tensor sum_to(const Tensor& g, IntArrayRef shape) {
  NNVM_CHECK(broadcasts_to(shape, g.sizes()), "sum_to", "shape ", shape_str(shape),
             " does not broadcast to ", shape_str(g.sizes()));
  const int64_t lead = g.dim() - int64_t(shape.size());
  DimVector reduce;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.size(d) != 1)) reduce.push_back(d);
  if (reduce.empty()) return g.view(shape);
  return g.sum(reduce, /*keepdim=*/true).view(shape);
}

bool Tensor::requires_grad() const { return impl_ && impl_->autograd && impl_->autograd->requires_grad; }

Tensor& Tensor::requires_grad_(bool requires_grad) const {
  NNVM_CHECK(defined(), "requires_grad_", "the tensor is undefined");
  NNVM_CHECK(!requires_grad || is_floating_point(), "requires_grad_",
             "only floating-point tensors can require gradients, got ", dtype(), " (shape ", shape_str(sizes()), ")");
  NNVM_CHECK(requires_grad || is_leaf(), "requires_grad_",
             "requires_grad can only be turned off on a leaf; use detach() on a computed tensor");
  if (!impl_->autograd) impl_->autograd = std::make_shared<AutogradMeta>();
  impl_->autograd->requires_grad = requires_grad;
  return const_cast<Tensor&>(*this);
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  return impl_ && impl_->autograd ? impl_->autograd->grad : undefined;
}

Tensor& Tensor::mutable_grad() const {
  NNVM_CHECK(defined(), "grad", "the tensor is undefined");
  if (!impl_->autograd) impl_->autograd = std::make_shared<AutogradMeta>();
  return impl_->autograd->grad;
}

bool Tensor::is_leaf() const { return !impl_ || !impl_->autograd || !impl_->autograd->grad_fn; }

void Tensor::retain_grad() {
  NNVM_CHECK(requires_grad(), "retain_grad", "the tensor does not require grad");
  if (is_leaf()) return;  // leaves keep their gradient anyway
  AutogradMeta& m = *impl_->autograd;
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.grad_fn->retained.emplace_back(m.output_nr, impl_);
}

std::string Tensor::grad_fn_name() const { return is_leaf() ? "" : impl_->autograd->grad_fn->name(); }

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  return is_leaf() ? none : impl_->autograd->grad_fn;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  NNVM_CHECK(defined(), "detach", "the tensor is undefined");
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

Tensor& Tensor::detach_() const {
  if (impl_ && impl_->autograd) {
    impl_->autograd->grad_fn = nullptr;
    impl_->autograd->requires_grad = false;
  }
  return const_cast<Tensor&>(*this);
}

}  // namespace nnvm
