// The direct convolution (conv_direct.h).
#include "nnvm/kernels/cpu/conv_direct.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "nnvm/core/error.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/tensor.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/cpu_features.h"
#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/kernels/cpu/window.h"

namespace nnvm::cpu {

namespace {

// ---- direct convolution: the GEMM reads the image where it lies.
//
// y[o, (oh, ow)] = Σ_(c,kh,kw) W[o, (c,kh,kw)] · xp[c, s_h·oh + d_h·kh, s_w·ow + d_w·kw]
// over xp, the image padded with zeros. The output is computed a band of
// rows [oh0, oh1) at a time: the image is copied into windows, for each
// channel c, each kernel column kw and each row phase a that a tap reads
// (a = d_h·kh mod s_h), window (c, a, kw) a plane as wide as the output
// holding xp[c, s_h·(oh0 + i) + a, s_w·ow + d_w·kw] at (i, ow). Tap
// (c, kh, kw) of output (oh, ow) is then element (oh − oh0 + d_h·kh div s_h,
// ow) of window (c, d_h·kh mod s_h, kw): over the band's pixels in order
// (j = (oh − oh0)·out_width + ow), row (c, kh, kw) of the im2col matrix is
// that window from its row d_h·kh div s_h on, one run of memory, which the
// GEMM reads in place through a table of offsets (gemm.h RowTable) instead
// of packing it, and its product is the band of the output itself. The
// copy writes each input pixel kw times (im2col: kh·kw times, packed again
// by the GEMM). Bands keep a band's windows in L2 while the GEMM reads them
// (a whole 56×56 image's, 3×3 over 64 channels, are 2.5 MB: copied out to
// memory and read back, they cost a fifth of the convolution), and give
// the threads bands of an image to run when images are fewer than threads.
// Each output is the same chain of multiply-adds over (c, kh, kw) as the
// im2col matrix's GEMM, so the bits are the same.
struct DirectLayout {
  std::vector<int64_t> phase;  // row phase a -> its windows' place among a channel's, or -1: no tap reads it
  int64_t band;                // output rows of a band (the last may have fewer)
  int64_t rows;                // of a window: a band's rows and the rows its taps reach below
  int64_t window;              // rows · out_width
  int64_t channel;             // the windows of a channel: phases read · kernel_w · window
  int64_t size;                // of a band's buffer: every channel's windows and the slack the GEMM reads past
  int64_t images = 1;          // images side by side in one product (whole-image bands of large weights)
};

// A band's windows are at most this many bytes (a quarter of L2), and a
// band split for threads at least this many output pixels: fewer leave the
// GEMM ragged column panels (14×14 in two bands: 98 columns in 4 panels of
// 32), where splitting its rows between threads costs nothing.
constexpr int64_t kMinBandPixelsPerThread = 1024;
// The columns (pixels of whole images) one product of several images takes
// at most (DirectLayout::images).
constexpr int64_t kGroupColumns = 512;

DirectLayout direct_layout(const Geometry& g) {
  DirectLayout d;
  d.phase.assign(size_t(g.stride_h), -1);
  int64_t phases = 0;
  for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
    int64_t& p = d.phase[size_t(kh * g.dil_h % g.stride_h)];
    if (p < 0) p = phases++;
  }
  const int64_t reach = (g.kernel_h - 1) * g.dil_h / g.stride_h;  // window rows a band's taps reach below it
  const int64_t row_bytes = g.channels * phases * g.kernel_w * g.out_width * int64_t(sizeof(float));
  // At least reach + 1 rows, so no window row is copied more than twice
  // over: with 512 KiB of L2 (Zen 3) a quarter held 64 channels' 56-wide
  // rows for a band of one (3 rows copied for each, 56 columns in 3.5
  // panels); a band of 3 ran a ResNet layer 13-22% faster.
  const int64_t fits = cpu_features().l2_bytes / 4 / std::max<int64_t>(1, row_bytes) - reach;
  d.band = std::clamp<int64_t>(std::max(fits, reach + 1), 1, std::max<int64_t>(1, g.out_height));
  // Each band's GEMM reads every weight: where they outgrow half of L2 they
  // come from L3 or memory again for each band (a ResNet's 3×3 layers at
  // 7×7 over 512 channels: 9.4 MB of weights, 3 bands of 3, 3 and 1 rows
  // on a 512 KiB L2), so the image goes in one band, its windows past L2.
  const int64_t weight_bytes =
      g.out_channels * (g.channels / g.groups) * g.kernel_h * g.kernel_w * int64_t(sizeof(float));
  if (weight_bytes > cpu_features().l2_bytes / 2) d.band = std::max<int64_t>(1, g.out_height);
  const int64_t threads = parallel_threads(), pixels = g.out_height * g.out_width;
  if (g.batch < threads && pixels / threads >= kMinBandPixelsPerThread) {
    const int64_t per_image = (threads + g.batch - 1) / g.batch;  // bands an image needs for every thread
    d.band = std::min(d.band, (g.out_height + per_image - 1) / per_image);
  }
  d.rows = d.band + reach;
  d.window = d.rows * g.out_width;
  d.channel = phases * g.kernel_w * d.window;
  d.size = g.channels * d.channel + d.band * g.out_width + kRowTableSlack;
  // Small images of large weights go several to a product, side by side:
  // the weights read once for them all, and 7×7 images' 49 columns (three
  // tiles of 16 and one of 1) become whole tiles.
  if (weight_bytes > cpu_features().l2_bytes / 2 && d.band == g.out_height && g.batch > 1) {
    const int64_t fits = std::max<int64_t>(1, kGroupColumns / std::max<int64_t>(1, pixels));
    d.images = std::clamp<int64_t>(fits, 1, (g.batch + threads - 1) / threads);
  }
  return d;
}

// The offset of tap (c, kh, kw)'s run for channels [0, channels), in (c, kh, kw) order.
void direct_taps(const Geometry& g, const DirectLayout& d, int64_t channels, int64_t* taps) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < g.kernel_h; ++kh)
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t dh = kh * g.dil_h, phase = d.phase[size_t(dh % g.stride_h)];
        *taps++ = c * d.channel + (phase * g.kernel_w + kw) * d.window + dh / g.stride_h * g.out_width;
      }
}

