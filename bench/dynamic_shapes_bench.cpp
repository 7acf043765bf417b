// Sizes that change every step (docs/TRACE.md "Shape classes"), each against
// the same step at a fixed size, the mean of the drawn ones, in the same run:
//   BM_RaggedBatchTrain: an SGD step of an MLP 784 -> 512 -> 10 (GELU,
//     cross-entropy) over a batch of 1..1024 rows drawn anew each step,
//     sliced from a data set at a random row (a data loader's ragged batches).
//   BM_VariableLengthEncoder: a transformer encoder layer (d_model 64, 4
//     heads, feed-forward 256, batch 4) over 1..512 positions drawn anew
//     each step, forward, backward and an SGD step.
// The ragged rows run NNVM_DYNAMIC_STEPS steps (default 10,000) and count,
// over those steps: trace-cache compiles (all, and those of a new size at
// first sight), and the percentage of flushes that ran a compiled plan
// (the rest ran the interpreter). Time is per step.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "nnvm/nnvm.h"
#include "nnvm/trace/recorder.h"

namespace {

using namespace nnvm;

int64_t dynamic_steps() {
  const char* v = std::getenv("NNVM_DYNAMIC_STEPS");
  return v && *v ? std::atoll(v) : 10000;
}

void sgd(const std::vector<Tensor>& params, double lr) {
  NoGradGuard no_grad;
  for (Tensor p : params) {
    p.sub_(p.grad(), lr);
    p.mutable_grad() = Tensor();
  }
}

// Counters over a run: compiles, first-sight compiles, % of flushes compiled.
class Counting {
 public:
  Counting() : cache_(cache_stats().trace), recorder_(trace::recorder_stats()) {}
  void report(benchmark::State& state) const {
    const TraceCacheStats cache = cache_stats().trace;
    const trace::RecorderStats recorder = trace::recorder_stats();
    const double flushes = double(recorder.flushes - recorder_.flushes);
    state.counters["compiles"] = double(cache.compiles - cache_.compiles);
    state.counters["first_sight"] = double(cache.first_sight_compiles - cache_.first_sight_compiles);
    state.counters["compiled_%"] =
        flushes > 0 ? 100.0 * (1.0 - double(recorder.flushes_interpreted - recorder_.flushes_interpreted) / flushes) : 0;
  }

 private:
  TraceCacheStats cache_;
  trace::RecorderStats recorder_;
};

constexpr int64_t kRows = 4096, kFeatures = 784, kHidden = 512, kClasses = 10, kMaxBatch = 1024;

struct Mlp {
  Tensor data = randn({kRows, kFeatures}), labels = randint(0, kClasses, {kRows});
  Tensor w1 = randn({kHidden, kFeatures}) * (1.0 / std::sqrt(double(kFeatures)));
  Tensor b1 = zeros({kHidden});
  Tensor w2 = randn({kClasses, kHidden}) * (1.0 / std::sqrt(double(kHidden)));
  Tensor b2 = zeros({kClasses});
  Mlp() {
    for (Tensor* p : {&w1, &b1, &w2, &b2}) p->requires_grad_();
    mark_step();
  }
  void step(int64_t start, int64_t batch) {
    const Tensor x = data.narrow(0, start, batch), y = labels.narrow(0, start, batch);
    const Tensor loss = cross_entropy(linear(gelu(linear(x, w1, b1)), w2, b2), y);
    loss.backward();
    sgd({w1, b1, w2, b2}, 1e-3);
    mark_step();
  }
};

void BM_RaggedBatchTrain(benchmark::State& state) {
  const bool ragged = state.range(0) == 0;
  manual_seed(0);
  Mlp mlp;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int64_t> batch(1, kMaxBatch);
  const Counting counting;
  for (auto _ : state) {
    const int64_t b = ragged ? batch(rng) : (kMaxBatch + 1) / 2;
    mlp.step(std::uniform_int_distribution<int64_t>(0, kRows - b)(rng), b);
  }
  if (ragged) counting.report(state);
}
BENCHMARK(BM_RaggedBatchTrain)
    ->Name("BM_RaggedBatchTrain/ragged")
    ->Arg(0)
    ->Iterations(dynamic_steps())
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_RaggedBatchTrain)
    ->Name("BM_RaggedBatchTrain/fixed_mean")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

constexpr int64_t kModel = 64, kHeads = 4, kFeedForward = 256, kSequences = 4, kMaxLength = 512;

void BM_VariableLengthEncoder(benchmark::State& state) {
  const bool variable = state.range(0) == 0;
  manual_seed(0);
  nn::TransformerEncoderLayer layer(
      nn::TransformerEncoderLayerOptions(kModel, kHeads).dim_feedforward(kFeedForward).dropout(0.0).batch_first(true));
  const std::vector<Tensor> params = layer->parameters();
  mark_step();
  std::mt19937 rng(1);
  std::uniform_int_distribution<int64_t> length(1, kMaxLength);
  const Counting counting;
  for (auto _ : state) {
    const int64_t t = variable ? length(rng) : (kMaxLength + 1) / 2;
    const Tensor x = randn({kSequences, t, kModel});
    const Tensor loss = layer->forward(x).square().mean();
    loss.backward();
    sgd(params, 1e-3);
    mark_step();
  }
  if (variable) counting.report(state);
}
BENCHMARK(BM_VariableLengthEncoder)
    ->Name("BM_VariableLengthEncoder/variable")
    ->Arg(0)
    ->Iterations(dynamic_steps())
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_VariableLengthEncoder)
    ->Name("BM_VariableLengthEncoder/fixed_mean")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
