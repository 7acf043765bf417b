// Embedding, the activations, dropout and the pooling layers: thin wrappers of nn::functional.
#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/nn/activation.h"
#include "nnvm/nn/embedding.h"
#include "nnvm/nn/functional.h"
#include "nnvm/nn/init.h"
#include "nnvm/nn/pooling.h"

namespace nnvm::nn {

namespace F = functional;

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

Tensor ReLUImpl::forward(Tensor x) { return F::relu(std::move(x), options); }
Tensor ReLU6Impl::forward(Tensor x) { return F::relu6(std::move(x), options); }
Tensor LeakyReLUImpl::forward(Tensor x) { return F::leaky_relu(std::move(x), options); }
Tensor ELUImpl::forward(Tensor x) { return F::elu(std::move(x), options); }
Tensor SELUImpl::forward(Tensor x) { return F::selu(std::move(x), options); }

HardtanhImpl::HardtanhImpl(const HardtanhOptions& options) : Module("Hardtanh"), options(options) {
  NNVM_CHECK(options.min_val() < options.max_val(), "Hardtanh", "min_val ", options.min_val(),
             " must be less than max_val ", options.max_val());
}

Tensor HardtanhImpl::forward(Tensor x) { return F::hardtanh(std::move(x), options); }
Tensor SoftplusImpl::forward(const Tensor& x) { return F::softplus(x, options); }
Tensor GELUImpl::forward(const Tensor& x) { return F::gelu(x, options); }

namespace {

void check_dropout_p(double p, std::string_view module) {
  NNVM_CHECK(p >= 0 && p <= 1, module, "probability p must be in [0, 1], got ", p);
}

// A dropout module's options and mode as the function's options.
F::DropoutFuncOptions func_options(const DropoutOptions& options, bool training) {
  return F::DropoutFuncOptions().p(options.p()).training(training).inplace(options.inplace());
}

}  // namespace

DropoutImpl::DropoutImpl(const DropoutOptions& options) : Module("Dropout"), options(options) {
  check_dropout_p(options.p(), "Dropout");
}

Tensor DropoutImpl::forward(Tensor x) { return F::dropout(std::move(x), func_options(options, is_training())); }

Dropout2dImpl::Dropout2dImpl(const Dropout2dOptions& options) : Module("Dropout2d"), options(options) {
  check_dropout_p(options.p(), "Dropout2d");
}

Tensor Dropout2dImpl::forward(Tensor x) { return F::dropout2d(std::move(x), func_options(options, is_training())); }

Tensor MaxPool2dImpl::forward(const Tensor& x) { return F::max_pool2d(x, options); }
Tensor AvgPool2dImpl::forward(const Tensor& x) { return F::avg_pool2d(x, options); }
Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& x) { return F::adaptive_avg_pool2d(x, options); }

}  // namespace nnvm::nn
