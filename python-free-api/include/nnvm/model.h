// Static graphs: models loaded from files (ONNX) or built in C++, run by the
// same engine as eager code (docs/MODELS.md).
//
//   nnvm::Model m = nnvm::load_model("resnet.onnx");
//   std::vector<nnvm::Tensor> outs = m({x});           // graph-input order
//   auto outs2 = m({{"input", x}});                     // by name
//   for (auto& p : m.parameters()) p.requires_grad_();  // fine-tune it
//
// A graph is checked once, when the Model is made: every node reads values
// defined before it (no cycles), every op is one nnvm can run, attributes
// have the types their op expects. Running it calls the public op API node
// by node, so in traced mode it records the trace eager code would record,
// and the trace cache, fusion and the JIT apply unchanged.
//
// The op vocabulary is ONNX's (ai.onnx, opsets 7-17): a node's op_type, its
// inputs, outputs and attributes mean what the ONNX specification says.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>
#include "nnvm/core/dtype.h"
#include "nnvm/core/tensor.h"

namespace nnvm {

class Graph;

// The newest ai.onnx opset nnvm follows (that of ONNX 1.12). Files of
// opsets 1-6 load too, where their ops mean what they mean in opset 7.
inline constexpr int64_t kNewestOpset = 17;

// One dimension of a declared shape: a fixed size, or a symbol ("batch")
// bound by the first input that has it in a call, or unknown (neither).
struct Dim {
  int64_t size = -1;
  std::string symbol;
  bool fixed() const { return size >= 0; }
};

// A graph input's or output's declared type; either part may be unknown.
struct ValueInfo {
  std::string name;
  std::optional<DType> dtype;
  std::optional<std::vector<Dim>> shape;
};

// A node attribute: ONNX's INT, FLOAT, STRING, TENSOR, GRAPH and their lists.
using Attribute = std::variant<int64_t, double, std::string, Tensor, std::shared_ptr<const Graph>,
                               std::vector<int64_t>, std::vector<double>, std::vector<std::string>>;

struct Node {
  std::string op_type;
  std::string name;                  // for messages; may be empty
  std::vector<std::string> inputs;   // "" is an absent optional input
  std::vector<std::string> outputs;  // "" is an unused optional output
  std::map<std::string, Attribute> attributes;
};

// Nodes in an order where each reads only values defined before it: graph
// inputs, initializers, earlier nodes' outputs, and (in a subgraph) values
// of the graphs around it.
class Graph {
 public:
  std::string name;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<std::pair<std::string, Tensor>> initializers;
  std::vector<Node> nodes;
  int64_t opset = kNewestOpset;
};

namespace model_detail {
struct Program;
struct Frame;
}  // namespace model_detail

// What an op's kernel sees of one node while it runs.
class OpContext {
 public:
  const Node& node() const { return *node_; }
  int64_t opset() const { return opset_; }
  // Inputs as the node lists them; an absent optional input is undefined.
  int64_t num_inputs() const { return int64_t(inputs_.size()); }
  bool has_input(int64_t i) const { return i < num_inputs() && inputs_[size_t(i)].defined(); }
  const Tensor& input(int64_t i) const;  // throws naming the node when absent
  int64_t num_outputs() const { return num_outputs_; }

  bool has_attr(const std::string& name) const { return node_->attributes.count(name) != 0; }
  int64_t attr_int(const std::string& name, std::optional<int64_t> fallback = std::nullopt) const;
  double attr_float(const std::string& name, std::optional<double> fallback = std::nullopt) const;
  std::string attr_string(const std::string& name, std::optional<std::string> fallback = std::nullopt) const;
  std::vector<int64_t> attr_ints(const std::string& name,
                                 std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<double> attr_floats(const std::string& name,
                                  std::optional<std::vector<double>> fallback = std::nullopt) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  Tensor attr_tensor(const std::string& name) const;
  // Runs the graph attribute `name` (If's branches, Loop's body) on these
  // inputs; it sees the values of the graphs around it.
  std::vector<Tensor> run_graph(const std::string& name, const std::vector<Tensor>& inputs) const;

  // "Conv node 'conv1'": how messages name the node.
  std::string where() const;

  OpContext(const Node& node, int64_t opset, std::vector<Tensor> inputs, int64_t num_outputs,
            const model_detail::Frame* frame, const model_detail::Program* program, int64_t step)
      : node_(&node), opset_(opset), inputs_(std::move(inputs)), num_outputs_(num_outputs), frame_(frame),
        program_(program), step_(step) {}

 private:
  const Attribute& attr(const std::string& name, const char* kind) const;
  const Node* node_;
  int64_t opset_;
  std::vector<Tensor> inputs_;
  int64_t num_outputs_;
  const model_detail::Frame* frame_;
  const model_detail::Program* program_;
  int64_t step_;
};

// An op's kernel: builds its outputs from the public op API. It returns
// num_outputs() tensors (an unused optional output may be undefined).
using OpKernel = std::function<std::vector<Tensor>(const OpContext&)>;

// Adds (or replaces) the kernel for an op type. A node whose inputs are all
// constants or shapes (Shape, Constant, and nodes computed from only those)
// runs at once, eagerly, so a Reshape downstream reads its target without
// waiting for the trace; every other node is recorded like eager code.
void register_model_op(const std::string& op_type, OpKernel kernel);
bool has_model_op(const std::string& op_type);
std::vector<std::string> model_op_types();  // sorted

// A checked graph, callable like a function. Copies share the graph and the
// parameters.
class Model {
 public:
  // Checks the graph; a mistake is an nnvm::Error naming the node.
  explicit Model(Graph graph);

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> operator()(const std::vector<std::pair<std::string, Tensor>>& inputs) const;
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) const { return (*this)(inputs); }

