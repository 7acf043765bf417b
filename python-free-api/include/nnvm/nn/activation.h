// Activation modules and Dropout: parameter-free wrappers of the functional
// ops, with libtorch's options. Their forwards call nn::functional
// (src/nn/activation.cpp), so module and function cannot drift apart.
#pragma once

#include <string>

#include "nnvm/core/functions.h"
#include "nnvm/nn/module.h"

namespace nnvm::nn {

// inplace: overwrite the input with the result and return it, as libtorch.
struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(bool, inplace);
};

class ReLUImpl : public Module {
 public:
  explicit ReLUImpl(const ReLUOptions& options = {}) : Module("ReLU"), options(options) {}
  Tensor forward(Tensor x);

  ReLUOptions options;
};
NNVM_MODULE(ReLU);

struct ReLU6Options {
  ReLU6Options(bool inplace = false) : inplace_(inplace) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(bool, inplace);
};

class ReLU6Impl : public Module {
 public:
  explicit ReLU6Impl(const ReLU6Options& options = {}) : Module("ReLU6"), options(options) {}
  Tensor forward(Tensor x);

  ReLU6Options options;
};
NNVM_MODULE(ReLU6);

struct LeakyReLUOptions {
  NNVM_ARG(double, negative_slope) = 1e-2;
  NNVM_ARG(bool, inplace) = false;
};

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : Module("LeakyReLU"), options(options) {}
  Tensor forward(Tensor x);

  LeakyReLUOptions options;
};
NNVM_MODULE(LeakyReLU);

struct ELUOptions {
  NNVM_ARG(double, alpha) = 1.0;
  NNVM_ARG(bool, inplace) = false;
};

class ELUImpl : public Module {
 public:
  explicit ELUImpl(const ELUOptions& options = {}) : Module("ELU"), options(options) {}
  Tensor forward(Tensor x);

  ELUOptions options;
};
NNVM_MODULE(ELU);

struct SELUOptions {
  SELUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(bool, inplace);
};

class SELUImpl : public Module {
 public:
  explicit SELUImpl(const SELUOptions& options = {}) : Module("SELU"), options(options) {}
  Tensor forward(Tensor x);

  SELUOptions options;
};
NNVM_MODULE(SELU);

struct HardtanhOptions {
  NNVM_ARG(double, min_val) = -1.0;
  NNVM_ARG(double, max_val) = 1.0;
  NNVM_ARG(bool, inplace) = false;
};

// Throws nnvm::Error unless min_val < max_val.
class HardtanhImpl : public Module {
 public:
  explicit HardtanhImpl(const HardtanhOptions& options = {});
  Tensor forward(Tensor x);

  HardtanhOptions options;
};
NNVM_MODULE(Hardtanh);

struct SoftplusOptions {
  NNVM_ARG(double, beta) = 1.0;
  NNVM_ARG(double, threshold) = 20.0;  // linear above beta * x > threshold
};

class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(const SoftplusOptions& options = {}) : Module("Softplus"), options(options) {}
  Tensor forward(const Tensor& x);

  SoftplusOptions options;
};
NNVM_MODULE(Softplus);

struct GELUOptions {
  // "none" (exact, with erf) or "tanh"
  NNVM_ARG(std::string, approximate) = "none";
};

class GELUImpl : public Module {
 public:
  explicit GELUImpl(const GELUOptions& options = {}) : Module("GELU"), options(options) {}
  Tensor forward(const Tensor& x);

  GELUOptions options;
};
NNVM_MODULE(GELU);

class SiLUImpl : public Module {
 public:
  SiLUImpl() : Module("SiLU") {}
  Tensor forward(const Tensor& x) { return silu(x); }
};
NNVM_MODULE(SiLU);

class SigmoidImpl : public Module {
 public:
  SigmoidImpl() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) { return x.sigmoid(); }
};
NNVM_MODULE(Sigmoid);

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Tensor forward(const Tensor& x) { return x.tanh(); }
};
NNVM_MODULE(Tanh);

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(int64_t, dim);
};

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions(dim)) {}
  explicit SoftmaxImpl(const SoftmaxOptions& options) : Module("Softmax"), options(options) {}
  Tensor forward(const Tensor& x) { return softmax(x, options.dim()); }

  SoftmaxOptions options;
};
NNVM_MODULE(Softmax);

struct LogSoftmaxOptions {
  LogSoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(int64_t, dim);
};

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : LogSoftmaxImpl(LogSoftmaxOptions(dim)) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options) : Module("LogSoftmax"), options(options) {}
  Tensor forward(const Tensor& x) { return log_softmax(x, options.dim()); }

  LogSoftmaxOptions options;
};
NNVM_MODULE(LogSoftmax);

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(double, p);
  NNVM_ARG(bool, inplace) = false;
};
using Dropout2dOptions = DropoutOptions;

// Zeroes each element with probability p and scales the rest by 1 / (1 - p)
// in training mode; the identity in evaluation mode.
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  Tensor forward(Tensor x);

  DropoutOptions options;
};
NNVM_MODULE(Dropout);

// Dropout of whole channels of [N, C, H, W] (or [N, C, L]) inputs.
class Dropout2dImpl : public Module {
 public:
  explicit Dropout2dImpl(const Dropout2dOptions& options = {});
  Tensor forward(Tensor x);

  Dropout2dOptions options;
};
NNVM_MODULE(Dropout2d);

}  // namespace nnvm::nn
