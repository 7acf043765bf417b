// MultiheadAttention: softmax(Q Kᵀ / √head_dim + mask) V per head, with
// PyTorch's parameter names (in_proj_weight [3E, E], in_proj_bias [3E],
// out_proj.weight, out_proj.bias) so checkpoints map one to one.
#pragma once

#include <tuple>

#include "nnvm/nn/linear.h"
#include "nnvm/nn/module.h"

namespace nnvm::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim_(embed_dim), num_heads_(num_heads) {}
  NNVM_ARG(int64_t, embed_dim);
  NNVM_ARG(int64_t, num_heads);
  NNVM_ARG(double, dropout) = 0.0;  // on the attention weights, in training mode
  NNVM_ARG(bool, bias) = true;
  // true: inputs are [batch, seq, embed]; false (libtorch's default): [seq, batch, embed].
  NNVM_ARG(bool, batch_first) = false;
};

class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  void reset_parameters();

  // Returns (output, attention weights averaged over heads [batch, L, S]; undefined unless need_weights).
  // key_padding_mask [batch, S]: true marks keys to ignore (a floating mask is added instead).
  // attn_mask [L, S] or [batch * heads, L, S]: true marks pairs to ignore (a floating mask is added).
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true);

  MultiheadAttentionOptions options;
  int64_t head_dim;
  Tensor in_proj_weight, in_proj_bias;
  Linear out_proj = nullptr;
};
NNVM_MODULE(MultiheadAttention);

}  // namespace nnvm::nn
