// Linear, Conv2d and ConvTranspose2d: the layers libtorch initialises with kaiming-uniform (a = √5).
#include "nnvm/nn/linear.h"

#include <array>
#include <cmath>

#include "nnvm/core/functions.h"
#include "nnvm/nn/conv.h"
#include "nnvm/nn/functional.h"
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

// The channel counts and kernel of a convolution layer (Conv2d or ConvTranspose2d).
void check_conv_options(std::string_view module, int64_t in, int64_t out, int64_t groups,
                        const ExpandingArray<2>& k) {
  NNVM_CHECK(in > 0 && out > 0 && groups > 0 && in % groups == 0 && out % groups == 0, module, "in_channels ", in,
             " and out_channels ", out, " must be positive multiples of groups ", groups);
  NNVM_CHECK(k[0] > 0 && k[1] > 0, module, "kernel_size must be positive, got [", k[0], ", ", k[1], "]");
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

Tensor LinearImpl::forward(const Tensor& x) { return int8_ ? int8_forward(x) : linear(x, weight, bias); }

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options) : Module("Conv2d"), options(options) {
  const int64_t in = options.in_channels(), out = options.out_channels(), groups = options.groups();
  const ExpandingArray<2>& k = options.kernel_size();
  check_conv_options("Conv2d", in, out, groups, k);
  NNVM_CHECK(options.padding_mode() != kConstant, "Conv2d",
             "padding_mode must be kZeros, kReflect, kReplicate or kCircular, got kConstant");
  weight = register_parameter("weight", empty({out, in / groups, k[0], k[1]}));
  bias = register_parameter("bias", options.bias() ? empty({out}) : Tensor());
  reset_parameters();
}

void Conv2dImpl::reset_parameters() { reset_kaiming(weight, bias); }

// A padding mode other than zeros pads the input first and convolves without
// padding, as libtorch does.
Tensor Conv2dImpl::forward(const Tensor& x) { return int8_ ? int8_forward(x) : float_forward(x); }

Tensor Conv2dImpl::float_forward(const Tensor& x) {
  if (options.padding_mode() == kZeros)
    return conv2d(x, weight, bias, options.stride(), options.padding(), options.dilation(), options.groups());
  const ExpandingArray<2>& p = options.padding();
  const auto pad = functional::PadFuncOptions({p[1], p[1], p[0], p[0]}).mode(options.padding_mode());
  const Tensor padded = functional::pad(x, pad);
  return conv2d(padded, weight, bias, options.stride(), {0, 0}, options.dilation(), options.groups());
}

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& options)
    : Module("ConvTranspose2d"), options(options) {
  const int64_t in = options.in_channels(), out = options.out_channels(), groups = options.groups();
  const ExpandingArray<2>& k = options.kernel_size();
  check_conv_options("ConvTranspose2d", in, out, groups, k);
  weight = register_parameter("weight", empty({in, out / groups, k[0], k[1]}));
  bias = register_parameter("bias", options.bias() ? empty({out}) : Tensor());
  reset_parameters();
}

void ConvTranspose2dImpl::reset_parameters() { reset_kaiming(weight, bias); }

// Without output_padding the output is (in - 1) stride - 2 padding +
// dilation (k - 1) + 1 per spatial dim; the stride - 1 larger sizes map to the
// same input too, and output_size picks one of them.
Tensor ConvTranspose2dImpl::forward(const Tensor& x, const std::optional<IntArrayRef>& output_size) {
  std::array<int64_t, 2> output_padding = *options.output_padding();
  if (output_size) {
    const IntArrayRef size = *output_size;
    NNVM_CHECK(x.dim() >= 2 && (size.size() == 2 || int64_t(size.size()) == x.dim()), "ConvTranspose2d",
               "output_size ", shape_str(size), " does not fit input of shape ", shape_str(x.sizes()),
               " (expected [H, W] or the input's rank)");
    for (size_t d = 0; d < 2; ++d) {
      const int64_t stride = options.stride()[d];
      const int64_t smallest = (x.size(x.dim() - 2 + int64_t(d)) - 1) * stride - 2 * options.padding()[d] +
                               options.dilation()[d] * (options.kernel_size()[d] - 1) + 1;
      const int64_t wanted = size[size.size() - 2 + d];
      NNVM_CHECK(wanted >= smallest && wanted < smallest + stride, "ConvTranspose2d", "output_size ",
                 shape_str(size), " is not reachable from input of shape ", shape_str(x.sizes()), " (expected dim ",
                 d, " in [", smallest, ", ", smallest + stride - 1, "])");
      output_padding[d] = wanted - smallest;
    }
  }
  return conv_transpose2d(x, weight, bias, options.stride(), options.padding(), output_padding, options.groups(),
                          options.dilation());
}

}  // namespace nnvm::nn
