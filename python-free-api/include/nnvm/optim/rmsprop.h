// RMSprop with momentum and the centered variant (PyTorch's update rule).
#pragma once

#include "nnvm/optim/optimizer.h"

namespace nnvm::optim {

struct RMSpropOptions : OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, like libtorch
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void visit(OptionsVisitor& v) override {
    v.field("lr", lr_);
    v.field("alpha", alpha_);
    v.field("eps", eps_);
    v.field("weight_decay", weight_decay_);
    v.field("momentum", momentum_);
    v.field("centered", centered_);
  }
  NNVM_ARG(double, lr);
  NNVM_ARG(double, alpha) = 0.99;
  NNVM_ARG(double, eps) = 1e-8;
  NNVM_ARG(double, weight_decay) = 0;
  NNVM_ARG(double, momentum) = 0;
  NNVM_ARG(bool, centered) = false;
};

// g += wd·p; v = α·v + (1-α)·g²; centered: a = α·a + (1-α)·g, d = √(v - a²) + eps, else d = √v + eps;
// momentum: b = momentum·b + g/d, p -= lr·b; otherwise p -= lr·g/d.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<OptimizerParamGroup> param_groups, const RMSpropOptions& defaults);
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults = {})
      : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  std::string_view name() const override { return "RMSprop"; }

 protected:
  void update(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_state() const override;
};

}  // namespace nnvm::optim
