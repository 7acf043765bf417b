// Eager-mode benchmarks of the core engine: dispatch overhead of a tiny op,
// and throughput of large pointwise ops, reductions, softmax and the reference
// GEMM, each beside a handwritten loop where one is meaningful (each sets
// eager mode: traced, the results would be lazy tensors that die unrun).
// BM_Sum/fused/* runs the same reductions traced (a hot plan: the JIT
// reduction); BM_ArgmaxLogits an argmax after a pointwise prologue. Figures and the command that produced them: docs/BENCHMARKS.md.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "nnvm/kernels/cpu/exp.h"
#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/nnvm.h"

namespace {

using namespace nnvm;

long minor_faults() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Reports page faults per iteration: the caching allocator keeps them at zero
// in steady state even for 64 MB results.
struct FaultCounter {
  benchmark::State& state;
  long start = minor_faults();
  ~FaultCounter() {
    state.counters["faults/iter"] =
        benchmark::Counter(double(minor_faults() - start) / double(std::max<int64_t>(1, state.iterations())));
  }
};

void BM_EagerAddTiny(benchmark::State& state) {
  const EagerGuard eager;
  const Tensor a = randn({16}), b = randn({16});
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_EagerAddTiny);

constexpr int64_t kRows = 4096, kCols = 1024;

void BM_Add(benchmark::State& state) {
  const EagerGuard eager;
  const Tensor a = randn({kRows, kCols}), b = randn({kRows, kCols});
  FaultCounter faults{state};
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 12);
}
BENCHMARK(BM_Add)->Name("BM_Add/eager")->UseRealTime();

void BM_AddHandwritten(benchmark::State& state) {
  std::vector<float> a(kRows * kCols, 1.f), b(kRows * kCols, 2.f), c(kRows * kCols);
  for (auto _ : state) {
    parallel_for(0, kRows * kCols, 1 << 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) c[i] = a[i] + b[i];
    });
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 12);
}
BENCHMARK(BM_AddHandwritten)->Name("BM_Add/handwritten")->UseRealTime();

void BM_Exp(benchmark::State& state) {
  const EagerGuard eager;
  const Tensor a = randn({kRows, kCols});
  FaultCounter faults{state};
  for (auto _ : state) benchmark::DoNotOptimize(a.exp());
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 8);
}
BENCHMARK(BM_Exp)->Name("BM_Exp/eager")->UseRealTime();

// The reference kernels' other transcendental pointwise ops over the same
// 4M floats, eager: tanh, erf, gelu (its exact, erf form), expm1, exp2, sin,
// cos and tan over randn; log, log2 and log1p over randn's magnitudes (no NaN results,
// which libm returns early).
void BM_Transcendental(benchmark::State& state, Tensor (*op)(const Tensor&), bool magnitudes) {
  const EagerGuard eager;
  const Tensor a = magnitudes ? randn({kRows, kCols}).abs() : randn({kRows, kCols});
  for (auto _ : state) benchmark::DoNotOptimize(op(a));
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 8);
}
struct Transcendental {
  const char* name;
  Tensor (*op)(const Tensor&);
  bool magnitudes;
};
const Transcendental kTranscendentals[] = {
    {"BM_Tanh/eager", [](const Tensor& x) { return x.tanh(); }, false},
    {"BM_Erf/eager", [](const Tensor& x) { return x.erf(); }, false},
    {"BM_Gelu/eager", [](const Tensor& x) { return gelu(x); }, false},
    {"BM_Expm1/eager", [](const Tensor& x) { return x.expm1(); }, false},
    {"BM_Exp2/eager", [](const Tensor& x) { return x.exp2(); }, false},
    {"BM_Log/eager", [](const Tensor& x) { return x.log(); }, true},
    {"BM_Log2/eager", [](const Tensor& x) { return x.log2(); }, true},
    {"BM_Log1p/eager", [](const Tensor& x) { return x.log1p(); }, true},
    {"BM_Sin/eager", [](const Tensor& x) { return x.sin(); }, false},
    {"BM_Cos/eager", [](const Tensor& x) { return x.cos(); }, false},
    {"BM_Tan/eager", [](const Tensor& x) { return x.tan(); }, false},
};
[[maybe_unused]] const bool kTranscendentalsRegistered = [] {
  for (const Transcendental& t : kTranscendentals)
    benchmark::RegisterBenchmark(t.name, BM_Transcendental, t.op, t.magnitudes)->UseRealTime();
  return true;
}();

