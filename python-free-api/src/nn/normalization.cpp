// BatchNorm2d, LayerNorm, GroupNorm, RMSNorm: affine parameters start at weight 1, bias 0.
#include "nnvm/nn/normalization.h"

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/nn/init.h"

namespace nnvm::nn {

BatchNorm2dImpl::BatchNorm2dImpl(const BatchNormOptions& options) : Module("BatchNorm2d"), options(options) {
  const int64_t c = options.num_features();
  NNVM_CHECK(c > 0, "BatchNorm2d", "num_features must be positive, got ", c);
  if (options.affine()) {
    weight = register_parameter("weight", empty({c}));
    bias = register_parameter("bias", empty({c}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", zeros({c}));
    running_var = register_buffer("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
  reset_parameters();
}

void BatchNorm2dImpl::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNorm2dImpl::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor BatchNorm2dImpl::forward(const Tensor& x) {
  NNVM_CHECK(x.defined() && x.dim() == 4, "BatchNorm2d", "expected a 4-D input [N, C, H, W], got ",
             x.defined() ? shape_str(x.sizes()) : "an undefined tensor");
  // Without running statistics there is nothing to evaluate with: batch statistics are used in both modes.
  const bool use_batch_stats = is_training() || !options.track_running_stats();
  if (is_training() && options.track_running_stats()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return batch_norm(x, running_mean, running_var, weight, bias, use_batch_stats, options.momentum(), options.eps());
}

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options) : Module("LayerNorm"), options(options) {
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", nnvm::empty(options.normalized_shape()));
    bias = register_parameter("bias", nnvm::empty(options.normalized_shape()));
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (!options.elementwise_affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& x) {
  return layer_norm(x, options.normalized_shape(), weight, bias, options.eps());
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options) : Module("GroupNorm"), options(options) {
  const int64_t groups = options.num_groups(), channels = options.num_channels();
  NNVM_CHECK(groups > 0 && channels > 0 && channels % groups == 0, "GroupNorm", "num_channels ", channels,
             " must be a positive multiple of num_groups ", groups);
  if (options.affine()) {
    weight = register_parameter("weight", empty({channels}));
    bias = register_parameter("bias", empty({channels}));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& x) {
  return group_norm(x, options.num_groups(), weight, bias, options.eps());
}

RMSNormImpl::RMSNormImpl(const RMSNormOptions& options) : Module("RMSNorm"), options(options) {
  if (options.elementwise_affine()) weight = register_parameter("weight", nnvm::empty(options.normalized_shape()));
  reset_parameters();
}

void RMSNormImpl::reset_parameters() {
  if (options.elementwise_affine()) init::ones_(weight);
}

Tensor RMSNormImpl::forward(const Tensor& x) { return rms_norm(x, options.normalized_shape(), weight, options.eps()); }

}  // namespace nnvm::nn
