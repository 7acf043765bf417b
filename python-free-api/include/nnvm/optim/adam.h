// Adam (optionally AMSGrad) with L2 weight decay, and AdamW with decoupled
// weight decay (PyTorch's update rules, bias-corrected moments).
#pragma once

#include <tuple>

#include "nnvm/optim/optimizer.h"

namespace nnvm::optim {

using Betas = std::tuple<double, double>;

struct AdamOptions : OptimizerCloneableOptions<AdamOptions> {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, like libtorch
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
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

 protected:
  void update(OptimizerParamGroup& group) override;
};

// p *= 1 - lr·wd, then Adam's step without the L2 term.
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<OptimizerParamGroup> param_groups, const AdamWOptions& defaults);
  AdamW(std::vector<Tensor> params, const AdamWOptions& defaults = {})
      : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

 protected:
  void update(OptimizerParamGroup& group) override;
};

}  // namespace nnvm::optim