// A sum over the rows (dim 1) or the columns (dim 0) of [4096, 1024]:
// eager runs the reference kernel; fused records it and reads the result (a
// hot one-op plan: the JIT reduction).
void BM_Sum(benchmark::State& state, Mode mode, int64_t dim) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  const Tensor a = randn({kRows, kCols});
  mark_step();
  for (auto _ : state) {
    Tensor s = a.sum({dim});
    benchmark::DoNotOptimize(s.data_ptr());
  }
  set_mode(previous);
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
}
BENCHMARK_CAPTURE(BM_Sum, eager_rows, Mode::Eager, 1)->Name("BM_Sum/eager/rows")->UseRealTime();
BENCHMARK_CAPTURE(BM_Sum, eager_columns, Mode::Eager, 0)->Name("BM_Sum/eager/columns")->UseRealTime();
BENCHMARK_CAPTURE(BM_Sum, fused_rows, Mode::Traced, 1)->Name("BM_Sum/fused/rows")->UseRealTime();
BENCHMARK_CAPTURE(BM_Sum, fused_columns, Mode::Traced, 0)->Name("BM_Sum/fused/columns")->UseRealTime();

// The Euclidean norm of a difference over [4096, 1024] (a gradient-clipping
// norm, a distance): eager writes a - b and reads it again in the reference
// norm; fused runs the subtraction as the JIT reduction's prologue, one read
// of each input, the squares summed in double as the reference sums them.
void BM_NormOfDifference(benchmark::State& state, Mode mode) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  const Tensor a = randn({kRows, kCols}), b = randn({kRows, kCols});
  mark_step();
  for (auto _ : state) {
    Tensor s = (a - b).norm();
    benchmark::DoNotOptimize(s.item<float>());
  }
  set_mode(previous);
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 8);
}
BENCHMARK_CAPTURE(BM_NormOfDifference, eager, Mode::Eager)->Name("BM_NormOfDifference/eager")->UseRealTime();
BENCHMARK_CAPTURE(BM_NormOfDifference, fused, Mode::Traced)->Name("BM_NormOfDifference/fused")->UseRealTime();

// The index of the largest logit, the logits computed on the way:
// (a * 1.5 + bias).argmax(dim) over [4096 x 1024]. Traced, the prologue fuses
// into the arg reduction (one read of `a`); eager writes and reads the logits.
void BM_ArgmaxLogits(benchmark::State& state, Mode mode, int64_t dim) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  const Tensor a = randn({kRows, kCols});
  const Tensor bias = dim == 1 ? randn({1, kCols}) : randn({kRows, 1});
  mark_step();
  for (auto _ : state) {
    Tensor s = (a * 1.5 + bias).argmax(dim);
    benchmark::DoNotOptimize(s.data_ptr());
  }
  set_mode(previous);
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
}
BENCHMARK_CAPTURE(BM_ArgmaxLogits, eager_rows, Mode::Eager, 1)->Name("BM_ArgmaxLogits/eager/rows")->UseRealTime();
BENCHMARK_CAPTURE(BM_ArgmaxLogits, eager_columns, Mode::Eager, 0)->Name("BM_ArgmaxLogits/eager/columns")->UseRealTime();
BENCHMARK_CAPTURE(BM_ArgmaxLogits, fused_rows, Mode::Traced, 1)->Name("BM_ArgmaxLogits/fused/rows")->UseRealTime();
BENCHMARK_CAPTURE(BM_ArgmaxLogits, fused_columns, Mode::Traced, 0)
    ->Name("BM_ArgmaxLogits/fused/columns")
    ->UseRealTime();

void BM_Softmax(benchmark::State& state) {
  const EagerGuard eager;
  const Tensor a = randn({kRows, kCols});
  FaultCounter faults{state};
  for (auto _ : state) benchmark::DoNotOptimize(softmax(a, -1).data_ptr());
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 8);
}
BENCHMARK(BM_Softmax)->Name("BM_SoftmaxOp/eager")->UseRealTime();

