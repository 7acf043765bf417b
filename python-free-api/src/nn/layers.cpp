// Embedding, Dropout and the pooling layers: thin wrappers of the functional ops.
#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/nn/activation.h"
#include "nnvm/nn/embedding.h"
#include "nnvm/nn/init.h"
#include "nnvm/nn/pooling.h"

namespace nnvm::nn {

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options) : Module("Embedding"), options(options) {
  const int64_t n = options.num_embeddings();
  NNVM_CHECK(n >= 0 && options.embedding_dim() >= 0, "Embedding", "num_embeddings and embedding_dim must be ",
             "non-negative, got ", n, " and ", options.embedding_dim());
  if (const auto idx = options.padding_idx()) {
    NNVM_CHECK(*idx >= -n && *idx < n, "Embedding", "padding_idx ", *idx, " is out of range for ", n,
               " embeddings");
    if (*idx < 0) this->options.padding_idx(*idx + n);
  }
  weight = register_parameter("weight", empty({n, options.embedding_dim()}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (const auto idx = options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *idx).fill_(0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) { return embedding(weight, indices, options.padding_idx()); }

DropoutImpl::DropoutImpl(const DropoutOptions& options) : Module("Dropout"), options(options) {
  NNVM_CHECK(options.p() >= 0 && options.p() <= 1, "Dropout", "probability p must be in [0, 1], got ", options.p());
}

Tensor MaxPool2dImpl::forward(const Tensor& x) {
  return max_pool2d(x, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                    options.ceil_mode());
}

Tensor AvgPool2dImpl::forward(const Tensor& x) {
  return avg_pool2d(x, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                    options.count_include_pad());
}

}  // namespace nnvm::nn
