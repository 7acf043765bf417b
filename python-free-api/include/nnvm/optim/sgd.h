// SGD with momentum, dampening, Nesterov momentum and weight decay (PyTorch's update rule).
#pragma once

#include "nnvm/optim/optimizer.h"

namespace nnvm::optim {

struct SGDOptions : OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: implicit, like libtorch
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void visit(OptionsVisitor& v) override {
    v.field("lr", lr_);
    v.field("momentum", momentum_);
    v.field("dampening", dampening_);
    v.field("weight_decay", weight_decay_);
    v.field("nesterov", nesterov_);
  }
  NNVM_ARG(double, lr);
  NNVM_ARG(double, momentum) = 0;
  NNVM_ARG(double, dampening) = 0;
  NNVM_ARG(double, weight_decay) = 0;
  NNVM_ARG(bool, nesterov) = false;
};

// d = g + wd·p; b = d on the first step, else momentum·b + (1 - dampening)·d;
// d = d + momentum·b (Nesterov) or b; p -= lr·d.
class SGD : public Optimizer {
 public:
  SGD(std::vector<OptimizerParamGroup> param_groups, const SGDOptions& defaults);
  SGD(std::vector<Tensor> params, const SGDOptions& defaults)
      : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  std::string_view name() const override { return "SGD"; }

 protected:
  void update(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_state() const override;
};

}  // namespace nnvm::optim
