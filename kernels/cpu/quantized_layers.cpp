// The kernels of "quantized_linear_dynamic" and "quantized_conv2d_dynamic"
// (core/ops/quantized_layers.cpp).
//
// The uint8 parameters are the op's (static: calibrated beforehand; a NaN
// quantizes to 0) or, with a scale of 0, x's range [lo, hi] (widened to hold
// 0, as PyTorch's dynamic quantization does) gives them: scale = (hi - lo) / 255 and zero point
// round(-lo / scale); x is quantized row by row into a buffer whose rows are
// an odd number of cache lines apart (the GEMM reads them in place, and rows
// a power of two apart would share L1's sets), padded with zeros to a
// multiple of 4. Then y = fma(float(x_q · W_q - zx · Σ W_q), sx · sw, b) on
// the INT8 GEMM. A convolution's windows are gathered from x quantized the
// same way, one row of uint8 per output pixel.
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

// v · inverse + zero_point as uint8: clamped to [0, 255], rounded half to
// even by the float adder (1.5 · 2^23 pushes the fraction out); a NaN gives 0.
inline uint8_t to_uint8(float v, float inverse, float zero_point) {
  float q = v * inverse + zero_point;
  q = q > 0.f ? q : 0.f;
  q = q < 255.f ? q : 255.f;
  return uint8_t(int32_t((q + 12582912.f) - 12582912.f));
}

// x's uint8 parameters, from its range (the range holds 0).
struct InputQuant {
  float scale, zero_point, inverse;
};

// The op's scale and zero point for x (attributes `at`, `at + 1`), or x's
// own when the scale is 0.
InputQuant input_qparams(const float* x, int64_t count, std::string_view op, const Tensor& input, const Attrs& attrs,
                         size_t at) {
  if (const float given = float(attrs.d(at)); given > 0) return {given, float(attrs.d(at + 1)), 1.f / given};
  const Range r = range_of(x, count);
  NNVM_CHECK(r.finite == 0, op, "the input ", shape_str(input.sizes()),
             " holds a NaN or an infinity: it cannot be quantized");
  float scale = (r.hi - r.lo) / 255.f;
  if (!(scale > std::numeric_limits<float>::min())) scale = 1.f;  // all zeros (or subnormal): any scale is exact
  const float zero_point = std::clamp(std::nearbyint(-r.lo / scale), 0.f, 255.f);
  return {scale, zero_point, 1.f / scale};
}

// Rows [0, m) of x (k floats, `ldx` apart) as uint8, `lda` apart, each padded with zeros.
void quantize_rows(const float* x, int64_t m, int64_t k, int64_t ldx, const InputQuant& q, uint8_t* a, int64_t lda) {
  parallel_for(0, m, std::max<int64_t>(1, kGrain / std::max<int64_t>(k, 1)), [&](int64_t begin, int64_t end) {
    // locals: the uint8 stores may alias anything captured by reference, so the loop would reread it
    const int64_t cols = k, stride = ldx, ld = lda;
    const float inv = q.inverse, zp = q.zero_point;
    for (int64_t i = begin; i < end; ++i) {
      const float* row = x + i * stride;
      uint8_t* out = a + i * ld;
      for (int64_t p = 0; p < cols; ++p) out[p] = to_uint8(row[p], inv, zp);
      std::fill(out + cols, out + ld, uint8_t(0));
    }
  });
}

// A's rows `lda` bytes apart: an odd number of cache lines, so the kernel's
// rows do not share L1's sets; rows shorter than a line side by side (a
// tile's rows then share a few lines, and A is not mostly padding).
int64_t row_stride(int64_t k) {
  const int64_t quads = (k + 3) / 4 * 4;
  return quads < 64 ? quads : ((k + 63) / 64 | 1) * 64;
}

// y[m × n] = dequantized (a · W) + bias, W and its per-channel data inputs 1..4 of the op.
void gemm_dequantized(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, absl::Span<const Tensor> in,
                      const InputQuant& q, float* y) {
  const Tensor bias = in[4].contiguous(), sums = in[2].contiguous(), scales = in[3].contiguous(),
               packed = in[1].contiguous();
  std::vector<int32_t> offset(static_cast<size_t>(n));
  std::vector<float> col_scale(static_cast<size_t>(n));
  const int32_t* column_sums = sums.data_ptr<int32_t>();
  const float* weight_scales = scales.data_ptr<float>();
  for (int64_t j = 0; j < n; ++j) {
    offset[size_t(j)] = int32_t(q.zero_point) * column_sums[j];
    col_scale[size_t(j)] = q.scale * weight_scales[j];
  }
  const Int8Dequant dq{offset.data(), col_scale.data(), bias.data_ptr<float>()};
  gemm_u8s8(m, n, k, a, lda, packed.data_ptr<int8_t>(), y, n, &dq);
}