// The same vectorisable exp the kernels use, so the comparison is of loops, not of libm.
void BM_SoftmaxHandwritten(benchmark::State& state) {
  std::vector<float> a(kRows * kCols), c(kRows * kCols);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 97) * 0.01f;
  for (auto _ : state) {
    parallel_for(0, kRows, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float* x = &a[r * kCols];
        float* y = &c[r * kCols];
        float m = x[0];
        for (int64_t j = 1; j < kCols; ++j) m = std::max(m, x[j]);
        float s = 0;
        for (int64_t j = 0; j < kCols; ++j) s += (y[j] = cpu::exp_vec(x[j] - m));
        const float inv = 1 / s;
        for (int64_t j = 0; j < kCols; ++j) y[j] *= inv;
      }
    });
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 8);
}
BENCHMARK(BM_SoftmaxHandwritten)->Name("BM_SoftmaxOp/handwritten")->UseRealTime();

// `transposed_b`: a @ b.t(), B a transposed view (a linear layer's input
// gradient, dy · Wᵀ): its panels are packed from columns 4 KiB apart.
void BM_Matmul(benchmark::State& state, bool transposed_b) {
  const EagerGuard eager;
  const int64_t n = state.range(0);
  const Tensor a = randn({n, n}), b = randn({n, n});
  const Tensor rhs = transposed_b ? b.t() : b;
  for (auto _ : state) benchmark::DoNotOptimize(a.matmul(rhs));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(n * n * n) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Matmul, eager, false)->Name("BM_Matmul/eager")->Arg(512)->Arg(1024)->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, eager_bt, true)->Name("BM_Matmul/eager_transposed_b")->Arg(512)->Arg(1024)->UseRealTime();

// The shape of the demo CNN's second weight gradient, dW = g · colᵀ over a
// block of images: [64, 12544] · [12544, 288] with B the transposed view of
// the im2col matrix. Few rows: every packed element of A and B is used by
// few micro-kernel calls, so packing weighs as much as the products.
void BM_MatmulFewRowsTransposedB(benchmark::State& state) {
  const EagerGuard eager;
  constexpr int64_t m = 64, n = 288, k = 12544;
  const Tensor a = randn({m, k}), col = randn({n, k});
  const Tensor rhs = col.t();
  for (auto _ : state) benchmark::DoNotOptimize(a.matmul(rhs));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(m * n * k) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatmulFewRowsTransposedB)->Name("BM_Matmul/eager_few_rows_transposed_b")->UseRealTime();

// The demo CNN's first pooling: 2x2, stride 2, over [64, 32, 28, 28] floats
// (12.8 MB in, 3.2 MB out), eager: the forward; the backward (input gradient
// from the output gradient and the input); and the forward as a plain loop
// over the planes on the same thread pool.
constexpr int64_t kPoolBatch = 64, kPoolChannels = 32, kPoolSide = 28;
void BM_MaxPool2d(benchmark::State& state, bool backward) {
  const EagerGuard eager;
  const Tensor x = randn({kPoolBatch, kPoolChannels, kPoolSide, kPoolSide});
  const Tensor grad = randn({kPoolBatch, kPoolChannels, kPoolSide / 2, kPoolSide / 2});
  const OpDef& op = find_op("max_pool2d_backward");
  const Attrs attrs = {DimVector{2, 2}, DimVector{2, 2}, DimVector{0, 0}, DimVector{1, 1}};
  for (auto _ : state) {
    if (backward) benchmark::DoNotOptimize(call1(op, {grad, x}, attrs));
    else benchmark::DoNotOptimize(max_pool2d(x, {2, 2}));
  }
  state.SetBytesProcessed(state.iterations() * x.numel() * 4 * (backward ? 2 : 1) * 5 / 4);
}
BENCHMARK_CAPTURE(BM_MaxPool2d, forward, false)->Name("BM_MaxPool2d/eager/forward")->UseRealTime();
BENCHMARK_CAPTURE(BM_MaxPool2d, backward, true)->Name("BM_MaxPool2d/eager/backward")->UseRealTime();

