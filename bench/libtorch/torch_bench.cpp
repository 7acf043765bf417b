// The same programs as nnvm_bench's headline benchmarks, written against
// libtorch (PyTorch's C++ library) and run eagerly, so that nnvm and libtorch
// can be compared on one machine in one sitting (tools/libtorch_compare.sh
// builds this against the libtorch of a pinned PyPI wheel; it is a measuring
// tool, not part of nnvm's build). Each benchmark mirrors the nnvm one named
// in its comment: the same shapes, steps and thread count (both libraries
// use the machine's hardware threads unless NNVM_THREADS / OMP_NUM_THREADS
// say otherwise); only the random numbers differ (each library has its own
// generator), which changes no work except the RNN's data-dependent trip
// count, so that one is reported per step.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "rnn_program.h"

namespace {

benchmark::Counter per_item(double items) {
  return benchmark::Counter(items, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// bench/core_bench.cpp BM_EagerAddTiny: dispatching a 16-element add.
void BM_TorchEagerAddTiny(benchmark::State& state) {
  const torch::Tensor a = torch::randn({16}), b = torch::randn({16});
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_TorchEagerAddTiny)->Name("Torch/EagerAddTiny");

// bench/core_bench.cpp BM_Matmul: an n x n product, B plain or a transposed view.
void BM_TorchMatmul(benchmark::State& state, bool transposed_b) {
  const int64_t n = state.range(0);
  const torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
  const torch::Tensor rhs = transposed_b ? b.t() : b;
  for (auto _ : state) benchmark::DoNotOptimize(a.matmul(rhs));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(n * n * n) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_TorchMatmul, eager, false)->Name("Torch/Matmul")->Arg(512)->Arg(1024)->UseRealTime();
BENCHMARK_CAPTURE(BM_TorchMatmul, eager_bt, true)
    ->Name("Torch/Matmul_transposed_b")
    ->Arg(512)
    ->Arg(1024)
    ->UseRealTime();

// bench/core_bench.cpp's [4096, 1024] float ops, eager: BM_Add, BM_Exp,
// BM_Transcendental (over randn; the logarithm over its magnitudes),
// BM_SoftmaxOp, BM_Sum/eager/{rows,columns}. Rate: bytes read and written.
constexpr int64_t kRows = 4096, kCols = 1024;

void BM_TorchAdd(benchmark::State& state) {
  const torch::Tensor a = torch::randn({kRows, kCols}), b = torch::randn({kRows, kCols});
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 12);
}
BENCHMARK(BM_TorchAdd)->Name("Torch/Add")->UseRealTime();

void BM_TorchOneTensor(benchmark::State& state, torch::Tensor (*op)(const torch::Tensor&), bool magnitudes) {
  const torch::Tensor a = magnitudes ? torch::randn({kRows, kCols}).abs() : torch::randn({kRows, kCols});
  for (auto _ : state) benchmark::DoNotOptimize(op(a));
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 8);
}
struct OneTensorOp {
  const char* name;
  torch::Tensor (*op)(const torch::Tensor&);
  bool magnitudes;
};
const OneTensorOp kOneTensorOps[] = {
    {"Torch/Exp", [](const torch::Tensor& x) { return x.exp(); }, false},
    {"Torch/Tanh", [](const torch::Tensor& x) { return x.tanh(); }, false},
    {"Torch/Erf", [](const torch::Tensor& x) { return x.erf(); }, false},
    {"Torch/Gelu", [](const torch::Tensor& x) { return torch::gelu(x); }, false},
    {"Torch/Log", [](const torch::Tensor& x) { return x.log(); }, true},
    {"Torch/Sin", [](const torch::Tensor& x) { return x.sin(); }, false},
    {"Torch/Cos", [](const torch::Tensor& x) { return x.cos(); }, false},
    {"Torch/Tan", [](const torch::Tensor& x) { return x.tan(); }, false},
    {"Torch/Softmax", [](const torch::Tensor& x) { return torch::softmax(x, -1); }, false},
};
[[maybe_unused]] const bool kOneTensorOpsRegistered = [] {
  for (const OneTensorOp& u : kOneTensorOps)
    benchmark::RegisterBenchmark(u.name, BM_TorchOneTensor, u.op, u.magnitudes)->UseRealTime();
  return true;
}();

void BM_TorchSum(benchmark::State& state, int64_t dim) {
  const torch::Tensor a = torch::randn({kRows, kCols});
  for (auto _ : state) benchmark::DoNotOptimize(a.sum(dim));
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
}
BENCHMARK_CAPTURE(BM_TorchSum, rows, 1)->Name("Torch/Sum/rows")->UseRealTime();
BENCHMARK_CAPTURE(BM_TorchSum, columns, 0)->Name("Torch/Sum/columns")->UseRealTime();

// bench/core_bench.cpp BM_MaxPool2d/eager/{forward,backward}: 2x2 pooling of
// [64, 32, 28, 28]. libtorch's backward is given the forward's indices (nnvm's
// finds the maxima again from the input).
void BM_TorchMaxPool2d(benchmark::State& state, bool backward) {
  const torch::Tensor x = torch::randn({64, 32, 28, 28}), grad = torch::randn({64, 32, 14, 14});
  const auto [y, indices] = torch::max_pool2d_with_indices(x, {2, 2});
  for (auto _ : state) {
    if (backward)
      benchmark::DoNotOptimize(torch::max_pool2d_with_indices_backward(grad, x, {2, 2}, {2, 2}, {0, 0}, {1, 1},
                                                                       false, indices));
    else benchmark::DoNotOptimize(torch::max_pool2d(x, {2, 2}));
  }
  state.SetBytesProcessed(state.iterations() * x.numel() * 4 * (backward ? 2 : 1) * 5 / 4);
}
BENCHMARK_CAPTURE(BM_TorchMaxPool2d, forward, false)->Name("Torch/MaxPool2d/forward")->UseRealTime();
BENCHMARK_CAPTURE(BM_TorchMaxPool2d, backward, true)->Name("Torch/MaxPool2d/backward")->UseRealTime();

// bench/core_bench.cpp BM_ConvLayer: the demo CNN's two 3x3, padding-1
// convolutions, batch 64: forward, input gradient, weight gradient.
enum class ConvPass { kForward, kInputGrad, kWeightGrad };
void BM_TorchConvLayer(benchmark::State& state, int64_t channels, int64_t out_channels, int64_t side,
                       ConvPass pass) {
  const torch::Tensor x = torch::randn({64, channels, side, side}), w = torch::randn({out_channels, channels, 3, 3});
  const torch::Tensor gy = torch::randn({64, out_channels, side, side});
  const std::array<bool, 3> mask = {pass == ConvPass::kInputGrad, pass == ConvPass::kWeightGrad, false};
  for (auto _ : state) {
    if (pass == ConvPass::kForward) benchmark::DoNotOptimize(torch::conv2d(x, w, {}, 1, 1));
    else
      benchmark::DoNotOptimize(
          at::convolution_backward(gy, x, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1, mask));
  }
  const double flops = 2.0 * 64 * double(out_channels * channels * 9 * side * side);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}
[[maybe_unused]] const bool kConvLayersRegistered = [] {
  struct Layer {
    const char* name;
    int64_t channels, out_channels, side;
  };
  const Layer layers[] = {{"conv1", 1, 32, 28}, {"conv2", 32, 64, 14}};
  const std::pair<const char*, ConvPass> passes[] = {
      {"forward", ConvPass::kForward}, {"input_grad", ConvPass::kInputGrad}, {"weight_grad", ConvPass::kWeightGrad}};
  for (const Layer& l : layers)
    for (const auto& [pass_name, pass] : passes)
      benchmark::RegisterBenchmark((std::string("Torch/ConvLayer/") + l.name + "/" + pass_name).c_str(),
                                   BM_TorchConvLayer, l.channels, l.out_channels, l.side, pass)
          ->UseRealTime();
  return true;
}();

// bench/trace_bench.cpp BM_RnnDynamic (rnn_program.h); time per step.
void BM_TorchRnnDynamic(benchmark::State& state) {
  const TorchRnn rnn;
  int64_t steps = 0;
  for (auto _ : state) steps += rnn.run();
  state.SetItemsProcessed(steps);
  state.counters["steps/run"] = double(steps) / double(state.iterations());
  state.counters["us/step"] = per_item(double(steps) * 1e-6);
}
BENCHMARK(BM_TorchRnnDynamic)->Name("Torch/RnnDynamic")->UseRealTime();

// bench/train_bench.cpp BM_MlpTrainStep: forward, backward and an SGD update
// of an MLP 1024 -> 4096 -> 1024 with GELU and an MSE loss, batch 256.
void BM_TorchMlpTrainStep(benchmark::State& state) {
  constexpr int64_t kBatch = 256, kIn = 1024, kWidth = 4096, kOut = 1024;
  constexpr double kLr = 1e-2;
  torch::manual_seed(0);
  auto parameter = [](std::vector<int64_t> shape, int64_t fan_in) {
    return (torch::randn(shape) * (1.0 / std::sqrt(double(fan_in)))).requires_grad_();
  };
  torch::Tensor w1 = parameter({kWidth, kIn}, kIn), b1 = parameter({kWidth}, kIn);
  torch::Tensor w2 = parameter({kOut, kWidth}, kWidth), b2 = parameter({kOut}, kWidth);
  const std::vector<torch::Tensor> params = {w1, b1, w2, b2};
  const torch::Tensor x = torch::randn({kBatch, kIn}), target = torch::randn({kBatch, kOut});
  torch::Tensor loss;
  for (auto _ : state) {
    const torch::Tensor y = torch::linear(torch::gelu(torch::linear(x, w1, b1)), w2, b2);
    loss = torch::mse_loss(y, target);
    loss.backward();
    torch::NoGradGuard no_grad;
    for (torch::Tensor p : params) {
      p.sub_(p.grad(), kLr);
      p.mutable_grad() = torch::Tensor();
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  const double flops = 2.0 * kBatch * (2.0 * kIn * kWidth + 3.0 * kWidth * kOut);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.counters["loss"] = loss.item<double>();
}
BENCHMARK(BM_TorchMlpTrainStep)->Name("Torch/MlpTrainStep")->Unit(benchmark::kMillisecond)->UseRealTime();

// bench/train_bench.cpp BM_SequenceLinearStep: an SGD step of one linear
// layer over [32, 64, 256] against a [256, 256] weight.
void BM_TorchSequenceLinearStep(benchmark::State& state) {
  constexpr int64_t kSequences = 32, kTime = 64, kFeatures = 256;
  constexpr double kLr = 1e-2;
  torch::manual_seed(0);
  torch::Tensor w = (torch::randn({kFeatures, kFeatures}) * (1.0 / std::sqrt(double(kFeatures)))).requires_grad_();
  torch::Tensor b = (torch::randn({kFeatures}) * (1.0 / std::sqrt(double(kFeatures)))).requires_grad_();
  const torch::Tensor x = torch::randn({kSequences, kTime, kFeatures});
  torch::Tensor loss;
  for (auto _ : state) {
    const torch::Tensor y = torch::linear(x, w, b);
    loss = (y * y).mean();
    loss.backward();
    torch::NoGradGuard no_grad;
    for (torch::Tensor p : {w, b}) {
      p.sub_(p.grad(), kLr);
      p.mutable_grad() = torch::Tensor();
    }
  }
  const double flops = 2.0 * 2.0 * kSequences * kTime * kFeatures * kFeatures;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.counters["loss"] = loss.item<double>();
}
BENCHMARK(BM_TorchSequenceLinearStep)
    ->Name("Torch/SequenceLinearStep")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// bench/train_bench.cpp BM_CnnTrainStep: one Adam step of the demo's CNN
// (tools/fashion_cnn.h) on a batch of 64 random 28x28 images.
struct FashionCnnImpl : torch::nn::Module {
  FashionCnnImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3).padding(1)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1", torch::nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 10))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::max_pool2d(conv1(x).relu(), {2, 2});
    h = torch::max_pool2d(conv2(h).relu(), {2, 2});
    return fc2(fc1(h.flatten(1)).relu());
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(FashionCnn);

void BM_TorchCnnTrainStep(benchmark::State& state) {
  torch::manual_seed(0);
  FashionCnn model;
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
  const torch::Tensor images = torch::randn({64, 1, 28, 28});
  const torch::Tensor labels = torch::randint(0, 10, {64});
  torch::Tensor loss;
  for (auto _ : state) {
    opt.zero_grad();
    loss = torch::cross_entropy_loss(model(images), labels);
    loss.backward();
    opt.step();
  }
  state.SetItemsProcessed(state.iterations() * 64);
  state.counters["loss"] = loss.item<double>();
}
BENCHMARK(BM_TorchCnnTrainStep)->Name("Torch/CnnTrainStep")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  if (const char* n = std::getenv("NNVM_THREADS")) torch::set_num_threads(std::atoi(n));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
