// A checked graph, compiled to slots: what Model runs (docs/MODELS.md).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "nnvm/model.h"

namespace nnvm::model_detail {

// One node: its kernel, and the frame slots it reads and writes.
struct Step {
  const Node* node = nullptr;
  OpKernel kernel;
  std::vector<int> in;   // -1: absent optional input
  std::vector<int> out;  // -1: unused output
  std::vector<int> release;  // slots whose last reader this step is
  bool eager = false;        // all inputs are constants or shapes: run at once
  std::map<std::string, std::shared_ptr<const struct Program>> subgraphs;
};

struct Program {
  const Graph* graph = nullptr;
  int64_t opset = kNewestOpset;
  int num_slots = 0;
  std::vector<int> input_slots;  // the call's inputs, in graph-input order
  std::vector<ValueInfo> inputs;
  std::vector<std::pair<int, Tensor>> constants;  // initializers
  std::vector<int> output_slots;
  std::vector<std::pair<int, int>> captures;  // (slot here, slot in the enclosing frame)
  std::vector<Step> steps;
};

struct Frame {
  std::vector<Tensor> slots;
  const Frame* parent = nullptr;
};

// Checks `graph` and compiles it; `enclosing` is the scope a subgraph sees.
struct Scope;
std::shared_ptr<const Program> compile(const Graph& graph, int64_t opset, Scope* enclosing);

// Runs a program on its inputs (already checked against program.inputs).
std::vector<Tensor> run(const Program& program, const std::vector<Tensor>& inputs, const Frame* enclosing);

// "float32[batch,3]": a declared type, for messages.
std::string type_str(const std::optional<DType>& dtype, const std::optional<std::vector<Dim>>& shape);

// The built-in kernels, one function per group of ops (model/ops_*.cpp).
using OpTable = std::map<std::string, OpKernel>;
void add_elementwise_ops(OpTable& table);
void add_tensor_ops(OpTable& table);
void add_nn_ops(OpTable& table);
void add_more_ops(OpTable& table);  // after add_nn_ops: it reuses the Conv kernel

}  // namespace nnvm::model_detail
