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
#include <functional>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "nnvm/arg.h"
#include "nnvm/core/tensor.h"
#include "nnvm/nn/conv.h"
#include "nnvm/nn/container.h"
#include "nnvm/nn/linear.h"
#include "nnvm/quantization/observer.h"

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

// The uint8 parameters of a layer's input, calibrated beforehand (static quantization).
struct InputQParams {
  double scale = 0;        // > 0
  int64_t zero_point = 0;  // [0, 255]
};
// linear_dynamic with the input quantized by `input` rather than by its own range.
Tensor linear(const Tensor& input, const LinearPackedParams& params, InputQParams input_qparams);

// A convolution's weight [out, in, kh, kw] (groups 1) quantized and packed as
// the linear weight [out, kh·kw·in] (each tap's input channels side by side:
// weight.permute({0, 2, 3, 1})), with its bias.
struct Conv2dPackedParams {
  LinearPackedParams linear;
  int64_t in_channels = 0, kernel_h = 0, kernel_w = 0;
};
Conv2dPackedParams conv2d_prepack(const Tensor& weight, const Tensor& bias = {});
// input [batch, in, h, w] float32 -> [batch, out, oh, ow] float32, zero
// padding; the input quantized from its own range, as linear_dynamic's.
Tensor conv2d_dynamic(const Tensor& input, const Conv2dPackedParams& params, IntArrayRef stride = {1, 1},
                      IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1});
// conv2d_dynamic with the input quantized by `input_qparams`.
Tensor conv2d(const Tensor& input, const Conv2dPackedParams& params, InputQParams input_qparams,
              IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1});

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
// The Linear (and Conv2d) layers of `model` and below; throws, naming `fn`,
// for a convolution INT8 does not run. A convolution of fewer than 32
// products per output (in_channels · kh · kw) stays float32: it is bound by
// memory, which INT8 does not cut (the demo CNN's first layer).
std::vector<nn::Int8Layer*> int8_layers(nn::Module& model, bool linear, bool conv2d, std::string_view fn);
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

// Static quantization, as PyTorch's eager mode (torch.ao.quantization's
// prepare, calibrate, convert):
//
//   auto prepared = nnvm::quantization::prepare(model);   // a copy whose layers watch their inputs
//   for (const auto& [x, y] : calibration_batches) prepared->forward(x);
//   nnvm::quantization::convert(prepared);                 // those layers now run in INT8
//
// Each layer's input is then quantized with the scale and zero point its
// observer calculated, not from each input's range: no pass over the input
// to find it, and values past the calibrated range saturate.
namespace nnvm::quantization {

struct PrepareOptions {
  NNVM_ARG(bool, linear) = true;
  NNVM_ARG(bool, conv2d) = true;  // groups 1
  NNVM_ARG(bool, inplace) = false;
  // Makes each layer's input observer: quint8 per tensor (MinMaxObserver by
  // default; PercentileObserver clips outliers).
  NNVM_ARG(std::function<std::shared_ptr<ObserverBase>()>, observer) = [] {
    return std::make_shared<MinMaxObserver>();
  };
};

namespace detail {
void prepare_layers(nn::Module& model, const PrepareOptions& options);
}  // namespace detail

// `model` (a copy, or itself with inplace) with its Linear and Conv2d layers
// watching their inputs; they still compute in float32.
template <class M>
  requires std::is_base_of_v<nn::Module, M>
std::shared_ptr<M> prepare(const std::shared_ptr<M>& model, const PrepareOptions& options = {}) {
  NNVM_CHECK(model != nullptr, "prepare", "given a null module");
  std::shared_ptr<M> target = options.inplace() ? model : nn::clone_module(*model);
  detail::prepare_layers(*target, options);
  return target;
}
template <class Holder>
  requires requires { typename Holder::ContainedType; }
Holder prepare(const Holder& model, const PrepareOptions& options = {}) {
  return Holder(prepare(model.ptr(), options));
}

// Switches every layer of `model` that watches its inputs to INT8 with its
// observer's parameters, in place. Throws nnvm::Error, changing nothing,
// when a watching layer has seen no input (naming it).
void convert(nn::Module& model);
template <class Holder>
  requires requires { typename Holder::ContainedType; }
void convert(const Holder& model) {
  convert(*model.ptr());
}

}  // namespace nnvm::quantization
