// Free functions that libtorch has in namespace torch and nnvm's op table has
// no op for: losses, activations and channel dropout composed from existing
// ops, so autograd, tracing and fusion handle them with nothing new. Also the
// reduction tokens of libtorch's loss options (torch::kMean -> nnvm::kMean)
// and the mode tokens of pad, interpolate and Conv2d's padding_mode.
// nn::functional (nn/functional.h) and the nn modules call these.
#pragma once

#include "nnvm/core/functions.h"

namespace nnvm {

inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
// kl_div's fourth reduction (torch::kBatchMean): the sum divided by the batch
// size, the true mean of the KL divergence.
struct BatchMean {};
inline constexpr BatchMean kBatchMean{};

// pad's modes (torch::kReflect), and kZeros, which only Conv2d's padding_mode
// takes (libtorch's F::pad has no kZeros; Conv2d none of kConstant).
enum class PadMode { Constant, Reflect, Replicate, Circular, Zeros };
inline constexpr PadMode kConstant = PadMode::Constant;
inline constexpr PadMode kReflect = PadMode::Reflect;
inline constexpr PadMode kReplicate = PadMode::Replicate;
inline constexpr PadMode kCircular = PadMode::Circular;
inline constexpr PadMode kZeros = PadMode::Zeros;
enum class InterpolateMode { Nearest, Linear, Bilinear, Bicubic, Trilinear, Area, NearestExact };
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kNearestExact = InterpolateMode::NearestExact;
inline constexpr InterpolateMode kLinear = InterpolateMode::Linear;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;
inline constexpr InterpolateMode kBicubic = InterpolateMode::Bicubic;
inline constexpr InterpolateMode kTrilinear = InterpolateMode::Trilinear;
inline constexpr InterpolateMode kArea = InterpolateMode::Area;

// ---- activations ----
// x clamped to [min_val, max_val]; min_val must be below max_val.
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor relu6(const Tensor& x);
// scale * elu(x, alpha) with the self-normalising constants of Klambauer et al. (2017).
Tensor selu(const Tensor& x);

// Zeroes each whole channel (x[n, c, ...]) with probability p and scales the
// rest by 1 / (1 - p) in training; the identity otherwise. x: [N, C, H, W], or
// [N, C, L] (libtorch's feature dropout draws one value per (n, c) either way).
Tensor dropout2d(const Tensor& x, double p, bool train, Generator* gen = nullptr);

// sum(x1 * x2) / (max(|x1|, eps) * max(|x2|, eps)) along dim, x1 and x2 broadcast.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);

// ---- losses (input and target of the same shape) ----
// 0.5 d² / beta where |d| < beta, else |d| - 0.5 beta, with d = input - target;
// beta = 0 is the L1 loss.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
// 0.5 d² where |d| < delta, else delta (|d| - 0.5 delta): smooth_l1_loss times delta.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// -weight (y log x + (1 - y) log(1 - x)) for probabilities x, each log floored at
// -100 as in PyTorch, so that a confident wrong answer costs 100, not infinity.
// weight (optional) broadcasts to input's shape.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = Reduction::Mean);
// KL(target || exp(input)) per element for log-probabilities `input`:
// target (log target - input), 0 where target is 0; with log_target the target
// is given as log-probabilities too. Mean divides by every element; the
// batch mean (the true KL mean) is nn::functional::kl_div with kBatchMean.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);

}  // namespace nnvm
