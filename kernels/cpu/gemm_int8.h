// The INT8 GEMM the quantized linear layers run on (docs/QUANTIZATION.md):
//   C[m×n] = A[m×k] · B[k×n]   A uint8, B int8, the sums in int32,
// then either stored as int32 or dequantized into float32 per column:
//   C[i][j] = fma(float(sum - col_offset[j]), col_scale[j], bias[j])  (one rounding).
// With A = x's quantized values (zero point zx, scale sx) and B = a weight's
// (symmetric per output channel: scale sw[j]), col_offset[j] = zx · Σ_p B[p][j]
// and col_scale[j] = sx · sw[j] give x·W + bias.
//
// B is packed once (a layer's weights), for the CPU's dot-product units, in
// core/int8_layout.h's layout: each quad of k of a column side by side, the
// operand of vpdpbusd (which sums four uint8 · int8 products into each int32
// lane).
//
// A is read in place: rows `lda` bytes apart, lda a multiple of 4, and
// columns [k, round_up(k, 4)) readable (their values meet B's zero rows).
//
// The JIT's kernels (jit/gemm_jit.h) provide it where the CPU has
// AVX512_VNNI; elsewhere the AVX2 kernels (gemm_int8_avx2.cpp) where the CPU
// has AVX2 and FMA; the C++ loops here are the portable fallback and the
// reference the tests hold both to. Sums of products are exact in int32
// for k up to 2^16 (|a·b| < 2^15), so every path gives the same int32 sums.
#pragma once

#include <cstdint>

#include "nnvm/core/int8_layout.h"
#include "nnvm/kernels/cpu/gemm.h"

namespace nnvm::cpu {

using nnvm::int8_packed_bytes;
using nnvm::kInt8MaxK;
using nnvm::kInt8PanelCols;

// Packs B[p][j] = b.data[p·rs + j·cs] into `out` (int8_packed_bytes(k, n)).
void pack_int8_b(MatrixRef<int8_t> b, int64_t k, int64_t n, int8_t* out);
// Σ_p B[p][j] for each column, from the packed B.
void int8_column_sums(const int8_t* packed, int64_t k, int64_t n, int32_t* out);

// Dequantizes C per column (null: C is int32).
struct Int8Dequant {
  const int32_t* col_offset;  // n
  const float* col_scale;     // n
  const float* bias;          // n
};

// C = A · B as described above: int32 (dq null) or float32, rows ldc elements apart.
void gemm_u8s8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_b, void* c,
               int64_t ldc, const Int8Dequant* dq);
// The AVX2 kernels alone (tests); false, having done nothing, where the CPU
// has no AVX2 with FMA or k is outside [0, kInt8MaxK].
bool gemm_u8s8_avx2(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_b, void* c,
                    int64_t ldc, const Int8Dequant* dq);
// The C++ loops alone (tests, benchmarks).
void gemm_u8s8_reference(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_b,
                         void* c, int64_t ldc, const Int8Dequant* dq);

// The JIT's INT8 GEMM, set once when the library loads; it returns false,
// having done nothing, for products it leaves to the loops here.
using Int8GemmProvider = bool (*)(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda,
                                  const int8_t* packed_b, void* c, int64_t ldc, const Int8Dequant* dq);
void set_int8_gemm_provider(Int8GemmProvider provider);
Int8GemmProvider int8_gemm_provider();

}  // namespace nnvm::cpu
