// The tracing runtime's own costs (docs/DESIGN.md §1): recording an op, replaying a
// hot trace from the cache, and a dynamic-length RNN whose every step reads a
// value (item()), so every step is one short trace: traced against eager and
// a handwritten loop.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "bench_math.h"
#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/nnvm.h"
#include "nnvm/trace/executor.h"

namespace {

using namespace nnvm;

// Wall time divided by `items` (scaled: items * 1e-9 gives ns per item).
benchmark::Counter per_item(double items) {
  return benchmark::Counter(items, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ns per recorded op: N tiny ops recorded (dispatch, shape inference, the
// recorder, making the lazy outputs and dropping the dead ones), then one
// flush of the N-op trace (signature, lookup, plan replay, binding).
// BM_RecordOverhead leaves the flush outside the timed region: pausing the
// timer reads the clocks (a thread-CPU-time read is a system call), so N is
// large enough to spread that over many ops. BM_RecordAndFlush times it,
// spread over the N ops as in a real program.
void record_bench(benchmark::State& state, bool time_flush) {
  set_mode(Mode::Traced);
  const int64_t n = state.range(0);
  const Tensor a = randn({16}), b = randn({16});
  mark_step();
  for (auto _ : state) {
    Tensor x = a;
    for (int64_t i = 0; i < n; ++i) x = x * b + a;  // 2 ops per trip
    if (!time_flush) state.PauseTiming();
    mark_step();
    if (!time_flush) state.ResumeTiming();
    benchmark::DoNotOptimize(x.impl());
  }
  state.SetItemsProcessed(state.iterations() * 2 * n);
  state.counters["ns/op"] = per_item(double(state.iterations() * 2 * n) * 1e-9);
}
void BM_RecordOverhead(benchmark::State& state) { record_bench(state, false); }
void BM_RecordAndFlush(benchmark::State& state) { record_bench(state, true); }
BENCHMARK(BM_RecordOverhead)->Arg(64)->Arg(512)->UseRealTime();
BENCHMARK(BM_RecordAndFlush)->Arg(8)->Arg(64)->UseRealTime();

// The cost of a profiler session (docs/PROFILING.md): BM_RecordAndFlush's
// loop with a fresh session per iteration (profiled:1) or none (profiled:0),
// made and dropped outside the timed region in both.
void BM_ProfiledRecordAndFlush(benchmark::State& state) {
  set_mode(Mode::Traced);
  const int64_t n = state.range(0);
  const bool profiled = state.range(1) != 0;
  const Tensor a = randn({16}), b = randn({16});
  mark_step();
  std::optional<profiler::Session> session;
  for (auto _ : state) {
    state.PauseTiming();
    session.reset();
    if (profiled) session.emplace();
    state.ResumeTiming();
    Tensor x = a;
    for (int64_t i = 0; i < n; ++i) x = x * b + a;
    mark_step();
    benchmark::DoNotOptimize(x.impl());
  }
  state.SetItemsProcessed(state.iterations() * 2 * n);
  state.counters["ns/op"] = per_item(double(state.iterations() * 2 * n) * 1e-9);
}
BENCHMARK(BM_ProfiledRecordAndFlush)->ArgNames({"n", "profiled"})->Args({64, 0})->Args({64, 1})->UseRealTime();

// A trace of 5 or 6 tiny ops, hot: record + signature + cache lookup + plan
// replay + binding the outputs, per flush. The target is stated for
// a 5-op trace; the 6-op one (a relu before the sum) is the figure reported
// since the first measurements. Run with NNVM_HOT=1000000 for the cold path
// (the interpreter instead of the plan).
void BM_ReplayOverhead(benchmark::State& state) {
  set_mode(Mode::Traced);
  const Tensor a = randn({16}), b = randn({16});
  const bool relu = state.range(0) == 6;
  mark_step();
  for (auto _ : state) {
    // one expression each: no intermediate outlives the trace, so y is its only output
    Tensor y = relu ? ((a * b + a).exp() - b).relu().sum() : ((a * b + a).exp() - b).sum();
    mark_step();
    benchmark::DoNotOptimize(y.impl());
  }
}
BENCHMARK(BM_ReplayOverhead)->ArgName("ops")->Arg(5)->Arg(6)->UseRealTime();

// BM_ReplayOverhead's plan alone: the replay side of its flush (binding the
// inputs and Scalars, the arena, the JIT reduction's launch, the output),
// without recording, the signature check or the cache lookup.
void BM_PlanReplay(benchmark::State& state) {
  EagerGuard eager;
  const Tensor a = randn({16}), b = randn({16});
  trace::Trace t;
  const trace::ValueId x = t.add_input(a), y = t.add_input(b);
  auto node = [&](const char* op, std::vector<trace::ValueId> in, Attrs attrs = {}) {
    return t.add_node1(find_op(op), in, std::move(attrs));
  };
  const trace::ValueId e = node("exp", {node("add", {node("mul", {x, y}), x}, {Scalar(1)})});
  t.mark_output(node("sum", {node("relu", {node("add", {e, y}, {Scalar(-1)})})}, {DimVector{}, false, kFloat32}));
  const trace::FusedPlan plan(t);
  std::vector<Tensor> inputs = {a, b};  // borrowed by each run
  trace::WrittenFlags written;
  std::vector<Tensor> results;
  for (auto _ : state) {
    plan.run_into(absl::MakeSpan(inputs), t.scalars(), {}, written, results);
    benchmark::DoNotOptimize(results.data());
  }
}
BENCHMARK(BM_PlanReplay)->UseRealTime();

// h = tanh(x_t W + h U + b), hidden 64, batch 1, until |h| crosses a
// threshold (read every step) or kMaxSteps. Time per step; traced, a step is
// one short trace: recording 6 ops, then item()'s flush (lookup, plan replay
// with its two 1x64 by 64x64 GEMMs, binding).
constexpr int64_t kHidden = 64, kMaxSteps = 64;
constexpr float kThreshold = 6.1f;  // crossed at step 4 with these weights and inputs

struct Rnn {
  Tensor w, u, b, xs;
  Rnn() {
    manual_seed(0);
    EagerGuard eager;
    w = randn({kHidden, kHidden}) * (1.0 / std::sqrt(double(kHidden)));
    u = randn({kHidden, kHidden}) * (1.0 / std::sqrt(double(kHidden)));
    b = randn({1, kHidden}) * 0.1;
    xs = randn({kMaxSteps, 1, kHidden});
  }
  int64_t run() const {
    Tensor h = zeros({1, kHidden});
    int64_t t = 0;
    while (t < kMaxSteps) {
      h = (matmul(xs[t], w) + matmul(h, u) + b).tanh();
      ++t;
      if (h.norm().item<float>() > kThreshold) break;
    }
    return t;
  }
};

void rnn_bench(benchmark::State& state, Mode mode) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  const Rnn rnn;
  int64_t steps = 0;
  for (auto _ : state) steps += rnn.run();
  set_mode(previous);
  state.SetItemsProcessed(steps);
  state.counters["steps/run"] = double(steps) / double(state.iterations());
  state.counters["us/step"] = per_item(double(steps) * 1e-6);
}
void BM_RnnDynamicTraced(benchmark::State& state) { rnn_bench(state, Mode::Traced); }
void BM_RnnDynamicEager(benchmark::State& state) { rnn_bench(state, Mode::Eager); }
BENCHMARK(BM_RnnDynamicTraced)->Name("BM_RnnDynamic/traced")->UseRealTime();
BENCHMARK(BM_RnnDynamicEager)->Name("BM_RnnDynamic/eager")->UseRealTime();

// The same cell as plain loops over floats: the GEMMs and the tanh vectorise
// over j; the norm is a plain sum.
void BM_RnnDynamicHandwritten(benchmark::State& state) {
  const Rnn rnn;
  const std::vector<float> w = rnn.w.to_vector<float>(), u = rnn.u.to_vector<float>(),
                           b = rnn.b.to_vector<float>(), xs = rnn.xs.to_vector<float>();
  std::vector<float> h(kHidden), next(kHidden);
  int64_t steps = 0;
  for (auto _ : state) {
    std::fill(h.begin(), h.end(), 0.f);
    for (int64_t t = 0; t < kMaxSteps;) {
      const float* x = xs.data() + t * kHidden;
      for (int64_t j = 0; j < kHidden; ++j) next[j] = b[j];
      for (int64_t k = 0; k < kHidden; ++k)
        for (int64_t j = 0; j < kHidden; ++j) next[j] += x[k] * w[k * kHidden + j] + h[k] * u[k * kHidden + j];
      for (int64_t j = 0; j < kHidden; ++j) h[j] = bench::tanh_vec(next[j]);
      float norm = 0;
      for (int64_t j = 0; j < kHidden; ++j) norm += h[j] * h[j];
      ++t;
      ++steps;
      if (std::sqrt(norm) > kThreshold) break;
    }
    benchmark::DoNotOptimize(h.data());
  }
  state.SetItemsProcessed(steps);
  state.counters["steps/run"] = double(steps) / double(state.iterations());
  state.counters["us/step"] = per_item(double(steps) * 1e-6);
}
BENCHMARK(BM_RnnDynamicHandwritten)->Name("BM_RnnDynamic/handwritten")->UseRealTime();

// The step's two 1x64 by 64x64 products alone, through the GEMM its plan runs
// (cpu::gemm on the tensors' own 64-byte aligned memory), per iteration:
// `warm`, back to back (W and U together are 32 KB of the 48 KB L1);
// `evicted`, after 64 KB of other data went through the cache; `touch`, the
// 64 KB alone, to subtract; `shared`, after 27 KB (430 lines, what a traced
// step touches besides W and U), so W, U and the rest overflow the L1 by a
// little; `shared_alternating`, the same with the products in the other
// order every other iteration, as GroupProgram::run_gemm runs matmul_sum's
// (an LRU cache then misses only the overflow, not every line of W and U).
enum class GemmCache { kWarm, kEvicted, kTouchOnly, kShared, kSharedAlternating };
void BM_RnnGemm(benchmark::State& state, GemmCache variant) {
  const Rnn rnn;
  const EagerGuard eager;
  const Tensor h = rnn.xs[1], out = zeros({2, kHidden});
  const float *x = rnn.xs[0].data_ptr<float>(), *hp = h.data_ptr<float>();
  const float *w = rnn.w.data_ptr<float>(), *u = rnn.u.data_ptr<float>();
  float* c = out.data_ptr<float>();
  const bool shared = variant == GemmCache::kShared || variant == GemmCache::kSharedAlternating;
  std::vector<char> other(shared ? size_t(430) * 64 : size_t(64) << 10, 1);
  bool reverse = false;
  for (auto _ : state) {
    if (variant != GemmCache::kWarm)
      for (size_t i = 0; i < other.size(); i += 64) other[i] = char(other[i] + 1);
    if (variant != GemmCache::kTouchOnly) {
      reverse = variant == GemmCache::kSharedAlternating && !reverse;
      const float* first = reverse ? u : w;
      const float* second = reverse ? w : u;
      cpu::gemm(1, kHidden, kHidden, {reverse ? hp : x, kHidden, 1}, {first, kHidden, 1}, 0.f, c, kHidden);
      cpu::gemm(1, kHidden, kHidden, {reverse ? x : hp, kHidden, 1}, {second, kHidden, 1}, 0.f, c + kHidden,
                kHidden);
    }
    benchmark::DoNotOptimize(c);
    benchmark::ClobberMemory();
  }
}
BENCHMARK_CAPTURE(BM_RnnGemm, warm, GemmCache::kWarm)->UseRealTime();
BENCHMARK_CAPTURE(BM_RnnGemm, evicted, GemmCache::kEvicted)->UseRealTime();
BENCHMARK_CAPTURE(BM_RnnGemm, touch, GemmCache::kTouchOnly)->UseRealTime();
BENCHMARK_CAPTURE(BM_RnnGemm, shared, GemmCache::kShared)->UseRealTime();
BENCHMARK_CAPTURE(BM_RnnGemm, shared_alternating, GemmCache::kSharedAlternating)->UseRealTime();

}  // namespace
