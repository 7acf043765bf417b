#include "nnvm/quantized.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/op.h"
#include "nnvm/core/storage.h"
#include "nnvm/nn/functional.h"
#include "nnvm/kernels/cpu/gemm_int8.h"

namespace nnvm::quantized {

namespace {

constexpr float kQMax = 127.f, kQMin = -128.f;

}  // namespace

LinearPackedParams linear_prepack(const Tensor& weight, const Tensor& bias) {
  constexpr std::string_view fn = "linear_prepack";
  NNVM_CHECK(weight.defined() && weight.dim() == 2, fn, "expected a weight [out_features, in_features], got ",
             weight.defined() ? shape_str(weight.sizes()) : std::string("an undefined tensor"));
  NNVM_CHECK(weight.is_floating_point(), fn, "expected a floating weight, got ", weight.dtype(), " ",
             shape_str(weight.sizes()));
  const int64_t n = weight.size(0), k = weight.size(1);
  NNVM_CHECK(k <= cpu::kInt8MaxK, fn, "weight ", shape_str(weight.sizes()), ": at most ", cpu::kInt8MaxK,
             " input features (int32 sums)");
  NNVM_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == n && bias.is_floating_point()), fn,
             "expected a floating bias [", n, "] for weight ", shape_str(weight.sizes()), ", got ", bias.dtype(), " ",
             shape_str(bias.sizes()));
  const NoGradGuard no_grad;
  const Tensor w = weight.detach().to(kFloat32).contiguous();
  const float* wd = w.data_ptr<float>();
  LinearPackedParams p;
  p.in_features = k;
  p.out_features = n;
  p.scales = empty({n}, kFloat32);
  float* scales = p.scales.data_ptr<float>();
  std::vector<int8_t> q(size_t(n * k));
  for (int64_t j = 0; j < n; ++j) {
    float amax = 0;
    for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::fabs(wd[j * k + c]));
    NNVM_CHECK(std::isfinite(amax), fn, "output channel ", j, " of weight ", shape_str(weight.sizes()),
               " holds a NaN or an infinity");
    // symmetric: [-amax, amax] over the 255 steps of [-128, 127], as PyTorch's observers do
    const float scale = std::max(amax / ((kQMax - kQMin) / 2), std::numeric_limits<float>::epsilon());
    scales[j] = scale;
    for (int64_t c = 0; c < k; ++c)
      q[size_t(j * k + c)] = int8_t(std::clamp(std::nearbyint(wd[j * k + c] / scale), kQMin, kQMax));
  }
  p.packed = empty({cpu::int8_packed_bytes(k, n)}, kInt8);
  cpu::pack_int8_b({q.data(), 1, k}, k, n, p.packed.data_ptr<int8_t>());  // B = Wᵀ: B[c][j] = W[j][c]
  p.column_sums = empty({n}, kInt32);
  cpu::int8_column_sums(p.packed.data_ptr<int8_t>(), k, n, p.column_sums.data_ptr<int32_t>());
  p.has_bias = bias.defined();
  p.bias = bias.defined() ? bias.detach().to(kFloat32).contiguous().clone() : zeros({n});
  return p;
}

Tensor LinearPackedParams::dequantized_weight() const {
  const NoGradGuard no_grad;
  Tensor w = empty({out_features, in_features}, kFloat32);
  float* wd = w.data_ptr<float>();
  const int8_t* pk = packed.data_ptr<int8_t>();
  const float* s = scales.data_ptr<float>();
  constexpr int64_t cols = cpu::kInt8PanelCols;
  const int64_t quads = (in_features + 3) / 4;
  for (int64_t j = 0; j < out_features; ++j)
    for (int64_t c = 0; c < in_features; ++c)
      wd[j * in_features + c] = s[j] * float(pk[((j / cols) * quads + c / 4) * cols * 4 + (j % cols) * 4 + c % 4]);
  return w;
}

Tensor linear_dynamic(const Tensor& input, const LinearPackedParams& params) {
  static const OpDef& op = find_op("quantized_linear_dynamic");
  NNVM_CHECK(params.packed.defined(), "linear_dynamic", "given empty packed parameters (expected linear_prepack's)");
  NNVM_CHECK(input.defined(), "linear_dynamic", "given an undefined input");
  // a floating input of another width is computed in float32, as PyTorch's dynamic linear does
  const Tensor x = input.is_floating_point() && input.dtype() != kFloat32 ? input.to(kFloat32) : input;
  return call1(op, {x, params.packed, params.column_sums, params.scales, params.bias},
               {params.out_features, params.in_features});
}