// The windows of a stride-1 convolution whose output rows are as wide as
// its contiguous input rows (a "same" convolution: 3x3 with padding 1), the
// common case: window (c, kw) is the plane shifted by (oh0 − pad_h, the
// tap's column offset), one copy_shifted_plane. Window row i is input row
// oh0 + i − pad_h.
void direct_copy_shifted_planes(const float* x, int64_t sc, const Geometry& g, const DirectLayout& d, int64_t oh0,
                                int64_t c0, int64_t c1, float* buf) {
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t kw = 0; kw < g.kernel_w; ++kw)
      copy_shifted_plane(x + c * sc, oh0 - g.pad_h, kw * g.dil_w - g.pad_w, g.width, d.rows, g.height,
                         buf + c * d.channel + kw * d.window);
}

// The windows of channels [c0, c1) of the band from output row oh0, as
// DirectLayout says.
void direct_copy_channels(const float* x, int64_t sc, int64_t sh, int64_t sw, const Geometry& g,
                          const DirectLayout& d, int64_t oh0, int64_t c0, int64_t c1, float* buf) {
  if (g.stride_h == 1 && g.stride_w == 1 && g.out_width == g.width && sw == 1 && sh == g.width)
    return direct_copy_shifted_planes(x, sc, g, d, oh0, c0, c1, buf);
  const WindowAxis cols{g.kernel_w, g.stride_w, g.pad_w, g.dil_w, g.width, g.out_width};
  const int64_t step = g.stride_w * sw, width = g.out_width;
  for (int64_t a = 0; a < g.stride_h; ++a) {
    if (d.phase[size_t(a)] < 0) continue;
    for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
      const auto [lo, hi] = cols.outputs_of_tap(kw);  // the columns whose pixel is inside the image
      for (int64_t c = c0; c < c1; ++c) {
        float* dst = buf + c * d.channel + (d.phase[size_t(a)] * g.kernel_w + kw) * d.window;
        for (int64_t i = 0; i < d.rows; ++i, dst += width) {
          const int64_t ih = g.stride_h * (oh0 + i) + a - g.pad_h;
          if (ih < 0 || ih >= g.height || lo == hi) {
            std::fill(dst, dst + width, 0.f);
            continue;
          }
          for (int64_t ow = 0; ow < lo; ++ow) dst[ow] = 0.f;
          const float* src = x + c * sc + ih * sh + cols.at(lo, kw) * sw;  // column lo's pixel
          with_step(step, [&, lo = lo, hi = hi](auto s) {  // clang 14 cannot capture structured bindings
            for (int64_t j = 0; j < hi - lo; ++j) dst[lo + j] = src[j * s];
          });
          for (int64_t ow = hi; ow < width; ++ow) dst[ow] = 0.f;
        }
      }
    }
  }
}

