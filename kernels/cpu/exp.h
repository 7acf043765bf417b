// Float exp, exp2, expm1, log, log1p, tanh and erf the compiler vectorises.
// The libm functions stay scalar calls without -ffast-math; softmax spends
// most of its time in exp, a tanh RNN in tanh, a GELU in erf or tanh, a
// loss in log or log1p. Each is the JIT's function (jit/x86/vector_math.cpp)
// written in C++ where the JIT has one, so a fused and an unfused run of
// the same program compute the same way.
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

// 2^n for an integer n in [-126, 127], as a float (n = -127 gives 0).
inline float pow2i(int32_t n) { return std::bit_cast<float>((n + 127) << 23); }

// x clamped to [lo, hi], NaN as 0 (converting a NaN to an integer is
// undefined in C++; the callers put NaN back at the end).
inline float clamp_or_zero(float x, float lo, float hi) {
  float v = x != x ? 0.0f : x;
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

// Round to nearest even by adding and subtracting 1.5 * 2^23 (|v| < 2^22):
// std::nearbyint would keep GCC from vectorising the loop.
inline float round_even(float v) { return (v + 12582912.0f) - 12582912.0f; }

// x - n ln2 with ln2 split into 0.693359375 (exact in a few bits, so n * C1
// is exact) and -2.12194440e-4 (Cephes expf's reduction).
inline float reduce_ln2(float x, float n) { return x - n * 0.693359375f + n * 2.12194440e-4f; }

// Cephes' e^r = 1 + r + r^2 P(r) on |r| <= ln2 / 2: P(r), degree 5.
inline float exp_poly(float r) {
  return horner(r, {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                    5.0000001201e-1f});
}

// n = round(v log2e) as a float, v log2e + 1.5 2^23 in one rounding (one
// fused multiply-add where the target has one, as the JIT's reduce_ln2).
inline float round_log2e(float v) { return (v * 1.44269504088896341f + 12582912.0f) - 12582912.0f; }

// e^r = P(r) r^2 + r + 1 for |r| <= ln2 / 2, the product by r fused with the
// addition of r (as the JIT's exp polynomial).
inline float exp_reduced(float r) { return exp_poly(r) * r * r + r + 1.0f; }

// e^r 2^n for |r| <= ln2 / 2: exp_reduced, then 2^n as two factors 2^(n>>1) and
// 2^(n - (n>>1)), each a normal float for n in [-150, 128], so results
// overflow to +inf and underflow through the denormals to 0 with one
// rounding (the JIT's exp_tail).
inline float exp_tail(float r, float n) {
  const float y = exp_reduced(r);
  const int32_t ni = int32_t(n), a = ni >> 1;
  return y * pow2i(a) * pow2i(ni - a);
}

// e^x as the JIT's emit_exp, bit for bit (tests/jit/vector_math_test.cpp
// compares every bit), so a fused and an unfused run agree: Cephes expf
// (S. Moshier, Cephes Math Library, expf.c), x = n ln2 + r with n =
// round(x log2e) in one rounding (x log2e + 1.5 2^23 is one fused
// multiply-add where the target has one, as the JIT's), ln2 split as
// reduce_ln2, Cephes' degree-6 polynomial for e^r on |r| <= ln2 / 2, and
// exp_tail's two-factor scaling. x is clamped to [-104, 89] first: +inf
// above 88.72, denormal results rounded once, 0 below -103.98; NaN stays NaN.
// Its error is 1 ulp (jit/x86/vector_math.h). Branch-free, so loops over it
// vectorise.
inline float exp_vec(float x) {
  const float v = clamp_or_zero(x, -104.0f, 89.0f);
  const float n = round_log2e(v);
  const float y = exp_tail(reduce_ln2(v, n), n);
  return x != x ? x : y;
}

// e^x for x <= 0 (softmax's x - max) as the JIT's emit_exp_nonpositive, bit
// for bit: exp_vec's reduction and polynomial with one factor 2^n; x is
// clamped to -88 first, where n = -127 makes the factor 0, so results under
// FLT_MIN are 0 instead of denormals. -inf gives 0, NaN stays NaN.
inline float exp_nonpositive_vec(float x) {
  const float v = x != x ? 0.0f : (x < -88.0f ? -88.0f : x);
  const float n = round_log2e(v);
  return x != x ? x : exp_reduced(reduce_ln2(v, n)) * pow2i(int32_t(n));
}

// tanh as the JIT's emit_tanh, bit for bit: x clamped to [-9, 9], then
// x P(x^2) / Q(x^2), a rational fit of degrees 6 and 3 in x^2 (4.4 ulp,
// jit/x86/vector_math.h), so a fused and an unfused run agree. -0 gives -0,
// ±inf gives ±1, NaN stays NaN (the clamp's comparisons pass it).
inline float tanh_vec(float x) {
  float v = x > 9.0f ? 9.0f : x;
  v = v < -9.0f ? -9.0f : v;
  const float z = v * v;
  const float p = horner(z, {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f,
                             5.12229709037114e-08f, 1.48572235717979e-05f, 6.37261928875436e-04f,
                             4.89352455891786e-03f});
  const float q = horner(z, {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f,
                             4.89352518554385e-03f});
  return v * (p / q);
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
  const float small = std::fma(x, 1.1283791065216064f, p * x);  // + x P(0)'s high part, as the JIT's fma
  const float t = (a > 4.0f ? 4.0f : a) - 2.5f;      // NaN passes
  const float l = horner(t, {1.637151399e-06f, -1.331501426e-05f, 7.729137724e-05f, -4.201225238e-04f,
                             2.165303566e-03f, -1.085854135e-02f, -9.438937306e-01f, -5.352680683e+00f,
                             -7.806815147e+00f});
  const float big = std::copysign(1.0f - exp_vec(l), x);
  return a < 1.0f ? small : big;
}

// 2^x as the JIT's emit_exp2: n = round(x), r = x - n exact, e^(r ln2) 2^n
// with r ln2 formed with ln2 in two floats; x clamped to [-150, 129] first.
inline float exp2_vec(float x) {
  const float v = clamp_or_zero(x, -150.0f, 129.0f);
  const float n = round_even(v), f = v - n;
  const float r = std::fma(f, 0.693147182f, f * -1.9046542e-09f);  // the JIT's rounding: the low part's product
  const float y = exp_tail(r, n);
  return x != x ? x : y;
}

// e^x - 1 as the JIT's emit_expm1: with x = n ln2 + r (as exp_vec),
// 2 (2^(n-1) expm1(r) + (2^(n-1) - 1/2)), which for n = 0 is expm1(r) itself
// with no cancellation; expm1(r) = r + r^2 P(r), P a degree-5 Chebyshev fit
// on |r| <= ln2 / 2. x is clamped to [-87, 88.73] (-1 below, +inf above).
// Unlike the JIT's, ±0 gives ±0 (the reduction turns -0 into +0).
inline float expm1_vec(float x) {
  const float v = clamp_or_zero(x, -87.0f, 88.73f);
  const float n = round_even(v * 1.44269504088896341f);
  const float r = reduce_ln2(v, n);
  float e = horner(r, {1.989098091e-04f, 1.393364160e-03f, 8.333310485e-03f, 4.166646674e-02f, 1.666666716e-01f,
                       0.5f});
  e = e * r * r + r;
  const float half = pow2i(int32_t(n) - 1);  // 2^(n-1); 0 at n = -126, where the result is -1 all the same
  const float y = half * e + (half - 0.5f);
  return x != x || x == 0.0f ? x : y + y;  // -0 gives -0
}

// log x's pieces (Cephes logf): x = m 2^e with m in [sqrt(1/2), sqrt(2)),
// f = m - 1, z = f^2 and p = f^3 P(f), where log(1 + f) = f - z/2 + p with a
// degree-8 P. Denormals are scaled by 2^23 first; x <= 0, inf and NaN give
// pieces the callers replace (log_special).
struct LogParts {
  float e, f, z, p;
};
inline LogParts log_parts(float x) {
  const bool denormal = x < 1.17549435e-38f;  // or <= 0
  const float v = denormal ? x * 8388608.0f : x;
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  float e = float(int32_t(bits >> 23)) - (denormal ? 149.0f : 126.0f);
  const float m = std::bit_cast<float>((bits & 0x807fffffu) | 0x3f000000u);  // in [0.5, 1)
  const bool low = m < 0.707106781186547524f;
  e = low ? e - 1.0f : e;
  const float f = (low ? m + m : m) - 1.0f, z = f * f;
  const float p = horner(f, {7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f,
                             1.4249322787e-1f, -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f,
                             3.3333331174e-1f});
  return {e, f, z, p * f * z};
}
// A logarithm r of x, with x's special values: 0 gives -inf, +inf gives
// +inf, negatives give NaN, NaN stays NaN.
inline float log_special(float x, float r) {
  r = x == INFINITY ? INFINITY : r;
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  return x != x ? x : r;
}

// log x as the JIT's emit_log: log(1 + f) + e ln2, ln2 in two floats
// (Cephes: peak relative error 7.6e-8 on (0, inf)).
inline float log_vec(float x) {
  const LogParts l = log_parts(x);
  const float y = l.z * -0.5f + (l.e * -2.12194440e-4f + l.p);
  return log_special(x, l.e * 0.693359375f + (l.f + y));
}

// log2 x as e + log(1 + f) log2(e): exact where x is a power of two (f = 0),
// where log_vec(x) * log2(e) would round twice.
inline float log2_vec(float x) {
  const LogParts l = log_parts(x);
  return log_special(x, l.e + (l.f + (l.p + l.z * -0.5f)) * 1.44269504088896341f);
}

// log(1 + x) as the JIT's emit_log1p: log(u) + (x - (u - 1)) / u with
// u = 1 + x rounded, the second term the rounding error of u to first order
// (NaN where u is 0 or inf, x = -1 or +inf, and dropped there). Unlike the
// JIT's, ±0 gives ±0 (log(1) + -0 would be +0).
inline float log1p_vec(float x) {
  const float u = x + 1.0f;
  const float c = (x - (u - 1.0f)) / u;
  const float y = log_vec(u) + (c != c ? 0.0f : c);
  return x == 0.0f ? x : y;  // -0 gives -0
}

// The functions above in the compute type: the vectorised float versions,
// libm for double.
template <class T, class Vec, class Libm> inline T float_vec_or_libm(T x, Vec vec, Libm libm) {
  if constexpr (sizeof(T) == 4) return vec(x);
  else return libm(x);
}
template <class T> inline T exp_of(T x) { return float_vec_or_libm(x, exp_vec, [](T v) { return std::exp(v); }); }
template <class T> inline T exp_nonpositive_of(T x) {
  return float_vec_or_libm(x, exp_nonpositive_vec, [](T v) { return std::exp(v); });
}
template <class T> inline T tanh_of(T x) { return float_vec_or_libm(x, tanh_vec, [](T v) { return std::tanh(v); }); }
template <class T> inline T erf_of(T x) { return float_vec_or_libm(x, erf_vec, [](T v) { return std::erf(v); }); }
template <class T> inline T exp2_of(T x) { return float_vec_or_libm(x, exp2_vec, [](T v) { return std::exp2(v); }); }
template <class T> inline T expm1_of(T x) {
  return float_vec_or_libm(x, expm1_vec, [](T v) { return std::expm1(v); });
}
template <class T> inline T log_of(T x) { return float_vec_or_libm(x, log_vec, [](T v) { return std::log(v); }); }
template <class T> inline T log2_of(T x) { return float_vec_or_libm(x, log2_vec, [](T v) { return std::log2(v); }); }
template <class T> inline T log1p_of(T x) {
  return float_vec_or_libm(x, log1p_vec, [](T v) { return std::log1p(v); });
}

}  // namespace nnvm::cpu
