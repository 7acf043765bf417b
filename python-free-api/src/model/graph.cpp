// Model: checks a static graph once, compiles it to frame slots, and runs it
// node by node through the public op API (docs/MODELS.md).
#include <algorithm>
#include <mutex>
#include <set>

#include <absl/container/flat_hash_map.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include "call_capture.h"
#include "program.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/error.h"
#include "nnvm/core/mode_state.h"
#include "nnvm/kernels/cpu/gemm_prepack.h"

namespace nnvm {
namespace model_detail {
namespace {

struct Registry {
  std::mutex mu;
  OpTable table;
  Registry() {
    add_elementwise_ops(table);
    add_tensor_ops(table);
    add_nn_ops(table);
    add_more_ops(table);
  }
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: kernels may run at exit
  return *r;
}

}  // namespace

std::string node_label(const Node& node) {
  return node.name.empty() ? node.op_type + " node" : absl::StrCat(node.op_type, " node '", node.name, "'");
}

std::string type_str(const std::optional<DType>& dtype, const std::optional<std::vector<Dim>>& shape) {
  std::string s = dtype ? std::string(dtype_name(*dtype)) : "?";
  if (!shape) return s;
  std::vector<std::string> dims;
  for (const Dim& d : *shape) dims.push_back(d.fixed() ? std::to_string(d.size) : d.symbol.empty() ? "?" : d.symbol);
  return absl::StrCat(s, "[", absl::StrJoin(dims, ","), "]");
}

// The names a graph can read while it is compiled: its own, then (through
// captures) those of the graphs around it.
struct Scope {
  Scope* enclosing = nullptr;
  Program* program = nullptr;
  absl::flat_hash_map<std::string, int> slots;
  std::vector<bool> constant;  // per slot: a constant or shape value, known before the trace runs

