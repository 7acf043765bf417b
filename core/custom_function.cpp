#include "nnvm/core/custom_function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm::autograd {

const char* IValue::kind() const {
  static constexpr const char* kKinds[] = {"None", "Tensor", "double", "int", "bool", "string", "int list",
                                           "double list"};
  return kKinds[v_.index()];
}

void IValue::throw_wrong_kind(const char* want) const {
  throw Error(nnvm::detail::concat("IValue: holds a ", kind(), ", not a ", want));
}

// ---- the context ----

namespace {
// Backward ran without retain_graph and freed what the function saved.
void check_not_released(bool released, const std::string& function) {
  NNVM_CHECK(!released, function,
             "trying to backward through the graph a second time (its saved tensors were freed); pass "
             "retain_graph=true to the first backward");
}
}  // namespace

void AutogradContext::save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }

variable_list AutogradContext::get_saved_variables() const {
  const std::string& function = node_->name();
  check_not_released(released_, function);
  variable_list out;
  out.reserve(saved_.size());
  const std::shared_ptr<Node> owner = node_->shared_from_this();
  for (const SavedTensor& s : saved_) out.push_back(s.unpack(function, owner));
  return out;
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const Tensor& t : outputs)
    if (t.defined()) non_differentiable_.push_back(t.impl());
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined()) dirty_.push_back(t.impl());
}

bool AutogradContext::needs_input_grad(size_t index) const {
  NNVM_CHECK(index < needs_input_grad_.size(), node_->name(), "needs_input_grad(", index, "): forward has ",
             needs_input_grad_.size(), " tensor arguments");
  return needs_input_grad_[index];
}

namespace internal {
namespace {

// g is `shape` or a broadcast of it, which the engine sums back.
bool sums_to(IntArrayRef g, IntArrayRef shape) {
  if (g.size() < shape.size()) return false;
  const size_t lead = g.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != g[lead + d] && shape[d] != 1) return false;
  return true;
}

}  // namespace

std::string node_name(const char* mangled) {
  int status = 0;
  char* name = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = "nnvm::autograd::CppNode<" + std::string(status == 0 && name ? name : mangled) + ">";
  std::free(name);
  return out;
}

FunctionNode::FunctionNode(std::string function, Backward backward)
    : function_(std::move(function)), backward_(backward) {
  ctx.node_ = this;
}

void FunctionNode::begin(std::vector<bool> is_tensor, const variable_list& tensors) {
  is_tensor_ = std::move(is_tensor);
  inputs_ = tensors;
  for (const Tensor& t : tensors) ctx.needs_input_grad_.push_back(t.defined() && t.requires_grad());
}

// Tensors marked dirty must be arguments of forward and among its outputs;
// while gradients are recorded, not leaves that require grad nor views, for
// which a built-in in-place op is refused too (core/autograd.cpp).
void FunctionNode::check_dirty(const variable_list& outputs, bool record) const {
  for (const TensorImpl* d : ctx.dirty_) {
    const auto is_d = [d](const Tensor& t) { return t.defined() && t.impl() == d; };
    const auto in = std::find_if(inputs_.begin(), inputs_.end(), is_d);
    NNVM_CHECK(in != inputs_.end(), function_, "mark_dirty was given a tensor of shape ", shape_str(d->shape),
               " that is not an argument of forward; expected the arguments forward modified in place");
    NNVM_CHECK(std::any_of(outputs.begin(), outputs.end(), is_d), function_, "the argument of shape ",
               shape_str(d->shape), " marked dirty is not returned by forward; expected it among the outputs");
    if (!record) continue;
    NNVM_CHECK(!(in->requires_grad() && in->is_leaf()), function_, "a leaf tensor that requires grad (shape ",
               shape_str(d->shape), ") was modified in place and marked dirty; modify a copy, or run under "
               "nnvm::NoGradGuard");
    NNVM_CHECK(!d->is_view, function_, "in-place modification of a view (shape ", shape_str(d->shape),
               ") marked dirty is not supported while gradients are recorded; modify a copy");
  }
}