// The windows of the band from output row oh0 and zeros after them, every
// element of the buffer written: the channels spread over the threads
// where the band runs alone (an image of one band whose GEMM splits its
// rows between the threads: the copy would be its serial part), inline
// where bands already run on threads.
constexpr int64_t kCopyGrain = int64_t(1) << 15;  // floats a thread copies at least
void direct_copy(const float* x, int64_t sc, int64_t sh, int64_t sw, const Geometry& g, const DirectLayout& d,
                 int64_t oh0, float* buf) {
  std::fill(buf + g.channels * d.channel, buf + d.size, 0.f);
  parallel_for(0, g.channels, std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(1, d.channel)),
               [&](int64_t c0, int64_t c1) { direct_copy_channels(x, sc, sh, sw, g, d, oh0, c0, c1, buf); });
}

// The GEMM's epilogue where the convolution has a bias: added to each
// finished tile of the output while it is in cache.
struct DirectBias {
  float* out;  // the group's band of output planes: row o at out + o · pixels
  const float* bias;
  int64_t pixels;
};

void direct_add_bias(const void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const DirectBias& b = *static_cast<const DirectBias*>(ctx);
  for (int64_t o = i0; o < i1; ++o) {
    float* row = b.out + o * b.pixels;
    for (int64_t j = j0; j < j1; ++j) row[j] += b.bias[o];
  }
}

// Output rows [oh0, oh1) of one image as the direct convolution above.
void conv2d_direct_band(const float* image, int64_t sc, int64_t sh, int64_t sw, const float* w, const float* bias,
                        const Geometry& g, const DirectLayout& d, const int64_t* taps, int64_t oh0, int64_t oh1,
                        float* out) {
  const int64_t cg = g.channels / g.groups, og = g.out_channels / g.groups, k = cg * g.kernel_h * g.kernel_w;
  const int64_t pixels = g.out_height * g.out_width, columns = (oh1 - oh0) * g.out_width;
  float* buf = thread_buffer<float, 1>(d.size);
  direct_copy(image, sc, sh, sw, g, d, oh0, buf);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const RowTable rows{buf + grp * cg * d.channel, taps};
    float* band_out = out + grp * og * pixels + oh0 * g.out_width;
    const DirectBias add{band_out, bias ? bias + grp * og : nullptr, pixels};
    const GemmEpilogue epilogue{&direct_add_bias, &add};
    const bool ran = gemm_row_table_b(og, columns, k, MatrixRef<float>{w + grp * og * k, k, 1}, rows, 0.f,
                                      band_out, pixels, bias ? &epilogue : nullptr);
    NNVM_CHECK(ran, "conv2d", "the GEMM declined a direct convolution it reads row tables for");
  }
}

// The epilogue of a product over several images side by side (columns in
// runs of `pixels`, one image each): the finished tile copied into each
// image's output planes, with the bias.
struct DirectImages {
  const float* product;  // the group's output channels × the images' pixels
  int64_t columns;       // of the product: images · pixels
  float* out;            // the first image's group of output planes
  int64_t per_image;     // between images' outputs
  const float* bias;
  int64_t pixels;
};

void direct_scatter_images(const void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const DirectImages& t = *static_cast<const DirectImages*>(ctx);
  for (int64_t o = i0; o < i1; ++o) {
    const float b = t.bias ? t.bias[o] : 0.f;
    const float* row = t.product + o * t.columns;
    for (int64_t j = j0; j < j1;) {
      const int64_t image = j / t.pixels, q = j % t.pixels, run = std::min(j1 - j, t.pixels - q);
      float* dst = t.out + image * t.per_image + o * t.pixels + q;
      for (int64_t i = 0; i < run; ++i) dst[i] = row[j + i] + b;
      j += run;
    }
  }
}

