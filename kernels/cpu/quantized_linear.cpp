// The kernel of "quantized_linear_dynamic" (core/ops/quantized_linear.cpp).
//
// x's range [lo, hi] (widened to hold 0, as PyTorch's dynamic quantization
// does) gives the uint8 parameters: scale = (hi - lo) / 255 and zero point
// round(-lo / scale); x is quantized row by row into a buffer whose rows are
// an odd number of cache lines apart (the GEMM reads them in place, and rows
// a power of two apart would share L1's sets), padded with zeros to a
// multiple of 4. Then y = fma(float(x_q · W_q - zx · Σ W_q), sx · sw, b) on
// the INT8 GEMM.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/gemm_int8.h"

namespace nnvm::cpu {

namespace {

constexpr int64_t kGrain = 1 << 14;

struct Range {
  float lo = 0, hi = 0;
  float finite = 0;  // NaN where any value is a NaN or an infinity (x · 0)
};

Range range_of(const float* x, int64_t count) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(64, count / kGrain));
  std::vector<Range> part(static_cast<size_t>(chunks));
  parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      // 16 lanes at a time in the compiler's vector type (the widest the target has)
      using Lanes = float __attribute__((vector_size(64)));
      Lanes lo = {}, hi = {}, finite = {};  // the range holds 0
      int64_t i = count * c / chunks;
      const int64_t last = count * (c + 1) / chunks;
      for (; i + 16 <= last; i += 16) {
        Lanes v;
        std::memcpy(&v, x + i, sizeof(v));
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        finite += v * 0.f;
      }
      Range& r = part[size_t(c)];
      for (; i < last; ++i) r = {std::min(r.lo, x[i]), std::max(r.hi, x[i]), r.finite + x[i] * 0.f};
      for (int l = 0; l < 16; ++l) r = {std::min(r.lo, lo[l]), std::max(r.hi, hi[l]), r.finite + finite[l]};
    }
  });
  Range r;
  for (const Range& p : part) r = {std::min(r.lo, p.lo), std::max(r.hi, p.hi), r.finite + p.finite};
  return r;
}

void linear_dynamic_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& attrs) {
  const int64_t n = attrs.i(0), k = attrs.i(1);
  const Tensor x = in[0].contiguous();
  const int64_t m = k == 0 ? 0 : x.numel() / k;
  float* y = out[0].data_ptr<float>();
  if (out[0].numel() == 0) return;
  const Tensor bias_values = in[4].contiguous(), sums_values = in[2].contiguous(), scale_values = in[3].contiguous(),
               packed = in[1].contiguous();
  const float* bias = bias_values.data_ptr<float>();
  if (m == 0 || k == 0) {
    for (int64_t i = 0; i < m; ++i) std::copy(bias, bias + n, y + i * n);
    return;
  }
  const float* xs = x.data_ptr<float>();
  const Range r = range_of(xs, m * k);
  NNVM_CHECK(r.finite == 0, "quantized_linear_dynamic", "the input ", shape_str(in[0].sizes()),
             " holds a NaN or an infinity: it cannot be quantized");
  float scale = (r.hi - r.lo) / 255.f;
  if (!(scale > std::numeric_limits<float>::min())) scale = 1.f;  // all zeros (or subnormal): any scale is exact
  const float zero_point = std::clamp(std::nearbyint(-r.lo / scale), 0.f, 255.f);
  const float inverse = 1.f / scale;
  const int64_t lda = ((k + 63) / 64 | 1) * 64;  // an odd number of lines (k <= 64: one line)
  const Tensor aq = empty({m * lda}, kUInt8);
  uint8_t* a = aq.data_ptr<uint8_t>();
  parallel_for(0, m, std::max<int64_t>(1, kGrain / k), [&](int64_t begin, int64_t end) {
    // locals: the uint8 stores may alias anything captured by reference, so the loop would reread it
    const int64_t cols = k;
    const float inv = inverse, zp = zero_point;
    for (int64_t i = begin; i < end; ++i) {
      const float* row = xs + i * cols;
      uint8_t* q = a + i * lda;
      for (int64_t p = 0; p < cols; ++p) {
        // round half to even by the float adder: 1.5 · 2^23 pushes the fraction out
        float v = row[p] * inv + zp;
        v = v > 0.f ? v : 0.f;
        v = v < 255.f ? v : 255.f;
        q[p] = uint8_t(int32_t((v + 12582912.f) - 12582912.f));
      }
      std::fill(q + cols, q + lda, uint8_t(0));
    }
  });
  const int32_t* sums = sums_values.data_ptr<int32_t>();
  const float* w_scales = scale_values.data_ptr<float>();
  std::vector<int32_t> offset(static_cast<size_t>(n));
  std::vector<float> col_scale(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    offset[size_t(j)] = int32_t(zero_point) * sums[j];
    col_scale[size_t(j)] = scale * w_scales[j];
  }
  const Int8Dequant dq{offset.data(), col_scale.data(), bias};
  gemm_u8s8(m, n, k, a, lda, packed.data_ptr<int8_t>(), y, n, &dq);
}

}  // namespace

NNVM_REGISTER(cpu_quantized_linear_kernels) {
  register_kernel("quantized_linear_dynamic", kCPU, linear_dynamic_kernel);
}

}  // namespace nnvm::cpu