void linear_dynamic_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& attrs) {
  const int64_t n = attrs.i(0), k = attrs.i(1);
  const Tensor x = in[0].contiguous();
  const int64_t m = k == 0 ? 0 : x.numel() / k;
  if (out[0].numel() == 0) return;
  float* y = out[0].data_ptr<float>();
  if (k == 0) {  // x Wᵀ is empty: the bias alone
    const Tensor bias = in[4].contiguous();
    for (int64_t i = 0; i < m; ++i) std::copy(bias.data_ptr<float>(), bias.data_ptr<float>() + n, y + i * n);
    return;
  }
  const float* xs = x.data_ptr<float>();
  const InputQuant q = input_qparams(xs, m * k, "quantized_linear_dynamic", in[0], attrs, 2);
  const int64_t lda = row_stride(k);
  const Tensor a = empty({m * lda}, kUInt8);
  quantize_rows(xs, m, k, k, q, a.data_ptr<uint8_t>(), lda);
  gemm_dequantized(m, n, k, a.data_ptr<uint8_t>(), lda, in, q, y);
}

// Convolution as a product. x is quantized into channels-last rows with
// a border of its zero point (the quantized 0: zero padding), so each output
// pixel's window is kh·kw runs of `channels` bytes, copied into a row of A
// in the packed weight's (i, j, c) order; A · W [k = kh·kw·c, out channels]
// gives pixel-major rows, laid out as NCHW a block at a time.
void conv2d_dynamic_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& attrs) {
  const Tensor x = in[0].contiguous();
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  const int64_t batch = x.size(0), channels = x.size(1), h = x.size(2), w = x.size(3);
  const IntArrayRef kernel = attrs.ints(0), stride = attrs.ints(1), padding = attrs.ints(2), dilation = attrs.ints(3);
  const int64_t n = y.size(1), oh = y.size(2), ow = y.size(3), pixels = oh * ow;
  const int64_t k = channels * kernel[0] * kernel[1];
  const float* xs = x.data_ptr<float>();
  const InputQuant q = input_qparams(xs, x.numel(), "quantized_conv2d_dynamic", in[0], attrs, 5);
  const int64_t hp = h + 2 * padding[0], wp = w + 2 * padding[1];
  const Tensor padded = full({batch * hp * wp * channels}, Scalar(int64_t(q.zero_point)), kUInt8);
  uint8_t* xq = padded.data_ptr<uint8_t>();
  // x[b][c][yy][xx] into padded[b][yy + p0][xx + p1][c]: written in order, read a line per channel at a time
  parallel_for(0, batch * h, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, w * channels)),
               [&](int64_t begin, int64_t end) {
                 const float inv = q.inverse, zp = q.zero_point;
                 const int64_t c_count = channels, width = w, plane = h * w;
                 for (int64_t t = begin; t < end; ++t) {
                   const int64_t b = t / h, yy = t % h;
                   const float* src = xs + b * c_count * plane + yy * width;
                   uint8_t* dst = xq + ((b * hp + yy + padding[0]) * wp + padding[1]) * c_count;
                   for (int64_t xx = 0; xx < width; ++xx)
                     for (int64_t c = 0; c < c_count; ++c) dst[xx * c_count + c] = to_uint8(src[c * plane + xx], inv, zp);
                 }
               });
  const int64_t lda = row_stride(k), m = batch * pixels;
  const Tensor a = empty({m * lda}, kUInt8);
  uint8_t* rows = a.data_ptr<uint8_t>();
  parallel_for(0, m, std::max<int64_t>(1, kGrain / k), [&](int64_t begin, int64_t end) {
    const int64_t kh = kernel[0], kw = kernel[1], c_count = channels, ld = lda;
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / pixels, py = r % pixels / ow, px = r % ow;
      uint8_t* row = rows + r * ld;
      for (int64_t i = 0; i < kh; ++i) {
        const uint8_t* line = xq + ((b * hp + py * stride[0] + i * dilation[0]) * wp + px * stride[1]) * c_count;
        for (int64_t j = 0; j < kw; ++j) std::memcpy(row + (i * kw + j) * c_count, line + j * dilation[1] * c_count, size_t(c_count));
      }
      std::fill(row + k, row + ld, uint8_t(0));
    }
  });
  const Tensor by_pixel = empty({m, n});
  gemm_dequantized(m, n, k, rows, lda, in, q, by_pixel.data_ptr<float>());
  // [batch][pixel][n] into [batch][n][pixel], 32 × 32 blocks
  const float* c = by_pixel.data_ptr<float>();
  float* o = y.data_ptr<float>();
  constexpr int64_t kBlock = 32;
  const int64_t pixel_blocks = (pixels + kBlock - 1) / kBlock;
  parallel_for(0, batch * pixel_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / pixel_blocks, p0 = t % pixel_blocks * kBlock, p1 = std::min(pixels, p0 + kBlock);
      for (int64_t j0 = 0; j0 < n; j0 += kBlock)
        for (int64_t j = j0; j < std::min(n, j0 + kBlock); ++j)
          for (int64_t p = p0; p < p1; ++p) o[(b * n + j) * pixels + p] = c[(b * pixels + p) * n + j];
    }
  });
}

}  // namespace

NNVM_REGISTER(cpu_quantized_layer_kernels) {
  register_kernel("quantized_linear_dynamic", kCPU, linear_dynamic_kernel);
  register_kernel("quantized_conv2d_dynamic", kCPU, conv2d_dynamic_kernel);
}

}  // namespace nnvm::cpu