  int define(const std::string& name, bool is_constant) {
    int slot = program->num_slots++;
    constant.push_back(is_constant);
    if (!name.empty()) slots[name] = slot;
    return slot;
  }
  // The slot holding `name` here, capturing it from an enclosing graph; -1 if none defines it.
  int resolve(const std::string& name) {
    if (auto it = slots.find(name); it != slots.end()) return it->second;
    if (enclosing == nullptr) return -1;
    int outer = enclosing->resolve(name);
    if (outer < 0) return -1;
    int slot = define(name, enclosing->constant[size_t(outer)]);
    program->captures.emplace_back(slot, outer);
    return slot;
  }
};

Scope& scope_root(Scope& scope) { return scope.enclosing ? scope_root(*scope.enclosing) : scope; }

std::shared_ptr<const Program> compile(const Graph& graph, int64_t opset, Scope* enclosing) {
  auto program = std::make_shared<Program>();
  program->graph = &graph;
  program->opset = opset;
  Scope scope{enclosing, program.get(), {}, {}};

  std::set<std::string> initializer_names;
  for (const auto& [name, value] : graph.initializers) {
    NNVM_CHECK(value.defined(), "Model", "initializer '", name, "' has no value");
    NNVM_CHECK(initializer_names.insert(name).second, "Model", "initializer '", name, "' is defined twice");
    // Floating-point initializers are weights, read as ordinary tensors so
    // they can be trained; the others (shapes, indices) are constants.
    int slot = scope.define(name, !is_floating(value.dtype()));
    program->constants.emplace_back(slot, value);
  }
  for (const ValueInfo& in : graph.inputs) {
    if (initializer_names.count(in.name)) continue;  // an initializer listed as an input (IR < 4)
    NNVM_CHECK(!in.name.empty(), "Model", "a graph input has no name");
    NNVM_CHECK(!scope.slots.contains(in.name), "Model", "graph input '", in.name, "' is defined twice");
    program->input_slots.push_back(scope.define(in.name, false));
    program->inputs.push_back(in);
  }

  // Every value a later node defines, to tell "out of order" from "undefined".
  std::set<std::string> defined_later;
  for (const Node& node : graph.nodes)
    for (const std::string& out : node.outputs) defined_later.insert(out);

  std::vector<int> last_reader;  // per slot: the last step that reads it
  auto note_read = [&](int slot, int step) {
    if (last_reader.size() <= size_t(slot)) last_reader.resize(size_t(slot) + 1, -1);
    last_reader[size_t(slot)] = step;
  };

  std::unique_lock lock(registry().mu);
  for (const Node& node : graph.nodes) {
    Step step;
    step.node = &node;
    auto kernel = registry().table.find(node.op_type);
    if (kernel == registry().table.end()) {
      lock.unlock();
      std::vector<std::string> all = unsupported_ops(*scope_root(scope).program->graph);
      throw Error(absl::StrCat("Model: ", node_label(node), ": op type '", node.op_type,
                               "' is not supported by nnvm (unsupported in this graph: ", absl::StrJoin(all, ", "),
                               ")"));
    }
    step.kernel = kernel->second;
    bool all_constant = true;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        step.in.push_back(-1);
        continue;
      }
      int slot = scope.resolve(name);
      NNVM_CHECK(slot >= 0, "Model",
                 absl::StrCat(node_label(node), " reads '", name, "', ",
                              defined_later.count(name) ? "which a later node defines (the nodes form a cycle or are "
                                                          "not in topological order)"
                                                        : "which no input, initializer or earlier node defines"));
      all_constant = all_constant && scope.constant[size_t(slot)];
      step.in.push_back(slot);
      note_read(slot, int(program->steps.size()));
    }
    for (const auto& [attr_name, value] : node.attributes) {
      if (const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&value)) {
        NNVM_CHECK(*sub != nullptr, "Model", node_label(node), ": graph attribute '", attr_name, "' is empty");
        lock.unlock();
        step.subgraphs[attr_name] = compile(**sub, opset, &scope);
        lock.lock();
        // What the subgraph captures, this step reads: not released before it.
        for (const auto& [slot, outer] : step.subgraphs[attr_name]->captures)
          note_read(outer, int(program->steps.size()));
        all_constant = false;  // a subgraph may read anything
      }
    }
    // A node without inputs (Constant, a random op) is constant only when it is a Constant.
    step.eager = all_constant && (!node.inputs.empty() || node.op_type == "Constant");
    bool is_shape = node.op_type == "Shape" || node.op_type == "Size";
    for (const std::string& name : node.outputs) {
      if (name.empty()) {
        step.out.push_back(-1);
        continue;
      }
      NNVM_CHECK(!scope.slots.contains(name), "Model",
                 absl::StrCat(node_label(node), " defines '", name, "', which is already defined"));
      step.out.push_back(scope.define(name, step.eager || is_shape));
    }
    program->steps.push_back(std::move(step));
  }
  lock.unlock();

  for (const ValueInfo& out : graph.outputs) {
    int slot = scope.resolve(out.name);
    NNVM_CHECK(slot >= 0, "Model", "graph output '", out.name, "' is not defined by any node, input or initializer");
    program->output_slots.push_back(slot);
    note_read(slot, int(program->steps.size()));  // read after the last step: never released
  }
  // Release each intermediate after its last reader, so a long graph holds
  // only the values still to be read (in eager mode, their memory).
  std::set<int> kept;
  for (const auto& [slot, value] : program->constants) kept.insert(slot);
  for (const auto& [slot, outer] : program->captures) kept.insert(slot);
  for (int slot = 0; slot < int(last_reader.size()); ++slot) {
    int step = last_reader[size_t(slot)];
    if (step >= 0 && step < int(program->steps.size()) && !kept.count(slot))
      program->steps[size_t(step)].release.push_back(slot);
  }
  return program;
}

