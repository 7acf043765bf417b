#include "nnvm/kernels/cpu/gemm_int8.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "nnvm/core/error.h"
#include "nnvm/core/thread_pool.h"

namespace nnvm::cpu {

namespace {

constexpr int64_t kQuad = 4;
constexpr int64_t kPanelRowBytes = kInt8PanelCols * kQuad;

int64_t quads(int64_t k) { return (k + kQuad - 1) / kQuad; }
int64_t panels(int64_t n) { return (n + kInt8PanelCols - 1) / kInt8PanelCols; }

// B[p][j] of the packed layout.
int8_t packed_at(const int8_t* packed, int64_t k, int64_t p, int64_t j) {
  const int64_t panel = j / kInt8PanelCols, col = j % kInt8PanelCols;
  return packed[(panel * quads(k) + p / kQuad) * kPanelRowBytes + col * kQuad + p % kQuad];
}

std::atomic<Int8GemmProvider>& provider() {
  static std::atomic<Int8GemmProvider> p{nullptr};
  return p;
}

}  // namespace

void pack_int8_b(MatrixRef<int8_t> b, int64_t k, int64_t n, int8_t* out) {
  std::memset(out, 0, size_t(int8_packed_bytes(k, n)));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t panel = j / kInt8PanelCols, col = j % kInt8PanelCols;
      out[(panel * quads(k) + p / kQuad) * kPanelRowBytes + col * kQuad + p % kQuad] = b.data[p * b.rs + j * b.cs];
    }
}

void int8_column_sums(const int8_t* packed, int64_t k, int64_t n, int32_t* out) {
  for (int64_t j = 0; j < n; ++j) {
    int32_t sum = 0;
    for (int64_t p = 0; p < k; ++p) sum += packed_at(packed, k, p, j);
    out[j] = sum;
  }
}

void gemm_u8s8_reference(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_b,
                         void* c, int64_t ldc, const Int8Dequant* dq) {
  NNVM_CHECK(k <= kInt8MaxK, "gemm_u8s8", "k ", k, " past ", kInt8MaxK, " (int32 sums could overflow)");
  parallel_for(0, m, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, n * k)),
               [&](int64_t begin, int64_t end) {
                 std::vector<int32_t> row(static_cast<size_t>(n));
                 for (int64_t i = begin; i < end; ++i) {
                   std::fill(row.begin(), row.end(), 0);
                   const uint8_t* ai = a + i * lda;
                   for (int64_t panel = 0; panel < panels(n); ++panel) {
                     const int8_t* bp = packed_b + panel * quads(k) * kPanelRowBytes;
                     const int64_t j0 = panel * kInt8PanelCols, cols = std::min(kInt8PanelCols, n - j0);
                     for (int64_t q = 0; q < quads(k); ++q)
                       for (int64_t col = 0; col < cols; ++col)
                         for (int64_t r = 0; r < kQuad && q * kQuad + r < k; ++r)
                           row[size_t(j0 + col)] +=
                               int32_t(ai[q * kQuad + r]) * int32_t(bp[q * kPanelRowBytes + col * kQuad + r]);
                   }
                   if (!dq) {
                     std::copy(row.begin(), row.end(), static_cast<int32_t*>(c) + i * ldc);
                     continue;
                   }
                   float* ci = static_cast<float*>(c) + i * ldc;
                   for (int64_t j = 0; j < n; ++j)
                     ci[j] = std::fma(float(row[size_t(j)] - dq->col_offset[j]), dq->col_scale[j], dq->bias[j]);
                 }
               });
}

void gemm_u8s8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_b, void* c,
               int64_t ldc, const Int8Dequant* dq) {
  if (m <= 0 || n <= 0) return;
  NNVM_CHECK(lda % 4 == 0 && lda >= (k + 3) / 4 * 4, "gemm_u8s8", "A's row stride ", lda,
             " must be a multiple of 4 of at least k rounded up (k ", k, ")");
  const Int8GemmProvider p = provider().load(std::memory_order_acquire);
  if (p && p(m, n, k, a, lda, packed_b, c, ldc, dq)) return;
  if (gemm_u8s8_avx2(m, n, k, a, lda, packed_b, c, ldc, dq)) return;
  gemm_u8s8_reference(m, n, k, a, lda, packed_b, c, ldc, dq);
}

void set_int8_gemm_provider(Int8GemmProvider p) { provider().store(p, std::memory_order_release); }
Int8GemmProvider int8_gemm_provider() { return provider().load(std::memory_order_acquire); }

}  // namespace nnvm::cpu
