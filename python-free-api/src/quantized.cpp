#include "nnvm/quantized.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/op.h"
#include "nnvm/core/storage.h"
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

}  // namespace nnvm::quantized

namespace nnvm {

namespace nn {

struct LinearImpl::Int8Weight {
  quantized::LinearPackedParams params;
  std::shared_ptr<Storage> weight_storage, bias_storage;  // held: a new storage never takes an old one's address
  uint64_t weight_version = 0, bias_version = 0;
};

void LinearImpl::use_int8(bool on) {
  int8_ = on ? std::make_shared<Int8Weight>() : nullptr;
}

Tensor LinearImpl::int8_forward(const Tensor& x) {
  Int8Weight& w = *int8_;
  const std::shared_ptr<Storage>& ws = weight.storage();
  const std::shared_ptr<Storage> bs = bias.defined() ? bias.storage() : nullptr;
  const bool stale = w.weight_storage != ws || w.weight_version != ws->version() || w.bias_storage != bs ||
                     (bs && w.bias_version != bs->version());
  if (stale) {
    w.params = quantized::linear_prepack(weight, bias);
    w.weight_storage = ws;
    w.weight_version = ws->version();
    w.bias_storage = bs;
    w.bias_version = bs ? bs->version() : 0;
  }
  return quantized::linear_dynamic(x, w.params);
}

}  // namespace nn

namespace detail {

void quantize_linear_layers(nn::Module& model) {
  for (const std::shared_ptr<nn::Module>& m : model.modules())
    if (auto* linear = m->as<nn::LinearImpl>()) linear->use_int8();
}

}  // namespace detail

}  // namespace nnvm
