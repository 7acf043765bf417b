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

namespace {

// A floating input of another width is computed in float32, as PyTorch's dynamic layers do.
Tensor as_float32(const Tensor& input) {
  return input.is_floating_point() && input.dtype() != kFloat32 ? input.to(kFloat32) : input;
}

// The ops' last two attributes: x's scale (0: from x's range) and zero point.
void check_static(std::string_view fn, InputQParams q) {
  NNVM_CHECK(std::isfinite(q.scale) && q.scale > 0 && q.zero_point >= 0 && q.zero_point <= 255, fn, "input scale ",
             q.scale, " and zero point ", q.zero_point, ": expected a positive finite scale and a zero point in [0, 255]");
}

Tensor linear_with(std::string_view fn, const Tensor& input, const LinearPackedParams& params, InputQParams q) {
  static const OpDef& op = find_op("quantized_linear_dynamic");
  NNVM_CHECK(params.packed.defined(), fn, "given empty packed parameters (expected linear_prepack's)");
  NNVM_CHECK(input.defined(), fn, "given an undefined input");
  return call1(op, {as_float32(input), params.packed, params.column_sums, params.scales, params.bias},
               {params.out_features, params.in_features, Scalar(q.scale), Scalar(q.zero_point)});
}

Tensor conv2d_with(std::string_view fn, const Tensor& input, const Conv2dPackedParams& params, InputQParams q,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation) {
  static const OpDef& op = find_op("quantized_conv2d_dynamic");
  NNVM_CHECK(params.linear.packed.defined(), fn, "given empty packed parameters (expected conv2d_prepack's)");
  NNVM_CHECK(input.defined() && input.dim() == 4 && input.size(1) == params.in_channels, fn, "input ",
             input.defined() ? shape_str(input.sizes()) : std::string("undefined"), " against a weight of ",
             params.in_channels, " input channels (expected [batch, ", params.in_channels, ", h, w])");
  return call1(op,
               {as_float32(input), params.linear.packed, params.linear.column_sums, params.linear.scales,
                params.linear.bias},
               {dims({params.kernel_h, params.kernel_w}), dims(stride), dims(padding), dims(dilation),
                params.linear.out_features, Scalar(q.scale), Scalar(q.zero_point)});
}

}  // namespace

Tensor linear_dynamic(const Tensor& input, const LinearPackedParams& params) {
  return linear_with("linear_dynamic", input, params, {});
}

Tensor linear(const Tensor& input, const LinearPackedParams& params, InputQParams input_qparams) {
  check_static("quantized::linear", input_qparams);
  return linear_with("quantized::linear", input, params, input_qparams);
}

Conv2dPackedParams conv2d_prepack(const Tensor& weight, const Tensor& bias) {
  NNVM_CHECK(weight.defined() && weight.dim() == 4, "conv2d_prepack", "expected a weight [out, in, kh, kw], got ",
             weight.defined() ? shape_str(weight.sizes()) : std::string("an undefined tensor"));
  Conv2dPackedParams p;
  p.in_channels = weight.size(1);
  p.kernel_h = weight.size(2);
  p.kernel_w = weight.size(3);
  // k in (i, j, c) order: each window tap's channels side by side, as the kernel gathers them
  p.linear = linear_prepack(weight.permute({0, 2, 3, 1}).reshape({weight.size(0), -1}), bias);
  return p;
}

Tensor conv2d_dynamic(const Tensor& input, const Conv2dPackedParams& params, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef dilation) {
  return conv2d_with("conv2d_dynamic", input, params, {}, stride, padding, dilation);
}

Tensor conv2d(const Tensor& input, const Conv2dPackedParams& params, InputQParams input_qparams, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation) {
  check_static("quantized::conv2d", input_qparams);
  return conv2d_with("quantized::conv2d", input, params, input_qparams, stride, padding, dilation);
}

}  // namespace nnvm::quantized

namespace nnvm {

namespace nn {

// A layer's INT8 state: its packed weight, remade when the weight's or the
// bias's storage or version changes (the storages are held, so a new one
// never takes an old one's address); its input's parameters (static) or none
// (dynamic); or the observer its inputs go to (calibration, float32).
struct Int8Layer::State {
  quantized::Conv2dPackedParams params;  // a linear layer's in params.linear
  std::shared_ptr<Storage> weight_storage, bias_storage;
  uint64_t weight_version = 0, bias_version = 0;
  quantized::InputQParams input;  // scale 0: dynamic
  std::shared_ptr<quantization::ObserverBase> observer;
  int64_t observed = 0;  // the inputs the observer has seen

