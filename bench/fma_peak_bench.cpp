// BM_FmaPeak/threads:t: the float multiply-add peak of t threads
// (fma_peak.h), the denominator of the reference benchmarks' peak_frac.
// Each thread runs independent FMA chains, more than an FMA unit's latency
// times the units per core (4 cycles x 2 units on recent Xeons and on Zen 3,
// 5 x 2 on Haswell), so the chains never wait on each other and the rate is
// the units' throughput: 16 in AVX-512's 32 registers, 12 in AVX2's 16 (16
// chains there and the two constants spilled, and the loop ran at half the
// units' rate: 51 GFLOP/s on a Zen 3 core whose GEMMs reached 70).
#include "fma_peak.h"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <stdexcept>

#include "nnvm/core/thread_pool.h"

namespace nnvm::bench {

namespace {

constexpr int kChains512 = 16, kChains256 = 12;
constexpr int64_t kSteps = int64_t(1) << 19;  // per call: ~1.5 ms on a core, far above a wake-up

// Each chain runs x -> x * kMul + kOff, which converges to 1 and stays there:
// no chain overflows or turns denormal, whatever the step count.
constexpr float kMul = 1.0f - 0x1p-20f, kOff = 0x1p-20f;
float chain_start(int c) { return 1.0f + float(c) * 0x1p-10f; }

__attribute__((target("avx512f"))) float fma_chains_avx512() {
  __m512 acc[kChains512];
  for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_set1_ps(chain_start(c));
  const __m512 mul = _mm512_set1_ps(kMul), off = _mm512_set1_ps(kOff);
  for (int64_t s = 0; s < kSteps; ++s)
    for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_fmadd_ps(acc[c], mul, off);
  __m512 sum = acc[0];
  for (int c = 1; c < kChains512; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_cvtss_f32(sum);  // the sum reads every chain: none is dead code
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2() {
  __m256 acc[kChains256];
  for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_set1_ps(chain_start(c));
  const __m256 mul = _mm256_set1_ps(kMul), off = _mm256_set1_ps(kOff);
  for (int64_t s = 0; s < kSteps; ++s)
    for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_fmadd_ps(acc[c], mul, off);
  __m256 sum = acc[0];
  for (int c = 1; c < kChains256; ++c) sum = _mm256_add_ps(sum, acc[c]);
  return _mm256_cvtss_f32(sum);
}

bool has_avx512() { return __builtin_cpu_supports("avx512f"); }

// Floating-point operations of one fma_chains call: 2 per lane per FMA.
double flops_per_call() { return has_avx512() ? 2.0 * kChains512 * double(kSteps) * 16 : 2.0 * kChains256 * double(kSteps) * 8; }

// Runs one fma_chains call on each of `threads` threads of nnvm's pool.
void run_chains(int threads) {
  if (!has_avx512() && !__builtin_cpu_supports("avx2"))
    throw std::runtime_error("fma_peak: the CPU has neither AVX-512 nor AVX2");
  set_num_threads(threads);
  parallel_for(0, threads, 1, [](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) benchmark::DoNotOptimize(has_avx512() ? fma_chains_avx512() : fma_chains_avx2());
  });
}

// Restores the pool's size: the other benchmarks run on the process's default.
struct PoolSizeGuard {
  int saved = get_num_threads();
  ~PoolSizeGuard() { set_num_threads(saved); }
};

void BM_FmaPeak(benchmark::State& state) {
  const int threads = int(state.range(0));
  const PoolSizeGuard guard;
  for (auto _ : state) run_chains(threads);
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_call() * threads * double(state.iterations()) * 1e-9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FmaPeak)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->MinTime(0.1);

}  // namespace

double fma_peak_gflops(int threads) {
  static std::array<double, 256> cache{};
  double& peak = cache.at(size_t(threads));
  if (peak > 0) return peak;
  const PoolSizeGuard guard;
  run_chains(threads);  // wakes the workers and lets the clock settle
  // Best of many short runs: on a shared machine a run that lost its core to
  // another process says nothing about the peak, and a run shorter than the
  // scheduler's time slice (a few ms) often has the core to itself.
  constexpr int kRuns = 40, kCalls = 1;
  for (int run = 0; run < kRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < kCalls; ++call) run_chains(threads);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    peak = std::max(peak, kCalls * flops_per_call() * threads / seconds * 1e-9);
  }
  return peak;
}

}  // namespace nnvm::bench
