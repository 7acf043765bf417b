// The x86 row kernels on [4096 x 1024] float32, softmax, layer_norm and
// rms_norm along the last dim, written as decomposed ops:
//   softmax:    e = exp(x - amax(x)); e / sum(e)
//   layer_norm: xc = x - mean(x); xc * rsqrt(mean(square(xc)) + eps)
//   rms_norm:   x * rsqrt(mean(square(x)) + eps)
// fused = traced mode after warm-up (the recognise pass makes the single op,
// which runs the JIT row kernel); fused_op = the single op called directly
// (nnvm::softmax / nnvm::layer_norm / nnvm::rms_norm, traced); eager = the decomposed ops one
// kernel each; handwritten = one plain C++ loop per row over the same thread
// pool (this file builds with -march=native), with the reference kernels'
// vectorisable exp (kernels/cpu/exp.h), so the comparison is of loops, not
// of libm. Bytes counted are the minimal traffic: read x, write y.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/exp.h"
#include "nnvm/nnvm.h"

namespace {

using namespace nnvm;

enum class Variant { kFused, kFusedOp, kEager, kHandwritten };

constexpr int64_t kRows = 4096, kCols = 1024;
constexpr double kEps = 1e-5;

Tensor softmax_decomposed(const Tensor& x) {
  const Tensor e = (x - x.amax({-1}, true)).exp();
  return e / e.sum({-1}, true);
}

Tensor layer_norm_decomposed(const Tensor& x) {
  const Tensor xc = x - x.mean({-1}, true);
  return xc * (xc.square().mean({-1}, true) + kEps).rsqrt();
}

Tensor rms_norm_decomposed(const Tensor& x) { return x * (x.square().mean({-1}, true) + kEps).rsqrt(); }

void softmax_rows(const float* x, float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * kCols;
    float* yr = y + r * kCols;
    float m = -INFINITY;
    for (int64_t j = 0; j < kCols; ++j) m = std::max(m, xr[j]);
    float s = 0;
    for (int64_t j = 0; j < kCols; ++j) s += yr[j] = cpu::exp_vec(xr[j] - m);
    const float inv = 1 / s;
    for (int64_t j = 0; j < kCols; ++j) yr[j] *= inv;
  }
}

void layer_norm_rows(const float* x, float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * kCols;
    float* yr = y + r * kCols;
    float s = 0;
    for (int64_t j = 0; j < kCols; ++j) s += xr[j];
    const float mean = s / kCols;
    float v = 0;
    for (int64_t j = 0; j < kCols; ++j) v += (xr[j] - mean) * (xr[j] - mean);
    const float rstd = 1 / std::sqrt(v / kCols + float(kEps));
    for (int64_t j = 0; j < kCols; ++j) yr[j] = (xr[j] - mean) * rstd;
  }
}

void rms_norm_rows(const float* x, float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * kCols;
    float* yr = y + r * kCols;
    float s = 0;
    for (int64_t j = 0; j < kCols; ++j) s += xr[j] * xr[j];
    const float rstd = 1 / std::sqrt(s / kCols + float(kEps));
    for (int64_t j = 0; j < kCols; ++j) yr[j] = xr[j] * rstd;
  }
}

template <class Decomposed, class Op, class Rows>
void run_rowwise(benchmark::State& state, Variant variant, Decomposed decomposed, Op op, Rows rows) {
  set_mode(variant == Variant::kEager ? Mode::Eager : Mode::Traced);
  const Tensor x = randn({kRows, kCols});
  mark_step();
  if (variant == Variant::kHandwritten) {
    std::vector<float> out(size_t(kRows * kCols));
    const float* px = x.data_ptr<float>();
    for (auto _ : state) {
      parallel_for(0, kRows, 32, [&](int64_t r0, int64_t r1) { rows(px, out.data(), r0, r1); });
      benchmark::DoNotOptimize(out.data());
    }
  } else {
    auto f = [&] { return variant == Variant::kFusedOp ? op(x) : decomposed(x); };
    for (int warm = 0; warm < 3; ++warm) f().data_ptr();  // hot: compiled, kernels cached
    for (auto _ : state) {
      Tensor y = f();
      benchmark::DoNotOptimize(y.data_ptr());
    }
  }
  set_mode(Mode::Traced);
  state.SetBytesProcessed(state.iterations() * kRows * kCols * 2 * int64_t(sizeof(float)));
}

void BM_Softmax(benchmark::State& state, Variant variant) {
  run_rowwise(state, variant, softmax_decomposed, [](const Tensor& x) { return softmax(x, -1); }, softmax_rows);
}

void BM_LayerNorm(benchmark::State& state, Variant variant) {
  run_rowwise(state, variant, layer_norm_decomposed,
              [](const Tensor& x) { return layer_norm(x, {kCols}, {}, {}, kEps); }, layer_norm_rows);
}

void BM_RmsNorm(benchmark::State& state, Variant variant) {
  run_rowwise(state, variant, rms_norm_decomposed, [](const Tensor& x) { return rms_norm(x, {kCols}, {}, kEps); },
              rms_norm_rows);
}

#define ROWWISE_BENCH(fn, name, variant) \
  BENCHMARK_CAPTURE(fn, name, variant)->UseRealTime()->Unit(benchmark::kMillisecond)
ROWWISE_BENCH(BM_Softmax, fused, Variant::kFused);
ROWWISE_BENCH(BM_Softmax, fused_op, Variant::kFusedOp);
ROWWISE_BENCH(BM_Softmax, eager, Variant::kEager);
ROWWISE_BENCH(BM_Softmax, handwritten, Variant::kHandwritten);
ROWWISE_BENCH(BM_LayerNorm, fused, Variant::kFused);
ROWWISE_BENCH(BM_LayerNorm, fused_op, Variant::kFusedOp);
ROWWISE_BENCH(BM_LayerNorm, eager, Variant::kEager);
ROWWISE_BENCH(BM_LayerNorm, handwritten, Variant::kHandwritten);
ROWWISE_BENCH(BM_RmsNorm, fused, Variant::kFused);
ROWWISE_BENCH(BM_RmsNorm, fused_op, Variant::kFusedOp);
ROWWISE_BENCH(BM_RmsNorm, eager, Variant::kEager);
ROWWISE_BENCH(BM_RmsNorm, handwritten, Variant::kHandwritten);
#undef ROWWISE_BENCH

}  // namespace
