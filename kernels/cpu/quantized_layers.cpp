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
//
// The integer products of ONNX's quantized operators ("integer_matmul",
// "integer_conv2d") run on the same GEMM, their int32 sums corrected for the
// zero points afterwards (integer_sums).
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

// A 2-d convolution's geometry: x [batch, channels, h, w] padded to
// [hp, wp], output pixels [oh, ow].
struct ConvGeometry {
  int64_t batch, channels, h, w;
  int64_t kh, kw, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  int64_t hp, wp, oh, ow;
};

// attrs kernel, stride, padding (2 values, or 4: top, left, bottom, right), dilation at 0..3; y the output.
ConvGeometry conv_geometry(const Tensor& x, const Tensor& y, const Attrs& attrs) {
  const IntArrayRef kernel = attrs.ints(0), stride = attrs.ints(1), padding = attrs.ints(2), dilation = attrs.ints(3);
  const size_t end = padding.size() == 4 ? 2 : 0;
  return {x.size(0),  x.size(1),   x.size(2),   x.size(3),   kernel[0],
          kernel[1],  stride[0],   stride[1],   dilation[0], dilation[1],
          padding[0], padding[1],  x.size(2) + padding[0] + padding[end], x.size(3) + padding[1] + padding[end + 1],
          y.size(2),  y.size(3)};
}

// x[b][c][yy][xx] as uint8 (`to_byte`) into a buffer [b][yy + top][xx + left][c]
// bordered with `border`: written in order, read a line per channel at a time.
template <class T, class ToByte>
Tensor channels_last(const T* x, const ConvGeometry& g, uint8_t border, ToByte to_byte) {
  const Tensor padded = full({g.batch * g.hp * g.wp * g.channels}, Scalar(int64_t(border)), kUInt8);
  uint8_t* xq = padded.data_ptr<uint8_t>();
  parallel_for(0, g.batch * g.h, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.w * g.channels)),
               [&](int64_t begin, int64_t end) {
                 const int64_t c_count = g.channels, width = g.w, plane = g.h * g.w;
                 for (int64_t t = begin; t < end; ++t) {
                   const int64_t b = t / g.h, yy = t % g.h;
                   const T* src = x + b * c_count * plane + yy * width;
                   uint8_t* dst = xq + ((b * g.hp + yy + g.pad_top) * g.wp + g.pad_left) * c_count;
                   for (int64_t xx = 0; xx < width; ++xx)
                     for (int64_t c = 0; c < c_count; ++c) dst[xx * c_count + c] = to_byte(src[c * plane + xx]);
                 }
               });
  return padded;
}

// One row of A per output pixel, `lda` bytes apart: its window's channels
// [first, first + count) of the channels-last buffer, kh·kw runs of `count`
// bytes in (i, j, channel) order, padded with zeros.
void gather_windows(const uint8_t* xq, const ConvGeometry& g, int64_t first, int64_t count, uint8_t* rows,
                    int64_t lda) {
  const int64_t pixels = g.oh * g.ow, k = g.kh * g.kw * count;
  parallel_for(0, g.batch * pixels, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, k)),
               [&](int64_t begin, int64_t end) {
                 const int64_t c_count = g.channels, ld = lda;
                 for (int64_t r = begin; r < end; ++r) {
                   const int64_t b = r / pixels, py = r % pixels / g.ow, px = r % g.ow;
                   uint8_t* row = rows + r * ld;
                   for (int64_t i = 0; i < g.kh; ++i) {
                     const int64_t line_y = py * g.stride_h + i * g.dilation_h, line_x = px * g.stride_w;
                     const uint8_t* line = xq + ((b * g.hp + line_y) * g.wp + line_x) * c_count + first;
                     for (int64_t j = 0; j < g.kw; ++j)
                       std::memcpy(row + (i * g.kw + j) * count, line + j * g.dilation_w * c_count, size_t(count));
                   }
                   std::fill(row + k, row + ld, uint8_t(0));
                 }
               });
}

// by_pixel [batch][pixel][n] into channels [first, first + n) of y [batch][channels][pixel], 32 × 32 blocks.
template <class T>
void pixels_to_channels(const T* by_pixel, int64_t batch, int64_t pixels, int64_t n, T* y, int64_t channels,
                        int64_t first) {
  constexpr int64_t kBlock = 32;
  const int64_t pixel_blocks = (pixels + kBlock - 1) / kBlock;
  parallel_for(0, batch * pixel_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / pixel_blocks, p0 = t % pixel_blocks * kBlock, p1 = std::min(pixels, p0 + kBlock);
      for (int64_t j0 = 0; j0 < n; j0 += kBlock)
        for (int64_t j = j0; j < std::min(n, j0 + kBlock); ++j)
          for (int64_t p = p0; p < p1; ++p)
            y[(b * channels + first + j) * pixels + p] = by_pixel[(b * pixels + p) * n + j];
    }
  });
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
  const ConvGeometry g = conv_geometry(x, y, attrs);
  const int64_t n = y.size(1), pixels = g.oh * g.ow, k = g.channels * g.kh * g.kw;
  const float* xs = x.data_ptr<float>();
  const InputQuant q = input_qparams(xs, x.numel(), "quantized_conv2d_dynamic", in[0], attrs, 5);
  const float inv = q.inverse, zp = q.zero_point;
  const Tensor padded = channels_last(xs, g, uint8_t(q.zero_point), [=](float v) { return to_uint8(v, inv, zp); });
  const int64_t lda = row_stride(k), m = g.batch * pixels;
  const Tensor a = empty({m * lda}, kUInt8);
  gather_windows(padded.data_ptr<uint8_t>(), g, 0, g.channels, a.data_ptr<uint8_t>(), lda);
  const Tensor by_pixel = empty({m, n});
  gemm_dequantized(m, n, k, a.data_ptr<uint8_t>(), lda, in, q, by_pixel.data_ptr<float>());
  pixels_to_channels(by_pixel.data_ptr<float>(), g.batch, pixels, n, y.data_ptr<float>(), n, 0);
}