Conv2dPackedParams conv2d_prepack(const Tensor& weight, const Tensor& bias) {
  NNVM_CHECK(weight.defined() && weight.dim() == 4, "conv2d_prepack", "expected a weight [out, in, kh, kw], got ",
             weight.defined() ? shape_str(weight.sizes()) : std::string("an undefined tensor"));
  Conv2dPackedParams p;
  p.in_channels = weight.size(1);
  p.kernel_h = weight.size(2);
  p.kernel_w = weight.size(3);
  p.linear = linear_prepack(weight.reshape({weight.size(0), -1}), bias);
  return p;
}

Tensor conv2d_dynamic(const Tensor& input, const Conv2dPackedParams& params, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef dilation) {
  static const OpDef& op = find_op("quantized_conv2d_dynamic");
  NNVM_CHECK(params.linear.packed.defined(), "conv2d_dynamic", "given empty packed parameters (expected conv2d_prepack's)");
  NNVM_CHECK(input.defined() && input.dim() == 4 && input.size(1) == params.in_channels, "conv2d_dynamic", "input ",
             input.defined() ? shape_str(input.sizes()) : std::string("undefined"), " against a weight of ",
             params.in_channels, " input channels (expected [batch, ", params.in_channels, ", h, w])");
  const Tensor x = input.is_floating_point() && input.dtype() != kFloat32 ? input.to(kFloat32) : input;
  return call1(op, {x, params.linear.packed, params.linear.column_sums, params.linear.scales, params.linear.bias},
               {dims({params.kernel_h, params.kernel_w}), dims(stride), dims(padding), dims(dilation),
                params.linear.out_features});
}

}  // namespace nnvm::quantized

namespace nnvm {

namespace nn {

namespace {

// A layer's packed weight, remade when the weight's or the bias's storage or
// version changes. The storages are held, so a new one never takes an old one's address.
template <class Params> struct PackedWeight {
  Params params;
  std::shared_ptr<Storage> weight_storage, bias_storage;
  uint64_t weight_version = 0, bias_version = 0;

  template <class Pack> const Params& get(const Tensor& weight, const Tensor& bias, Pack pack) {
    const std::shared_ptr<Storage>& ws = weight.storage();
    const std::shared_ptr<Storage> bs = bias.defined() ? bias.storage() : nullptr;
    if (weight_storage != ws || weight_version != ws->version() || bias_storage != bs ||
        (bs && bias_version != bs->version())) {
      params = pack(weight, bias);
      weight_storage = ws;
      weight_version = ws->version();
      bias_storage = bs;
      bias_version = bs ? bs->version() : 0;
    }
    return params;
  }
};

}  // namespace

struct LinearImpl::Int8Weight : PackedWeight<quantized::LinearPackedParams> {};
struct Conv2dImpl::Int8Weight : PackedWeight<quantized::Conv2dPackedParams> {};

void LinearImpl::use_int8(bool on) { int8_ = on ? std::make_shared<Int8Weight>() : nullptr; }

Tensor LinearImpl::int8_forward(const Tensor& x) {
  return quantized::linear_dynamic(x, int8_->get(weight, bias, quantized::linear_prepack));
}

void Conv2dImpl::use_int8(bool on) {
  NNVM_CHECK(!on || options.groups() == 1, "Conv2d", "INT8 runs convolutions of groups 1, this one has ",
             options.groups());
  int8_ = on ? std::make_shared<Int8Weight>() : nullptr;
}

Tensor Conv2dImpl::int8_forward(const Tensor& x) {
  const quantized::Conv2dPackedParams& p = int8_->get(weight, bias, quantized::conv2d_prepack);
  if (options.padding_mode() == kZeros)
    return quantized::conv2d_dynamic(x, p, options.stride(), options.padding(), options.dilation());
  const ExpandingArray<2>& pad = options.padding();
  const Tensor padded = functional::pad(x, functional::PadFuncOptions({pad[1], pad[1], pad[0], pad[0]}).mode(options.padding_mode()));
  return quantized::conv2d_dynamic(padded, p, options.stride(), {0, 0}, options.dilation());
}

}  // namespace nn

namespace detail {

void quantize_layers(nn::Module& model, const QuantizeDynamicOptions& options) {
  const std::vector<std::shared_ptr<nn::Module>> modules = model.modules();
  if (options.conv2d())  // every convolution checked before any layer changes
    for (const std::shared_ptr<nn::Module>& m : modules)
      if (auto* conv = m->as<nn::Conv2dImpl>())
        NNVM_CHECK(conv->options.groups() == 1, "quantize_dynamic", "a Conv2d of groups ", conv->options.groups(),
                   ": INT8 runs convolutions of groups 1 (leave conv2d off, or the layer float)");
  for (const std::shared_ptr<nn::Module>& m : modules) {
    if (auto* linear = m->as<nn::LinearImpl>(); linear && options.linear()) linear->use_int8();
    if (auto* conv = m->as<nn::Conv2dImpl>(); conv && options.conv2d()) conv->use_int8();
  }
}

}  // namespace detail

}  // namespace nnvm
