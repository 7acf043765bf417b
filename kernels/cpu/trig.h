// Float sin and cos the compiler vectorises. libm's sinf and cosf are
// scalar calls (7 ns an element here, the whole time of a positional
// encoding or a rotary embedding); these reduce the argument and evaluate
// the polynomials in double, branch-free, so a loop over them vectorises,
// and leave the arguments the reduction does not cover (|x| > kTrigLimit,
// infinities, NaN) to libm, whose reduction is exact at any size.
#pragma once

#include <cmath>
#include <cstdint>

namespace nnvm::cpu {

// The largest |x| the fast reduction takes: its quotient k = round(x 2/π)
// stays below 2^20, so k times each 33-bit part of π/2 is exact.
inline constexpr float kTrigLimit = 1048576.0f;  // 2^20

// The arguments the fast path leaves to libm: too large, infinite or NaN.
inline bool trig_needs_libm(float x) { return !(x <= kTrigLimit && x >= -kTrigLimit); }

// x = k π/2 + r, |r| <= π/4, for |x| <= kTrigLimit (anything else is reduced
// as 0: the caller gives those to libm). π/2 is split into two 33-bit parts
// and a tail (the splitting of fdlibm's rem_pio2): k times either part is
// exact, and x - k P1 is exact too (x and k P1 are within a factor of two
// of each other once k >= 1), so r is good to a few units of 2^-53 of
// itself however much cancels. k is rounded to nearest by adding and
// subtracting 1.5 * 2^52: std::nearbyint would keep GCC from vectorising.
struct PiOver2Reduction {
  double r;
  int32_t k;
};
inline PiOver2Reduction reduce_pi_over_2(float x) {
  const float v = trig_needs_libm(x) ? 0.0f : x;
  const double d = double(v);
  const double k = (d * 0.63661977236758134308 + 6755399441055744.0) - 6755399441055744.0;
  const double r = ((d - k * 1.57079632673412561417e+00) - k * 6.07710050630396597660e-11) -
                   k * 2.02226624879595063154e-21;
  return {r, int32_t(k)};
}

// sin r and cos r on |r| <= π/4 by their Taylor series to r^11 and r^12: the
// first term left out is below 1e-11 of the result, far under float's 6e-8.
inline double sin_poly(double r) {
  const double z = r * r;
  const double p =
      ((((-2.5052108385441720e-08 * z + 2.7557319223985893e-06) * z - 1.9841269841269841e-04) * z +
        8.3333333333333333e-03) * z - 1.6666666666666667e-01);
  return r * (1.0 + z * p);  // not r + r z p: that gives +0 at r = -0
}
inline double cos_poly(double r) {
  const double z = r * r;
  const double p =
      (((((2.0876756987868099e-09 * z - 2.7557319223985893e-07) * z + 2.4801587301587302e-05) * z -
         1.3888888888888889e-03) * z + 4.1666666666666667e-02) * z - 0.5);
  return 1.0 + z * p;
}

// sin x (quarter = 0) or cos x (quarter = 1) = sin(x + quarter π/2): of the
// reduced argument, sin, cos, -sin or -cos by (k + quarter) mod 4. One
// rounding to float at the end, so the error is about half an ulp. For
// |x| <= kTrigLimit; sin(±0) keeps its sign.
inline float sin_quarter(float x, int32_t quarter) {
  const PiOver2Reduction red = reduce_pi_over_2(x);
  const int32_t q = red.k + quarter;
  const double s = sin_poly(red.r), c = cos_poly(red.r);
  const double y = (q & 1) ? c : s;
  return float((q & 2) ? -y : y);
}

// tan x = sin r / cos r, or -cos r / sin r when k is odd, divided in double
// and rounded once. For |x| <= kTrigLimit; tan(±0) keeps its sign.
inline float tan_reduced(float x) {
  const PiOver2Reduction red = reduce_pi_over_2(x);
  const double s = sin_poly(red.r), c = cos_poly(red.r);
  return float((red.k & 1) ? -c / s : s / c);
}

// y = f(x) over a run, f one of the functions above and `libm` its libm
// twin: the vectorised loop of f, or, in the rare run with an argument f
// does not cover, element by element with libm for those arguments. `y` may
// be `x` (an in-place op): each element is read before it is written.
template <class F, class Libm> void trig_run(const float* x, float* y, int64_t n, F f, Libm libm) {
  int32_t slow = 0;  // an int: GCC vectorises no reduction over bool
  for (int64_t i = 0; i < n; ++i) slow |= int32_t(trig_needs_libm(x[i]));
  if (!slow) {
    for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = trig_needs_libm(x[i]) ? libm(x[i]) : f(x[i]);
}

}  // namespace nnvm::cpu
