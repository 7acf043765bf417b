// RMSprop: the update of PyTorch's torch.optim.RMSprop (single-tensor form).
#include "nnvm/optim/rmsprop.h"

#include "nnvm/core/functions.h"

namespace nnvm::optim {

namespace {

struct RMSpropState : OptimizerParamState {
  Tensor square_avg, grad_avg, momentum_buffer;
  void visit(StateVisitor& v) override {
    v.field("square_avg", square_avg);
    v.field("grad_avg", grad_avg);
    v.field("momentum_buffer", momentum_buffer);
  }
};

void check(const RMSpropOptions& o) {
  NNVM_CHECK(o.lr() >= 0 && o.eps() >= 0 && o.weight_decay() >= 0 && o.momentum() >= 0 && o.alpha() >= 0,
             "RMSprop", "lr, alpha, eps, weight_decay and momentum must be non-negative, got ", o.lr(), ", ",
             o.alpha(), ", ", o.eps(), ", ", o.weight_decay(), " and ", o.momentum());
}

}  // namespace

RMSprop::RMSprop(std::vector<OptimizerParamGroup> param_groups, const RMSpropOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {
  check(defaults);
}

std::unique_ptr<OptimizerParamState> RMSprop::make_state() const { return std::make_unique<RMSpropState>(); }

void RMSprop::update(OptimizerParamGroup& group) {
  const auto& o = static_cast<const RMSpropOptions&>(group.options());
  check(o);
  const double alpha = o.alpha();
  for (Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    const Tensor g = o.weight_decay() != 0 ? p.grad().add(p, Scalar(o.weight_decay())) : p.grad();
    RMSpropState& s = state_of<RMSpropState>(p);
    if (!s.square_avg.defined()) s.square_avg = zeros_like(p);
    s.square_avg.mul_(Scalar(alpha)).add_(g * g, Scalar(1 - alpha));
    Tensor avg;
    if (o.centered()) {
      if (!s.grad_avg.defined()) s.grad_avg = zeros_like(p);
      s.grad_avg.mul_(Scalar(alpha)).add_(g, Scalar(1 - alpha));
      avg = (s.square_avg - s.grad_avg * s.grad_avg).sqrt() + Scalar(o.eps());
    } else {
      avg = s.square_avg.sqrt() + Scalar(o.eps());
    }
    if (o.momentum() > 0) {
      if (!s.momentum_buffer.defined()) s.momentum_buffer = zeros_like(p);
      s.momentum_buffer.mul_(Scalar(o.momentum())).add_(g / avg);
      p.sub_(s.momentum_buffer, Scalar(o.lr()));
    } else {
      p.sub_(g / avg, Scalar(o.lr()));
    }
  }
}

}  // namespace nnvm::optim
