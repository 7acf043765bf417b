// The x86 row kernels on [4096 x 1024] float32, softmax, layer_norm and
// rms_norm along the last dim, written as decomposed ops:
//   softmax:    e = exp(x - amax(x)); e / sum(e)
//   layer_norm: xc = x - mean(x); xc * rsqrt(mean(square(xc)) + eps)
//   rms_norm:   x * rsqrt(mean(square(x)) + eps)
// fused = traced mode after warm-up (the recognise pass makes the single op,
// which runs the JIT row kernel); fused_op = the single op called directly
// (nnvm::softmax / nnvm::layer_norm / nnvm::rms_norm, traced); eager = the decomposed ops one
// kernel each; handwritten = C++ loops written for speed over the same
// thread pool, rows in parallel (this file builds with -march=native; see
// the handwritten rows), with the exp of the reference kernels
// (kernels/cpu/exp.h), so the comparison is of loops, not of libm; checked
// once against the JIT's result. Bytes counted are the minimal traffic: read x, write y.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "nnvm/core/thread_pool.h"
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

// The handwritten rows: C++ written for speed, the yardstick the JIT's row
// kernels are held to. GCC vector types of 16 floats (one AVX-512 register;
// GCC splits them in two on AVX2) rather than the compiler's loop
// vectoriser: without -ffast-math GCC keeps a float sum in order and so runs
// a reduction loop one element at a time. Four accumulators per reduction
// hide the add's latency. A row (4 KB) stays in L1 between its passes, so an
// extra pass over it costs far less than a second exp per element: softmax
// reads the row for its max, then writes e^(x - max) and sums it, then scales;
// the norms sum in one pass and write in another. Finite inputs only (no NaN
// or infinity handling, which the benchmark's data never needs).
// (GCC notes that passing these by value on a host without AVX-512 changes
// the ABI: the helpers are inlined here and cross no library boundary.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
using Floats = float __attribute__((vector_size(64)));
using Ints = int32_t __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16, kUnroll = 4, kStep = kLanes * kUnroll;
static_assert(kCols % kStep == 0, "the row loops have no tail");

Floats splat(float v) { return Floats{} + v; }
Floats load(const float* p) {
  Floats v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store(float* p, Floats v) { std::memcpy(p, &v, sizeof v); }
Floats max(Floats a, Floats b) { return a > b ? a : b; }
float sum_lanes(Floats v) {
  float s = 0;
  for (int64_t i = 0; i < kLanes; ++i) s += v[i];
  return s;
}
float max_lanes(Floats v) {
  float m = v[0];
  for (int64_t i = 1; i < kLanes; ++i) m = std::max(m, v[i]);
  return m;
}

// e^t for t <= 0, Cephes expf's reduction and polynomial (the algorithm of
// kernels/cpu/exp.h and of the JIT, so the loops compute the same function): t =
// n ln2 + r, e^r = 1 + r + r^2 P(r) on |r| <= ln2 / 2, 2^n built in the
// exponent field. t is clamped at -87.34, where n = -126 is the smallest
// normal exponent: results below e^-87.34 come out as about 1e-38, not 0.
Floats exp_nonpositive(Floats t) {
  const Floats lowest = splat(-87.3365448f);
  t = t < lowest ? lowest : t;
  const Floats n = (t * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest, |v| < 2^22
  const Floats r = t - n * 0.693359375f + n * 2.12194440e-4f;               // ln2 in two parts: n * C1 exact
  Floats p = splat(1.9875691500e-4f);
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = p * r + c;
  const Floats y = p * (r * r) + r + 1.0f;
  const Ints exponent = (__builtin_convertvector(n, Ints) + 127) << 23;
  return y * std::bit_cast<Floats>(exponent);
}

void softmax_rows(const float* x, float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * kCols;
    float* yr = y + r * kCols;
    Floats m[kUnroll];
    for (Floats& v : m) v = splat(-INFINITY);
    for (int64_t j = 0; j < kCols; j += kStep)
      for (int64_t u = 0; u < kUnroll; ++u) m[u] = max(m[u], load(xr + j + u * kLanes));
    const Floats row_max = splat(max_lanes(max(max(m[0], m[1]), max(m[2], m[3]))));
    Floats s[kUnroll] = {};
    for (int64_t j = 0; j < kCols; j += kStep)
      for (int64_t u = 0; u < kUnroll; ++u) {
        const Floats e = exp_nonpositive(load(xr + j + u * kLanes) - row_max);
        store(yr + j + u * kLanes, e);
        s[u] += e;
      }
    const Floats inv = splat(1.0f / sum_lanes((s[0] + s[1]) + (s[2] + s[3])));
    for (int64_t j = 0; j < kCols; j += kLanes) store(yr + j, load(yr + j) * inv);
  }
}

// One pass over a row for its mean and variance: the sum of x, and the sum
// of (x - pivot)^2 with the row's first element as the pivot, so that
// var = sum_sq / n - (mean - pivot)^2 cancels only as far as one element of
// the row lies from its mean, however far the whole row lies from 0 (squares
// about 0 would cancel in float for a row with a large mean). The mean comes
// from the plain sum: a shifted one would grow with the pivot's distance.
struct RowMoments {
  float mean, var;
};
RowMoments row_moments(const float* xr) {
  const Floats pivot = splat(xr[0]);
  Floats s[kUnroll] = {}, q[kUnroll] = {};
  for (int64_t j = 0; j < kCols; j += kStep)
    for (int64_t u = 0; u < kUnroll; ++u) {
      const Floats v = load(xr + j + u * kLanes), d = v - pivot;
      s[u] += v;
      q[u] += d * d;
    }
  const float mean = sum_lanes((s[0] + s[1]) + (s[2] + s[3])) / kCols;
  const float sum_sq = sum_lanes((q[0] + q[1]) + (q[2] + q[3]));
  return {mean, std::max(0.0f, sum_sq / kCols - (mean - xr[0]) * (mean - xr[0]))};
}

// y = x * scale + shift over a row: the norms' output pass.
void scale_shift_row(const float* xr, float* yr, float scale, float shift) {
  const Floats a = splat(scale), b = splat(shift);
  for (int64_t j = 0; j < kCols; j += kLanes) store(yr + j, load(xr + j) * a + b);
}

void layer_norm_rows(const float* x, float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const RowMoments m = row_moments(x + r * kCols);
    const float rstd = 1 / std::sqrt(m.var + float(kEps));
    scale_shift_row(x + r * kCols, y + r * kCols, rstd, -m.mean * rstd);
  }
}

