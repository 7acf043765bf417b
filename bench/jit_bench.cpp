// The x86 JIT on a memory-bound chain: gelu_tanh(x * a + b) written as 11
// separate ops over 16M floats. fused = traced mode after warm-up (one
// pointwise group, JIT code); fused_portable = the same plan with NNVM_ISA
// forced to portable (the tile program); eager = one kernel per op;
// handwritten = one plain C++ loop. Bytes counted are the minimal traffic
// (read x, write the result). BM_StreamTriad (a = b + s c) is the machine's
// bandwidth limit on the same thread pool.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "nnvm/core/thread_pool.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/nnvm.h"

namespace {

using namespace nnvm;

enum class Variant { kFused, kFusedPortable, kEager, kHandwritten };

Tensor gelu_chain(const Tensor& x, double a, double b) {
  const Tensor y = x * a + b;
  const Tensor inner = (y + y * y * y * 0.044715) * 0.7978845608028654;
  return y * 0.5 * (inner.tanh() + 1);
}

void BM_GeluChain(benchmark::State& state, Variant variant) {
  const int64_t n = state.range(0);
  const jit::Isa saved = jit::active_isa();
  if (variant == Variant::kFusedPortable) jit::set_isa(jit::Isa::kPortable);
  set_mode(variant == Variant::kEager ? Mode::Eager : Mode::Traced);
  const Tensor x = randn({n});
  mark_step();
  const float a = 1.25f, b = -0.5f;
  if (variant == Variant::kHandwritten) {
    std::vector<float> out(size_t(n), 0.0f);
    const float* px = x.data_ptr<float>();
    for (auto _ : state) {
      parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float y = px[i] * a + b;
          out[size_t(i)] = 0.5f * y * (1.0f + std::tanh(0.7978845608f * (y + 0.044715f * y * y * y)));
        }
      });
      benchmark::DoNotOptimize(out.data());
    }
  } else {
    for (int warm = 0; warm < 3; ++warm) gelu_chain(x, a, b).data_ptr();  // hot: compiled, kernels cached
    for (auto _ : state) {
      Tensor y = gelu_chain(x, a, b);
      benchmark::DoNotOptimize(y.data_ptr());
    }
  }
  set_mode(Mode::Traced);
  jit::set_isa(saved);
  state.SetBytesProcessed(state.iterations() * n * 2 * int64_t(sizeof(float)));
}
BENCHMARK_CAPTURE(BM_GeluChain, fused, Variant::kFused)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GeluChain, fused_portable, Variant::kFusedPortable)
    ->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GeluChain, eager, Variant::kEager)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GeluChain, handwritten, Variant::kHandwritten)
    ->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_StreamTriad(benchmark::State& state) {
  const int64_t n = state.range(0);
  const size_t len = size_t(n);
  std::vector<float> a(len), b(len, 1.0f), c(len, 2.0f);
  const float s = 3.0f;
  for (auto _ : state) {
    parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) a[size_t(i)] = b[size_t(i)] + s * c[size_t(i)];
    });
    benchmark::DoNotOptimize(a.data());
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * int64_t(sizeof(float)));
}
BENCHMARK(BM_StreamTriad)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