variable_list FunctionNode::finish(variable_list outputs) {
  const bool record = grad_enabled() && std::any_of(ctx.needs_input_grad_.begin(), ctx.needs_input_grad_.end(),
                                                    [](bool b) { return b; });
  check_dirty(outputs, record);
  variable_list to_save = std::move(ctx.to_save_);
  if (!record) {
    inputs_.clear();
    return outputs;
  }
  const auto self = std::static_pointer_cast<FunctionNode>(shared_from_this());
  for (const Tensor& in : inputs_) {
    next_edges.push_back(in.defined() ? gradient_edge(in) : Edge{});
    input_shapes.push_back(in.defined() ? dims(in.sizes()) : DimVector{});
    input_dtypes.push_back(in.defined() ? in.dtype() : kFloat32);
  }
  num_outputs = int(outputs.size());
  std::vector<const TensorImpl*> made(outputs.size(), nullptr);  // each output as forward returned it
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    output_shapes_.push_back(out.defined() ? dims(out.sizes()) : DimVector{});
    output_dtypes_.push_back(out.defined() ? out.dtype() : kFloat32);
    output_defined_.push_back(out.defined());
    if (!out.defined()) continue;
    made[i] = out.impl();
    const auto& nd = ctx.non_differentiable_;
    if (!is_floating(out.dtype()) || std::find(nd.begin(), nd.end(), out.impl()) != nd.end()) continue;
    // An input returned as it is, or an output that already has a history,
    // is handed on as a new handle: its own gradient edge stays as it was.
    // A dirty input is the exception: its history now runs through this node
    // (its old edge is this node's next edge), as after an in-place op.
    const auto& dirty = ctx.dirty_;
    if (out.impl()->autograd && std::find(dirty.begin(), dirty.end(), out.impl()) == dirty.end()) out = out.detach();
    set_gradient_edge(out, self, int(i));
  }
  for (const Tensor& t : to_save) {
    const auto at = std::find(made.begin(), made.end(), t.defined() ? t.impl() : nullptr);
    const bool is_output = t.defined() && at != made.end();
    ctx.saved_.emplace_back(is_output ? outputs[size_t(at - made.begin())] : t, is_output);
  }
  inputs_.clear();
  return outputs;
}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor> grads, bool retain) {
  check_not_released(ctx.released_, function_);
  if (ctx.materialize_grads_)
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined() && output_defined_[i]) grads[i] = zeros(output_shapes_[i], output_dtypes_[i]);
  variable_list by_argument = backward_(&ctx, std::move(grads));
  // Undefined gradients past the last argument are allowed, as libtorch
  // allows them (a backward written for an optional argument left out).
  while (by_argument.size() > is_tensor_.size() && !by_argument.back().defined()) by_argument.pop_back();
  NNVM_CHECK(by_argument.size() == is_tensor_.size(), function_, "backward returned ", by_argument.size(),
             " gradients, expected ", is_tensor_.size(), " (one per argument of forward, undefined for those "
             "that are not tensors)");
  std::vector<Tensor> result;
  result.reserve(next_edges.size());
  for (size_t k = 0; k < by_argument.size(); ++k) {
    const Tensor& g = by_argument[k];
    if (!is_tensor_[k]) {
      NNVM_CHECK(!g.defined(), function_, "backward returned a gradient of shape ", shape_str(g.sizes()),
                 " for argument ", k, " of forward, which is not a tensor; return an undefined Tensor() there");
      continue;
    }
    const size_t j = result.size();
    NNVM_CHECK(!g.defined() || sums_to(g.sizes(), input_shapes[j]), function_, "backward returned a gradient of shape ",
               shape_str(g.defined() ? g.sizes() : IntArrayRef()), " for argument ", k,
               " of forward, expected its shape ", shape_str(input_shapes[j]));
    result.push_back(g);
  }
  if (!retain) {
    ctx.saved_.clear();
    ctx.released_ = true;
  }
  return result;
}

}  // namespace internal
}  // namespace nnvm::autograd
