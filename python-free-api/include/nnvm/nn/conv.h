// Conv2d and ConvTranspose2d over [N, C, H, W] (or unbatched [C, H, W]) inputs.
#pragma once

#include <concepts>
#include <optional>

#include "nnvm/nn/expanding_array.h"
#include "nnvm/nn/int8_layer.h"
#include "nnvm/nn/module.h"
#include "nnvm/nn/ops.h"

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
  // How the padding is filled: kZeros, kReflect, kReplicate or kCircular.
  NNVM_ARG(PadMode, padding_mode) = kZeros;
};

// weight [out, in / groups, kh, kw] kaiming-uniform (a = √5), bias uniform in ±1/√fan_in, as libtorch.
class Conv2dImpl : public Module, public Int8Layer {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x);

  // INT8 (use_int8, observe_inputs): nn/int8_layer.h, nnvm/quantized.h; groups 1 only.

  Conv2dOptions options;
  Tensor weight, bias;

 private:
  void check_int8() const override;
  Tensor float_forward(const Tensor& x);
  Tensor int8_forward(const Tensor& x);  // python-free-api/src/quantized.cpp
};
NNVM_MODULE(Conv2d);

struct ConvTranspose2dOptions {
  ConvTranspose2dOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  NNVM_ARG(int64_t, in_channels);
  NNVM_ARG(int64_t, out_channels);
  NNVM_ARG(ExpandingArray<2>, kernel_size);
  NNVM_ARG(ExpandingArray<2>, stride) = 1;
  NNVM_ARG(ExpandingArray<2>, padding) = 0;
  // Extra rows and columns on one side of the output: picks among the sizes
  // that a strided convolution maps to the same input size.
  NNVM_ARG(ExpandingArray<2>, output_padding) = 0;
  NNVM_ARG(int64_t, groups) = 1;
  NNVM_ARG(bool, bias) = true;
  NNVM_ARG(ExpandingArray<2>, dilation) = 1;
};

// weight [in, out / groups, kh, kw], initialised as Conv2d's (fan_in from the
// weight's second dim, as libtorch).
class ConvTranspose2dImpl : public Module {
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options);
  void reset_parameters();
  // output_size ([H, W] or [N, C, H, W]) picks the output_padding that gives it, as libtorch.
  Tensor forward(const Tensor& x, const std::optional<IntArrayRef>& output_size = std::nullopt);
  // A bare integer would be viewed inside std::optional's constructor, after it is gone (core/shape.h).
  template <std::integral I> Tensor forward(const Tensor& x, I output_size) = delete;

  ConvTranspose2dOptions options;
  Tensor weight, bias;
};
NNVM_MODULE(ConvTranspose2d);

}  // namespace nnvm::nn
