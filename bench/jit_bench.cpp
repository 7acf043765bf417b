// The x86 JIT on two chains over 16M floats: gelu_tanh(x * a + b) written as
// 11 separate ops (compute-bound on Zen 4: ~26 vector instructions an output
// vector), and x * a + b (memory-bound). fused = traced mode after warm-up
// (one pointwise group, JIT code; the default store policy streams the
// scale-shift's 64 MiB output, twice the last-level cache, and not the gelu
// chain's); fused_streaming_stores / fused_regular_stores = the same with
// non-temporal stores forced on / off; fused_portable = the same plan with NNVM_ISA
// forced to portable (the tile program); eager = one kernel per op;
// handwritten = one C++ loop computing the same math as the JIT (the same
// rational tanh, branch-free; ordinary stores), which GCC vectorises at -O3 -march=native, on
// the same thread pool split. Bytes
// counted are the minimal traffic (read x, write the result).
// BM_StreamTriad (a = b + s c over raw arrays, vectorised) is the machine's
// bandwidth on the same pool; its bytes are the three streams.
// BM_JitCompile: lowering a group to LoopIR and generating its kernel, the
// cost of one fusion group's compile (no cache).
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>

#include "bench_math.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/jit/loop_ir.h"
#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/jit/x86/pointwise_kernel.h"
#include "nnvm/nnvm.h"
#include "nnvm/trace/passes/fuse.h"

namespace {

using namespace nnvm;

enum class Variant { kFused, kFusedStreamingStores, kFusedRegularStores, kFusedPortable, kEager, kHandwritten };

// A pointwise program over one input, as separate ops, and the plain loop
// that computes it.
struct Chain {
  Tensor (*program)(const Tensor& x, double a, double b);
  void (*loop)(const float* __restrict x, float* __restrict out, int64_t n, float a, float b);
};

Tensor gelu_chain(const Tensor& x, double a, double b) {
  const Tensor y = x * a + b;
  const Tensor inner = (y + y * y * y * 0.044715) * 0.7978845608028654;
  return y * 0.5 * (inner.tanh() + 1);
}

void gelu_loop(const float* __restrict x, float* __restrict out, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) {
    const float y = x[i] * a + b;
    out[i] = y * 0.5f * (bench::tanh_vec((y + y * y * y * 0.044715f) * 0.7978845608f) + 1.0f);
  }
}

Tensor scale_shift(const Tensor& x, double a, double b) { return x * a + b; }

void scale_shift_loop(const float* __restrict x, float* __restrict out, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * a + b;
}

void chain_bench(benchmark::State& state, const Chain& chain, Variant variant) {
  const int64_t n = state.range(0);
  const jit::Isa saved = jit::active_isa();
  if (variant == Variant::kFusedPortable) jit::set_isa(jit::Isa::kPortable);
  if (variant == Variant::kFusedStreamingStores) jit::set_stream_stores(jit::StreamStores::kAlways);
  if (variant == Variant::kFusedRegularStores) jit::set_stream_stores(jit::StreamStores::kNever);
  set_mode(variant == Variant::kEager ? Mode::Eager : Mode::Traced);
  const Tensor x = randn({n});
  mark_step();
  const float a = 1.25f, b = -0.5f;
  if (variant == Variant::kHandwritten) {
    const Tensor out = zeros({n});
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (auto _ : state) {
      parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) { chain.loop(px + begin, po + begin, end - begin, a, b); });
      benchmark::DoNotOptimize(po);
    }
  } else {
    for (int warm = 0; warm < 3; ++warm) chain.program(x, a, b).data_ptr();  // hot: compiled, kernels cached
    for (auto _ : state) {
      Tensor y = chain.program(x, a, b);
      benchmark::DoNotOptimize(y.data_ptr());
    }
  }
  set_mode(Mode::Traced);
  jit::set_isa(saved);
  jit::set_stream_stores(jit::StreamStores::kAuto);
  state.SetBytesProcessed(state.iterations() * n * 2 * int64_t(sizeof(float)));
}

void BM_GeluChain(benchmark::State& state, Variant variant) { chain_bench(state, {gelu_chain, gelu_loop}, variant); }
BENCHMARK_CAPTURE(BM_GeluChain, fused, Variant::kFused)
    ->Arg(16 << 20)->Arg(1 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GeluChain, fused_streaming_stores, Variant::kFusedStreamingStores)
    ->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GeluChain, fused_portable, Variant::kFusedPortable)
    ->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GeluChain, eager, Variant::kEager)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GeluChain, handwritten, Variant::kHandwritten)
    ->Arg(16 << 20)->Arg(1 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_ScaleShift(benchmark::State& state, Variant variant) {
  chain_bench(state, {scale_shift, scale_shift_loop}, variant);
}
BENCHMARK_CAPTURE(BM_ScaleShift, fused, Variant::kFused)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScaleShift, fused_regular_stores, Variant::kFusedRegularStores)
    ->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScaleShift, eager, Variant::kEager)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScaleShift, handwritten, Variant::kHandwritten)
    ->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