  template <class Pack> const quantized::Conv2dPackedParams& packed(const Tensor& weight, const Tensor& bias, Pack pack) {
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

void Int8Layer::use_int8(bool on) {
  if (on) check_int8();
  int8_ = on ? std::make_shared<State>() : nullptr;
}

void Int8Layer::use_int8(double input_scale, int64_t input_zero_point) {
  check_int8();
  NNVM_CHECK(std::isfinite(input_scale) && input_scale > 0 && input_zero_point >= 0 && input_zero_point <= 255,
             "use_int8", "input scale ", input_scale, " and zero point ", input_zero_point,
             ": expected a positive finite scale and a zero point in [0, 255] (uint8)");
  int8_ = std::make_shared<State>();
  int8_->input = {input_scale, input_zero_point};
}

void Int8Layer::observe_inputs(std::shared_ptr<quantization::ObserverBase> observer) {
  NNVM_CHECK(observer != nullptr, "observe_inputs", "given a null observer");
  check_int8();
  NNVM_CHECK(observer->dtype() == kQUInt8 &&
                 (observer->qscheme() == kPerTensorAffine || observer->qscheme() == kPerTensorSymmetric),
             "observe_inputs", "an INT8 layer's input is quint8 per tensor; the observer gives ",
             dtype_name(observer->dtype()), " ", qscheme_name(observer->qscheme()));
  int8_ = std::make_shared<State>();
  int8_->observer = std::move(observer);
}

int64_t Int8Layer::inputs_observed() const { return int8_ && int8_->observer ? int8_->observed : 0; }
bool Int8Layer::uses_int8() const { return int8_ && !int8_->observer; }
bool Int8Layer::observes_inputs() const { return int8_ && int8_->observer; }
const std::shared_ptr<quantization::ObserverBase>& Int8Layer::input_observer() const {
  static const std::shared_ptr<quantization::ObserverBase> none;
  return int8_ ? int8_->observer : none;
}

Tensor LinearImpl::int8_forward(const Tensor& x) {
  if (int8_->observer) {
    int8_->observer->forward(x.detach());
    ++int8_->observed;
    return linear(x, weight, bias);
  }
  const quantized::LinearPackedParams& p =
      int8_->packed(weight, bias, [](const Tensor& w, const Tensor& b) {
        return quantized::Conv2dPackedParams{quantized::linear_prepack(w, b), w.size(1), 1, 1};
      }).linear;
  return int8_->input.scale > 0 ? quantized::linear(x, p, int8_->input) : quantized::linear_dynamic(x, p);
}

void Conv2dImpl::check_int8() const {
  NNVM_CHECK(options.groups() == 1, "Conv2d", "INT8 runs convolutions of groups 1, this one has ", options.groups());
}

Tensor Conv2dImpl::int8_forward(const Tensor& x) {
  if (int8_->observer) {
    int8_->observer->forward(x.detach());
    ++int8_->observed;
    return float_forward(x);
  }
  const quantized::Conv2dPackedParams& p = int8_->packed(weight, bias, quantized::conv2d_prepack);
  const ExpandingArray<2>& pad = options.padding();
  const bool zeros = options.padding_mode() == kZeros;
  const Tensor input =
      zeros ? x : functional::pad(x, functional::PadFuncOptions({pad[1], pad[1], pad[0], pad[0]}).mode(options.padding_mode()));
  const DimVector padding = zeros ? DimVector{pad[0], pad[1]} : DimVector{0, 0};
  if (int8_->input.scale > 0) return quantized::conv2d(input, p, int8_->input, options.stride(), padding, options.dilation());
  return quantized::conv2d_dynamic(input, p, options.stride(), padding, options.dilation());
}

}  // namespace nn

namespace detail {

// The Linear and Conv2d layers of `model` (itself included) that `fn` would
// switch, every one checked before the caller changes any.
constexpr int64_t kInt8MinConvProducts = 32;

std::vector<nn::Int8Layer*> int8_layers(nn::Module& model, bool linear, bool conv2d, std::string_view fn) {
  std::vector<nn::Int8Layer*> layers;
  for (const std::shared_ptr<nn::Module>& m : model.modules()) {
    if (auto* l = m->as<nn::LinearImpl>(); l && linear) layers.push_back(l);
    if (auto* c = m->as<nn::Conv2dImpl>(); c && conv2d) {
      NNVM_CHECK(c->options.groups() == 1, fn, "a Conv2d of groups ", c->options.groups(),
                 ": INT8 runs convolutions of groups 1 (leave conv2d off, or the layer float)");
      // A few products per output (a first layer's one input channel): its time is
      // memory, which INT8 does not cut, and its windows cost more than they save.
      const int64_t products = c->options.in_channels() * c->options.kernel_size()[0] * c->options.kernel_size()[1];
      if (products >= kInt8MinConvProducts) layers.push_back(c);
    }
  }
  return layers;
}

void quantize_layers(nn::Module& model, const QuantizeDynamicOptions& options) {
  for (nn::Int8Layer* layer : int8_layers(model, options.linear(), options.conv2d(), "quantize_dynamic"))
    layer->use_int8();
}

}  // namespace detail

}  // namespace nnvm

namespace nnvm::quantization {

namespace detail {

void prepare_layers(nn::Module& model, const PrepareOptions& options) {
  for (nn::Int8Layer* layer : nnvm::detail::int8_layers(model, options.linear(), options.conv2d(), "prepare"))
    layer->observe_inputs(options.observer()());
}

}  // namespace detail

void convert(nn::Module& model) {
  std::vector<std::pair<nn::Int8Layer*, quantized::InputQParams>> layers;  // every one checked first
  for (const auto& item : model.named_modules()) {
    const std::string& name = item.key();
    auto* layer = dynamic_cast<nn::Int8Layer*>(item.value().get());
    if (!layer || !layer->observes_inputs()) continue;
    NNVM_CHECK(layer->inputs_observed() > 0, "convert", "layer '", name.empty() ? item.value()->name() : name,
               "' has seen no input to calibrate on: run batches through the prepared model first");
    const std::tuple<Tensor, Tensor> qparams = layer->input_observer()->calculate_qparams();
    const double scale = std::get<0>(qparams).item<double>();
    const auto zero_point = std::get<1>(qparams).item<int64_t>();
    layers.push_back({layer, {scale, zero_point}});
  }
  for (const auto& [layer, q] : layers) layer->use_int8(q.scale, q.zero_point);
}

}  // namespace nnvm::quantization
