// Embedding: a lookup table of num_embeddings rows of embedding_dim values.
#pragma once

#include <optional>

#include "nnvm/nn/module.h"

namespace nnvm::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  NNVM_ARG(int64_t, num_embeddings);
  NNVM_ARG(int64_t, embedding_dim);
  // The row that stays zero and gets no gradient; negative counts from the end.
  NNVM_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

// weight [num_embeddings, embedding_dim] standard normal, the padding row zero, as libtorch.
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& indices);

  EmbeddingOptions options;
  Tensor weight;
};
NNVM_MODULE(Embedding);

}  // namespace nnvm::nn
