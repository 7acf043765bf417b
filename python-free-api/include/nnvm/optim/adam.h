// Adam (optionally AMSGrad) with L2 weight decay, and AdamW with decoupled
// weight decay (PyTorch's update rules, bias-corrected moments).
#pragma once

#include <tuple>

#include "nnvm/optim/optimizer.h"

namespace nnvm::optim {

using Betas = std::tuple<double, double>;

namespace detail {
// The fields of Adam's and AdamW's options, in checkpoints.
inline void visit_adam_options(OptionsVisitor& v, double& lr, Betas& betas, double& eps, double& weight_decay,
                               bool& amsgrad) {
  v.field("lr", lr);
  v.field("beta1", std::get<0>(betas));
  v.field("beta2", std::get<1>(betas));
  v.field("eps", eps);
  v.field("weight_decay", weight_decay);
  v.field("amsgrad", amsgrad);
}
}  // namespace detail

struct AdamOptions : OptimizerCloneableOptions<AdamOptions> {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, like libtorch
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void visit(OptionsVisitor& v) override { detail::visit_adam_options(v, lr_, betas_, eps_, weight_decay_, amsgrad_); }
  NNVM_ARG(double, lr);
  NNVM_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  NNVM_ARG(double, eps) = 1e-8;
  NNVM_ARG(double, weight_decay) = 0;
  NNVM_ARG(bool, amsgrad) = false;
};

struct AdamWOptions : OptimizerCloneableOptions<AdamWOptions> {
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void visit(OptionsVisitor& v) override { detail::visit_adam_options(v, lr_, betas_, eps_, weight_decay_, amsgrad_); }
  NNVM_ARG(double, lr);
  NNVM_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  NNVM_ARG(double, eps) = 1e-8;
  NNVM_ARG(double, weight_decay) = 1e-2;
  NNVM_ARG(bool, amsgrad) = false;
};

// g += wd·p; m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²; v̂ = max(v̂, v) with amsgrad;
// p -= lr / (1-β1^t) · m / (√v / √(1-β2^t) + eps).
class Adam : public Optimizer {
 public:
  Adam(std::vector<OptimizerParamGroup> param_groups, const AdamOptions& defaults);
  Adam(std::vector<Tensor> params, const AdamOptions& defaults = {})
      : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  std::string_view name() const override { return "Adam"; }

 protected:
  void update(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_state() const override;
};

// p *= 1 - lr·wd, then Adam's step without the L2 term.
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<OptimizerParamGroup> param_groups, const AdamWOptions& defaults);
  AdamW(std::vector<Tensor> params, const AdamWOptions& defaults = {})
      : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  std::string_view name() const override { return "AdamW"; }

 protected:
  void update(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_state() const override;
};

}  // namespace nnvm::optim
