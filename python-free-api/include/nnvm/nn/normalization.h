// BatchNorm2d, LayerNorm, GroupNorm, RMSNorm.
#pragma once

#include <optional>
#include <vector>

#include "nnvm/nn/module.h"

namespace nnvm::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(int64_t, num_features);
  NNVM_ARG(double, eps) = 1e-5;
  NNVM_ARG(double, momentum) = 0.1;
  NNVM_ARG(bool, affine) = true;
  NNVM_ARG(bool, track_running_stats) = true;
};
using BatchNorm2dOptions = BatchNormOptions;

// Training mode normalises with the batch statistics and updates the running
// ones in place; evaluation mode normalises with the running statistics.
// Buffers: running_mean, running_var, num_batches_tracked (int64), as libtorch.
class BatchNorm2dImpl : public Module {
 public:
  explicit BatchNorm2dImpl(const BatchNormOptions& options);
  void reset_parameters();
  void reset_running_stats();
  Tensor forward(const Tensor& x);

  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};
NNVM_MODULE(BatchNorm2d);

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  NNVM_ARG(std::vector<int64_t>, normalized_shape);
  NNVM_ARG(double, eps) = 1e-5;
  NNVM_ARG(bool, elementwise_affine) = true;
};

class LayerNormImpl : public Module {
 public:
  LayerNormImpl(std::vector<int64_t> normalized_shape) : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(const LayerNormOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x);

  LayerNormOptions options;
  Tensor weight, bias;
};
NNVM_MODULE(LayerNorm);

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  NNVM_ARG(int64_t, num_groups);
  NNVM_ARG(int64_t, num_channels);
  NNVM_ARG(double, eps) = 1e-5;
  NNVM_ARG(bool, affine) = true;
};

class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x);

  GroupNormOptions options;
  Tensor weight, bias;
};
NNVM_MODULE(GroupNorm);

// torch.nn.RMSNorm: eps unset means the machine epsilon of the input's dtype.
struct RMSNormOptions {
  RMSNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  NNVM_ARG(std::vector<int64_t>, normalized_shape);
  NNVM_ARG(std::optional<double>, eps) = std::nullopt;
  NNVM_ARG(bool, elementwise_affine) = true;
};

class RMSNormImpl : public Module {
 public:
  RMSNormImpl(std::vector<int64_t> normalized_shape) : RMSNormImpl(RMSNormOptions(std::move(normalized_shape))) {}
  explicit RMSNormImpl(const RMSNormOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x);

  RMSNormOptions options;
  Tensor weight;
};
NNVM_MODULE(RMSNorm);

}  // namespace nnvm::nn
