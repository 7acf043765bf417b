// Linear and Conv2d: the two layers libtorch initialises with kaiming-uniform (a = √5).
#include "nnvm/nn/linear.h"

#include <cmath>

#include "nnvm/core/functions.h"
#include "nnvm/nn/conv.h"
#include "nnvm/nn/init.h"

namespace nnvm::nn {

namespace {

// kaiming_uniform_(a = √5) gives a bound of 1/√fan_in; the bias shares it.
void reset_kaiming(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (!bias.defined()) return;
  const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
  init::uniform_(bias, -bound, bound);
}

}  // namespace

LinearImpl::LinearImpl(const LinearOptions& options) : Module("Linear"), options(options) {
  NNVM_CHECK(options.in_features() >= 0 && options.out_features() >= 0, "Linear",
             "in_features and out_features must be non-negative, got ", options.in_features(), " and ",
             options.out_features());
  weight = register_parameter("weight", empty({options.out_features(), options.in_features()}));
  bias = register_parameter("bias", options.bias() ? empty({options.out_features()}) : Tensor());
  reset_parameters();
}

void LinearImpl::reset_parameters() { reset_kaiming(weight, bias); }

Tensor LinearImpl::forward(const Tensor& x) { return linear(x, weight, bias); }

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options) : Module("Conv2d"), options(options) {
  const int64_t in = options.in_channels(), out = options.out_channels(), groups = options.groups();
  NNVM_CHECK(in > 0 && out > 0 && groups > 0 && in % groups == 0 && out % groups == 0, "Conv2d",
             "in_channels ", in, " and out_channels ", out, " must be positive multiples of groups ", groups);
  const ExpandingArray<2>& k = options.kernel_size();
  NNVM_CHECK(k[0] > 0 && k[1] > 0, "Conv2d", "kernel_size must be positive, got [", k[0], ", ", k[1], "]");
  weight = register_parameter("weight", empty({out, in / groups, k[0], k[1]}));
  bias = register_parameter("bias", options.bias() ? empty({out}) : Tensor());
  reset_parameters();
}

void Conv2dImpl::reset_parameters() { reset_kaiming(weight, bias); }

Tensor Conv2dImpl::forward(const Tensor& x) {
  return conv2d(x, weight, bias, options.stride(), options.padding(), options.dilation(), options.groups());
}

}  // namespace nnvm::nn
