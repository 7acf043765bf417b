#include "nnvm/kernels/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "nnvm/core/error.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/cpu_features.h"

namespace nnvm::cpu {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

template <class T>
using GemmFn = void (*)(int64_t, int64_t, int64_t, MatrixRef<T>, MatrixRef<T>, T, T*, int64_t);

// One width's kernels (gemm_kernels.inc's kWidth).
struct Width {
  int bytes;
  GemmFn<float> f32;
  GemmFn<double> f64;
  void (*pack_b_f32)(const float*, int64_t, int64_t, int64_t, int64_t, float*);
};

// Note [GEMM widths]
// The kernels are compiled three times, for 16-, 32- and 64-byte vectors,
// the two wider ones under target options of their own (AVX2 with FMA,
// AVX-512F), whatever flags the library is built with; the first call picks
// the widest this CPU runs. A build for any x86-64 (NNVM_NATIVE=OFF) so runs
// its products at the speed a build for the machine gets.
// A vector must be no wider than the target's registers: GCC lowers a wider
// generic vector piece by piece through the stack, which made the
// AVX-512-shaped kernels run at a tenth of their speed on an AVX2 machine
// (a 512x512 product at 2 GFLOP/s on one core).
// Target options apply to the functions defined under them, templates
// included; inline functions of headers included before them (std::min,
// std::memcpy) are compiled for the build's target and inline into the
// wider kernels, never the other way round, so no code for a wider ISA reaches a caller that runs
// on a narrower one.
namespace v16 {
inline constexpr int64_t kVectorBytes = 16;
#include "gemm_kernels.inc"
}  // namespace v16

#if defined(__x86_64__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace v32 {
inline constexpr int64_t kVectorBytes = 32;
#include "gemm_kernels.inc"
}  // namespace v32
#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#endif
namespace v64 {
inline constexpr int64_t kVectorBytes = 64;
#include "gemm_kernels.inc"
}  // namespace v64
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

// Widest first.
constexpr Width kWidths[] = {
#if defined(__x86_64__)
    v64::kWidth,
    v32::kWidth,
#endif
    v16::kWidth,
};

bool cpu_runs(int bytes) {
  if (bytes == 64) return cpu_features().avx512f;
  if (bytes == 32) return cpu_features().avx2_fma;
  return bytes == 16;
}

std::atomic<const Width*>& chosen() {
  static std::atomic<const Width*> width = [] {
    for (const Width& w : kWidths)
      if (cpu_runs(w.bytes)) return &w;
    return &kWidths[std::size(kWidths) - 1];
  }();
  return width;
}

const Width& width() { return *chosen().load(std::memory_order_relaxed); }

}  // namespace

std::vector<int> gemm_vector_widths() {
  std::vector<int> widths;
  for (const Width& w : kWidths)
    if (cpu_runs(w.bytes)) widths.push_back(w.bytes);
  return widths;
}

int gemm_vector_bytes() { return width().bytes; }

void set_gemm_vector_bytes(int bytes) {
  for (const Width& w : kWidths) {
    if (w.bytes != bytes) continue;
    NNVM_CHECK(cpu_runs(bytes), "set_gemm_vector_bytes", "this CPU cannot run the GEMM's ", bytes,
               "-byte kernels (the widest it runs: ", gemm_vector_widths()[0], ")");
    chosen().store(&w, std::memory_order_relaxed);
    return;
  }
  throw Error(detail::concat("set_gemm_vector_bytes: no GEMM kernels for ", bytes,
                             "-byte vectors (expected 64, 32 or 16)"));
}

template <class T> T* gemm_scratch(int slot, int64_t count) {
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
template float* gemm_scratch<float>(int, int64_t);
template double* gemm_scratch<double>(int, int64_t);

namespace {
std::atomic<GemmProvider>& provider() {
  static std::atomic<GemmProvider> p{nullptr};
  return p;
}

bool provided(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b, float beta, float* c,
              int64_t ldc, const GemmExtras& extras) {
  const GemmProvider p = provider().load(std::memory_order_acquire);
  return p && p(m, n, k, a, b, beta, c, ldc, extras);
}
}  // namespace

void set_gemm_provider(GemmProvider p) { provider().store(p, std::memory_order_release); }
GemmProvider gemm_provider() { return provider().load(std::memory_order_acquire); }

bool gemm_row_table_b(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, const RowTable& b, float beta,
                      float* c, int64_t ldc, const GemmEpilogue* epilogue) {
  GemmExtras extras;
  extras.row_table_b = &b;
  extras.epilogue = epilogue;
  return provided(m, n, k, a, {nullptr, 0, 0}, beta, c, ldc, extras);
}

bool gemm_row_table_a(int64_t m, int64_t n, int64_t k, const RowTable& a, MatrixRef<float> b, float beta,
                      float* c, int64_t ldc) {
  GemmExtras extras;
  extras.row_table_a = &a;
  return provided(m, n, k, {nullptr, 0, 0}, b, beta, c, ldc, extras);
}

bool gemm_reads_row_tables() {
  const RowTable none{nullptr, nullptr};
  GemmExtras extras;
  extras.row_table_b = &none;
  return provided(0, 0, 0, {nullptr, 0, 0}, {nullptr, 0, 0}, 0.f, nullptr, 0, extras);
}

bool gemm_with_epilogue(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b, float beta,
                        float* c, int64_t ldc, const GemmEpilogue& epilogue) {
  GemmExtras extras;
  extras.epilogue = &epilogue;
  return provided(m, n, k, a, b, beta, c, ldc, extras);
}

void gemm_pack_b(int vector_bytes, const float* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols,
                 float* out) {
  for (const Width& w : kWidths)
    if (w.bytes == vector_bytes) return w.pack_b_f32(b, rs, cs, kc, cols, out);
  throw Error(detail::concat("gemm_pack_b: no GEMM kernels for ", vector_bytes, "-byte vectors"));
}

void gemm(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b, float beta, float* c,
          int64_t ldc) {
  if (provided(m, n, k, a, b, beta, c, ldc, {})) return;
  width().f32(m, n, k, a, b, beta, c, ldc);
}
void gemm(int64_t m, int64_t n, int64_t k, MatrixRef<double> a, MatrixRef<double> b, double beta, double* c,
          int64_t ldc) {
  width().f64(m, n, k, a, b, beta, c, ldc);
}

}  // namespace nnvm::cpu
