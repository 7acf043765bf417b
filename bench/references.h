// What the reference benchmarks (gemm_reference_bench.cpp,
// conv_reference_bench.cpp) share: the thread count every library is set
// to, oneDNN's engine and stream, the timed loop with its one-time check of
// a reference's result against nnvm's, and the rate counters.
#pragma once

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "fma_peak.h"
#include "nnvm/core/thread_pool.h"

#ifdef NNVM_BENCH_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif
#ifdef NNVM_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace nnvm::bench {

// Sets nnvm's pool and both references to `threads` for one benchmark, and
// gives nnvm's pool its size back at the end (the other benchmarks run on the
// process's default). Debian's oneDNN runs on OpenMP: omp_set_num_threads
// sets the calling thread's count, which oneDNN reads when a primitive is
// created (its blocking depends on it) and when it runs, so the primitives are
// made after this. OMP_NUM_THREADS would be read once, when libgomp loads.
class ReferenceThreads {
 public:
  explicit ReferenceThreads(int threads) {
    set_num_threads(threads);
#ifdef NNVM_BENCH_HAVE_DNNL
    omp_set_num_threads(threads);
#endif
#ifdef NNVM_BENCH_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
#endif
  }
  ~ReferenceThreads() { set_num_threads(saved_); }
  ReferenceThreads(const ReferenceThreads&) = delete;
  ReferenceThreads& operator=(const ReferenceThreads&) = delete;

 private:
  int saved_ = get_num_threads();
};

// GFLOP/s, and peak_frac: the same rate over the FMA peak of as many threads
// (fma_peak.h). Both are kIsRate counters, which Google Benchmark divides by
// the real time under UseRealTime: peak_frac counts flops / peak per
// iteration, so it comes out as a fraction.
inline void set_flop_counters(benchmark::State& state, double flops_per_iteration, int threads) {
  const double gflop = flops_per_iteration * double(state.iterations()) * 1e-9;
  state.counters["GFLOP/s"] = benchmark::Counter(gflop, benchmark::Counter::kIsRate);
  state.counters["peak_frac"] = benchmark::Counter(gflop / fma_peak_gflops(threads), benchmark::Counter::kIsRate);
}

// The largest difference between `got` and `want` over the largest |want|:
// sums over thousands of terms in another order differ by a few ulps of the
// largest partial sums, not of each (possibly tiny) element.
inline double max_scaled_error(const float* got, const float* want, int64_t n) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::fabs(double(got[i]) - double(want[i])));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// The scaled error above which a reference is taken to compute something else
// than nnvm (a transposed operand, a wrong layout): float sums of up to ~10^5
// terms agree far closer.
inline constexpr double kReferenceTolerance = 1e-4;

// Skips the benchmark when the reference's result is not nnvm's: a fast
// answer to another question says nothing.
inline bool check_against_nnvm(benchmark::State& state, const float* got, const float* want, int64_t n) {
  const double error = max_scaled_error(got, want, n);
  if (error <= kReferenceTolerance) return true;
  state.SkipWithError(("result differs from nnvm's: scaled error " + std::to_string(error)).c_str());
  return false;
}

// The CPU seconds (user and system) the whole process has used so far: every
// library's threads, spinning ones included.
inline double process_cpu_seconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Times `product` (one call per iteration), after one untimed call whose
// result, `n` floats at `got`, is checked against nnvm's at `want` (no check
// when `want` is null). Counter cpus_used: the process's CPU seconds per
// second in the loop, which shows whether a library ran on the threads it was
// given (a threads:1 row near 1, threads:2 near 2 unless the machine is busy).
// Registers one row of the reference comparisons under `name`, as every
// row of them runs: real time, short (the whole set in a few minutes), ms.
template <class Fn, class... Args> void register_reference_row(const std::string& name, Fn fn, Args... args) {
  benchmark::RegisterBenchmark(name.c_str(), fn, args...)->UseRealTime()->MinTime(0.1)->Unit(benchmark::kMillisecond);
}

template <class Product>
void time_product(benchmark::State& state, Product&& product, const float* got, const float* want, int64_t n) {
  product();
  if (want != nullptr && !check_against_nnvm(state, got, want, n)) return;
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    product();
    benchmark::DoNotOptimize(got);
    benchmark::ClobberMemory();
  }
  state.counters["cpus_used"] =
      benchmark::Counter(process_cpu_seconds() - cpu_start, benchmark::Counter::kIsRate);
}

#ifdef NNVM_BENCH_HAVE_DNNL
// One CPU engine and in-order stream for the process.
inline dnnl::engine& dnnl_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}
inline dnnl::stream& dnnl_stream() {
  static dnnl::stream stream(dnnl_engine());
  return stream;
}
#endif

}  // namespace nnvm::bench
