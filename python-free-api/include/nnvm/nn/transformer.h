// TransformerEncoderLayer: self-attention then a feed-forward block, each
// with a residual connection and layer norm (after it by default, before it
// with norm_first), as PyTorch's nn.TransformerEncoderLayer.
#pragma once

#include <string>

#include "nnvm/nn/activation.h"
#include "nnvm/nn/attention.h"
#include "nnvm/nn/linear.h"
#include "nnvm/nn/normalization.h"

namespace nnvm::nn {

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  NNVM_ARG(int64_t, d_model);
  NNVM_ARG(int64_t, nhead);
  NNVM_ARG(int64_t, dim_feedforward) = 2048;
  NNVM_ARG(double, dropout) = 0.1;
  NNVM_ARG(std::string, activation) = "relu";  // "relu" or "gelu"
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

}  // namespace nnvm::nn
