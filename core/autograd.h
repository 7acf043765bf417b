// Reverse-mode automatic differentiation over the op table (docs/DESIGN.md §3.1, §3.3).
//
// When grad mode is on and an op's input requires grad, `call` records a Node
// holding the op, its attributes and the tensors its gradient needs. Every
// op's gradient is a function that builds other ops (OpDef::grad), so backward
// runs through the same dispatcher: it can itself be differentiated
// (create_graph) and, later, traced and fused like the forward pass.
//
// Note [Saved tensors]
// A node keeps its inputs by handle, with the storage version at save time;
// unpacking checks the version, so a tensor modified in place after it was
// saved raises nnvm::Error naming the op. An output saved by its own node
// would form a cycle (output -> node -> output); it is kept as a detached
// alias plus a weak link back to the node, re-attached on unpack.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nnvm/core/tensor.h"

namespace nnvm {

struct OpDef;
class Attrs;

namespace autograd {

struct Node;

// Where a gradient flows: the gradient slot for output `output_nr` of the
// op that `node` differentiates (null node: nowhere).
struct Edge {
  std::shared_ptr<Node> node;
  int output_nr = 0;
};

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                            // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;          // null for leaves
  int output_nr = 0;                      // which output of grad_fn this tensor is
  std::weak_ptr<Node> grad_accumulator;   // a leaf's AccumulateGrad node, made on demand
  bool retains_grad = false;              // a non-leaf that keeps its .grad()
};

class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output);
  // Throws nnvm::Error naming `op` when the tensor was modified in place since it was saved.
  Tensor unpack(const std::string& op, const std::shared_ptr<Node>& owner) const;
  bool defined() const { return data_.defined(); }
  void reset() { data_ = Tensor(); }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  bool is_output_ = false;
  bool requires_grad_ = false;
  int output_nr_ = 0;
};

// A backward function: the gradient of one recorded op call.
struct Node : std::enable_shared_from_this<Node> {
  virtual ~Node() = default;
  // grads: one per output of the forward op (undefined: no gradient reached it).
  // Returns one gradient per input (undefined: none).
  virtual std::vector<Tensor> apply(std::vector<Tensor> grads, bool retain) = 0;
  virtual std::string name() const = 0;

  std::vector<Edge> next_edges;  // one per forward input
  // Shape and dtype of each forward input: gradients are summed back over
  // broadcast dims and cast to the input's dtype before they flow on.
  std::vector<DimVector> input_shapes;
  std::vector<DType> input_dtypes;
  int num_outputs = 1;
  // Non-leaf tensors that asked to keep their gradient (retain_grad): output index and tensor.
  std::vector<std::pair<int, std::weak_ptr<TensorImpl>>> retained;
};

// RAII: disables (or enables) recording for the current thread.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

bool grad_enabled();
void set_grad_enabled(bool enabled);

// Links an op's outputs into the graph (record's work once an input has
// autograd metadata).
void record_node(const OpDef& op, TensorRefs inputs, const Attrs& attrs, absl::Span<const Tensor> outputs);
// Called by the dispatcher after an op ran: links the outputs into the graph
// when grad mode is on and an input requires grad. Inline: an input without
// autograd metadata cannot require grad, and most ops of an inference or
// optimizer step have none, so they skip the call.
inline void record(const OpDef& op, TensorRefs inputs, const Attrs& attrs, absl::Span<const Tensor> outputs) {
  for (const Tensor& in : inputs)
    if (in.impl()->autograd) return record_node(op, inputs, attrs, outputs);
}
// Before an in-place op runs: checks that it is allowed and returns the
// inputs to save (an input aliased by the output is saved as a copy, since
// the op is about to overwrite it). nullopt when nothing is recorded.
std::optional<std::vector<Tensor>> prepare_inplace(const OpDef& op, TensorRefs inputs,
                                                   const Tensor& out);
void record_inplace(const OpDef& op, absl::Span<const Tensor> saved_inputs, TensorRefs inputs,
                    const Attrs& attrs, const Tensor& out);

// Computes and returns the gradients of sum(outputs[i] * grad_outputs[i])
// with respect to `inputs`, without touching any .grad(). With create_graph
// the result is itself differentiable. allow_unused: an input the outputs do
// not depend on gets an undefined tensor instead of an error.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, bool allow_unused = false);

// Accumulates gradients into the .grad() of the leaves `outputs` depend on.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

}  // namespace autograd

// libtorch's torch::NoGradGuard.
class NoGradGuard {
 public:
  NoGradGuard() : guard_(false) {}

 private:
  autograd::GradModeGuard guard_;
};

// libtorch's torch::AutoGradMode / torch::enable_grad scope.
class EnableGradGuard {
 public:
  EnableGradGuard() : guard_(true) {}

 private:
  autograd::GradModeGuard guard_;
};

}  // namespace nnvm
