// Training steps. BM_MlpTrainStep: forward, backward and an SGD update of an
// MLP 1024 -> 4096 -> 1024 with GELU and an MSE loss, batch 256, written with
// plain tensors and autograd (weights are leaf tensors, the update runs under
// NoGradGuard), eager and traced (the same program; set_mode switches), with
// the CPU caching allocator's peak bytes in use (peak_MB), the part of it
// above what the parameters and data hold (step_MB), and for traced the
// step's plan: its arena and what its values would take each in a buffer of
// its own (arena_MB, naive_MB). BM_SequenceLinearStep: one linear layer over
// a batch of sequences. BM_CnnTrainStep: one Adam step of the demo's CNN,
// traced and eager. Time is per step; items are samples.
#include <benchmark/benchmark.h>

#include <cmath>
#include <initializer_list>
#include <vector>

#include "fashion_cnn.h"
#include "nnvm/nnvm.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/recorder.h"

namespace {

using namespace nnvm;

constexpr int64_t kBatch = 256, kIn = 1024, kHidden = 4096, kOut = 1024;
constexpr double kLr = 1e-2;

Tensor parameter(IntArrayRef shape, int64_t fan_in) {
  Tensor p = randn(shape) * (1.0 / std::sqrt(double(fan_in)));
  p.requires_grad_();
  return p;
}

// p -= kLr · p.grad for each parameter, and its gradient dropped.
void sgd_update(std::initializer_list<Tensor> params) {
  NoGradGuard no_grad;
  for (Tensor p : params) {
    p.sub_(p.grad(), kLr);
    p.mutable_grad() = Tensor();
  }
}

void mlp_train_step(benchmark::State& state, Mode mode) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  manual_seed(0);
  Tensor w1 = parameter({kHidden, kIn}, kIn), b1 = parameter({kHidden}, kIn);
  Tensor w2 = parameter({kOut, kHidden}, kHidden), b2 = parameter({kOut}, kHidden);
  const Tensor x = randn({kBatch, kIn}), target = randn({kBatch, kOut});

  Tensor loss;
  auto step = [&] {
    const Tensor y = linear(gelu(linear(x, w1, b1)), w2, b2);
    loss = mse_loss(y, target);
    loss.backward();
    sgd_update({w1, b1, w2, b2});
    mark_step();
  };
  mark_step();
  CpuCachingAllocator::instance().reset_peak();
  const double start = double(cpu_memory_stats().bytes_in_use);
  for (auto _ : state) step();
  constexpr double kMB = 1 << 20;
  state.counters["peak_MB"] = double(cpu_memory_stats().peak_bytes_in_use) / kMB;
  state.counters["step_MB"] = (double(cpu_memory_stats().peak_bytes_in_use) - start) / kMB;
  state.SetItemsProcessed(state.iterations() * kBatch);
  // 2 flops per multiply-add; layer 2 runs 3 GEMMs (forward, input and weight
  // gradients), layer 1 runs 2 (its input needs no gradient).
  const double flops = 2.0 * kBatch * (2.0 * kIn * kHidden + 3.0 * kHidden * kOut);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.counters["loss"] = loss.item<double>();
  if (mode == Mode::Traced) {  // one more step, to see its trace; the plan is the cache's (the same passes)
    trace::Trace last;
    trace::set_flush_observer([&](const trace::Trace& t) { last = t; });
    step();
    trace::set_flush_observer(nullptr);
    auto plan = std::dynamic_pointer_cast<const trace::FusedPlan>(trace::compile_plan(last));
    state.counters["arena_MB"] = double(plan->arena_bytes()) / kMB;
    state.counters["naive_MB"] = double(plan->naive_bytes()) / kMB;
  }
  set_mode(previous);
}
void BM_MlpTrainStepEager(benchmark::State& state) { mlp_train_step(state, Mode::Eager); }
void BM_MlpTrainStepTraced(benchmark::State& state) { mlp_train_step(state, Mode::Traced); }
BENCHMARK(BM_MlpTrainStepEager)->Name("BM_MlpTrainStep/eager")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MlpTrainStepTraced)->Name("BM_MlpTrainStep/traced")->Unit(benchmark::kMillisecond)->UseRealTime();

// An SGD step of one linear layer over a batch of sequences, [32, 64, 256]
// against a [256, 256] weight (a transformer's projection): the weight's
// gradient sums over all 2,048 rows, batch and time. 2 GEMMs a step (the
// forward and the weight's gradient; the input needs none).
void BM_SequenceLinearStep(benchmark::State& state, Mode mode) {
  constexpr int64_t kSequences = 32, kTime = 64, kFeatures = 256;
  const Mode previous = nnvm::mode();
  set_mode(mode);
  manual_seed(0);
  Tensor w = parameter({kFeatures, kFeatures}, kFeatures), b = parameter({kFeatures}, kFeatures);
  const Tensor x = randn({kSequences, kTime, kFeatures});
  Tensor loss;
  for (auto _ : state) {
    const Tensor y = linear(x, w, b);
    loss = (y * y).mean();
    loss.backward();
    sgd_update({w, b});
    mark_step();
  }
  const double flops = 2.0 * 2.0 * kSequences * kTime * kFeatures * kFeatures;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.counters["loss"] = loss.item<double>();
  set_mode(previous);
}
BENCHMARK_CAPTURE(BM_SequenceLinearStep, traced, Mode::Traced)
    ->Name("BM_SequenceLinearStep/traced")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SequenceLinearStep, eager, Mode::Eager)
    ->Name("BM_SequenceLinearStep/eager")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One Adam step of the Fashion-MNIST demo's CNN on a batch of 64 random
// images, traced (the default mode) or eager.
void BM_CnnTrainStep(benchmark::State& state, Mode mode) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  manual_seed(0);
  FashionCnn model;
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
  const Tensor images = randn({64, 1, 28, 28});
  const Tensor labels = randint(0, 10, {64});
  Tensor loss;
  for (auto _ : state) {
    opt.zero_grad();
    loss = cross_entropy(model(images), labels);
    loss.backward();
    opt.step();
  }
  state.SetItemsProcessed(state.iterations() * 64);
  state.counters["loss"] = loss.item<double>();
  set_mode(previous);
}
BENCHMARK_CAPTURE(BM_CnnTrainStep, traced, Mode::Traced)
    ->Name("BM_CnnTrainStep/traced")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_CnnTrainStep, eager, Mode::Eager)
    ->Name("BM_CnnTrainStep/eager")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
