// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d over [N, C, H, W] (or [C, H, W]) inputs.
#pragma once

#include <optional>

#include "nnvm/nn/expanding_array.h"
#include "nnvm/nn/module.h"

namespace nnvm::nn {

struct MaxPool2dOptions {
  MaxPool2dOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  NNVM_ARG(ExpandingArray<2>, kernel_size);
  NNVM_ARG(ExpandingArray<2>, stride);  // defaults to kernel_size
  NNVM_ARG(ExpandingArray<2>, padding) = 0;
  NNVM_ARG(ExpandingArray<2>, dilation) = 1;
  NNVM_ARG(bool, ceil_mode) = false;
};

class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(const MaxPool2dOptions& options) : Module("MaxPool2d"), options(options) {}
  Tensor forward(const Tensor& x);

  MaxPool2dOptions options;
};
NNVM_MODULE(MaxPool2d);

struct AvgPool2dOptions {
  AvgPool2dOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  NNVM_ARG(ExpandingArray<2>, kernel_size);
  NNVM_ARG(ExpandingArray<2>, stride);  // defaults to kernel_size
  NNVM_ARG(ExpandingArray<2>, padding) = 0;
  NNVM_ARG(bool, ceil_mode) = false;
  NNVM_ARG(bool, count_include_pad) = true;
};

class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(const AvgPool2dOptions& options) : Module("AvgPool2d"), options(options) {}
  Tensor forward(const Tensor& x);

  AvgPool2dOptions options;
};
NNVM_MODULE(AvgPool2d);

struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(ExpandingArray<2> output_size) : output_size_(output_size) {}  // NOLINT
  NNVM_ARG(ExpandingArray<2>, output_size);
};

class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options)
      : Module("AdaptiveAvgPool2d"), options(options) {}
  Tensor forward(const Tensor& x);

  AdaptiveAvgPool2dOptions options;
};
NNVM_MODULE(AdaptiveAvgPool2d);

}  // namespace nnvm::nn
