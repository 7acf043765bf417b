// Backward passes that hold masks: the gradient of relu, clamp and
// leaky_relu as autograd writes them (comparisons, masked_fill, where) over
// 16M floats, one pointwise group in traced mode. fused = traced after
// warm-up (JIT code, the masks 0/1 values inside the kernel); fused_portable
// = the same plan with the ISA forced to portable (the tile program, what
// every group holding a bool ran before the JIT took bool values); eager =
// one kernel per op. Bytes counted are the minimal traffic (read x and g,
// write the gradient).
#include <benchmark/benchmark.h>

#include "nnvm/jit/x86/isa.h"
#include "nnvm/nnvm.h"

namespace {

using namespace nnvm;

enum class Variant { kFused, kFusedPortable, kEager };

// d/dx leaky_relu(clamp(relu(x), -1, 0.5), 0.1) * g, as the three grad functions compose it.
Tensor masked_backward(const Tensor& x, const Tensor& g) {
  const Tensor r = x.relu();
  const Tensor c = r.clamp(-1, 0.5);
  Tensor grad = where(c > 0, g, g * 0.1);
  grad = grad.masked_fill(r < -1, 0).masked_fill(r > 0.5, 0);
  return grad.masked_fill(x <= 0, 0);
}

void BM_MaskedBackward(benchmark::State& state, Variant variant) {
  const int64_t n = state.range(0);
  const jit::Isa saved = jit::active_isa();
  if (variant == Variant::kFusedPortable) jit::set_isa(jit::Isa::kPortable);
  set_mode(variant == Variant::kEager ? Mode::Eager : Mode::Traced);
  const Tensor x = randn({n}), g = randn({n});
  mark_step();
  for (int warm = 0; warm < 3; ++warm) masked_backward(x, g).data_ptr();  // hot: compiled, kernels cached
  for (auto _ : state) {
    Tensor y = masked_backward(x, g);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  set_mode(Mode::Traced);
  jit::set_isa(saved);
  state.SetBytesProcessed(state.iterations() * n * 3 * int64_t(sizeof(float)));
}
BENCHMARK_CAPTURE(BM_MaskedBackward, fused, Variant::kFused)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskedBackward, fused_portable, Variant::kFusedPortable)
    ->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskedBackward, eager, Variant::kEager)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
