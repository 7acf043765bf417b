// nn::functional: libtorch's torch::nn::functional over nnvm's ops, with its
// names, argument order and option structs, so that
//
//   namespace F = nnvm::nn::functional;
//   y = F::gelu(x, F::GELUFuncOptions().approximate("tanh"));
//   loss = F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().label_smoothing(0.1));
//
// ports from libtorch with the namespace change. An options struct shared with
// a module is the module's (F::LeakyReLUFuncOptions is nn::LeakyReLUOptions),
// as in libtorch; modules' forwards call these functions. Each function only
// maps its options onto an op of core/functions.h or nn/ops.h, which check the
// shapes and values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nnvm/core/functions.h"
#include "nnvm/nn/activation.h"
#include "nnvm/nn/embedding.h"
#include "nnvm/nn/expanding_array.h"
#include "nnvm/nn/loss.h"
#include "nnvm/nn/normalization.h"
#include "nnvm/nn/ops.h"
#include "nnvm/nn/pooling.h"

namespace nnvm::nn::functional {

// ---- activations (inplace overwrites the input and returns it) ----
using ReLUFuncOptions = ReLUOptions;
using ReLU6FuncOptions = ReLU6Options;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using ELUFuncOptions = ELUOptions;
using SELUFuncOptions = SELUOptions;
using HardtanhFuncOptions = HardtanhOptions;
using SoftplusFuncOptions = SoftplusOptions;
using GELUFuncOptions = GELUOptions;

Tensor relu(Tensor input, const ReLUFuncOptions& options = {});
Tensor relu6(Tensor input, const ReLU6FuncOptions& options = {});
Tensor leaky_relu(Tensor input, const LeakyReLUFuncOptions& options = {});
Tensor elu(Tensor input, const ELUFuncOptions& options = {});
Tensor selu(Tensor input, const SELUFuncOptions& options = {});
Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options = {});
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options = {});
Tensor gelu(const Tensor& input, const GELUFuncOptions& options = {});
Tensor silu(const Tensor& input);
Tensor sigmoid(const Tensor& input);
Tensor tanh(const Tensor& input);

struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(int64_t, dim);
  NNVM_ARG(std::optional<DType>, dtype) = std::nullopt;  // cast the input to it first
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;

Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options);
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options);

// ---- linear and convolution ----
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});

template <size_t D> struct ConvFuncOptions {
  NNVM_ARG(Tensor, bias);
  NNVM_ARG(ExpandingArray<D>, stride) = 1;
  NNVM_ARG(ExpandingArray<D>, padding) = 0;
  NNVM_ARG(ExpandingArray<D>, dilation) = 1;
  NNVM_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;

template <size_t D> struct ConvTransposeFuncOptions {
  NNVM_ARG(Tensor, bias);
  NNVM_ARG(ExpandingArray<D>, stride) = 1;
  NNVM_ARG(ExpandingArray<D>, padding) = 0;
  NNVM_ARG(ExpandingArray<D>, output_padding) = 0;
  NNVM_ARG(int64_t, groups) = 1;
  NNVM_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;

Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options = {});
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options = {});

// ---- pooling ----
using MaxPool2dFuncOptions = MaxPool2dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options);

// ---- dropout ----
struct DropoutFuncOptions {
  NNVM_ARG(double, p) = 0.5;
  NNVM_ARG(bool, training) = true;
  NNVM_ARG(bool, inplace) = false;
};
using Dropout2dFuncOptions = DropoutFuncOptions;

Tensor dropout(Tensor input, const DropoutFuncOptions& options = {});
Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options = {});

// ---- normalisation ----
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape)  // NOLINT: implicit, like libtorch
      : normalized_shape_(std::move(normalized_shape)) {}
  NNVM_ARG(std::vector<int64_t>, normalized_shape);
  NNVM_ARG(Tensor, weight);
  NNVM_ARG(Tensor, bias);
  NNVM_ARG(double, eps) = 1e-5;
};

struct BatchNormFuncOptions {
  NNVM_ARG(Tensor, weight);
  NNVM_ARG(Tensor, bias);
  NNVM_ARG(bool, training) = false;
  // Must be set to train with running statistics (libtorch's cumulative
  // average needs the module's batch count).
  NNVM_ARG(std::optional<double>, momentum) = 0.1;
  NNVM_ARG(double, eps) = 1e-5;
};

struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(int64_t, num_groups);
  NNVM_ARG(Tensor, weight);
  NNVM_ARG(Tensor, bias);
  NNVM_ARG(double, eps) = 1e-5;
};

// input / max(‖input‖_p, eps) along dim.
struct NormalizeFuncOptions {
  NNVM_ARG(double, p) = 2.0;
  NNVM_ARG(int64_t, dim) = 1;
  NNVM_ARG(double, eps) = 1e-12;
};

Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options = {});
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options);
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options = {});

// ---- embeddings, shapes, similarity ----
struct EmbeddingFuncOptions {
  NNVM_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

struct PadFuncOptions {
  // (before, after) pairs from the last dim backwards
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(std::vector<int64_t>, pad);
  NNVM_ARG(PadMode, mode) = kConstant;
  NNVM_ARG(double, value) = 0.0;
};

// Give exactly one of size and scale_factor: a value per spatial dim ([H, W]
// of a [N, C, H, W] input), or one for all of them.
struct InterpolateFuncOptions {
  NNVM_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  NNVM_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  NNVM_ARG(InterpolateMode, mode) = kNearest;
  // linear, bilinear, bicubic and trilinear only; unset is false
  NNVM_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

struct CosineSimilarityFuncOptions {
  NNVM_ARG(int64_t, dim) = 1;
  NNVM_ARG(double, eps) = 1e-8;
};

Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options = {});
Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);
Tensor pad(const Tensor& input, const PadFuncOptions& options);
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options = {});
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options = {});

// ---- losses (reductions nnvm::kMean, kSum, kNone; kl_div also kBatchMean) ----
using L1LossFuncOptions = L1LossOptions;
using MSELossFuncOptions = MSELossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using KLDivFuncOptions = KLDivLossOptions;

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options = {});
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options = {});
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {});

}  // namespace nnvm::nn::functional