std::vector<Tensor> run(const Program& program, const std::vector<Tensor>& inputs, const Frame* enclosing) {
  Frame frame;
  frame.slots.resize(size_t(program.num_slots));
  frame.parent = enclosing;
  for (const auto& [slot, outer] : program.captures) frame.slots[size_t(slot)] = enclosing->slots[size_t(outer)];
  for (const auto& [slot, value] : program.constants) frame.slots[size_t(slot)] = value;
  for (size_t i = 0; i < program.input_slots.size() && i < inputs.size(); ++i)
    frame.slots[size_t(program.input_slots[i])] = inputs[i];

  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    std::vector<Tensor> args;
    args.reserve(step.in.size());
    for (int slot : step.in) args.push_back(slot < 0 ? Tensor() : frame.slots[size_t(slot)]);
    OpContext ctx(*step.node, program.opset, std::move(args), int64_t(step.out.size()), &frame, &program,
                  int64_t(s));
    std::vector<Tensor> outs;
    try {
      if (step.eager) {
        detail::RunEagerly eager;
        outs = step.kernel(ctx);
      } else {
        outs = step.kernel(ctx);
      }
    } catch (const Error& e) {
      std::string what = e.what();
      std::string where = ctx.where();
      if (what.rfind(where, 0) == 0) throw;  // already names this node
      throw Error(absl::StrCat(where, ": ", what));
    }
    for (size_t o = 0; o < step.out.size(); ++o) {
      if (step.out[o] < 0) continue;
      NNVM_CHECK(o < outs.size() && outs[o].defined(), ctx.where(), "gives no output ", o);
      frame.slots[size_t(step.out[o])] = std::move(outs[o]);
    }
    for (int slot : step.release) frame.slots[size_t(slot)] = Tensor();
  }
  std::vector<Tensor> results;
  results.reserve(program.output_slots.size());
  for (int slot : program.output_slots) results.push_back(frame.slots[size_t(slot)]);
  return results;
}

}  // namespace model_detail

// ---- OpContext ----

std::string OpContext::where() const { return model_detail::node_label(*node_); }

const Tensor& OpContext::input(int64_t i) const {
  NNVM_CHECK(has_input(i), where(), "input ", i, " is required but absent");
  return inputs_[size_t(i)];
}

const Attribute& OpContext::attr(const std::string& name, const char* kind) const {
  auto it = node_->attributes.find(name);
  NNVM_CHECK(it != node_->attributes.end(), where(), "attribute '", name, "' (", kind, ") is required");
  return it->second;
}

namespace {
const char* attr_kind(const Attribute& v) {
  static const char* const kNames[] = {"int", "float", "string", "tensor", "graph", "ints", "floats", "strings"};
  return kNames[v.index()];
}
}  // namespace

#define NNVM_ATTR_GETTER(Ret, Method, Alt, kind)                                                              \
  Ret OpContext::Method(const std::string& name, std::optional<Ret> fallback) const {                          \
    if (!has_attr(name) && fallback) return *fallback;                                                         \
    const Attribute& v = attr(name, kind);                                                                     \
    if (const auto* p = std::get_if<Ret>(&v)) return *p;                                                       \
    if (const auto* q = std::get_if<Alt>(&v)) return Ret(*q);                                                  \
    throw Error(absl::StrCat(where(), ": attribute '", name, "' must be ", kind, ", got ", attr_kind(v)));     \
  }
// An INT attribute where a FLOAT is expected (and back) converts, as ONNX Runtime accepts.
NNVM_ATTR_GETTER(int64_t, attr_int, double, "int")
NNVM_ATTR_GETTER(double, attr_float, int64_t, "float")
NNVM_ATTR_GETTER(std::string, attr_string, std::string, "string")
#undef NNVM_ATTR_GETTER