// gelu(x · Wᵀ + b), a transformer MLP's first layer, rows × in -> 4096 (x·Wᵀ
// through the JIT GEMM, jit/gemm_jit.h): fused = traced after warm-up, the
// matmul's epilogue (bias, gelu) run inside the GEMM on its finished columns;
// unfused = eager, matmul, add and gelu each a kernel and a pass over memory.
// The same program; set_mode is the one switch. Items are rows. in = 1024:
// the product dominates; in = 64: the passes over the output do.
void BM_MatmulBiasGelu(benchmark::State& state, Variant variant) {
  const int64_t rows = state.range(0), in = state.range(1), out = 4096;
  set_mode(variant == Variant::kEager ? Mode::Eager : Mode::Traced);
  const Tensor x = randn({rows, in}), w = randn({out, in}) * 0.03, b = randn({out});
  mark_step();
  auto program = [&] { return gelu(matmul(x, w.t()) + b); };
  for (int warm = 0; warm < 3; ++warm) program().data_ptr();
  for (auto _ : state) {
    Tensor y = program();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  set_mode(Mode::Traced);
  state.SetItemsProcessed(state.iterations() * rows);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(rows * in * out), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_MatmulBiasGelu, fused, Variant::kFused)
    ->Args({256, 1024})->Args({16, 1024})->Args({4096, 64})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulBiasGelu, unfused, Variant::kEager)
    ->Args({256, 1024})->Args({16, 1024})->Args({4096, 64})->UseRealTime()->Unit(benchmark::kMillisecond);

void triad(float* __restrict a, const float* __restrict b, const float* __restrict c, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

void BM_StreamTriad(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor a = zeros({n}), b = ones({n}), c = full({n}, 2.0);
  float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  const float* pc = c.data_ptr<float>();
  for (auto _ : state) {
    parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) { triad(pa + begin, pb + begin, pc + begin, end - begin, 3.0f); });
    benchmark::DoNotOptimize(pa);
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * int64_t(sizeof(float)));
}
BENCHMARK(BM_StreamTriad)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

// The gelu chain's group as traced (12 nodes), and a two-op group exp(x * s).
trace::Trace chain_trace(bool gelu) {
  const Tensor x = zeros({64});
  trace::Trace t;
  const trace::ValueId xv = t.add_input(x);
  auto node = [&](const char* name, std::initializer_list<trace::ValueId> in, Attrs attrs = {}) {
    return t.add_node1(find_op(name), std::vector<trace::ValueId>(in), std::move(attrs));
  };
  if (!gelu) {
    t.mark_output(node("exp", {node("mul.Scalar", {xv}, {Scalar(2.0)})}));
    return t;
  }
  const trace::ValueId y = node("add.Scalar", {node("mul.Scalar", {xv}, {Scalar(1.25)})}, {Scalar(-0.5), Scalar(1)});
  const trace::ValueId cube = node("mul.Scalar", {node("mul", {node("mul", {y, y}), y})}, {Scalar(0.044715)});
  const trace::ValueId inner = node("mul.Scalar", {node("add", {y, cube}, {Scalar(1)})}, {Scalar(0.79788456)});
  const trace::ValueId t1 = node("add.Scalar", {node("tanh", {inner})}, {Scalar(1), Scalar(1)});
  t.mark_output(node("mul", {node("mul.Scalar", {y}, {Scalar(0.5)}), t1}));
  return t;
}

void BM_JitCompile(benchmark::State& state, bool gelu) {
  const jit::Isa isa = jit::active_isa();
  if (isa == jit::Isa::kPortable) {
    state.SkipWithError("no JIT ISA on this CPU");
    return;
  }
  EagerGuard eager;
  const trace::Trace t = chain_trace(gelu);
  const trace::FusionPlan f = trace::fuse(t);
  const trace::GroupValues values = trace::group_values(t, f.groups[0]);
  size_t bytes = 0;
  if (const jit::Lowering l = jit::lower_pointwise(t, f.groups[0], values); !l.ok()) {
    state.SkipWithError(l.declined.c_str());
    return;
  }
  for (auto _ : state) {
    const jit::Lowering l = jit::lower_pointwise(t, f.groups[0], values);
    const jit::x86::PointwiseKernel kernel(l.ir, "cc", isa);
    bytes = kernel.code_bytes();
  }
  state.counters["code_bytes"] = double(bytes);
  state.SetLabel(jit::isa_name(isa));
}
BENCHMARK_CAPTURE(BM_JitCompile, exp_scaled, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JitCompile, gelu_chain, true)->Unit(benchmark::kMicrosecond);

}  // namespace
