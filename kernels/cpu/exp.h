// A float exp, tanh and erf the compiler vectorises. The libm functions stay
// scalar calls without -ffast-math; softmax spends most of its time in exp,
// a tanh RNN in tanh, a GELU in erf or tanh.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace nnvm::cpu {

// c[0] x^(N-1) + ... + c[N-1] by Horner's rule, each step y * x + c[k] (which
// GCC contracts to a fused multiply-add where the target has one). Inlined,
// it is the same arithmetic written out.
template <size_t N> inline float horner(float x, const float (&c)[N]) {
  float y = c[0];
#pragma GCC unroll 16
  for (size_t k = 1; k < N; ++k) y = y * x + c[k];
  return y;
}

// Cephes expf (S. Moshier, Cephes Math Library, expf.c): x = n ln2 + r with
// ln2 split into 0.693359375 (exact in a few bits, so n * C1 is exact) and
// -2.12194440e-4, then a degree-6 polynomial for e^r on |r| <= ln2 / 2. Cephes
// documents a peak relative error of 1.7e-7 (about 2 ulp) on [-87.3, 88.7];
// tests/kernels/pointwise_test.cpp measures it over that whole range.
// Below -87.33 the true result is denormal and this returns 0 (an absolute
// error below 1.2e-38); above ln(FLT_MAX) = 88.7228 it is +inf; NaN stays NaN.
// 2^n is built in the exponent field, as 2^(n-1) * 2 when n = 128 so the
// largest finite results do not overflow the field. Branch-free: every choice
// is a select, so loops over it vectorise.
inline float exp_vec(float x) {
  const bool nan = x != x;
  const bool under = x < -87.3365448f, over = x > 88.7228394f;
  float v = nan ? 0.0f : x;
  v = v < -87.3365448f ? -87.3365448f : v;
  v = v > 88.7228394f ? 88.7228394f : v;
  // Round to nearest by adding and subtracting 1.5 * 2^23: std::floor would
  // keep GCC from vectorising the loop.
  const float n = (v * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = v - n * 0.693359375f + n * 2.12194440e-4f;
  float y = horner(r, {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                       5.0000001201e-1f});
  y = y * (r * r) + r + 1.0f;
  const int32_t ni = int32_t(n);
  const int32_t top = ni > 127 ? 1 : 0;
  const float scale = std::bit_cast<float>((ni - top + 127) << 23);
  float e = y * scale;
  e = top ? e * 2.0f : e;
  e = under ? 0.0f : e;
  e = over ? INFINITY : e;
  return nan ? x : e;
}

// Cephes tanhf (S. Moshier, Cephes Math Library, tanhf.c): below |x| = 0.625
// an odd polynomial, x + x^3 P(x^2); from there 1 - 2 / (e^(2|x|) + 1) with
// exp_vec; both on |x|, then x's sign. Both are computed and one selected, so loops
// over it vectorise. Cephes documents a peak relative error of 1.3e-7 for its
// own expf; tests/kernels/pointwise_test.cpp measures this one over
// [-10, 10]. Large |x| gives ±1 (e^(2|x|) is +inf past 44), -0 gives -0, NaN
// stays NaN.
inline float tanh_vec(float x) {
  const float z = x < 0.0f ? -x : x;
  const float s = x * x;
  const float p = horner(s, {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                             -3.33332819422e-1f});
  const float small = p * s * z + z;
  const float large = 1.0f - 2.0f / (exp_vec(z + z) + 1.0f);
  return std::copysign(z < 0.625f ? small : large, x);  // tanh is odd: -0 stays -0
}

// erf as the JIT's injector computes it (jit/x86/vector_math.cpp, emit_erf):
// below |x| = 1, x P(x^2) with P a degree-6 fit of erf(x)/x whose leading
// coefficient is split in two floats (tiny x rounds once); from there
// 1 - e^L(|x|) with L a degree-8 fit of log(erfc) in |x| - 2.5, |x| clamped
// to 4 (past it the result is ±1), x's sign copied on. Branch-free; NaN stays
// NaN. tests/kernels/pointwise_test.cpp measures its error.
inline float erf_vec(float x) {
  const float a = std::fabs(x), z = x * x;
  const float p = horner(z, {7.875874871e-05f, -8.016864303e-04f, 5.189087242e-03f, -2.685421146e-02f,
                             1.128359437e-01f, -3.761262596e-01f, 5.932674440600749e-08f});  // last: P(0)'s low part
  const float small = x * 1.1283791065216064f + p * x;  // + x P(0)'s high part
  const float t = (a > 4.0f ? 4.0f : a) - 2.5f;      // NaN passes
  const float l = horner(t, {1.637151399e-06f, -1.331501426e-05f, 7.729137724e-05f, -4.201225238e-04f,
                             2.165303566e-03f, -1.085854135e-02f, -9.438937306e-01f, -5.352680683e+00f,
                             -7.806815147e+00f});
  const float big = std::copysign(1.0f - exp_vec(l), x);
  return a < 1.0f ? small : big;
}

// exp, tanh and erf in the compute type: the vectorised float versions, libm
// for double.
template <class T, class Vec, class Libm> inline T float_vec_or_libm(T x, Vec vec, Libm libm) {
  if constexpr (sizeof(T) == 4) return vec(x);
  else return libm(x);
}
template <class T> inline T exp_of(T x) { return float_vec_or_libm(x, exp_vec, [](T v) { return std::exp(v); }); }
template <class T> inline T tanh_of(T x) { return float_vec_or_libm(x, tanh_vec, [](T v) { return std::tanh(v); }); }
template <class T> inline T erf_of(T x) { return float_vec_or_libm(x, erf_vec, [](T v) { return std::erf(v); }); }

}  // namespace nnvm::cpu
