// SGD: the update of PyTorch's torch.optim.SGD (single-tensor form).
#include "nnvm/optim/sgd.h"

namespace nnvm::optim {

namespace {

struct SGDState : OptimizerParamState {
  Tensor momentum_buffer;
  void visit(StateVisitor& v) override { v.field("momentum_buffer", momentum_buffer); }
};

void check(const SGDOptions& o) {
  NNVM_CHECK(o.lr() >= 0 && o.momentum() >= 0 && o.weight_decay() >= 0, "SGD",
             "lr, momentum and weight_decay must be non-negative, got ", o.lr(), ", ", o.momentum(), " and ",
             o.weight_decay());
  NNVM_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0), "SGD",
             "Nesterov momentum requires a positive momentum and zero dampening, got momentum ", o.momentum(),
             " and dampening ", o.dampening());
}

}  // namespace

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, const SGDOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {
  check(defaults);
}

std::unique_ptr<OptimizerParamState> SGD::make_state() const { return std::make_unique<SGDState>(); }

void SGD::update(OptimizerParamGroup& group) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
  check(o);
  for (Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    Tensor d = p.grad();
    if (o.weight_decay() != 0) d = d.add(p, Scalar(o.weight_decay()));
    if (o.momentum() != 0) {
      Tensor& buf = state_of<SGDState>(p).momentum_buffer;
      if (!buf.defined())
        buf = d.clone();
      else
        buf.mul_(Scalar(o.momentum())).add_(d, Scalar(1 - o.dampening()));
      d = o.nesterov() ? d.add(buf, Scalar(o.momentum())) : buf;
    }
    p.sub_(d, Scalar(o.lr()));
  }
}

}  // namespace nnvm::optim