// Images [0, images) from `x` whole (one band each), side by side in one
// product per group: each image's windows after the last's, the table's
// columns in runs of an image's pixels (gemm.h RowTable::segment), the
// product written into each image's output by the epilogue.
void conv2d_direct_images(const float* x, int64_t sn, int64_t sc, int64_t sh, int64_t sw, const float* w,
                          const float* bias, const Geometry& g, const DirectLayout& d, const int64_t* taps,
                          int64_t images, float* out) {
  const int64_t cg = g.channels / g.groups, og = g.out_channels / g.groups, k = cg * g.kernel_h * g.kernel_w;
  const int64_t pixels = g.out_height * g.out_width, columns = images * pixels, stride = g.channels * d.channel;
  const int64_t per_image = g.out_channels * pixels;
  float* buf = thread_buffer<float, 1>((images - 1) * stride + d.size);
  // in order: each image's zeros past its windows are the next one's start, until it is copied
  for (int64_t i = 0; i < images; ++i) direct_copy(x + i * sn, sc, sh, sw, g, d, 0, buf + i * stride);
  float* product = thread_buffer<float, 2>(og * columns);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    RowTable rows{buf + grp * cg * d.channel, taps};
    rows.segment = pixels;
    rows.segment_stride = stride;
    const DirectImages put{product, columns, out + grp * og * pixels, per_image, bias ? bias + grp * og : nullptr,
                           pixels};
    const GemmEpilogue epilogue{&direct_scatter_images, &put};
    const bool ran = gemm_row_table_b(og, columns, k, MatrixRef<float>{w + grp * og * k, k, 1}, rows, 0.f, product,
                                      columns, &epilogue);
    NNVM_CHECK(ran, "conv2d", "the GEMM declined a direct convolution it reads row tables for");
  }
}

}  // namespace

// conv2d over the batch as the direct convolution above, the (image, band)
// pairs spread over the threads.
bool conv2d_direct_batch(const float* x, int64_t sn, int64_t sc, int64_t sh, int64_t sw, const float* w,
                         const float* bias, const Geometry& g, float* out) {
  if (g.channels == 0 || !gemm_reads_row_tables()) return false;  // (no channels: the GEMM's k is 0)
  const DirectLayout d = direct_layout(g);
  const int64_t k = g.channels / g.groups * g.kernel_h * g.kernel_w;
  std::vector<int64_t> taps(static_cast<size_t>(k));
  direct_taps(g, d, g.channels / g.groups, taps.data());
  const int64_t bands = (g.out_height + d.band - 1) / d.band, per_image = g.out_channels * g.out_height * g.out_width;
  if (d.images > 1) {
    const int64_t groups = (g.batch + d.images - 1) / d.images;
    parallel_for(0, groups, 1, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n0 = item * d.images, n1 = std::min(g.batch, n0 + d.images);
        conv2d_direct_images(x + n0 * sn, sn, sc, sh, sw, w, bias, g, d, taps.data(), n1 - n0, out + n0 * per_image);
      }
    });
    return true;
  }
  parallel_for(0, g.batch * bands, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / bands, oh0 = item % bands * d.band;
      conv2d_direct_band(x + n * sn, sc, sh, sw, w, bias, g, d, taps.data(), oh0,
                         std::min(g.out_height, oh0 + d.band), out + n * per_image);
    }
  });
  return true;
}

// A stride-1 transposed convolution is a convolution of its input with the
// kernel flipped and its input and output channels swapped, padded by
// d·(k − 1) − p: out[o, y] = Σ_(c, t) W[c, o, t] · x[c, y + p − d·t].
// Where that padding is not negative, it runs as conv2d_direct_batch (the
// input gradient of a stride-1 convolution). False where it does not apply.
bool conv_transpose2d_direct(const float* x, const float* w, const float* bias, const Geometry& g, float* out) {
  const int64_t pad_h = g.dil_h * (g.kernel_h - 1) - g.pad_h, pad_w = g.dil_w * (g.kernel_w - 1) - g.pad_w;
  if (g.stride_h != 1 || g.stride_w != 1 || pad_h < 0 || pad_w < 0) return false;
  const int64_t cg = g.channels / g.groups, og = g.out_channels / g.groups, taps = g.kernel_h * g.kernel_w;
  // flipped[(grp·og + o), c, t] = w[(grp·cg + c), o, taps − 1 − t]
  std::vector<float> flipped(size_t(g.out_channels * cg * taps));
  for (int64_t grp = 0; grp < g.groups; ++grp)
    for (int64_t o = 0; o < og; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t t = 0; t < taps; ++t)
          flipped[size_t(((grp * og + o) * cg + c) * taps + t)] = w[((grp * cg + c) * og + o) * taps + taps - 1 - t];
  Geometry conv = g;
  conv.pad_h = pad_h;
  conv.pad_w = pad_w;
  const int64_t plane = g.height * g.width;
  return conv2d_direct_batch(x, g.channels * plane, plane, g.width, 1, flipped.data(), bias, conv, out);
}

