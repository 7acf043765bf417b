// Adam and AdamW: the updates of PyTorch's torch.optim.Adam / AdamW (single-tensor form).
#include "nnvm/optim/adam.h"

#include <cmath>

#include "nnvm/core/functions.h"

namespace nnvm::optim {

namespace {

struct AdamState : OptimizerParamState {
  int64_t step = 0;
  Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  void visit(StateVisitor& v) override {
    v.field("step", step);
    v.field("exp_avg", exp_avg);
    v.field("exp_avg_sq", exp_avg_sq);
    v.field("max_exp_avg_sq", max_exp_avg_sq);
  }
};

void check(std::string_view name, double lr, const Betas& betas, double eps, double weight_decay) {
  const auto [beta1, beta2] = betas;
  NNVM_CHECK(lr >= 0 && eps >= 0 && weight_decay >= 0, name, "lr, eps and weight_decay must be non-negative, got ",
             lr, ", ", eps, " and ", weight_decay);
  NNVM_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, name, "betas must be in [0, 1), got (", beta1,
             ", ", beta2, ")");
}

// One bias-corrected Adam step of p along gradient g.
void adam_step(Tensor& p, const Tensor& g, AdamState& s, double lr, const Betas& betas, double eps, bool amsgrad) {
  const auto [beta1, beta2] = betas;
  if (s.step == 0) {
    s.exp_avg = zeros_like(p);
    s.exp_avg_sq = zeros_like(p);
    if (amsgrad) s.max_exp_avg_sq = zeros_like(p);
  }
  ++s.step;
  s.exp_avg.mul_(Scalar(beta1)).add_(g, Scalar(1 - beta1));
  s.exp_avg_sq.mul_(Scalar(beta2)).add_(g * g, Scalar(1 - beta2));
  const double bias_correction1 = 1 - std::pow(beta1, double(s.step));
  const double bias_correction2 = 1 - std::pow(beta2, double(s.step));
  Tensor second = s.exp_avg_sq;
  if (amsgrad) {
    if (!s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = zeros_like(p);
    s.max_exp_avg_sq.maximum_(s.exp_avg_sq);
    second = s.max_exp_avg_sq;
  }
  const Tensor denom = second.sqrt() * Scalar(1 / std::sqrt(bias_correction2)) + Scalar(eps);
  p.sub_(s.exp_avg / denom, Scalar(lr / bias_correction1));
}

}  // namespace

Adam::Adam(std::vector<OptimizerParamGroup> param_groups, const AdamOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {
  check("Adam", defaults.lr(), defaults.betas(), defaults.eps(), defaults.weight_decay());
}

std::unique_ptr<OptimizerParamState> Adam::make_state() const { return std::make_unique<AdamState>(); }

void Adam::update(OptimizerParamGroup& group) {
  const auto& o = static_cast<const AdamOptions&>(group.options());
  check("Adam", o.lr(), o.betas(), o.eps(), o.weight_decay());
  for (Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    const Tensor g = o.weight_decay() != 0 ? p.grad().add(p, Scalar(o.weight_decay())) : p.grad();
    adam_step(p, g, state_of<AdamState>(p), o.lr(), o.betas(), o.eps(), o.amsgrad());
  }
}

AdamW::AdamW(std::vector<OptimizerParamGroup> param_groups, const AdamWOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {
  check("AdamW", defaults.lr(), defaults.betas(), defaults.eps(), defaults.weight_decay());
}

std::unique_ptr<OptimizerParamState> AdamW::make_state() const { return std::make_unique<AdamState>(); }

void AdamW::update(OptimizerParamGroup& group) {
  const auto& o = static_cast<const AdamWOptions&>(group.options());
  check("AdamW", o.lr(), o.betas(), o.eps(), o.weight_decay());
  for (Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    if (o.weight_decay() != 0) p.mul_(Scalar(1 - o.lr() * o.weight_decay()));
    adam_step(p, p.grad(), state_of<AdamState>(p), o.lr(), o.betas(), o.eps(), o.amsgrad());
  }
}

}  // namespace nnvm::optim
