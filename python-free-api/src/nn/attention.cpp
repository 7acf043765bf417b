// MultiheadAttention, computed batch first: [B, L, E] -> heads [B, H, L, D].
#include "nnvm/nn/attention.h"

#include <cmath>
#include <limits>

#include "nnvm/core/functions.h"
#include "nnvm/nn/init.h"

namespace nnvm::nn {

namespace {

// A bool mask hides the pairs it marks; a floating mask is added to the scores.
Tensor apply_mask(const Tensor& scores, const Tensor& mask) {
  if (mask.dtype() == kBool) return scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
  return scores + mask;
}

}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options)
    : Module("MultiheadAttention"), options(options) {
  const int64_t e = options.embed_dim(), h = options.num_heads();
  NNVM_CHECK(e > 0 && h > 0 && e % h == 0, "MultiheadAttention", "embed_dim ", e,
             " must be a positive multiple of num_heads ", h);
  NNVM_CHECK(options.dropout() >= 0 && options.dropout() <= 1, "MultiheadAttention", "dropout must be in [0, 1], got ",
             options.dropout());
  head_dim = e / h;
  in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
  in_proj_bias = register_parameter("in_proj_bias", options.bias() ? empty({3 * e}) : Tensor());
  out_proj = register_module("out_proj", Linear(LinearOptions(e, e).bias(options.bias())));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key,
                                                           const Tensor& value, const Tensor& key_padding_mask,
                                                           bool need_weights, const Tensor& attn_mask,
                                                           bool average_attn_weights) {
  const int64_t e = options.embed_dim(), heads = options.num_heads();
  NNVM_CHECK(query.defined() && key.defined() && value.defined(), "MultiheadAttention",
             "query, key and value must be defined");
  const bool batched = query.dim() == 3;
  NNVM_CHECK((query.dim() == 2 || batched) && key.dim() == query.dim() && value.dim() == query.dim() &&
                 query.size(-1) == e && key.size(-1) == e && value.size(-1) == e,
             "MultiheadAttention", "expected query, key and value of shape [", options.batch_first() ? "B, L" : "L, B",
             ", ", e, "] (or [L, ", e, "]), got ", shape_str(query.sizes()), ", ", shape_str(key.sizes()), " and ",
             shape_str(value.sizes()));
  // Everything below is batch first with a batch dim.
  auto to_bfirst = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return options.batch_first() ? t : t.transpose(0, 1);
  };
  const Tensor q_in = to_bfirst(query), k_in = to_bfirst(key), v_in = to_bfirst(value);
  const int64_t b = q_in.size(0), l = q_in.size(1), s = k_in.size(1);
  NNVM_CHECK(k_in.size(0) == b && v_in.size(0) == b && v_in.size(1) == s, "MultiheadAttention",
             "key ", shape_str(key.sizes()), " and value ", shape_str(value.sizes()),
             " must have the same batch and length, and the batch of query ", shape_str(query.sizes()));

  const std::vector<Tensor> w = in_proj_weight.chunk(3, 0);
  const std::vector<Tensor> bias = in_proj_bias.defined() ? in_proj_bias.chunk(3, 0) : std::vector<Tensor>(3);
  auto project = [&](const Tensor& x, int i, int64_t len) {
    return linear(x, w[i], bias[i]).view({b, len, heads, head_dim}).transpose(1, 2);  // [B, H, len, D]
  };
  const Tensor q = project(q_in, 0, l), k = project(k_in, 1, s), v = project(v_in, 2, s);

  Tensor scores = matmul(q, k.transpose(-2, -1)) * Scalar(1.0 / std::sqrt(double(head_dim)));  // [B, H, L, S]
  if (attn_mask.defined()) {
    const bool per_head = attn_mask.dim() == 3;
    NNVM_CHECK((attn_mask.dim() == 2 && attn_mask.sizes() == IntArrayRef({l, s})) ||
                   (per_head && attn_mask.sizes() == IntArrayRef({b * heads, l, s})),
               "MultiheadAttention", "attn_mask of shape ", shape_str(attn_mask.sizes()), " does not match [", l,
               ", ", s, "] or [", b * heads, ", ", l, ", ", s, "]");
    scores = apply_mask(scores, per_head ? attn_mask.view({b, heads, l, s}) : attn_mask);
  }
  if (key_padding_mask.defined()) {
    const Tensor kpm = batched ? key_padding_mask : key_padding_mask.unsqueeze(0);
    NNVM_CHECK(kpm.sizes() == IntArrayRef({b, s}), "MultiheadAttention", "key_padding_mask of shape ",
               shape_str(key_padding_mask.sizes()), " does not match [", b, ", ", s, "]");
    scores = apply_mask(scores, kpm.view({b, 1, 1, s}));
  }
  Tensor attn = softmax(scores, -1);
  attn = dropout(attn, options.dropout(), is_training());

  const Tensor heads_out = matmul(attn, v);                                       // [B, H, L, D]
  Tensor out = out_proj->forward(heads_out.transpose(1, 2).reshape({b, l, e}));  // [B, L, E]
  if (!batched)
    out = out.squeeze(0);
  else if (!options.batch_first())
    out = out.transpose(0, 1);

  Tensor weights;
  if (need_weights) {
    weights = average_attn_weights ? attn.mean({1}) : attn;
    if (!batched) weights = weights.squeeze(0);
  }
  return {out, weights};
}

}  // namespace nnvm::nn