// The weight gradient on the direct convolution's windows:
//   dWᵀ[(c,kh,kw), o] = Σ_images Σ_bands Σ_j window_run(c,kh,kw)[j] · g[o, oh0·out_width + j]
// a GEMM per (image, band) whose A is the windows' rows read through the
// table of offsets (copied a block at a time: gemm.h RowTable) and whose B
// is the band of the output gradient read transposed, adding into dWᵀ. The
// images go in fixed blocks (at least kDotImages, at most so many blocks
// that their partial sums fill 64 MB), one block a thread, each block's
// partial sums added in order: the same bits for every thread count.
// False, nothing written, where the GEMM has no provider that reads row
// tables.
bool conv2d_backward_weight_direct(const float* px, const float* pg, const Geometry& g, float* dw) {
  if (g.channels == 0 || !gemm_reads_row_tables()) return false;
  const DirectLayout d = direct_layout(g);
  const int64_t cg = g.channels / g.groups, og = g.out_channels / g.groups, k = cg * g.kernel_h * g.kernel_w;
  const int64_t pixels = g.out_height * g.out_width, plane = g.height * g.width;
  std::vector<int64_t> taps(static_cast<size_t>(k));
  direct_taps(g, d, cg, taps.data());
  const int64_t bands = (g.out_height + d.band - 1) / d.band, size = g.out_channels * k;
  const int64_t max_blocks = std::max<int64_t>(1, (int64_t(1) << 24) / size);
  const int64_t per_block = std::max(kDotImages, (g.batch + max_blocks - 1) / max_blocks);
  const int64_t blocks = (g.batch + per_block - 1) / per_block;
  // dWᵀ of each group (k × og) for each block, every element written before it is read
  const Tensor partial_buffer = empty({blocks * size}, kFloat32);
  float* const partial = partial_buffer.data_ptr<float>();
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float* acc = partial + b * size;
      float beta = 0.f;
      for (int64_t n = b * per_block; n < std::min(g.batch, (b + 1) * per_block); ++n)
        for (int64_t band = 0; band < bands; ++band) {
          const int64_t oh0 = band * d.band, columns = (std::min(g.out_height, oh0 + d.band) - oh0) * g.out_width;
          float* buf = thread_buffer<float, 1>(d.size);
          direct_copy(px + n * g.channels * plane, plane, g.width, 1, g, d, oh0, buf);
          for (int64_t grp = 0; grp < g.groups; ++grp) {
            const RowTable windows{buf + grp * cg * d.channel, taps.data()};
            // B[j][o] = g[o, oh0·out_width + j]: the band of the group's output gradient, transposed
            const MatrixRef<float> grad{pg + (n * g.out_channels + grp * og) * pixels + oh0 * g.out_width, 1, pixels};
            const bool ran = gemm_row_table_a(k, og, columns, windows, grad, beta, acc + grp * k * og, og);
            NNVM_CHECK(ran, "conv2d_backward_weight", "the GEMM declined a product it reads row tables for");
          }
          beta = 1.f;
        }
    }
  });
  for (int64_t grp = 0; grp < g.groups; ++grp)
    for (int64_t o = 0; o < og; ++o)
      for (int64_t t = 0; t < k; ++t) {
        const int64_t at = grp * k * og + t * og + o;
        float sum = partial[at];
        for (int64_t b = 1; b < blocks; ++b) sum += partial[b * size + at];
        dw[(grp * og + o) * k + t] = sum;
      }
  return true;
}

}  // namespace nnvm::cpu
