// TransformerEncoderLayer, block for block as PyTorch's, and TransformerEncoder.
#include "nnvm/nn/transformer.h"

namespace nnvm::nn {

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options)
    : Module("TransformerEncoderLayer"), options(options) {
  const auto* function = std::get_if<std::function<Tensor(const Tensor&)>>(&options.activation());
  NNVM_CHECK(function == nullptr || *function, "TransformerEncoderLayer",
             "activation is an empty function: expected kReLU, kGELU or a callable");
  const int64_t d = options.d_model();
  self_attn = register_module("self_attn", MultiheadAttention(MultiheadAttentionOptions(d, options.nhead())
                                                                  .dropout(options.dropout())
                                                                  .batch_first(options.batch_first())));
  linear1 = register_module("linear1", Linear(d, options.dim_feedforward()));
  dropout = register_module("dropout", Dropout(options.dropout()));
  linear2 = register_module("linear2", Linear(options.dim_feedforward(), d));
  norm1 = register_module("norm1", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  norm2 = register_module("norm2", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  dropout1 = register_module("dropout1", Dropout(options.dropout()));
  dropout2 = register_module("dropout2", Dropout(options.dropout()));
}

Tensor TransformerEncoderLayerImpl::self_attention_block(const Tensor& x, const Tensor& mask,
                                                         const Tensor& key_padding_mask) {
  const Tensor attended = std::get<0>(self_attn->forward(x, x, x, key_padding_mask, /*need_weights=*/false, mask));
  return dropout1->forward(attended);
}

Tensor TransformerEncoderLayerImpl::feed_forward_block(const Tensor& x) {
  const Tensor hidden = linear1->forward(x);
  const Tensor activated = std::visit(
      [&](const auto& activation) -> Tensor {
        using A = std::decay_t<decltype(activation)>;
        if constexpr (std::is_same_v<A, enumtype::kReLU>)
          return hidden.relu();
        else if constexpr (std::is_same_v<A, enumtype::kGELU>)
          return gelu(hidden);
        else
          return activation(hidden);
      },
      options.activation());
  return dropout2->forward(linear2->forward(dropout->forward(activated)));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask) {
  if (options.norm_first()) {
    const Tensor x = src + self_attention_block(norm1->forward(src), src_mask, src_key_padding_mask);
    return x + feed_forward_block(norm2->forward(x));
  }
  const Tensor x = norm1->forward(src + self_attention_block(src, src_mask, src_key_padding_mask));
  return norm2->forward(x + feed_forward_block(x));
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderOptions& options)
    : Module("TransformerEncoder"), options(options) {
  NNVM_CHECK(!options.encoder_layer().is_empty(), "TransformerEncoder", "encoder_layer is an empty holder");
  NNVM_CHECK(options.num_layers() > 0, "TransformerEncoder", "num_layers must be positive, got ",
             options.num_layers());
  const TransformerEncoderLayer& prototype = options.encoder_layer();
  const auto state = prototype->state_dict();
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) {
    TransformerEncoderLayer layer(prototype->options);
    layer->load_state_dict(state);
    layer->train(prototype->is_training());
    layers->push_back(layer);
  }
  if (!options.norm().is_empty()) {
    norm = options.norm().clone();
    register_module("norm", norm.ptr());
  }
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask) {
  Tensor x = src;
  for (const auto& layer : *layers) x = layer->as<TransformerEncoderLayer>()->forward(x, src_mask, src_key_padding_mask);
  return norm.is_empty() ? x : norm.forward(x);
}

}  // namespace nnvm::nn
