#include "nnvm/kernels/cpu/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "nnvm/core/thread_pool.h"

namespace nnvm::cpu {

namespace {

// The widest vector the compiler may use here: GCC lowers a generic vector
// wider than the target's registers piece by piece through the stack, which
// made the AVX-512-shaped kernels below run at a tenth of their speed on an
// AVX2 machine (a 512x512 product at 2 GFLOP/s on one core).
#if defined(__AVX512F__)
inline constexpr int64_t kVectorBytes = 64;
#elif defined(__AVX__)
inline constexpr int64_t kVectorBytes = 32;
#else
inline constexpr int64_t kVectorBytes = 16;
#endif

// Register blocking: an MR×NR tile of C lives in 2·MR vector registers (12 of
// AVX-512's 32, of AVX2's and SSE's 16) while the k loop streams one packed
// row of B (two vectors) and MR broadcast values of A per step.
// Cache blocking: a packed MC×KC block of A stays in L2; the KC×NR micro-panel
// of B it is multiplied with stays in L1 (256·32·4 bytes = 32 KiB for float
// with AVX-512, half that with AVX2).
// Each element of C sums its products in the same order whatever NR is, so
// the width changes the speed, not the bits.
template <class T> struct Blocking {
  typedef T V __attribute__((vector_size(kVectorBytes)));
  static constexpr int64_t kLanes = kVectorBytes / int64_t(sizeof(T)), MR = 6, NR = 2 * kLanes, KC = 256,
                           NC = 2048;
  static constexpr int64_t MC = sizeof(T) == 4 ? 144 : 72;
};
static_assert(Blocking<float>::MR == kGemmFewRows && Blocking<double>::MR == kGemmFewRows,
              "gemm_takes_few_rows: fewer rows than the micro-kernel's tile");


int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// A per-thread, 64-byte aligned scratch buffer that only grows.
template <class T> T* scratch(int slot, int64_t count) {
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  thread_local std::unique_ptr<T[], Free> buf[2];
  thread_local int64_t cap[2] = {0, 0};
  if (cap[slot] < count) {
    buf[slot].reset(static_cast<T*>(::operator new[](size_t(count) * sizeof(T), std::align_val_t(64))));
    cap[slot] = count;
  }
  return buf[slot].get();
}

// Rows [0, rows) × cols [0, kc) of A into micro-panels of MR rows, each stored
// column by column; rows past the end are zero so the micro-kernel never branches.
template <class T> void pack_a(const T* a, int64_t rs, int64_t cs, int64_t rows, int64_t kc, T* out) {
  constexpr int64_t MR = Blocking<T>::MR;
  for (int64_t i0 = 0; i0 < rows; i0 += MR) {
    const int64_t mr = std::min(MR, rows - i0);
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = a + i0 * rs + p * cs;
      for (int64_t i = 0; i < mr; ++i) out[i] = src[i * rs];
      for (int64_t i = mr; i < MR; ++i) out[i] = T(0);
      out += MR;
    }
  }
}

// Rows [0, kc) × cols [0, cols) of B (cols <= NR) into one micro-panel stored
// row by row, zero-padded to NR columns. A B whose columns are not
// contiguous (a transposed view: dy · Wᵀ in a linear layer's backward) is
// read a block of kPackRows rows at a time, column by column: each column's
// run of the block is one or two cache lines read whole at once. Row by row,
// a row's NR elements would be NR lines one leading dimension apart, which
// a power-of-two leading dimension maps to a single L1 set, so they would
// evict each other before the next row reads them again.
template <class T> void pack_b(const T* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols, T* out) {
  constexpr int64_t NR = Blocking<T>::NR;
  constexpr int64_t kPackRows = 16;
  if (cs == 1) {
    for (int64_t p = 0; p < kc; ++p) std::memcpy(out + p * NR, b + p * rs, size_t(cols) * sizeof(T));
  } else {
    for (int64_t p0 = 0; p0 < kc; p0 += kPackRows) {
      const int64_t rows = std::min(kPackRows, kc - p0);
      for (int64_t j = 0; j < cols; ++j) {
        const T* src = b + p0 * rs + j * cs;
        for (int64_t p = 0; p < rows; ++p) out[(p0 + p) * NR + j] = src[p * rs];
      }
    }
  }
  if (cols < NR)
    for (int64_t p = 0; p < kc; ++p) std::fill(out + p * NR + cols, out + (p + 1) * NR, T(0));
}

// C[rows×cols] = A_panel · B_panel + beta·C over one k block; the full MR×NR
// tile is always computed, only the valid part is written.
template <class T>
void micro_kernel(int64_t kc, const T* __restrict a, const T* __restrict b, T* c, int64_t ldc, int64_t rows,
                  int64_t cols, T beta) {
  using B = Blocking<T>;
  using V = typename B::V;
  constexpr int64_t MR = B::MR, NR = B::NR, L = B::kLanes;
  V acc[MR][2];
#pragma GCC unroll 8
  for (int64_t i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = V{};
  for (int64_t p = 0; p < kc; ++p) {
    const V b0 = *reinterpret_cast<const V*>(b + p * NR);
    const V b1 = *reinterpret_cast<const V*>(b + p * NR + L);
#pragma GCC unroll 8
    for (int64_t i = 0; i < MR; ++i) {
      const T ai = a[p * MR + i];
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
  }
  if (rows == MR && cols == NR) {
#pragma GCC unroll 8
    for (int64_t i = 0; i < MR; ++i) {
      T* row = c + i * ldc;
      for (int64_t h = 0; h < 2; ++h) {
        V v = acc[i][h];
        if (beta != T(0)) {
          V old;
          std::memcpy(&old, row + h * L, sizeof(V));
          v += beta * old;
        }
        std::memcpy(row + h * L, &v, sizeof(V));
      }
    }
    return;
  }
  alignas(64) T tile[MR][NR];
  std::memcpy(tile, acc, sizeof(tile));
  for (int64_t i = 0; i < rows; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      for (int64_t j = 0; j < cols; ++j) row[j] = tile[i][j];
    } else {
      for (int64_t j = 0; j < cols; ++j) row[j] = tile[i][j] + beta * row[j];
    }
  }
}

// One mc×nc tile of C, accumulated over k in KC blocks in increasing order.
template <class T>
void gemm_tile(int64_t mc, int64_t nc, int64_t k, MatrixRef<T> a, MatrixRef<T> b, T beta, T* c, int64_t ldc) {
  using B = Blocking<T>;
  constexpr int64_t MR = B::MR, NR = B::NR, KC = B::KC;
  T* abuf = scratch<T>(0, round_up(mc, MR) * std::min(KC, k));
  T* bbuf = scratch<T>(1, NR * std::min(KC, k));
  for (int64_t pc = 0; pc < k; pc += KC) {
    const int64_t kc = std::min(KC, k - pc);
    const T block_beta = pc == 0 ? beta : T(1);
    pack_a(a.data + pc * a.cs, a.rs, a.cs, mc, kc, abuf);
    for (int64_t jr = 0; jr < nc; jr += NR) {
      const int64_t cols = std::min(NR, nc - jr);
      pack_b(b.data + pc * b.rs + jr * b.cs, b.rs, b.cs, kc, cols, bbuf);
      for (int64_t ir = 0; ir < mc; ir += MR) {
        micro_kernel<T>(kc, abuf + ir * kc, bbuf, c + ir * ldc + jr, ldc, std::min(MR, mc - ir), cols,
                        block_beta);
      }
    }
  }
}

// A few rows of A against a row-major B (a vector-matrix product, an RNN
// step): packing B and computing MR-row tiles would cost more than the
// product. Each row of C is k scaled rows of B summed, kW columns at a time
// in registers. One sum per column would be a chain of k dependent FMAs,
// bound by their latency (a 64x64 product: 4 chains of 64); the even and odd
// rows of B go to two sums instead, added at the end, so twice as many FMAs
// are in flight.
template <class T>
void gemm_few_rows(int64_t m, int64_t n, int64_t k, MatrixRef<T> a, MatrixRef<T> b, T beta, T* c, int64_t ldc) {
  using V = typename Blocking<T>::V;
  constexpr int64_t L = Blocking<T>::kLanes, kW = 4 * L;
  auto load = [](const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  };
  for (int64_t i = 0; i < m; ++i) {
    const T* ai = a.data + i * a.rs;
    int64_t j0 = 0;
    for (; j0 + kW <= n; j0 += kW) {
      V even[4] = {}, odd[4] = {};
      int64_t p = 0;
      for (; p + 2 <= k; p += 2) {
        const T x0 = ai[p * a.cs], x1 = ai[(p + 1) * a.cs];
        const T* b0 = b.data + p * b.rs + j0;
        const T* b1 = b0 + b.rs;
#pragma GCC unroll 4
        for (int64_t h = 0; h < 4; ++h) {
          even[h] += x0 * load(b0 + h * L);
          odd[h] += x1 * load(b1 + h * L);
        }
      }
      if (p < k) {
        const T x = ai[p * a.cs];
        const T* bp = b.data + p * b.rs + j0;
#pragma GCC unroll 4
        for (int64_t h = 0; h < 4; ++h) even[h] += x * load(bp + h * L);
      }
      for (int64_t h = 0; h < 4; ++h) even[h] += odd[h];
      if (beta != T(0))  // beta == 0 never reads C
        for (int64_t h = 0; h < 4; ++h) even[h] += beta * load(c + i * ldc + j0 + h * L);
      std::memcpy(c + i * ldc + j0, even, sizeof(even));
    }
    if (j0 == n) continue;
    alignas(64) T acc[kW] = {};
    const int64_t w = n - j0;
    for (int64_t p = 0; p < k; ++p) {
      const T x = ai[p * a.cs];
      const T* bp = b.data + p * b.rs + j0;
      for (int64_t j = 0; j < w; ++j) acc[j] += x * bp[j];
    }
    if (beta != T(0))
      for (int64_t j = 0; j < w; ++j) acc[j] += beta * c[i * ldc + j0 + j];
    std::memcpy(c + i * ldc + j0, acc, size_t(w) * sizeof(T));
  }
}

template <class T>
void gemm_impl(int64_t m, int64_t n, int64_t k, MatrixRef<T> a, MatrixRef<T> b, T beta, T* c, int64_t ldc) {
  using B = Blocking<T>;
  constexpr int64_t MR = B::MR, NR = B::NR;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  if (gemm_takes_few_rows(m, n, k, b.cs)) return gemm_few_rows(m, n, k, a, b, beta, c, ldc);
  // Tiles of C are the unit of parallel work: shrink them until every thread
  // has one, and even out the row tiles over the threads when there are few.
  const int64_t threads = m * n * k < kGemmParallelWork ? 1 : get_num_threads();
  int64_t mc = std::min(B::MC, round_up(m, MR)), nc = std::min(B::NC, round_up(n, NR));
  while (ceil_div(m, mc) * ceil_div(n, nc) < threads) {
    if (mc > MR && (mc >= nc || nc <= NR)) mc = round_up(ceil_div(mc, 2), MR);
    else if (nc > NR) nc = round_up(ceil_div(nc, 2), NR);
    else break;
  }
  const int64_t nt = ceil_div(n, nc);
  int64_t mt = ceil_div(m, mc);
  if ((mt * nt) % threads != 0 && mt * nt < 8 * threads) {
    mc = round_up(ceil_div(m, round_up(mt, threads)), MR);
    mt = ceil_div(m, mc);
  }
  const int64_t grain = threads == 1 ? mt * nt : 1;
  parallel_for(0, mt * nt, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i0 = (t / nt) * mc, j0 = (t % nt) * nc;
      const MatrixRef<T> at{a.data + i0 * a.rs, a.rs, a.cs};
      const MatrixRef<T> bt{b.data + j0 * b.cs, b.rs, b.cs};
      gemm_tile<T>(std::min(mc, m - i0), std::min(nc, n - j0), k, at, bt, beta, c + i0 * ldc + j0, ldc);
    }
  });
}

}  // namespace

void gemm(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b, float beta, float* c,
          int64_t ldc) {
  gemm_impl<float>(m, n, k, a, b, beta, c, ldc);
}
void gemm(int64_t m, int64_t n, int64_t k, MatrixRef<double> a, MatrixRef<double> b, double beta, double* c,
          int64_t ldc) {
  gemm_impl<double>(m, n, k, a, b, beta, c, ldc);
}

}  // namespace nnvm::cpu
