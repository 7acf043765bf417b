// Loss modules (libtorch's torch::nn::MSELoss, CrossEntropyLoss, ...): each
// holds its options and forwards (input, target) to nn::functional
// (src/nn/loss.cpp). Class weights are buffers named as libtorch's ("weight",
// "pos_weight"), so they follow module->to(dtype) and appear in state_dict.
#pragma once

#include <optional>
#include <variant>

#include "nnvm/nn/module.h"
#include "nnvm/nn/ops.h"

namespace nnvm::nn {

struct L1LossOptions {
  L1LossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(Reduction, reduction);
};

struct MSELossOptions {
  MSELossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(Reduction, reduction);
};

struct SmoothL1LossOptions {
  SmoothL1LossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(Reduction, reduction);
  NNVM_ARG(std::optional<double>, beta) = std::nullopt;  // unset: 1.0, as libtorch
};

struct HuberLossOptions {
  HuberLossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(Reduction, reduction);
  NNVM_ARG(double, delta) = 1.0;
};

struct CrossEntropyLossOptions {
  NNVM_ARG(Tensor, weight);  // [C], optional
  NNVM_ARG(int64_t, ignore_index) = -100;
  NNVM_ARG(Reduction, reduction) = kMean;
  NNVM_ARG(double, label_smoothing) = 0.0;
};

struct NLLLossOptions {
  NNVM_ARG(Tensor, weight);  // [C], optional
  NNVM_ARG(int64_t, ignore_index) = -100;
  NNVM_ARG(Reduction, reduction) = kMean;
};

struct BCELossOptions {
  NNVM_ARG(Tensor, weight);  // broadcast to the input, optional
  NNVM_ARG(Reduction, reduction) = kMean;
};

struct BCEWithLogitsLossOptions {
  NNVM_ARG(Tensor, weight);  // broadcast to the input, optional
  NNVM_ARG(Reduction, reduction) = kMean;
  NNVM_ARG(Tensor, pos_weight);  // per class, broadcast to the input, optional
};

// kl_div's reductions: Reduction's and kBatchMean.
using KLDivReduction = std::variant<Reduction, BatchMean>;

struct KLDivLossOptions {
  KLDivLossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT: implicit, like libtorch
  KLDivLossOptions(BatchMean reduction) : reduction_(reduction) {}          // NOLINT
  NNVM_ARG(KLDivReduction, reduction);
  NNVM_ARG(bool, log_target) = false;
};

class L1LossImpl : public Module {
 public:
  explicit L1LossImpl(const L1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  L1LossOptions options;
};
NNVM_MODULE(L1Loss);

class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  MSELossOptions options;
};
NNVM_MODULE(MSELoss);

class SmoothL1LossImpl : public Module {
 public:
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  SmoothL1LossOptions options;
};
NNVM_MODULE(SmoothL1Loss);

class HuberLossImpl : public Module {
 public:
  explicit HuberLossImpl(const HuberLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  HuberLossOptions options;
};
NNVM_MODULE(HuberLoss);

class KLDivLossImpl : public Module {
 public:
  explicit KLDivLossImpl(const KLDivLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  KLDivLossOptions options;
};
NNVM_MODULE(KLDivLoss);

// The weighted losses keep their weights as buffers (undefined when not given).
class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  CrossEntropyLossOptions options;
  Tensor weight;
};
NNVM_MODULE(CrossEntropyLoss);

class NLLLossImpl : public Module {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  NLLLossOptions options;
  Tensor weight;
};
NNVM_MODULE(NLLLoss);

class BCELossImpl : public Module {
 public:
  explicit BCELossImpl(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  BCELossOptions options;
  Tensor weight;
};
NNVM_MODULE(BCELoss);

class BCEWithLogitsLossImpl : public Module {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);

  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;
};
NNVM_MODULE(BCEWithLogitsLoss);

}  // namespace nnvm::nn
