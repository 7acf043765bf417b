// Static graphs (docs/MODELS.md): what running a graph node by node costs
// beside the same ops written as eager code, and the model benchmarks'
// ONNX files (bench/models/make_models.py) fused and unfused.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "nnvm/nnvm.h"

namespace {

using namespace nnvm;

// A chain of n tiny Mul/Add pairs: a graph's call against the same ops called
// directly, both traced. The ops record each call and replay one hot plan; the
// graph's calls record nothing once captured (docs/MODELS.md, "Calls that
// record nothing") and run that plan alone.
Model chain(int64_t n) {
  GraphBuilder g;
  auto x = g.input("x", kFloat32, {16});
  auto a = g.initializer("a", randn({16}));
  auto b = g.initializer("b", randn({16}));
  for (int64_t i = 0; i < n; ++i) x = g.op("Add", {g.op("Mul", {x, b}), a});
  g.output(x);
  return g.build();
}

void BM_GraphNodeOverhead(benchmark::State& state) {
  set_mode(Mode::Traced);
  const int64_t n = state.range(0);
  bool graph = state.range(1) != 0;
  Model m = chain(n);
  Tensor a = m.parameters()[0], b = m.parameters()[1], x = randn({16});
  NoGradGuard no_grad;
  for (auto _ : state) {
    Tensor y;
    if (graph) {
      y = m({x})[0];
    } else {
      y = x;
      for (int64_t i = 0; i < n; ++i) y = y * b + a;
    }
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["ns_per_node"] =
      benchmark::Counter(double(2 * n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  if (graph)  // the share of calls that ran a captured plan without recording
    state.counters["replayed"] = double(m.calls_replayed()) / double(std::max<int64_t>(1, state.iterations()));
  state.SetLabel(graph ? "graph" : "eager code");
}
BENCHMARK(BM_GraphNodeOverhead)->ArgsProduct({{64}, {0, 1}})->Unit(benchmark::kMicrosecond);

// The ONNX files of make_models.py, from $NNVM_BENCH_MODELS (skipped without it).
void BM_OnnxModel(benchmark::State& state, const std::string& name, int64_t batch, Mode mode) {
  const char* dir = std::getenv("NNVM_BENCH_MODELS");
  std::filesystem::path file = std::filesystem::path(dir ? dir : "") / (name + ".onnx");
  if (dir == nullptr || !std::filesystem::exists(file)) {
    state.SkipWithError("set NNVM_BENCH_MODELS to the directory of bench/models/make_models.py's files");
    return;
  }
  Model m = load_model(file.string());
  std::vector<int64_t> shape;
  for (const Dim& d : *m.inputs()[0].shape) shape.push_back(d.fixed() ? d.size : batch);
  Tensor x = randn(shape);
  set_mode(mode);
  NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(m({x})[0].data_ptr());
  set_mode(Mode::Traced);
}
#define NNVM_MODEL_BENCH(name, batch)                                                                          \
  BENCHMARK_CAPTURE(BM_OnnxModel, name##_b##batch##_traced, #name, batch, Mode::Traced)->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_OnnxModel, name##_b##batch##_eager, #name, batch, Mode::Eager)->Unit(benchmark::kMillisecond);
NNVM_MODEL_BENCH(resnet18, 1)
NNVM_MODEL_BENCH(resnet18, 32)
NNVM_MODEL_BENCH(bert_layer, 1)
NNVM_MODEL_BENCH(bert_layer, 32)
NNVM_MODEL_BENCH(gpt_block, 1)
NNVM_MODEL_BENCH(gpt_block, 32)
#undef NNVM_MODEL_BENCH

}  // namespace
