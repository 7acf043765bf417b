// INT8 inference for linear and convolution layers, as PyTorch's dynamic
// quantization (docs/QUANTIZATION.md):
//
//   auto q = nnvm::quantize_dynamic(model);  // a copy whose Linear layers run in INT8
//   nnvm::Tensor y = q->forward(x);           // float in, float out
//
// A weight is quantized once, per output channel and symmetric (int8, zero
// point 0, scale max|W[j,:]| / 127.5), and packed for the CPU's dot-product
// units; each call quantizes its input to uint8 from the input's own range
// (affine, the range widened to hold 0), multiplies on the INT8 GEMM
// (AVX512_VNNI's vpdpbusd where the CPU has it, C++ loops elsewhere) and
// dequantizes, adding the bias, in the GEMM's store. Results are within the
// bound docs/QUANTIZATION.md derives of the float32 layer's.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include "nnvm/arg.h"
#include "nnvm/core/tensor.h"
#include "nnvm/nn/conv.h"
#include "nnvm/nn/container.h"
#include "nnvm/nn/linear.h"

namespace nnvm::quantized {

// A linear layer's weight [out, in] quantized and packed, with its bias (what
// PyTorch's quantized::linear_prepack returns).
struct LinearPackedParams {
  int64_t in_features = 0, out_features = 0;
  Tensor packed;       // int8 [cpu::int8_packed_bytes(in, out)]
  Tensor column_sums;  // int32 [out]: Σ_k of each output channel's int8 weights
  Tensor scales;       // float32 [out]: each output channel's scale
  Tensor bias;         // float32 [out] (zeros when the layer has none)
  bool has_bias = false;

  // The int8 weights as float32 [out, in]: scales[j] · W_q[j, k].
  Tensor dequantized_weight() const;
};

// Quantizes and packs `weight` (float [out, in]) and `bias` (float [out], or undefined).
LinearPackedParams linear_prepack(const Tensor& weight, const Tensor& bias = {});
// input [..., in] float32 -> [..., out] float32 (PyTorch's quantized::linear_dynamic).
Tensor linear_dynamic(const Tensor& input, const LinearPackedParams& params);

// A convolution's weight [out, in, kh, kw] (groups 1) quantized and packed as
// the linear weight [out, in·kh·kw], with its bias.
struct Conv2dPackedParams {
  LinearPackedParams linear;
  int64_t in_channels = 0, kernel_h = 0, kernel_w = 0;
};
Conv2dPackedParams conv2d_prepack(const Tensor& weight, const Tensor& bias = {});
// input [batch, in, h, w] float32 -> [batch, out, oh, ow] float32, zero
// padding; the input quantized from its own range, as linear_dynamic's.
Tensor conv2d_dynamic(const Tensor& input, const Conv2dPackedParams& params, IntArrayRef stride = {1, 1},
                      IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1});

}  // namespace nnvm::quantized

namespace nnvm {

// Which layers quantize_dynamic switches to INT8, and where.
struct QuantizeDynamicOptions {
  NNVM_ARG(bool, linear) = true;   // nn::Linear (PyTorch's default set)
  NNVM_ARG(bool, conv2d) = false;  // nn::Conv2d with groups 1 (PyTorch's dynamic quantization has none)
  NNVM_ARG(bool, inplace) = false; // switch the model itself rather than a copy
};

namespace detail {
// Switches the layers `options` names, in `model` and below, to INT8.
void quantize_layers(nn::Module& model, const QuantizeDynamicOptions& options);
}  // namespace detail

// Returns `model` with its Linear layers (and Conv2d layers, when asked)
// running in INT8: a copy (the original keeps its float layers;
// nn::clone_module says which modules can be copied), or `model` itself
// with `inplace`. A layer in INT8 repacks its weight when the weight
// changes (an optimizer step, a load).
template <class M>
  requires std::is_base_of_v<nn::Module, M>
std::shared_ptr<M> quantize_dynamic(const std::shared_ptr<M>& model, const QuantizeDynamicOptions& options = {}) {
  NNVM_CHECK(model != nullptr, "quantize_dynamic", "given a null module");
  std::shared_ptr<M> target = options.inplace() ? model : nn::clone_module(*model);
  detail::quantize_layers(*target, options);
  return target;
}
template <class Holder>
  requires requires { typename Holder::ContainedType; }
Holder quantize_dynamic(const Holder& model, const QuantizeDynamicOptions& options = {}) {
  return Holder(quantize_dynamic(model.ptr(), options));
}

}  // namespace nnvm
