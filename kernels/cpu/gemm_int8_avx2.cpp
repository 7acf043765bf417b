// The INT8 GEMM (gemm_int8.h) on AVX2, for CPUs without AVX512_VNNI's
// vpdpbusd (docs/QUANTIZATION.md, "The INT8 GEMM"). Exact, so it gives the
// loops' int32 sums and, through the same fma per element, their floats:
// vpmaddubsw (uint8 · int8 pairs) saturates its int16 sums, so A is widened
// to int16 (zero-extended, once per block of rows) and B sign-extended as it
// is loaded; vpmaddwd then sums two products of at most 255 · 128 into each
// int32 lane, which cannot overflow. On B's quad layout a lane holds one
// column's products of k0 and k1 or of k2 and k3 of a quad; the two lanes
// are added when a tile's sums are stored.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/cpu_features.h"
#include "nnvm/kernels/cpu/gemm_int8.h"

namespace nnvm::cpu {

namespace {

#define NNVM_AVX2 __attribute__((target("avx2,fma")))

constexpr int64_t kQuad = 4;
constexpr int64_t kPanelRowBytes = kInt8PanelCols * kQuad;
// A tile of C: kTileRows rows × 8 columns (two vectors of B, four columns
// each) in 2·kTileRows int32 accumulators, beside two of B, the rows' A and
// a product. At 6 rows GCC 12 spills accumulators in the loop; 4 rows keep
// it in registers.
constexpr int kTileRows = 4;
constexpr int64_t kTileCols = 8;
// A thread's rows at a time: each widens its A (rows × k × 2 bytes) once.
constexpr int64_t kBlockRows = 4 * kTileRows;
// k in blocks of 64 quads: a block's panel of B (8 KiB) and a tile's A
// (2 KiB) stay in L1. Unblocked, the tiles streamed both from L2: about
// 30 ms against 18 ms at 256 × 1024 × 4096 on the Zen 3 host of
// docs/QUANTIZATION.md, "Measured".
constexpr int64_t kBlockQuads = 64;

int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

// Rows [0, rows) of A (rows lda bytes apart, quads·4 columns read) as
// int16, quad by quad for each tile of kTileRows rows: tile t holds, for each
// quad, the four values of each of its rows side by side, so a tile's kernel
// reads one stream.
NNVM_AVX2 void widen_a(const uint8_t* a, int64_t lda, int64_t rows, int64_t quads, int16_t* out) {
  for (int64_t t0 = 0; t0 < rows; t0 += kTileRows) {
    const int64_t tile_rows = std::min<int64_t>(kTileRows, rows - t0);
    int16_t* tile = out + t0 * quads * kQuad;
    for (int64_t r = 0; r < tile_rows; ++r) {
      const uint8_t* row = a + (t0 + r) * lda;
      int64_t q = 0;
      for (; q + 4 <= quads; q += 4) {  // 16 bytes: four quads
        const __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + q * kQuad)));
        alignas(32) int64_t quad_values[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(quad_values), v);
        for (int64_t s = 0; s < 4; ++s) std::memcpy(tile + ((q + s) * tile_rows + r) * kQuad, &quad_values[s], 8);
      }
      for (; q < quads; ++q)
        for (int64_t p = 0; p < kQuad; ++p) tile[(q * tile_rows + r) * kQuad + p] = int16_t(row[q * kQuad + p]);
    }
  }
}

// Columns c0 c1 c2 c3 c4 c5 c6 c7 from pair lanes of columns 0-3 (lo) and 4-7 (hi).
NNVM_AVX2 inline __m256i column_sums(__m256i lo, __m256i hi) {
  // hadd: c0 c1 c4 c5 | c2 c3 c6 c7; the permute puts the 64-bit pairs in order.
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xd8);
}

// Adds the products of quads [0, quads) to a tile of kRows rows × 8
// columns: a is the tile's widened A from the first of those quads, b the
// tile's first column in a panel of B at that quad. Each row's partial
// sums, lo (columns 0-3) and hi (4-7) in pair lanes, are 16 int32 in
// `partial`, rows partial_stride apart (zero: the first quads).
template <int kRows>
NNVM_AVX2 void add_tile(const int16_t* a, const int8_t* b, int64_t quads, bool first, int32_t* partial,
                        int64_t partial_stride) {
  __m256i lo[kRows], hi[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    int32_t* pr = partial + r * partial_stride;
    lo[r] = first ? _mm256_setzero_si256() : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pr));
    hi[r] = first ? _mm256_setzero_si256() : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pr + 8));
  }
  for (int64_t q = 0; q < quads; ++q) {
    const int8_t* bq = b + q * kPanelRowBytes;
    const __m256i b_lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bq)));
    const __m256i b_hi = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bq + 16)));
    const int16_t* aq = a + q * kRows * kQuad;
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      int64_t four;
      std::memcpy(&four, aq + r * kQuad, 8);
      const __m256i av = _mm256_set1_epi64x(four);
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(av, b_lo));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(av, b_hi));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    int32_t* pr = partial + r * partial_stride;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pr), lo[r]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pr + 8), hi[r]);
  }
}

using AddTile = void (*)(const int16_t*, const int8_t*, int64_t, bool, int32_t*, int64_t);
constexpr AddTile kAddTile[kTileRows] = {add_tile<1>, add_tile<2>, add_tile<3>, add_tile<4>};

