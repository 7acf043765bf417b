// The arithmetic that softmax, log_softmax, cross_entropy, layer_norm and
// rms_norm (and their backwards) share with the JIT's row kernels
// (jit/x86/rowwise_kernel.h), in one order of operations on every ISA, so a
// fused and an unfused run of the same program compute the same bits
// (docs/DESIGN.md, the row-wise kernel kind): a training step that runs cold
// in one process and hot in another, a checkpoint resumed in a fresh process
// (docs/NN.md, "Checkpoint files"), give the same results.
//
// A row's sum (row_fold): element j goes to lane j % 16 of sixteen lanes of
// the compute type, each lane in the row's order (a sum of products fuses
// each product into its lane), then the lanes fold as a tree, halves first
// (lane i + 8 into lane i, then i + 4, i + 2, i + 1): the order one AVX-512
// register or two AVX2 registers reach with whole-vector adds. Softmax's
// exps are exp_nonpositive_of (0 under FLT_MIN), its log of a sum is log_of
// (the JIT's log), a norm's statistics are finished in double and rounded to
// T once, and the products that round once with an addition (fused
// multiply-adds in the JIT) are std::fma here, so the compiler's contraction
// flags do not change a bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "nnvm/kernels/cpu/exp.h"

namespace nnvm::cpu {

inline constexpr int64_t kRowSumLanes = 16;

// The lanes and tree above: lane = step(lane, j) for each element j.
template <class T, class Step> T row_fold(int64_t n, Step step) {
  T lane[kRowSumLanes] = {};
  int64_t j = 0;
  for (; j + kRowSumLanes <= n; j += kRowSumLanes)
    for (int64_t k = 0; k < kRowSumLanes; ++k) lane[k] = step(lane[k], j + k);
  for (int64_t k = 0; j < n; ++j, ++k) lane[k] = step(lane[k], j);
  for (int64_t half = kRowSumLanes / 2; half > 0; half /= 2)
    for (int64_t k = 0; k < half; ++k) lane[k] += lane[k + half];
  return lane[0];
}

// A row's max m (NaN skipped, as the reference's max reducers do) and
// m + log(sum_j e^(x_j - m)).
template <class T, class Value> T row_log_sum_exp(int64_t n, Value x) {
  T m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) m = x(j) > m ? x(j) : m;
  return m + log_of<T>(row_fold<T>(n, [&](T acc, int64_t j) { return acc + exp_nonpositive_of<T>(x(j) - m); }));
}

// cross_entropy's loss of one counted row, libtorch's formula: with lse the
// row's log-sum-exp, weight w_t of its target and smoothing ls over C classes,
//   (1 - ls) * -w_t (x_t - lse) + ls / C * smooth,
// smooth = -sum_c w_c (x_c - lse) (the caller's; without weights
// C lse - sum_c x_c, smooth_of_sum).
template <class T> T cross_entropy_row_loss(T x_t, T lse, T w_t, T ls, int64_t classes, T smooth) {
  const T nll = -w_t * (x_t - lse);
  if (ls == T(0)) return nll;
  return std::fma(T(1) - ls, nll, ls / T(classes) * smooth);
}
template <class T> T smooth_of_sum(T sum_x, T lse, int64_t classes) { return -std::fma(-T(classes), lse, sum_x); }

// cross_entropy_backward of one counted row with p = exp(x - lse), scale k,
// weights w (w_c = 1 without), W = sum_c w_c, target t and smoothing ls:
//   dx_c = k ((1 - ls) w_t (p_c - [c == t]) + ls / C (W p_c - w_c))
//        = a p_c - b w_c, then dx_t -= k (1 - ls) w_t,
// with a = k ((1 - ls) w_t + ls / C W) and b = k ls / C.
template <class T> struct CrossEntropyRowGrad {
  T a, b, k_target, w_t;
  CrossEntropyRowGrad(T k, T w_target, T ls, int64_t classes, T total_weight) : w_t(w_target) {
    const T smooth = ls / T(classes);
    a = k * std::fma(smooth, total_weight, (T(1) - ls) * w_t);
    b = k * smooth;
    k_target = k * (T(1) - ls);
  }
  // dx_c before the target's correction; w_c null without weights.
  T at(T p, const T* w_c) const { return w_c ? std::fma(-*w_c, b, a * p) : std::fma(a, p, -b); }
  // dx_t after it.
  T at_target(T dx_t) const { return std::fma(-k_target, w_t, dx_t); }
};

// A norm's statistics of one row.
template <class T> struct RowNorm {
  T mean, rstd;
};

// layer_norm's: with d_j = x_j - x_0, S1 = sum d_j and S2 = sum d_j^2 as
// row_fold in T (the square fused into the sum), then in double
// mean = x_0 + S1 / n and var = max(S2 / n - (S1 / n)^2, 0) (shifting by x_0
// keeps the variance accurate when the mean is large against the spread),
// and mean and 1 / sqrt(var + eps) rounded to T. One pass over the row.
template <class T, class X> RowNorm<T> layer_norm_row(int64_t n, X x, T eps) {
  const T x0 = x(0);
  const double s1 = row_fold<T>(n, [&](T acc, int64_t j) { return acc + (x(j) - x0); });
  const double s2 = row_fold<T>(n, [&](T acc, int64_t j) {
    const T d = x(j) - x0;
    return std::fma(d, d, acc);
  });
  const double mean = s1 / double(n), spread = std::fma(-mean, mean, s2 / double(n));
  const double var = spread < 0 ? 0 : spread;  // NaN kept
  return {T(double(x0) + mean), T(1.0 / std::sqrt(var + double(eps)))};
}

// rms_norm's: 1 / sqrt(S2 / n + eps) with S2 = sum x_j^2 as row_fold, in double, rounded to T.
template <class T, class X> T rms_norm_row_rstd(int64_t n, X x, T eps) {
  const double s2 = row_fold<T>(n, [&](T acc, int64_t j) { return std::fma(x(j), x(j), acc); });
  return T(1.0 / std::sqrt(s2 / double(n) + double(eps)));
}

// y = (x - mean) rstd [* w] [+ b] (rms_norm: mean 0), each step rounded
// except the last product's with the bias.
template <class T> T norm_value(T x, RowNorm<T> s, const T* w, const T* b) {
  if (!w && b) return std::fma(x - s.mean, s.rstd, *b);
  const T v = (x - s.mean) * s.rstd;
  if (w && b) return std::fma(v, *w, *b);
  return w ? v * *w : v;
}

// A norm's backward of one row, given d_j = g_j [* w_j] and xhat_j =
// (x_j - mean) rstd: m_dx = mean(d xhat) (the products fused into the sum)
// and m_d = mean(d) (layer_norm only) from row_fold sums, divided in double
// and rounded to T, and dx_j = rstd ((d_j [- m_d]) - xhat_j m_dx).
template <class T, class D, class Xhat> T mean_of_products(int64_t n, D d, Xhat xhat) {
  return T(double(row_fold<T>(n, [&](T acc, int64_t j) { return std::fma(d(j), xhat(j), acc); })) / double(n));
}
template <class T, class D> T mean_of_values(int64_t n, D d) {
  return T(double(row_fold<T>(n, [&](T acc, int64_t j) { return acc + d(j); })) / double(n));
}
template <class T> T norm_grad(T d, T xhat, T rstd, T m_dx, const T* m_d) {
  return rstd * std::fma(-xhat, m_dx, m_d ? d - *m_d : d);
}

}  // namespace nnvm::cpu