std::vector<int64_t> OpContext::attr_ints(const std::string& name,
                                          std::optional<std::vector<int64_t>> fallback) const {
  if (!has_attr(name) && fallback) return *fallback;
  const Attribute& v = attr(name, "ints");
  if (const auto* p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  if (const auto* i = std::get_if<int64_t>(&v)) return {*i};
  throw Error(absl::StrCat(where(), ": attribute '", name, "' must be ints, got ", attr_kind(v)));
}

std::vector<double> OpContext::attr_floats(const std::string& name,
                                           std::optional<std::vector<double>> fallback) const {
  if (!has_attr(name) && fallback) return *fallback;
  const Attribute& v = attr(name, "floats");
  if (const auto* p = std::get_if<std::vector<double>>(&v)) return *p;
  if (const auto* i = std::get_if<std::vector<int64_t>>(&v)) return {i->begin(), i->end()};
  if (const auto* f = std::get_if<double>(&v)) return {*f};
  throw Error(absl::StrCat(where(), ": attribute '", name, "' must be floats, got ", attr_kind(v)));
}

std::vector<std::string> OpContext::attr_strings(const std::string& name) const {
  const Attribute& v = attr(name, "strings");
  if (const auto* p = std::get_if<std::vector<std::string>>(&v)) return *p;
  throw Error(absl::StrCat(where(), ": attribute '", name, "' must be strings, got ", attr_kind(v)));
}

Tensor OpContext::attr_tensor(const std::string& name) const {
  const Attribute& v = attr(name, "tensor");
  if (const auto* p = std::get_if<Tensor>(&v)) return *p;
  throw Error(absl::StrCat(where(), ": attribute '", name, "' must be a tensor, got ", attr_kind(v)));
}

std::vector<Tensor> OpContext::run_graph(const std::string& name, const std::vector<Tensor>& inputs) const {
  const model_detail::Step& step = program_->steps[size_t(step_)];
  auto it = step.subgraphs.find(name);
  NNVM_CHECK(it != step.subgraphs.end(), where(), "graph attribute '", name, "' is required");
  const model_detail::Program& sub = *it->second;
  NNVM_CHECK(inputs.size() == sub.input_slots.size(), where(), "graph '", name, "' takes ", sub.input_slots.size(),
             " inputs, given ", inputs.size());
  return model_detail::run(sub, inputs, frame_);
}

// ---- the op registry ----

void register_model_op(const std::string& op_type, OpKernel kernel) {
  NNVM_CHECK(kernel != nullptr, "register_model_op", "no kernel given for '", op_type, "'");
  std::lock_guard lock(model_detail::registry().mu);
  model_detail::registry().table[op_type] = std::move(kernel);
}

bool has_model_op(const std::string& op_type) {
  std::lock_guard lock(model_detail::registry().mu);
  return model_detail::registry().table.count(op_type) != 0;
}

std::vector<std::string> model_op_types() {
  std::lock_guard lock(model_detail::registry().mu);
  std::vector<std::string> names;
  for (const auto& [name, kernel] : model_detail::registry().table) names.push_back(name);
  return names;
}

namespace {
void collect_unsupported(const Graph& graph, std::set<std::string>& out) {
  for (const Node& node : graph.nodes) {
    if (!has_model_op(node.op_type)) out.insert(node.op_type);
    for (const auto& [name, value] : node.attributes)
      if (const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&value); sub && *sub)
        collect_unsupported(**sub, out);
  }
}
}  // namespace

std::vector<std::string> unsupported_ops(const Graph& graph) {
  std::set<std::string> ops;
  collect_unsupported(graph, ops);
  return {ops.begin(), ops.end()};
}

// ---- Model ----

struct Model::Impl {
  Graph graph;
  std::shared_ptr<const model_detail::Program> program;
  mutable model_detail::CallCaptures captures;  // calls that record nothing (call_capture.h)
};

Model::Model(Graph graph) {
  auto impl = std::make_shared<Impl>();
  impl->graph = std::move(graph);
  NNVM_CHECK(impl->graph.opset >= 1, "Model", "opset ", impl->graph.opset, " is not a valid ai.onnx opset");
  impl->program = model_detail::compile(impl->graph, impl->graph.opset, nullptr);
  // The weights stay packed for the GEMM between calls, as ONNX Runtime
  // prepacks its initializers (kernels/cpu/gemm_prepack.h).
  for (const auto& [name, value] : impl->graph.initializers)
    if (value.defined() && value.dtype() == kFloat32 && value.dim() >= 2) cpu::gemm_keep_packed(value.storage());
  impl_ = std::move(impl);
}

const Graph& Model::graph() const { return impl_->graph; }
const std::vector<ValueInfo>& Model::inputs() const { return impl_->program->inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return impl_->graph.outputs; }

std::vector<std::pair<std::string, Tensor>> Model::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> params;
  for (const auto& [name, value] : impl_->graph.initializers)
    if (is_floating(value.dtype())) params.emplace_back(name, value);
  return params;
}

std::vector<Tensor> Model::parameters() const {
  std::vector<Tensor> params;
  for (auto& [name, value] : named_parameters()) params.push_back(value);
  return params;
}

