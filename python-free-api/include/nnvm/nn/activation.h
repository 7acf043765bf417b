// Activation modules and Dropout: parameter-free wrappers of the functional ops.
#pragma once

#include <string>

#include "nnvm/core/functions.h"
#include "nnvm/nn/module.h"

namespace nnvm::nn {

class ReLUImpl : public Module {
 public:
  ReLUImpl() : Module("ReLU") {}
  Tensor forward(const Tensor& x) { return x.relu(); }
};
NNVM_MODULE(ReLU);

struct GELUOptions {
  // "none" (exact, with erf) or "tanh"
  NNVM_ARG(std::string, approximate) = "none";
};

class GELUImpl : public Module {
 public:
  explicit GELUImpl(const GELUOptions& options = {}) : Module("GELU"), options(options) {}
  Tensor forward(const Tensor& x) { return gelu(x, options.approximate()); }

  GELUOptions options;
};
NNVM_MODULE(GELU);

class SiLUImpl : public Module {
 public:
  SiLUImpl() : Module("SiLU") {}
  Tensor forward(const Tensor& x) { return silu(x); }
};
NNVM_MODULE(SiLU);

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Tensor forward(const Tensor& x) { return x.tanh(); }
};
NNVM_MODULE(Tanh);

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(double, p);
};

// Zeroes each element with probability p and scales the rest by 1 / (1 - p)
// in training mode; the identity in evaluation mode.
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  Tensor forward(const Tensor& x) { return dropout(x, options.p(), is_training()); }

  DropoutOptions options;
};
NNVM_MODULE(Dropout);

}  // namespace nnvm::nn