// ---- the integer products of "integer_matmul" and "integer_conv2d" ----

// Zero points: one, or one per index.
struct ZeroPoints {
  const int32_t* values;
  int64_t count;
  int64_t operator[](int64_t i) const { return values[count == 1 ? 0 : i]; }
};

ZeroPoints zero_points_of(const Tensor& t) { return {t.data_ptr<int32_t>(), t.numel()}; }

// c[m × n] (ldc apart) = Σ_p (a[i][p] - za[i]) (b[p][j] - zb[j]) from the
// INT8 GEMM's Σ ab (exact in int32 for k up to kInt8MaxK):
//   Σ ab - zb[j] Σ_p a[i][p] - za[i] Σ_p b[p][j] + k za[i] zb[j]
// in int64, then wrapped to int32 as int32 accumulation would.
void integer_sums(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, ZeroPoints za, const int8_t* packed,
                  const int32_t* column_sums, ZeroPoints zb, int32_t* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k > 0) gemm_u8s8(m, n, k, a, lda, packed, c, ldc, nullptr);
  parallel_for(0, m, std::max<int64_t>(1, kGrain / std::max<int64_t>(n + k, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint8_t* row = a + i * lda;
      int64_t row_sum = 0;
      for (int64_t p = 0; p < k; ++p) row_sum += row[p];
      const int64_t zai = za[i];
      int32_t* ci = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t ab = k > 0 ? ci[j] : 0, zbj = zb[j];
        ci[j] = int32_t(uint32_t(ab - zbj * row_sum - zai * column_sums[j] + k * zai * zbj));
      }
    }
  });
}

// int8 bytes read as uint8 plus 128 (flip 0x80), uint8 as they are.
uint8_t sign_flip(const Tensor& x) { return x.dtype() == kInt8 ? 0x80 : 0; }

void integer_matmul_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& attrs) {
  const int64_t n = attrs.i(0), k = attrs.i(1);
  const Tensor& y = out[0];
  const int64_t m = y.size(0);
  if (y.numel() == 0) return;
  const Tensor x = in[0].contiguous();
  const uint8_t* xs = static_cast<const uint8_t*>(x.data_ptr());
  const uint8_t flip = sign_flip(x);
  const int64_t lda = row_stride(k);
  const Tensor a = empty({m * lda}, kUInt8);
  uint8_t* rows = a.data_ptr<uint8_t>();
  parallel_for(0, m, std::max<int64_t>(1, kGrain / std::max<int64_t>(k, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint8_t* row = rows + i * lda;
      for (int64_t p = 0; p < k; ++p) row[p] = xs[i * k + p] ^ flip;
      std::fill(row + k, row + lda, uint8_t(0));
    }
  });
  integer_sums(m, n, k, rows, lda, zero_points_of(in[1]), in[2].data_ptr<int8_t>(), in[3].data_ptr<int32_t>(),
               zero_points_of(in[4]), y.data_ptr<int32_t>(), n);
}

// Per group: the windows of its channels as rows of A (the border x's zero
// point), the GEMM by its packed block, then its channels of y.
void integer_conv2d_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& attrs) {
  const Tensor x = in[0].contiguous();
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  const ConvGeometry g = conv_geometry(x, y, attrs);
  const int64_t groups = attrs.i(4), n = y.size(1), group_n = n / groups, group_c = g.channels / groups;
  const int64_t pixels = g.oh * g.ow, k = group_c * g.kh * g.kw, m = g.batch * pixels;
  const ZeroPoints zx = zero_points_of(in[1]), zw = zero_points_of(in[4]);
  const uint8_t flip = sign_flip(x);
  const Tensor padded = channels_last(static_cast<const uint8_t*>(x.data_ptr()), g, uint8_t(zx[0]),
                                      [=](uint8_t v) { return uint8_t(v ^ flip); });
  const int64_t lda = row_stride(k);
  const Tensor a = empty({m * lda}, kUInt8);
  const Tensor by_pixel = empty({m, group_n}, kInt32);
  const int8_t* packed = in[2].data_ptr<int8_t>();
  const int32_t* column_sums = in[3].data_ptr<int32_t>();
  for (int64_t group = 0; group < groups; ++group) {
    gather_windows(padded.data_ptr<uint8_t>(), g, group * group_c, group_c, a.data_ptr<uint8_t>(), lda);
    const ZeroPoints group_zw{zw.values + (zw.count == 1 ? 0 : group * group_n), zw.count};
    integer_sums(m, group_n, k, a.data_ptr<uint8_t>(), lda, {zx.values, 1},
                 packed + group * int8_packed_bytes(k, group_n), column_sums + group * group_n, group_zw,
                 by_pixel.data_ptr<int32_t>(), group_n);
    pixels_to_channels(by_pixel.data_ptr<int32_t>(), g.batch, pixels, group_n, y.data_ptr<int32_t>(), n,
                       group * group_n);
  }
}

}  // namespace

NNVM_REGISTER(cpu_quantized_layer_kernels) {
  register_kernel("quantized_linear_dynamic", kCPU, linear_dynamic_kernel);
  register_kernel("quantized_conv2d_dynamic", kCPU, conv2d_dynamic_kernel);
  register_kernel("integer_matmul", kCPU, integer_matmul_kernel);
  register_kernel("integer_conv2d", kCPU, integer_conv2d_kernel);
}

}  // namespace nnvm::cpu
