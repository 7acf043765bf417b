// Custom autograd functions, as libtorch writes them:
//
//   struct Cube : nnvm::autograd::Function<Cube> {
//     static Tensor forward(AutogradContext* ctx, Tensor x) {
//       ctx->save_for_backward({x});
//       return x * x * x;
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list grads) {
//       Tensor x = ctx->get_saved_variables()[0];
//       return {grads[0] * 3 * x * x};
//     }
//   };
//   Tensor y = Cube::apply(x);
//
// forward runs with grad mode off; its ops are ordinary ops (recorded into
// the trace in traced mode), and apply links its outputs into the graph
// through one node whose backward calls T::backward, whose ops are again
// ordinary ops (so they are traced, fused, and differentiable under
// create_graph). backward returns one gradient per argument of forward
// (undefined for an argument that is not a tensor or needs none); a wrong
// count or shape throws nnvm::Error naming the function (docs/AUTOGRAD.md).
#pragma once

#include <memory>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <variant>
#include <vector>

#include "nnvm/core/autograd.h"
#include "nnvm/core/error.h"

namespace nnvm::autograd {

using variable_list = std::vector<Tensor>;
using tensor_list = std::vector<Tensor>;

// What AutogradContext::saved_data holds (libtorch's IValue, for the kinds
// a custom function saves): a tensor, a number, a flag, a string or a list.
// Reading it as another kind throws nnvm::Error naming both.
class IValue {
 public:
  IValue() = default;
  IValue(Tensor t) : v_(std::move(t)) {}       // NOLINT: implicit, like libtorch's
  IValue(double d) : v_(d) {}                  // NOLINT
  IValue(int64_t i) : v_(i) {}                 // NOLINT
  IValue(int i) : v_(int64_t(i)) {}            // NOLINT
  IValue(bool b) : v_(b) {}                    // NOLINT
  IValue(std::string s) : v_(std::move(s)) {}  // NOLINT
  IValue(const char* s) : v_(std::string(s)) {}          // NOLINT
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}   // NOLINT
  IValue(std::vector<double> v) : v_(std::move(v)) {}    // NOLINT

  bool isNone() const { return v_.index() == 0; }
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }
  bool isDouble() const { return std::holds_alternative<double>(v_); }
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }
  bool isBool() const { return std::holds_alternative<bool>(v_); }
  bool isString() const { return std::holds_alternative<std::string>(v_); }

  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
  double toDouble() const { return get<double>("double"); }
  int64_t toInt() const { return get<int64_t>("int"); }
  bool toBool() const { return get<bool>("bool"); }
  const std::string& toStringRef() const { return get<std::string>("string"); }
  const std::vector<int64_t>& toIntVector() const { return get<std::vector<int64_t>>("int list"); }
  const std::vector<double>& toDoubleVector() const { return get<std::vector<double>>("double list"); }
  // The kind held: "None", "Tensor", "double", ...
  const char* kind() const;

 private:
  template <class T> const T& get(const char* want) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    throw_wrong_kind(want);
  }
  [[noreturn]] void throw_wrong_kind(const char* want) const;

  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, std::vector<int64_t>,
               std::vector<double>>
      v_;
};

namespace internal {
struct FunctionNode;
}

// What forward leaves for backward (libtorch's torch::autograd::AutogradContext).
class AutogradContext {
 public:
  // Tensors backward needs, checked for in-place changes when read back
  // (docs/AUTOGRAD.md, saved tensors). Undefined tensors are kept as such.
  void save_for_backward(variable_list to_save);
  // Throws nnvm::Error when a saved tensor was modified in place since, or
  // when backward already ran without retain_graph.
  variable_list get_saved_variables() const;
  // Outputs of forward that get no gradient (indices, masks): they do not
  // require grad, and backward receives undefined (or zero) gradients for them.
  void mark_non_differentiable(const variable_list& outputs);
  // Arguments of forward it modified in place. Each must be returned as an
  // output; its history then continues through this function's node (as a
  // built-in in-place op's does), so a leaf that requires grad cannot be one.
  void mark_dirty(const variable_list& inputs);
  // Whether backward receives zeros (the default) or undefined tensors for
  // outputs no gradient reached.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // Whether tensor argument `index` of forward requires a gradient.
  bool needs_input_grad(size_t index) const;