void BM_MaxPool2dHandwritten(benchmark::State& state) {
  constexpr int64_t side = kPoolSide, half = kPoolSide / 2, planes = kPoolBatch * kPoolChannels;
  std::vector<float> x(size_t(planes * side * side)), y(size_t(planes * half * half));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7919) % 1000) / 1000.f - 0.5f;
  for (auto _ : state) {
    parallel_for(0, planes, 16, [&](int64_t lo, int64_t hi) {
      for (int64_t q = lo; q < hi; ++q)
        for (int64_t i = 0; i < half; ++i) {
          const float* r0 = x.data() + (q * side + 2 * i) * side;
          const float* r1 = r0 + side;
          float* out = y.data() + (q * half + i) * half;
          for (int64_t j = 0; j < half; ++j)
            out[j] = std::max(std::max(r0[2 * j], r0[2 * j + 1]), std::max(r1[2 * j], r1[2 * j + 1]));
        }
    });
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t(x.size()) * 4 * 5 / 4);
}
BENCHMARK(BM_MaxPool2dHandwritten)->Name("BM_MaxPool2d/handwritten/forward")->UseRealTime();

// The demo CNN's two 3x3, padding-1 convolutions alone (tools/fashion_cnn.h),
// eager, batch 64: the forward, the input gradient (a transposed
// convolution of the output gradient) and the weight gradient; the step's
// GEMMs, im2col and col2im without the rest of BM_CnnTrainStep. Rate:
// the convolution's multiply-adds, counted twice.
struct ConvLayer {
  int64_t channels, out_channels, side;
};
enum class ConvPass { kForward, kInputGrad, kWeightGrad };
void BM_ConvLayer(benchmark::State& state, ConvLayer l, ConvPass pass) {
  const EagerGuard eager;
  const Tensor x = randn({64, l.channels, l.side, l.side}), w = randn({l.out_channels, l.channels, 3, 3});
  const Tensor gy = randn({64, l.out_channels, l.side, l.side});
  const OpDef& weight_grad = find_op("conv2d_backward_weight");
  const Attrs attrs = {DimVector{3, 3}, DimVector{1, 1}, DimVector{1, 1}, DimVector{1, 1}, int64_t(1)};
  for (auto _ : state) {
    switch (pass) {
      case ConvPass::kForward: benchmark::DoNotOptimize(conv2d(x, w, Tensor(), {1, 1}, {1, 1})); break;
      case ConvPass::kInputGrad:
        benchmark::DoNotOptimize(conv_transpose2d(gy, w, Tensor(), {1, 1}, {1, 1}));
        break;
      case ConvPass::kWeightGrad: benchmark::DoNotOptimize(call1(weight_grad, {x, gy}, attrs)); break;
    }
  }
  const double flops = 2.0 * 64 * double(l.out_channels * l.channels * 9 * l.side * l.side);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}
[[maybe_unused]] const bool kConvLayersRegistered = [] {
  const std::pair<const char*, ConvLayer> layers[] = {{"conv1", {1, 32, 28}}, {"conv2", {32, 64, 14}}};
  const std::pair<const char*, ConvPass> passes[] = {
      {"forward", ConvPass::kForward}, {"input_grad", ConvPass::kInputGrad}, {"weight_grad", ConvPass::kWeightGrad}};
  for (const auto& [layer_name, layer] : layers)
    for (const auto& [pass_name, pass] : passes)
      benchmark::RegisterBenchmark((std::string("BM_ConvLayer/") + layer_name + "/" + pass_name).c_str(), BM_ConvLayer,
                                   layer, pass)
          ->UseRealTime();
  return true;
}();

// The same 512x512 product through each GEMM vector width this CPU runs
// (cpu::set_gemm_vector_bytes; the first argument, in bytes). 16 is what a
// build for any x86-64 (NNVM_NATIVE=OFF) ran before the widths were picked
// at run time.
void BM_MatmulWidth(benchmark::State& state) {
  const EagerGuard eager;
  const int before = cpu::gemm_vector_bytes();
  cpu::set_gemm_vector_bytes(int(state.range(0)));
  const int64_t n = state.range(1);
  const Tensor a = randn({n, n}), b = randn({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(a.matmul(b));
  cpu::set_gemm_vector_bytes(before);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(n * n * n) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatmulWidth)
    ->ArgNames({"bytes", "n"})
    ->Apply([](benchmark::internal::Benchmark* b) {
      for (int bytes : cpu::gemm_vector_widths()) b->Args({bytes, 512});
    })
    ->UseRealTime();

}  // namespace