std::vector<Tensor> Model::operator()(const std::vector<Tensor>& inputs) const {
  const std::vector<ValueInfo>& want = impl_->program->inputs;
  NNVM_CHECK(inputs.size() == want.size(), "Model", "takes ", want.size(), " inputs, given ", inputs.size());
  absl::flat_hash_map<std::string, int64_t> symbols;  // each symbol's size in this call
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& info = want[i];
    const Tensor& x = inputs[i];
    NNVM_CHECK(x.defined(), "Model", "input '", info.name, "' is an undefined tensor");
    auto mismatch = [&] {
      return absl::StrCat("input '", info.name, "' expects ", model_detail::type_str(info.dtype, info.shape), ", got ",
                          std::string(dtype_name(x.dtype())), shape_str(x.sizes()));
    };
    NNVM_CHECK(!info.dtype || *info.dtype == x.dtype(), "Model", mismatch());
    if (!info.shape) continue;
    NNVM_CHECK(x.dim() == int64_t(info.shape->size()), "Model", mismatch());
    for (size_t d = 0; d < info.shape->size(); ++d) {
      const Dim& dim = (*info.shape)[d];
      int64_t size = x.sizes()[d];
      if (dim.fixed()) {
        NNVM_CHECK(size == dim.size, "Model", mismatch());
      } else if (!dim.symbol.empty()) {
        auto [it, fresh] = symbols.emplace(dim.symbol, size);
        NNVM_CHECK(fresh || it->second == size, "Model", mismatch(), " (", dim.symbol, " is ", it->second,
                   " in an earlier input)");
      }
    }
  }
  return impl_->captures.call(*impl_->program, inputs);
}

int64_t Model::calls_replayed() const { return impl_->captures.replayed(); }

std::vector<Tensor> Model::operator()(const std::vector<std::pair<std::string, Tensor>>& inputs) const {
  const std::vector<ValueInfo>& want = impl_->program->inputs;
  std::vector<Tensor> ordered(want.size());
  for (const auto& input : inputs) {
    const std::string& name = input.first;  // (clang 14 cannot capture a structured binding)
    const Tensor& value = input.second;
    auto it = std::find_if(want.begin(), want.end(), [&](const ValueInfo& v) { return v.name == name; });
    NNVM_CHECK(it != want.end(), "Model", "has no input named '", name, "'");
    NNVM_CHECK(!ordered[size_t(it - want.begin())].defined(), "Model", "input '", name, "' is given twice");
    ordered[size_t(it - want.begin())] = value;
  }
  for (size_t i = 0; i < want.size(); ++i)
    NNVM_CHECK(ordered[i].defined(), "Model", "input '", want[i].name, "' is not given");
  return (*this)(ordered);
}

// ---- GraphBuilder ----

std::string GraphBuilder::input(const std::string& name, DType dtype, const std::vector<DimSpec>& shape) {
  std::vector<Dim> dims;
  for (const DimSpec& d : shape) dims.push_back(d.dim);
  graph_.inputs.push_back(ValueInfo{name, dtype, std::move(dims)});
  return name;
}

std::string GraphBuilder::initializer(const std::string& name, const Tensor& value) {
  graph_.initializers.emplace_back(name, value);
  return name;
}

std::string GraphBuilder::op(const std::string& op_type, const std::vector<std::string>& inputs,
                             std::map<std::string, Attribute> attributes) {
  return op(op_type, inputs, std::move(attributes), 1)[0];
}

std::vector<std::string> GraphBuilder::op(const std::string& op_type, const std::vector<std::string>& inputs,
                                          std::map<std::string, Attribute> attributes, int64_t num_outputs) {
  NNVM_CHECK(num_outputs >= 1, "GraphBuilder", op_type, " needs at least one output, given ", num_outputs);
  Node node;
  node.op_type = op_type;
  node.name = absl::StrCat(op_type, "_", next_++);
  node.inputs = inputs;
  for (int64_t i = 0; i < num_outputs; ++i) node.outputs.push_back(absl::StrCat(node.name, ":", i));
  node.attributes = std::move(attributes);
  graph_.nodes.push_back(node);
  return node.outputs;
}

void GraphBuilder::output(const std::string& value) { graph_.outputs.push_back(ValueInfo{value, {}, {}}); }

}  // namespace nnvm