// Stores a row's 8 sums from its partial sums at c (`cols` ≤ 8 of them), as
// int32 or dequantized from column j.
NNVM_AVX2 void store_row(const int32_t* partial, int64_t cols, void* c, int64_t j, const Int8Dequant* dq) {
  const __m256i sums = column_sums(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(partial)),
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(partial + 8)));
  if (!dq && cols == kTileCols) {
    _mm256_storeu_si256(static_cast<__m256i*>(c), sums);
    return;
  }
  if (dq && cols == kTileCols) {
    const __m256i offset = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dq->col_offset + j));
    const __m256 x = _mm256_cvtepi32_ps(_mm256_sub_epi32(sums, offset));
    _mm256_storeu_ps(static_cast<float*>(c),
                     _mm256_fmadd_ps(x, _mm256_loadu_ps(dq->col_scale + j), _mm256_loadu_ps(dq->bias + j)));
    return;
  }
  alignas(32) int32_t s[kTileCols];
  _mm256_store_si256(reinterpret_cast<__m256i*>(s), sums);
  for (int64_t col = 0; col < cols; ++col)
    if (dq)
      static_cast<float*>(c)[col] =
          std::fma(float(s[col] - dq->col_offset[j + col]), dq->col_scale[j + col], dq->bias[j + col]);
    else
      static_cast<int32_t*>(c)[col] = s[col];
}

// Rows [i0, i1) × panels [p0, p1) of C. For each panel, k goes in blocks
// of kBlockQuads: the block's rows of B (4 KiB per 8 columns' tile) and
// each tile's widened A stay in L1 while the block's tiles pass them; the
// tiles' partial sums wait in `partial` between blocks.
NNVM_AVX2 void run_block(int64_t i0, int64_t i1, int64_t p0, int64_t p1, int64_t n, int64_t k, const uint8_t* a,
                         int64_t lda, const int8_t* packed_b, void* c, int64_t ldc, const Int8Dequant* dq,
                         std::vector<int16_t>& wide, std::vector<int32_t>& partial) {
  constexpr int64_t kGroups = kInt8PanelCols / kTileCols, kPartialRow = kGroups * 2 * kTileCols;
  const int64_t quads = ceil_div(k, kQuad), rows = i1 - i0;
  wide.resize(size_t(rows * quads * kQuad));
  partial.resize(size_t(rows * kPartialRow));
  widen_a(a + i0 * lda, lda, rows, quads, wide.data());
  for (int64_t panel = p0; panel < p1; ++panel) {
    const int8_t* bp = packed_b + panel * quads * kPanelRowBytes;
    const int64_t j0 = panel * kInt8PanelCols, groups = std::min(kGroups, ceil_div(n - j0, kTileCols));
    for (int64_t q0 = 0; q0 == 0 || q0 < quads; q0 += kBlockQuads) {
      const int64_t block_quads = std::min(kBlockQuads, quads - q0);
      for (int64_t t0 = 0; t0 < rows; t0 += kTileRows) {
        const int64_t tile_rows = std::min<int64_t>(kTileRows, rows - t0);
        const int16_t* at = wide.data() + (t0 * quads + q0 * tile_rows) * kQuad;
        for (int64_t g = 0; g < groups; ++g)
          kAddTile[tile_rows - 1](at, bp + q0 * kPanelRowBytes + g * kTileCols * kQuad, block_quads, q0 == 0,
                                  partial.data() + t0 * kPartialRow + g * 2 * kTileCols, kPartialRow);
      }
    }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t j = j0 + g * kTileCols;
        store_row(partial.data() + i * kPartialRow + g * 2 * kTileCols, std::min(kTileCols, n - j),
                  static_cast<char*>(c) + ((i0 + i) * ldc + j) * 4, j, dq);
      }
  }
}

}  // namespace

bool gemm_u8s8_avx2(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_b, void* c,
                    int64_t ldc, const Int8Dequant* dq) {
  if (!cpu_features().avx2_fma || k < 0 || k > kInt8MaxK) return false;
  if (m <= 0 || n <= 0) return true;
  const int64_t row_blocks = ceil_div(m, kBlockRows), panels = ceil_div(n, kInt8PanelCols);
  const int threads = m * n * k < 4 * kGemmParallelWork ? 1 : parallel_threads();
  // Row blocks first (each widens its rows of A once); columns split too where there are fewer blocks than threads.
  const int64_t col_chunks = std::min(panels, ceil_div(threads, row_blocks));
  const int64_t panels_per_chunk = ceil_div(panels, col_chunks);
  auto block = [&](int64_t t, std::vector<int16_t>& wide, std::vector<int32_t>& partial) {
    const int64_t rb = t / col_chunks, cc = t % col_chunks;
    const int64_t p0 = cc * panels_per_chunk, p1 = std::min(panels, p0 + panels_per_chunk);
    if (p0 < p1)
      run_block(rb * kBlockRows, std::min(m, (rb + 1) * kBlockRows), p0, p1, n, k, a, lda, packed_b, c, ldc, dq,
                wide, partial);
  };
  const int64_t units = row_blocks * col_chunks;
  if (threads == 1) {
    std::vector<int16_t> wide;
    std::vector<int32_t> partial;
    for (int64_t t = 0; t < units; ++t) block(t, wide, partial);
    return true;
  }
  parallel_for(0, units, 1, [&](int64_t begin, int64_t end) {
    std::vector<int16_t> wide;
    std::vector<int32_t> partial;
    for (int64_t t = begin; t < end; ++t) block(t, wide, partial);
  });
  return true;
}

}  // namespace nnvm::cpu
