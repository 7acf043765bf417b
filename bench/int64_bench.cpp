// int64 label tensors as a classifier's step handles them, over 4M labels:
// safe = target.masked_fill(target == ignore_index, 0) and correct = (pred
// == safe), one pointwise group in traced mode. fused = traced after
// warm-up (JIT code: int64s as 32-bit halves, AVX-512); fused_avx2 = the
// same on the AVX2 kernel; fused_portable = the tile program (what every
// group touching int64 ran before); eager = one kernel per op. Bytes counted
// are the minimal traffic (read pred and target, write both results).
#include <benchmark/benchmark.h>

#include "nnvm/jit/x86/isa.h"
#include "nnvm/nnvm.h"

namespace {

using namespace nnvm;

enum class Variant { kFused, kFusedAvx2, kFusedPortable, kEager };

void BM_Int64Labels(benchmark::State& state, Variant variant) {
  const int64_t n = state.range(0);
  const jit::Isa saved = jit::active_isa();
  if (variant == Variant::kFusedPortable) jit::set_isa(jit::Isa::kPortable);
  if (variant == Variant::kFusedAvx2) jit::set_isa(jit::Isa::kAvx2);
  set_mode(variant == Variant::kEager ? Mode::Eager : Mode::Traced);
  Tensor pred, target;
  {
    EagerGuard eager;
    pred = (rand({n}) * 10).to(kInt64);
    target = where(rand({n}) < 0.05, full({n}, -100), rand({n}) * 10).to(kInt64);
  }
  mark_step();
  auto step = [&] {
    const Tensor safe = target.masked_fill(target == -100, 0);
    const Tensor correct = pred == safe;
    benchmark::DoNotOptimize(correct.data_ptr());
    benchmark::DoNotOptimize(safe.data_ptr());
  };
  for (int warm = 0; warm < 3; ++warm) step();  // hot: compiled, kernels cached
  for (auto _ : state) step();
  set_mode(Mode::Traced);
  jit::set_isa(saved);
  state.SetBytesProcessed(state.iterations() * n * (8 + 8 + 1 + 8));
}
BENCHMARK_CAPTURE(BM_Int64Labels, fused, Variant::kFused)->Arg(4 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Int64Labels, fused_avx2, Variant::kFusedAvx2)
    ->Arg(4 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Int64Labels, fused_portable, Variant::kFusedPortable)
    ->Arg(4 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Int64Labels, eager, Variant::kEager)->Arg(4 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