  // Anything else forward wants to keep: ctx->saved_data["scale"] = 2.0.
  std::unordered_map<std::string, IValue> saved_data;

 private:
  friend struct internal::FunctionNode;
  variable_list to_save_;                          // until apply() links the outputs
  std::vector<SavedTensor> saved_;
  std::vector<const TensorImpl*> non_differentiable_;
  std::vector<const TensorImpl*> dirty_;
  std::vector<bool> needs_input_grad_;
  bool materialize_grads_ = true;
  bool released_ = false;
  internal::FunctionNode* node_ = nullptr;  // the node that owns this context
};

namespace internal {

// The node apply() links a custom function's outputs to; T enters only
// through `backward` and `function` (a node per call, not a class per T).
struct FunctionNode : Node {
  using Backward = variable_list (*)(AutogradContext*, variable_list);

  FunctionNode(std::string function, Backward backward);
  std::string name() const override { return function_; }
  std::vector<Tensor> apply(std::vector<Tensor> grads, bool retain) override;

  // Before forward: the tensors among its arguments (is_tensor per argument).
  void begin(std::vector<bool> is_tensor, const variable_list& tensors);
  // After forward: links `outputs` into the graph and keeps what was saved.
  variable_list finish(variable_list outputs);
  void check_dirty(const variable_list& outputs, bool record) const;

  AutogradContext ctx;

 private:
  std::string function_;
  Backward backward_;
  std::vector<bool> is_tensor_;  // per argument of forward
  variable_list inputs_;         // the tensor arguments, until finish
  std::vector<DimVector> output_shapes_;
  std::vector<DType> output_dtypes_;
  std::vector<bool> output_defined_;
};

// libtorch's name for the node of custom function `mangled`:
// "nnvm::autograd::CppNode<LinearFunction>".
std::string node_name(const char* mangled);
// The engine's side (core/autograd.cpp): where t's gradient flows, and
// making t output `output_nr` of `node`.
Edge gradient_edge(const Tensor& t);
void set_gradient_edge(const Tensor& t, const std::shared_ptr<Node>& node, int output_nr);

inline void collect(std::vector<bool>& is_tensor, variable_list& tensors, const Tensor& t) {
  is_tensor.push_back(true);
  tensors.push_back(t);
}
inline void collect(std::vector<bool>& is_tensor, variable_list& tensors, const variable_list& list) {
  for (const Tensor& t : list) collect(is_tensor, tensors, t);
}
template <class Other> void collect(std::vector<bool>& is_tensor, variable_list&, const Other&) {
  is_tensor.push_back(false);
}

}  // namespace internal

// CRTP base of a custom function T with static forward(AutogradContext*,
// args...) returning a Tensor or a variable_list, and static
// backward(AutogradContext*, variable_list) returning a variable_list.
template <class T> struct Function {
  template <class... Args> static auto apply(Args&&... args) {
    auto node = std::make_shared<internal::FunctionNode>(internal::node_name(typeid(T).name()),
                                                       [](AutogradContext* ctx, variable_list grads) {
                                                         return variable_list(T::backward(ctx, std::move(grads)));
                                                       });
    std::vector<bool> is_tensor;
    variable_list tensors;
    (internal::collect(is_tensor, tensors, args), ...);
    node->begin(std::move(is_tensor), tensors);
    using Result = decltype(T::forward(&node->ctx, std::forward<Args>(args)...));
    static_assert(std::is_same_v<Result, Tensor> || std::is_convertible_v<Result, variable_list>,
                  "forward must return a Tensor or a variable_list");
    variable_list outputs;
    {
      NoGradGuard no_grad;
      if constexpr (std::is_same_v<Result, Tensor>)
        outputs.push_back(T::forward(&node->ctx, std::forward<Args>(args)...));
      else
        outputs = T::forward(&node->ctx, std::forward<Args>(args)...);
    }
    outputs = node->finish(std::move(outputs));
    if constexpr (std::is_same_v<Result, Tensor>) return outputs[0];
    else return outputs;
  }
};

}  // namespace nnvm::autograd
