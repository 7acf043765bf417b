// TransformerEncoderLayer: self-attention then a feed-forward block, each
// with a residual connection and layer norm (after it by default, before it
// with norm_first), as PyTorch's nn.TransformerEncoderLayer; and
// TransformerEncoder, a stack of such layers with an optional final norm.
#pragma once

#include <functional>
#include <utility>
#include <variant>

#include "nnvm/nn/activation.h"
#include "nnvm/nn/any_module.h"
#include "nnvm/nn/attention.h"
#include "nnvm/nn/container.h"
#include "nnvm/nn/linear.h"
#include "nnvm/nn/normalization.h"

namespace nnvm {

// libtorch's activation tokens (torch::kReLU, torch::kGELU): each its own
// type, so that TransformerActivation can hold either or a function.
namespace enumtype {
struct kReLU {};
struct kGELU {};
}  // namespace enumtype
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kGELU kGELU{};

}  // namespace nnvm

namespace nnvm::nn {

using TransformerActivation = std::variant<enumtype::kReLU, enumtype::kGELU, std::function<Tensor(const Tensor&)>>;

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  NNVM_ARG(int64_t, d_model);
  NNVM_ARG(int64_t, nhead);
  NNVM_ARG(int64_t, dim_feedforward) = 2048;
  NNVM_ARG(double, dropout) = 0.1;
  NNVM_ARG(TransformerActivation, activation) = kReLU;  // kReLU, kGELU (exact) or a function
  NNVM_ARG(double, layer_norm_eps) = 1e-5;
  NNVM_ARG(bool, batch_first) = false;
  NNVM_ARG(bool, norm_first) = false;
};

class TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  // src_mask: attn_mask of MultiheadAttention; src_key_padding_mask: its key_padding_mask.
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Linear linear1 = nullptr, linear2 = nullptr;
  Dropout dropout = nullptr, dropout1 = nullptr, dropout2 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr;

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& key_padding_mask);
  Tensor feed_forward_block(const Tensor& x);
};
NNVM_MODULE(TransformerEncoderLayer);

struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& encoder_layer_options, int64_t num_layers)
      : encoder_layer_(encoder_layer_options), num_layers_(num_layers) {}
  NNVM_ARG(TransformerEncoderLayer, encoder_layer);
  NNVM_ARG(int64_t, num_layers);
  NNVM_ARG(AnyModule, norm);  // applied after the last layer when set (a LayerNorm, usually)
};

// num_layers copies of encoder_layer, applied in turn with the same masks,
// then the norm when the options have one. Each copy starts with
// encoder_layer's parameters, as libtorch's clone does (the layer given is a
// template, not one of the stack); the norm is a copy too, registered as
// "norm" as in PyTorch's state dicts.
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : TransformerEncoderImpl(TransformerEncoderOptions(std::move(encoder_layer), num_layers)) {}
  explicit TransformerEncoderImpl(const TransformerEncoderOptions& options);
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});

  TransformerEncoderOptions options;
  ModuleList layers = nullptr;  // layers.0 ... layers.<num_layers - 1>, PyTorch's names
  AnyModule norm;                // empty unless the options have one
};
NNVM_MODULE(TransformerEncoder);

}  // namespace nnvm::nn
