// Linear (y = x Wᵀ + b), and the shape-only layers Identity, Flatten and Unflatten.
#pragma once

#include <vector>

#include "nnvm/nn/int8_layer.h"
#include "nnvm/nn/module.h"

namespace nnvm::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  NNVM_ARG(int64_t, in_features);
  NNVM_ARG(int64_t, out_features);
  NNVM_ARG(bool, bias) = true;
};

// weight [out, in] kaiming-uniform (a = √5), bias [out] uniform in ±1/√in, as libtorch.
class LinearImpl : public Module, public Int8Layer {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x);

  // INT8 (use_int8, observe_inputs): nn/int8_layer.h, nnvm/quantized.h.

  LinearOptions options;
  Tensor weight, bias;

 private:
  Tensor int8_forward(const Tensor& x);  // python-free-api/src/quantized.cpp
};
NNVM_MODULE(Linear);

struct FlattenOptions {
  NNVM_ARG(int64_t, start_dim) = 1;
  NNVM_ARG(int64_t, end_dim) = -1;
};

class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {}) : Module("Flatten"), options(options) {}
  Tensor forward(const Tensor& x) { return x.flatten(options.start_dim(), options.end_dim()); }

  FlattenOptions options;
};
NNVM_MODULE(Flatten);

struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  NNVM_ARG(int64_t, dim);
  NNVM_ARG(std::vector<int64_t>, sizes);
};

// Splits dim into sizes (one may be -1): Flatten's inverse.
class UnflattenImpl : public Module {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(const UnflattenOptions& options) : Module("Unflatten"), options(options) {}
  Tensor forward(const Tensor& x) { return x.unflatten(options.dim(), options.sizes()); }

  UnflattenOptions options;
};
NNVM_MODULE(Unflatten);

// Returns its input: a placeholder where a model takes a layer or none.
class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& x) { return x; }
};
NNVM_MODULE(Identity);

}  // namespace nnvm::nn