void rms_norm_rows(const float* x, float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * kCols;
    Floats q[kUnroll] = {};
    for (int64_t j = 0; j < kCols; j += kStep)
      for (int64_t u = 0; u < kUnroll; ++u) {
        const Floats v = load(xr + j + u * kLanes);
        q[u] += v * v;
      }
    const float sum_sq = sum_lanes((q[0] + q[1]) + (q[2] + q[3]));
    scale_shift_row(xr, y + r * kCols, 1 / std::sqrt(sum_sq / kCols + float(kEps)), 0.0f);
  }
}

// The largest error of `got` against the JIT's `want`, relative to each
// element, or to a hundredth of the largest |want| for the elements below it:
// a normalised row's near-zero outputs carry the rounding of its mean.
double max_relative_error(const float* got, const float* want, int64_t n) {
  float largest = 0;
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(want[i]));
  double error = 0;
  for (int64_t i = 0; i < n; ++i)
    error = std::max(error, std::fabs(double(got[i]) - want[i]) / std::max(std::fabs(want[i]), largest * 0.01f));
  return error;
}

template <class Decomposed, class Op, class Rows>
void run_rowwise(benchmark::State& state, Variant variant, Decomposed decomposed, Op op, Rows rows) {
  set_mode(variant == Variant::kEager ? Mode::Eager : Mode::Traced);
  const Tensor x = randn({kRows, kCols});
  mark_step();
  if (variant == Variant::kHandwritten) {
    std::vector<float> out(size_t(kRows * kCols));
    const float* px = x.data_ptr<float>();
    auto run = [&] { parallel_for(0, kRows, 32, [&](int64_t r0, int64_t r1) { rows(px, out.data(), r0, r1); }); };
    // A fast loop that computes something else is no baseline: check it once
    // against the JIT's row kernel (the single op, traced). The two sum in
    // different orders, so they agree to float rounding: 1e-4 of the larger
    // of a value and a hundredth of the largest.
    run();
    const Tensor want = op(x);
    const double error = max_relative_error(out.data(), want.data_ptr<float>(), kRows * kCols);
    if (error > 1e-4) state.SkipWithError(("differs from the JIT's result: " + std::to_string(error)).c_str());
    for (auto _ : state) {
      run();
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
