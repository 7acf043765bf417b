// nn::functional: each function maps libtorch's options onto one nnvm op.
#include "nnvm/nn/functional.h"

namespace nnvm::nn::functional {

namespace {

// libtorch's inplace option: the result is written into the input's memory,
// and the input (now holding it) is returned.
Tensor maybe_in_place(Tensor& input, const Tensor& result, bool inplace) {
  if (!inplace || result.is_same(input)) return result;
  return input.copy_(result);
}

// The core pad's name of a mode; kZeros belongs to Conv2d's padding_mode.
std::string_view pad_mode_name(PadMode mode) {
  NNVM_CHECK(mode != PadMode::Zeros, "pad", "mode kZeros is Conv2d's padding_mode: expected kConstant, kReflect, ",
             "kReplicate or kCircular");
  static constexpr std::string_view names[] = {"constant", "reflect", "replicate", "circular"};
  return names[int(mode)];
}

}  // namespace

Tensor relu(Tensor input, const ReLUFuncOptions& options) {
  return maybe_in_place(input, nnvm::relu(input), options.inplace());
}

Tensor relu6(Tensor input, const ReLU6FuncOptions& options) {
  return maybe_in_place(input, nnvm::relu6(input), options.inplace());
}

Tensor leaky_relu(Tensor input, const LeakyReLUFuncOptions& options) {
  return maybe_in_place(input, nnvm::leaky_relu(input, options.negative_slope()), options.inplace());
}

Tensor elu(Tensor input, const ELUFuncOptions& options) {
  return maybe_in_place(input, nnvm::elu(input, options.alpha()), options.inplace());
}

Tensor selu(Tensor input, const SELUFuncOptions& options) {
  return maybe_in_place(input, nnvm::selu(input), options.inplace());
}

Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options) {
  return maybe_in_place(input, nnvm::hardtanh(input, options.min_val(), options.max_val()), options.inplace());
}

Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options) {
  return nnvm::softplus(input, options.beta(), options.threshold());
}

Tensor gelu(const Tensor& input, const GELUFuncOptions& options) { return nnvm::gelu(input, options.approximate()); }
Tensor silu(const Tensor& input) { return nnvm::silu(input); }
Tensor sigmoid(const Tensor& input) { return input.sigmoid(); }
Tensor tanh(const Tensor& input) { return input.tanh(); }

Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options) {
  return nnvm::softmax(input, options.dim(), options.dtype());
}

Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options) {
  return nnvm::log_softmax(input, options.dim(), options.dtype());
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return nnvm::linear(input, weight, bias);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options) {
  return nnvm::conv1d(input, weight, options.bias(), options.stride(), options.padding(), options.dilation(),
                      options.groups());
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options) {
  return nnvm::conv2d(input, weight, options.bias(), options.stride(), options.padding(), options.dilation(),
                      options.groups());
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options) {
  return nnvm::conv_transpose2d(input, weight, options.bias(), options.stride(), options.padding(),
                                options.output_padding(), options.groups(), options.dilation());
}

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return nnvm::max_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                          options.ceil_mode());
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options) {
  return nnvm::avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                          options.count_include_pad());
}

Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options) {
  return nnvm::adaptive_avg_pool2d(input, options.output_size());
}

Tensor dropout(Tensor input, const DropoutFuncOptions& options) {
  return maybe_in_place(input, nnvm::dropout(input, options.p(), options.training()), options.inplace());
}

Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options) {
  return maybe_in_place(input, nnvm::dropout2d(input, options.p(), options.training()), options.inplace());
}

Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options) {
  return nnvm::layer_norm(input, options.normalized_shape(), options.weight(), options.bias(), options.eps());
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options) {
  NNVM_CHECK(options.momentum() || !options.training() || !running_mean.defined(), "batch_norm",
             "momentum must be set to update running statistics in training (input of shape ",
             input.defined() ? shape_str(input.sizes()) : "undefined", ")");
  return nnvm::batch_norm(input, running_mean, running_var, options.weight(), options.bias(), options.training(),
                          options.momentum().value_or(0.0), options.eps());
}

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options) {
  return nnvm::group_norm(input, options.num_groups(), options.weight(), options.bias(), options.eps());
}

Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options) {
  NNVM_CHECK(options.eps() >= 0, "normalize", "eps must be non-negative, got ", options.eps());
  return input / input.norm(options.p(), {options.dim()}, true).clamp_min(options.eps());
}

Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options) {
  return nnvm::embedding(weight, input, options.padding_idx());
}

Tensor one_hot(const Tensor& tensor, int64_t num_classes) { return nnvm::one_hot(tensor, num_classes); }

Tensor pad(const Tensor& input, const PadFuncOptions& options) {
  return nnvm::pad(input, options.pad(), pad_mode_name(options.mode()), options.value());
}

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options) {
  static constexpr std::string_view names[] = {"nearest", "linear",  "bilinear",     "bicubic",
                                               "trilinear", "area", "nearest-exact"};
  static constexpr std::string_view enum_names[] = {"kNearest", "kLinear", "kBilinear", "kBicubic",
                                                    "kTrilinear", "kArea", "kNearestExact"};
  const int m = int(options.mode());
  const std::string_view mode = names[m];
  // Set, even to false, it is an error with the nearest modes and area, as in libtorch.
  NNVM_CHECK(!options.align_corners() || (mode != "nearest" && mode != "nearest-exact" && mode != "area"),
             "interpolate", "align_corners can only be set with mode kLinear, kBilinear, kBicubic or kTrilinear, not ",
             enum_names[m]);
  return nnvm::interpolate(input, options.size(), options.scale_factor(), mode, options.align_corners().value_or(false));
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options) {
  return nnvm::cosine_similarity(x1, x2, options.dim(), options.eps());
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  return nnvm::l1_loss(input, target, options.reduction());
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  return nnvm::mse_loss(input, target, options.reduction());
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options) {
  return nnvm::smooth_l1_loss(input, target, options.reduction(), options.beta().value_or(1.0));
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
  return nnvm::huber_loss(input, target, options.reduction(), options.delta());
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  return nnvm::cross_entropy(input, target, options.weight(), options.reduction(), options.ignore_index(),
                             options.label_smoothing());
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
  return nnvm::nll_loss(input, target, options.weight(), options.reduction(), options.ignore_index());
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  return nnvm::binary_cross_entropy(input, target, options.weight(), options.reduction());
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  return nnvm::binary_cross_entropy_with_logits(input, target, options.weight(), options.reduction(),
                                                options.pos_weight());
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options) {
  if (const auto* reduction = std::get_if<Reduction>(&options.reduction()))
    return nnvm::kl_div(input, target, *reduction, options.log_target());
  const Tensor sum = nnvm::kl_div(input, target, kSum, options.log_target());
  return input.dim() == 0 ? sum : sum / double(input.size(0));
}

}  // namespace nnvm::nn::functional
