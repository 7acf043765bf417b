// CPU kernels of quantize_per_tensor, quantize_per_channel,
// dequantize_per_tensor and dequantize_per_channel (core/ops/quantize.cpp),
// with PyTorch's arithmetic (core/quantize.h): q = clamp(nearbyint(x * (1/scale))
// + zero_point) in float32, NaN to qmin; per tensor x = float(scale) * (q - zp),
// per channel x = float((q - zp) * scale) with the product in double.
#include <cmath>
#include <cstdint>
#include <vector>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/quantize.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/loops.h"
#include "nnvm/kernels/cpu/quantize.h"

namespace nnvm::cpu {

namespace {

// Calls fn(Q{}) for the integer type a quantized dtype is stored as.
template <class Fn> void dispatch_quantized(DType t, Fn&& fn) {
  switch (underlying(t)) {
    case kInt8: return fn(int8_t{});
    case kUInt8: return fn(uint8_t{});
    case kInt32: return fn(int32_t{});
    default: throw Error(nnvm::detail::concat("quantize: expected a quantized dtype but got ", t));
  }
}

// PyTorch's quantize_val: the comparisons in float put NaN and -inf at qmin,
// +inf at qmax, and leave only values inside the range to convert.
template <class Q> Q quantize_val(float x, float inv_scale, int64_t zero_point, int64_t qmin, int64_t qmax) {
  const float v = float(zero_point) + std::nearbyint(x * inv_scale);
  if (!(v > float(qmin))) return Q(qmin);
  if (v >= float(qmax)) return Q(qmax);
  return Q(int64_t(v));
}

// Each element's scale and zero point: one pair for the tensor, or, per
// channel, those of index (i / inner) % channels of a contiguous layout.
struct QParams {
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
  int64_t inner = 1;

  // per tensor: attributes [scale, zero_point]; per channel: inputs 1 and 2, attribute [axis]
  QParams(absl::Span<const Tensor> in, const Attrs& a, bool per_channel) {
    if (!per_channel) {
      scales = {a.d(0)};
      zero_points = {a.s(1).to_int()};
      return;
    }
    scales = in[1].to_vector<double>();
    zero_points = in[2].to_vector<int64_t>();
    for (int64_t d = a.i(0) + 1; d < in[0].dim(); ++d) inner *= in[0].size(d);
  }
  int64_t channel(int64_t i) const { return scales.size() == 1 ? 0 : (i / inner) % int64_t(scales.size()); }
};

// f(i) for each i in [0, n), in parallel.
template <class F> void for_each_element(int64_t n, F f) {
  parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

template <bool kPerChannel>
void quantize_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor x = in[0].contiguous();
  const QParams p(in, a, kPerChannel);
  std::vector<float> inv_scales;
  for (double s : p.scales) inv_scales.push_back(1.0f / float(s));
  const DType dtype = out[0].dtype();
  const int64_t qmin = quant_min(dtype), qmax = quant_max(dtype);
  const float* px = x.data_ptr<float>();
  dispatch_quantized(dtype, [&](auto z) {
    using Q = decltype(z);
    Q* pq = static_cast<Q*>(out[0].data_ptr());
    for_each_element(x.numel(), [&](int64_t i) {
      const size_t c = size_t(p.channel(i));
      pq[i] = quantize_val<Q>(px[i], inv_scales[c], p.zero_points[c], qmin, qmax);
    });
  });
}

template <bool kPerChannel>
void dequantize_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor q = int_view(in[0]).contiguous();
  const QParams p(in, a, kPerChannel);
  float* px = out[0].data_ptr<float>();
  dispatch_quantized(in[0].dtype(), [&](auto z) {
    using Q = decltype(z);
    const Q* pq = static_cast<const Q*>(q.data_ptr());
    for_each_element(q.numel(), [&](int64_t i) {
      const size_t c = size_t(p.channel(i));
      const int64_t centred = int64_t(pq[i]) - p.zero_points[c];
      if constexpr (kPerChannel) px[i] = float(double(centred) * p.scales[c]);
      else px[i] = float(p.scales[c]) * float(centred);
    });
  });
}

}  // namespace

NNVM_REGISTER(cpu_quantize_kernels) {
  register_kernel("quantize_per_tensor", kCPU, quantize_kernel<false>);
  register_kernel("quantize_per_channel", kCPU, quantize_kernel<true>);
  register_kernel("dequantize_per_tensor", kCPU, dequantize_kernel<false>);
  register_kernel("dequantize_per_channel", kCPU, dequantize_kernel<true>);
}

}  // namespace nnvm::cpu
