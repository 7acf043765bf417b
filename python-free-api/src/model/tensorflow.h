// TensorFlow GraphDef -> nnvm::Graph in ONNX's op vocabulary (docs/MODELS.md,
// "TensorFlow .pb"). tensorflow.cpp reads the GraphDef (constants, inputs,
// node order, outputs) and hands each node to its conversion in
// tensorflow_ops.cpp, which writes ONNX nodes through a GraphWriter. Only
// these two files see TensorFlow's message classes (object library
// nnvm_tensorflow).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <tensorflow/core/framework/graph.pb.h>

#include "nnvm/model.h"

namespace nnvm::tf_import {

using tensorflow::NodeDef;

// The graph being written: what a conversion sees of the TF node (its inputs
// and attributes) and how it adds ONNX nodes, constants and initializers.
// Every problem is an nnvm::Error naming the file and the TF node.
class GraphWriter {
 public:
  GraphWriter(const tensorflow::GraphDef& graph, std::string what);

  // The value of data input i ("name", "name:1" as TF wrote it).
  std::string input(const NodeDef& node, int i) const;
  int num_inputs(const NodeDef& node) const;
  // The value a TF node's output i is: "name" for output 0, "name:i" after.
  static std::string output(const NodeDef& node, int i = 0);

  // Adds an ONNX node; its one output is `output`, or a fresh name.
  std::string emit(const NodeDef& node, const std::string& op_type, std::vector<std::string> inputs,
                   std::map<std::string, Attribute> attributes = {}, std::string output = {});
  // A Constant node (axes, pads, bounds): a value, not a parameter.
  std::string constant(const NodeDef& node, const Tensor& value);
  // An initializer computed from a constant (a transposed filter): a
  // parameter when floating, as the constant it replaces was.
  std::string initializer(const std::string& name, const Tensor& value);

  // Input i's value when a Const produces it (through Identity nodes), and
  // that Const's name, to name what is computed from it.
  std::optional<Tensor> const_input(const NodeDef& node, int i);
  std::string const_name(const NodeDef& node, int i) const;
  // Input i as integers; it must be a constant (axes, perm, paddings).
  std::vector<int64_t> const_ints(const NodeDef& node, int i);

  // An NHWC value in NCHW and back; a transpose that undoes the one that
  // made a value is not written, so Conv -> MaxPool stays NCHW between them.
  std::string to_nchw(const NodeDef& node, const std::string& nhwc);
  void to_nhwc(const NodeDef& node, const std::string& nchw, const std::string& output);
  // The NCHW value an NHWC value was transposed from, if any: a pointwise op
  // runs on it, so Conv -> BiasAdd -> Relu -> MaxPool needs no transposes.
  const std::string* nchw_twin(const std::string& nhwc) const;

  // Attributes, checked against the type the op gives them.
  int64_t attr_int(const NodeDef& node, const std::string& name, std::optional<int64_t> fallback = {}) const;
  double attr_float(const NodeDef& node, const std::string& name, std::optional<double> fallback = {}) const;
  bool attr_bool(const NodeDef& node, const std::string& name, std::optional<bool> fallback = {}) const;
  std::string attr_string(const NodeDef& node, const std::string& name,
                          std::optional<std::string> fallback = {}) const;
  std::vector<int64_t> attr_ints(const NodeDef& node, const std::string& name,
                                 std::optional<std::vector<int64_t>> fallback = {}) const;
  DType attr_dtype(const NodeDef& node, const std::string& name, std::optional<DType> fallback = {}) const;

  // Throws "load_model: 'file': Op node 'name': message".
  [[noreturn]] void fail(const NodeDef& node, const std::string& message) const;
  void check(bool cond, const NodeDef& node, const std::string& message) const {
    if (!cond) fail(node, message);
  }

  // Converts every node and returns the graph with the given outputs (TF
  // tensor names), or by default the results no node reads.
  Graph convert(const std::vector<std::string>& outputs);

 private:
  struct Ref {  // one data input as TF wrote it
    const NodeDef* node;
    int output;
  };
  const tensorflow::AttrValue* attr(const NodeDef& node, const std::string& name, int kind) const;
  const Ref& ref(const NodeDef& node, int i) const;
  const NodeDef* source(const Ref& ref) const;
  Tensor const_value(const NodeDef& node);
  std::vector<const NodeDef*> ordered() const;
  void convert_node(const NodeDef& node);
  void add_outputs(const std::vector<std::string>& names);
  void prune();

  const tensorflow::GraphDef& def_;
  std::string what_;
  std::map<std::string, const NodeDef*> by_name_;
  std::map<const NodeDef*, std::vector<Ref>> inputs_;       // data inputs
  std::map<const NodeDef*, std::vector<const NodeDef*>> deps_;  // data and control inputs
  std::map<const NodeDef*, int> outputs_read_;  // 1 + the highest output index another node reads
  std::map<std::string, Tensor> consts_;        // decoded Const values
  std::map<std::string, std::string> nchw_;     // NHWC value -> its NCHW twin
  std::set<std::string> defined_;
  Graph graph_;
  int64_t fresh_ = 0;
};

// Writes the ONNX nodes of one TF node.
using Conversion = std::function<void(GraphWriter&, const NodeDef&)>;
// Every TF op that converts, by op name (tensorflow_ops.cpp).
const std::map<std::string, Conversion>& conversions();

// TF's DataType codes as nnvm's dtypes; nullopt where nnvm has none.
std::optional<DType> dtype_from_tf(int code);
std::string tf_dtype_name(int code);  // "DT_STRING"

}  // namespace nnvm::tf_import