  // The floating-point initializers: the weights. Ordinary tensors; the
  // model reads them on every call, so setting requires_grad on them or
  // updating them with an optimizer fine-tunes the model.
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;

  // Calls that ran without recording a node: a call whose inputs have the
  // dtypes, shapes and strides of two earlier calls that ran the same
  // compiled plans runs those plans at once (docs/MODELS.md, "Calls that
  // record nothing"). Counted over the model's copies.
  int64_t calls_replayed() const;

  const Graph& graph() const;
  // The graph inputs a call takes (inputs that are not initializers), and the outputs.
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// The op types of a graph (and its subgraphs) that nnvm has no kernel for,
// sorted and each once. A Model cannot be made from a graph with any.
std::vector<std::string> unsupported_ops(const Graph& graph);

// Reads a model file: ONNX (.onnx, or any file that is an ONNX model) or a
// TensorFlow frozen GraphDef (.pb that is not an ONNX model).
// A missing, malformed or truncated file is an nnvm::Error naming it.
Graph read_graph(const std::string& path);
Model load_model(const std::string& path);
// ONNX from memory; external data files are looked up under base_dir.
Graph read_onnx(const std::string& bytes, const std::string& what, const std::string& base_dir = "");
// A TensorFlow frozen GraphDef from memory, in ONNX's op vocabulary. The
// outputs are the named TF tensors ("name" or "name:1"), or by default every
// node's result that no node reads (NoOp, Const and Placeholder aside), in
// file order. An op with no conversion stays as "tf::Op" (unsupported).
Graph read_tensorflow(const std::string& bytes, const std::string& what, const std::vector<std::string>& outputs = {});

// One ONNX TensorProto file (ONNX's test data, `nnvm run`'s inputs and outputs).
Tensor load_onnx_tensor(const std::string& path);
Tensor read_onnx_tensor(const std::string& bytes, const std::string& what, const std::string& base_dir = "");
void save_onnx_tensor(const Tensor& value, const std::string& path, const std::string& name = "");

// Writes a model as an ONNX file, checked with ONNX's model checker; its
// parameters are written with their current values (after fine-tuning, the
// tuned ones). Outputs whose types the graph does not declare get them from
// a run on the example inputs.
void save_onnx(const Model& model, const std::vector<Tensor>& example_inputs, const std::string& path);

// A C++ function of tensors, as nnvm::trace_graph records it.
using TracedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Runs `fn` once on the example inputs while recording, with gradients off
// and in traced mode whatever the caller's mode (libtorch's
// torch::jit::trace), and returns what it recorded in ONNX's op vocabulary:
// graph inputs input_0.. with the example inputs' dtypes and shapes, every
// other tensor fn reads (parameters, captured constants) an initializer with
// its current value, outputs fn's results in order. An op with no ONNX form
// is an nnvm::Error naming it (docs/MODELS.md lists the exportable ops).
// While it runs, other threads' ops are recorded too (the mode is
// process-wide), and one trace_graph runs at a time.
Graph trace_graph(const TracedFunction& fn, const std::vector<Tensor>& example_inputs);

// trace_graph(fn, example_inputs), written as an ONNX file and checked as
// the Model overload does. Loaded with load_model, the file computes fn.
void save_onnx(const TracedFunction& fn, const std::vector<Tensor>& example_inputs, const std::string& path);

// Builds a static graph in C++.
//
//   nnvm::GraphBuilder b;
//   auto x = b.input("x", nnvm::kFloat32, {"batch", 4});
//   auto w = b.initializer("w", nnvm::randn({4, 3}));
//   auto y = b.op("Relu", {b.op("MatMul", {x, w})});
//   b.output(y);
//   nnvm::Model m = b.build();
class GraphBuilder {
 public:
  // A dimension: a fixed size or a symbol.
  struct DimSpec {
    DimSpec(int64_t size) : dim{size, {}} {}  // NOLINT(google-explicit-constructor)
    DimSpec(const char* symbol) : dim{-1, symbol} {}  // NOLINT(google-explicit-constructor)
    Dim dim;
  };

  std::string input(const std::string& name, DType dtype, const std::vector<DimSpec>& shape);
  std::string initializer(const std::string& name, const Tensor& value);
  // One node; its outputs get fresh names unless given. Returns output 0.
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                 std::map<std::string, Attribute> attributes = {});
  std::vector<std::string> op(const std::string& op_type, const std::vector<std::string>& inputs,
                              std::map<std::string, Attribute> attributes, int64_t num_outputs);
  void output(const std::string& value);
  const Graph& graph() const { return graph_; }
  Model build() const { return Model(graph_); }

 private:
  Graph graph_;
  int64_t next_ = 0;
};

}  // namespace nnvm
