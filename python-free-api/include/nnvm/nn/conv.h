// Conv2d over [N, C, H, W] (or unbatched [C, H, W]) inputs.
#pragma once

#include "nnvm/nn/expanding_array.h"
#include "nnvm/nn/module.h"

namespace nnvm::nn {

struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  NNVM_ARG(int64_t, in_channels);
  NNVM_ARG(int64_t, out_channels);
  NNVM_ARG(ExpandingArray<2>, kernel_size);
  NNVM_ARG(ExpandingArray<2>, stride) = 1;
  NNVM_ARG(ExpandingArray<2>, padding) = 0;
  NNVM_ARG(ExpandingArray<2>, dilation) = 1;
  NNVM_ARG(int64_t, groups) = 1;
  NNVM_ARG(bool, bias) = true;
};

// weight [out, in / groups, kh, kw] kaiming-uniform (a = √5), bias uniform in ±1/√fan_in, as libtorch.
class Conv2dImpl : public Module {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x);

  Conv2dOptions options;
  Tensor weight, bias;
};
NNVM_MODULE(Conv2d);

}  // namespace nnvm::nn
