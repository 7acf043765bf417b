// The loss modules: options held, forward in nn::functional. The weighted
// ones pass their buffers rather than the options' tensors, so a module moved
// to another dtype or loaded from a state dict uses the moved or loaded weights.
#include "nnvm/nn/loss.h"

#include "nnvm/nn/functional.h"

namespace nnvm::nn {

namespace F = functional;

L1LossImpl::L1LossImpl(const L1LossOptions& options) : Module("L1Loss"), options(options) {}
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) { return F::l1_loss(input, target, options); }

MSELossImpl::MSELossImpl(const MSELossOptions& options) : Module("MSELoss"), options(options) {}
Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) { return F::mse_loss(input, target, options); }

SmoothL1LossImpl::SmoothL1LossImpl(const SmoothL1LossOptions& options) : Module("SmoothL1Loss"), options(options) {}
Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::smooth_l1_loss(input, target, options);
}

HuberLossImpl::HuberLossImpl(const HuberLossOptions& options) : Module("HuberLoss"), options(options) {}
Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::huber_loss(input, target, options);
}

KLDivLossImpl::KLDivLossImpl(const KLDivLossOptions& options) : Module("KLDivLoss"), options(options) {}
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) { return F::kl_div(input, target, options); }

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options)
    : Module("CrossEntropyLoss"), options(options) {
  weight = register_buffer("weight", options.weight());
}

Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::cross_entropy(input, target, CrossEntropyLossOptions(options).weight(weight));
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& options) : Module("NLLLoss"), options(options) {
  weight = register_buffer("weight", options.weight());
}

Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::nll_loss(input, target, NLLLossOptions(options).weight(weight));
}

BCELossImpl::BCELossImpl(const BCELossOptions& options) : Module("BCELoss"), options(options) {
  weight = register_buffer("weight", options.weight());
}

Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy(input, target, BCELossOptions(options).weight(weight));
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options)
    : Module("BCEWithLogitsLoss"), options(options) {
  weight = register_buffer("weight", options.weight());
  pos_weight = register_buffer("pos_weight", options.pos_weight());
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy_with_logits(input, target,
                                             BCEWithLogitsLossOptions(options).weight(weight).pos_weight(pos_weight));
}

}  // namespace nnvm::nn
