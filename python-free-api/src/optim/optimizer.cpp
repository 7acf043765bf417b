// optim::Optimizer: parameter groups, zero_grad and the step driver.
#include "nnvm/optim/optimizer.h"

#include "nnvm/core/mode.h"

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/memory_monitor.h"

namespace nnvm::optim {

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  NNVM_CHECK(options_ != nullptr, "OptimizerParamGroup", "the group has no options");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  NNVM_CHECK(options_ != nullptr, "OptimizerParamGroup", "the group has no options");
  return *options_;
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  for (const OptimizerParamGroup& group : param_groups) add_param_group(group);
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  for (const Tensor& p : group.params()) {
    NNVM_CHECK(p.defined() && p.is_leaf() && p.requires_grad(), "Optimizer",
               "parameters must be defined leaf tensors that require grad (got one of shape ",
               p.defined() ? shape_str(p.sizes()) : "undefined", ")");
    for (const OptimizerParamGroup& existing : param_groups_)
      for (const Tensor& q : existing.params())
        NNVM_CHECK(!q.is_same(p), "Optimizer", "a parameter of shape ", shape_str(p.sizes()),
                   " appears in more than one parameter group");
  }
  OptimizerParamGroup added(group.params(), group.has_options() ? group.options().clone() : defaults_->clone());
  param_groups_.push_back(std::move(added));
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) {
    EnableGradGuard enable_grad;
    loss = closure();
  }
  memory::PhaseGuard phase(memory::Phase::kOptimizer);
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups_) update(group);
  // In traced mode the step ends the trace: forward, backward and update run
  // as one plan, and the next step's trace has the same signature.
  mark_step();
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups_)
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (set_to_none)
        p.mutable_grad() = Tensor();
      else
        p.mutable_grad() = zeros_like(p.grad());  // the gradient may alias another tensor
    }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const OptimizerParamGroup& group : param_groups_) out.insert(out.end(), group.params().begin(), group.params().end());
  return out;
}

size_t Optimizer::size() const { return parameters().size(); }

}  // namespace nnvm::optim
