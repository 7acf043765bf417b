#include "nnvm/jit/x86/vector_math.h"

#include <immintrin.h>

#include <cmath>

#include "nnvm/core/error.h"

namespace nnvm::jit::x86 {

using Xbyak::Xmm;

namespace {
constexpr uint32_t kSignBit = 0x80000000u, kAbsMask = 0x7fffffffu;

// Round to nearest even, the same as (v + 1.5 * 2^23) - 1.5 * 2^23 in kernels/cpu/exp.h.
void round_nearest(Generator& g, const Xmm& dst, const Xmm& src) {
  if (g.avx512()) g.vrndscaleps(dst, src, 0);
  else g.vroundps(dst, src, 0);
}

// v = min(max(v, lo), hi), a NaN kept: the bound is the first operand of
// min/max, which return the second when either is NaN. Clobbers t.
void clamp(Generator& g, const Xmm& v, float lo, float hi, const Xmm& t) {
  g.vmovups(t, g.vconst(hi));
  g.vminps(v, t, v);
  g.vmovups(t, g.vconst(lo));
  g.vmaxps(v, t, v);
}

// x = n ln2 + r: n = round(x log2e) as a float, (x log2e + 1.5 2^23) -
// 1.5 2^23 with the product unrounded (one fused multiply-add, as
// kernels/cpu/exp.h's: |x log2e| < 2^22 for every caller's clamped x),
// r = x - n C1 - n C2 in v, with ln2 = C1 + C2 split so that n C1 is exact.
void reduce_ln2(Generator& g, const Xmm& v, const Xmm& n) {
  g.vmovups(n, g.vconst(12582912.0f));
  g.vfmadd231ps(n, v, g.vconst_b(1.44269504088896341f));
  g.vsubps(n, n, g.vconst_b(12582912.0f));
  g.vfnmadd231ps(v, n, g.vconst_b(0.693359375f));
  g.vfnmadd231ps(v, n, g.vconst_b(-2.12194440e-4f));
}

// y = P(r) for r in v (Horner): Cephes' e^r = 1 + r + r^2 P(r).
void exp_polynomial(Generator& g, const Xmm& y, const Xmm& v) {
  g.vmovups(y, g.vconst(1.9875691500e-4f));
  g.vfmadd213ps(y, v, g.vconst_b(1.3981999507e-3f));
  g.vfmadd213ps(y, v, g.vconst_b(8.3334519073e-3f));
  g.vfmadd213ps(y, v, g.vconst_b(4.1665795894e-2f));
  g.vfmadd213ps(y, v, g.vconst_b(1.6666665459e-1f));
  g.vfmadd213ps(y, v, g.vconst_b(5.0000001201e-1f));
}

// v = y 2^n for n (rounded, as float), applied as 2^a 2^b with a = n >> 1,
// b = n - a, so each factor is a normal float for n in [-150, 128]; clobbers n.
void scale_by_pow2(Generator& g, const Xmm& v, const Xmm& y, const Xmm& n) {
  g.vcvtps2dq(n, n);
  g.vpsrad(v, n, 1);
  g.vpsubd(n, n, v);
  g.vpaddd(v, v, g.vconst_bits_b(127));
  g.vpslld(v, v, 23);
  g.vmulps(y, y, v);
  g.vpaddd(n, n, g.vconst_bits_b(127));
  g.vpslld(n, n, 23);
  g.vmulps(v, y, n);
}

// e^r 2^n for |r| <= ln2 / 2 in v and n (rounded, as float) in scratch[0]:
// the polynomial and the two-factor scaling of emit_exp.
void exp_tail(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &n = scratch[0], &y = scratch[1];
  exp_polynomial(g, y, v);
  g.vmulps(y, y, v);                                // y = P(r) r^2 + r + 1
  g.vfmadd213ps(y, v, v);
  g.vaddps(y, y, g.vconst_b(1.0f));
  scale_by_pow2(g, v, y, n);
}
}  // namespace

// Cephes expf (kernels/cpu/exp.h's exp_vec computes the same bits, so a fused
// and an unfused run agree): x = n ln2 + r, ln2 split into 0.693359375
// (n * C1 exact) and -2.12194440e-4, a degree-6 polynomial for
// e^r on |r| <= ln2 / 2 (Cephes: peak relative error 1.7e-7). The input is
// clamped to [-104, 89] first (NaN passes: the bound is the first operand of
// min/max, which return the second when either is NaN). 2^n is applied as two
// factors 2^(n>>1) and 2^(n - (n>>1)), each a normal float for n in
// [-150, 128], so results overflow to +inf and underflow through the
// denormals to 0 with one rounding.
void emit_exp(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm& n = scratch[0];
  clamp(g, v, -104.0f, 89.0f, n);
  reduce_ln2(g, v, n);
  exp_tail(g, v, scratch);
}

// e^v for v <= 0 (softmax's x - max): emit_exp's reduction and polynomial,
// bit for bit the same on [-87.33, 0], with one factor 2^n (normal for n >=
// -126) instead of two; below, where e^v is under FLT_MIN, 0 instead of a
// denormal (v is clamped to -88: n = -127 gives the factor 0). -inf gives 0
// and NaN stays NaN.
void emit_exp_nonpositive(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &n = scratch[0], &y = scratch[1];
  g.vmovups(y, g.vconst(-88.0f));
  g.vmaxps(v, y, v);  // NaN kept: vmaxps returns the second operand when either is NaN
  reduce_ln2(g, v, n);
  exp_polynomial(g, y, v);
  g.vmulps(y, y, v);
  g.vfmadd213ps(y, v, v);
  g.vaddps(y, y, g.vconst_b(1.0f));
  g.vcvtps2dq(n, n);
  g.vpaddd(n, n, g.vconst_bits_b(127));
  g.vpslld(n, n, 23);
  g.vmulps(v, y, n);
}

// 2^x = e^(r ln2) 2^n with n = round(x), r = x - n exact, r ln2 formed with
// ln2 in two floats; x clamped to [-150, 129] as emit_exp's range.
void emit_exp2(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &n = scratch[0], &y = scratch[1];
  clamp(g, v, -150.0f, 129.0f, n);
  round_nearest(g, n, v);
  g.vsubps(v, v, n);
  g.vmulps(y, v, g.vconst_b(-1.9046542e-09f));       // the low part of ln2
  g.vfmadd231ps(y, v, g.vconst_b(0.693147182f));
  g.vmovaps(v, y);
  exp_tail(g, v, scratch);
}

// Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log x = log m + e ln2,
// log(1 + f) = f - f^2/2 + f^3 P(f) with a degree-8 P (Cephes: peak relative
// error 7.6e-8 on (0, inf)). Denormals are scaled by 2^23 first. The special
// values come last, from the input kept in scratch[0].
void emit_log(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &x = scratch[0], &e = scratch[1], &t = scratch[2], &y = scratch[3];
  const VMask m = g.mask(scratch[4]);
  g.vmovups(x, v);
  g.vxor(e, e, e);
  g.compare(m, v, g.vconst_b(1.17549435e-38f), _CMP_LT_OQ);  // denormal (or <= 0: fixed at the end)
  g.blend(m, e, g.vconst_b(-23.0f));
  g.vmulps(t, v, g.vconst_b(8388608.0f));
  g.blend(m, v, t);
  g.vpsrld(t, v, 23);                                      // e += biased exponent - 126
  g.vcvtdq2ps(t, t);
  g.vaddps(e, e, t);
  g.vsubps(e, e, g.vconst_b(126.0f));
  g.vand(v, v, g.vconst_bits_b(0x807fffffu));              // m in [0.5, 1)
  g.vor(v, v, g.vconst_bits_b(0x3f000000u));
  g.compare(m, v, g.vconst_b(0.707106781186547524f), _CMP_LT_OQ);
  g.vsubps(t, e, g.vconst_b(1.0f));                          // m < sqrt(1/2): e - 1, f = 2m - 1
  g.blend(m, e, t);
  g.vaddps(t, v, v);
  g.blend(m, v, t);
  g.vsubps(v, v, g.vconst_b(1.0f));                          // else f = m - 1
  g.vmulps(t, v, v);                                       // z = f^2
  g.vmovups(y, g.vconst(7.0376836292e-2f));
  g.vfmadd213ps(y, v, g.vconst_b(-1.1514610310e-1f));
  g.vfmadd213ps(y, v, g.vconst_b(1.1676998740e-1f));
  g.vfmadd213ps(y, v, g.vconst_b(-1.2420140846e-1f));
  g.vfmadd213ps(y, v, g.vconst_b(1.4249322787e-1f));
  g.vfmadd213ps(y, v, g.vconst_b(-1.6668057665e-1f));
  g.vfmadd213ps(y, v, g.vconst_b(2.0000714765e-1f));
  g.vfmadd213ps(y, v, g.vconst_b(-2.4999993993e-1f));
  g.vfmadd213ps(y, v, g.vconst_b(3.3333331174e-1f));
  g.vmulps(y, y, v);                                       // y = P(f) f z
  g.vmulps(y, y, t);
  g.vfmadd231ps(y, e, g.vconst_b(-2.12194440e-4f));          // + e C2
  g.vfmadd231ps(y, t, g.vconst_b(-0.5f));                    // - z / 2
  g.vaddps(v, v, y);
  g.vfmadd231ps(v, e, g.vconst_b(0.693359375f));             // + e C1
  g.compare(m, x, g.vconst_b(INFINITY), _CMP_EQ_OQ);
  g.blend(m, v, g.vconst_b(INFINITY));
  g.compare(m, x, g.vconst_b(0.0f), _CMP_EQ_OQ);
  g.blend(m, v, g.vconst_b(-INFINITY));
  g.compare(m, x, g.vconst_b(0.0f), _CMP_LT_OQ);
  g.blend(m, v, g.vconst_bits_b(0x7fc00000u));
  g.compare(m, x, x, _CMP_UNORD_Q);
  g.blend(m, v, x);
}

// Eigen's odd rational minimax tanh (the 13/6 fit XLA and MLAS use too):
// x P(x^2) / Q(x^2) on x clamped to [-9, 9], where it meets +-1 within a few
// ulp. P / Q is formed before the product with x, so tiny and denormal x keep
// full relative accuracy (x P alone would underflow). About 15 instructions,
// no exp: a gelu chain stays memory-bound. NaN passes the clamp (the bound is
// the first operand of min/max) and stays NaN.
void emit_tanh(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &z = scratch[0], &p = scratch[1], &q = scratch[2];
  g.vmovups(z, g.vconst(9.0f));
  g.vminps(v, z, v);
  g.vmovups(z, g.vconst(-9.0f));
  g.vmaxps(v, z, v);
  g.vmulps(z, v, v);
  g.vmovups(p, g.vconst(-2.76076847742355e-16f));
  g.vfmadd213ps(p, z, g.vconst_b(2.00018790482477e-13f));
  g.vfmadd213ps(p, z, g.vconst_b(-8.60467152213735e-11f));
  g.vfmadd213ps(p, z, g.vconst_b(5.12229709037114e-08f));
  g.vfmadd213ps(p, z, g.vconst_b(1.48572235717979e-05f));
  g.vfmadd213ps(p, z, g.vconst_b(6.37261928875436e-04f));
  g.vfmadd213ps(p, z, g.vconst_b(4.89352455891786e-03f));
  g.vmovups(q, g.vconst(1.19825839466702e-06f));
  g.vfmadd213ps(q, z, g.vconst_b(1.18534705686654e-04f));
  g.vfmadd213ps(q, z, g.vconst_b(2.26843463243900e-03f));
  g.vfmadd213ps(q, z, g.vconst_b(4.89352518554385e-03f));
  g.vdivps(p, p, q);
  g.vmulps(v, v, p);
}

// 1 / (1 + e^-x), as the reference kernel: 0 at -inf, 1 at +inf.
void emit_sigmoid(Generator& g, const Xmm& v, const Xmm* scratch) {
  g.vxor(v, v, g.vconst_bits_b(kSignBit));
  emit_exp(g, v, scratch);
  g.vaddps(v, v, g.vconst_b(1.0f));
  g.vmovups(scratch[0], g.vconst(1.0f));
  g.vdivps(v, scratch[0], v);
}

// erf: for |x| < 1, x P(x^2) with P a degree-6 Chebyshev fit of erf(x)/x
// (relative error 1.2e-9) whose leading coefficient is split in two floats,
// so tiny and denormal x are rounded once; else sign(x) (1 - e^L(|x|)) with L
// a degree-8 fit of log(erfc) in |x| - 2.5 on [1, 4] (absolute error
// 1.7e-8), |x| clamped to 4, where erfc < 2^-25 and the result is ±1.
void emit_erf(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &a = scratch[0], &z = scratch[1], &small = scratch[2], &big = scratch[3];
  g.vand(a, v, g.vconst_bits_b(kAbsMask));
  g.vmulps(z, v, v);
  g.vmovups(small, g.vconst(7.875874871e-05f));
  for (float c : {-8.016864303e-04f, 5.189087242e-03f, -2.685421146e-02f, 1.128359437e-01f, -3.761262596e-01f})
    g.vfmadd213ps(small, z, g.vconst_b(c));
  g.vfmadd213ps(small, z, g.vconst_b(5.932674440600749e-08f));  // the low part of P(0)
  g.vmulps(small, small, v);
  g.vfmadd231ps(small, v, g.vconst_b(1.1283791065216064f));     // + x P(0)'s high part
  g.vmovups(z, g.vconst(4.0f));
  g.vminps(z, z, a);  // a NaN stays
  g.vsubps(z, z, g.vconst_b(2.5f));
  g.vmovups(big, g.vconst(1.637151399e-06f));
  for (float c : {-1.331501426e-05f, 7.729137724e-05f, -4.201225238e-04f, 2.165303566e-03f, -1.085854135e-02f,
                  -9.438937306e-01f, -5.352680683e+00f, -7.806815147e+00f})
    g.vfmadd213ps(big, z, g.vconst_b(c));
  const Xmm exp_scratch[] = {z, scratch[4]};
  emit_exp(g, big, exp_scratch);
  g.vmovups(z, g.vconst(1.0f));
  g.vsubps(big, z, big);
  g.vand(z, v, g.vconst_bits_b(kSignBit));
  g.vor(big, big, z);
  const VMask m = g.mask(z);
  g.compare(m, a, g.vconst_b(1.0f), _CMP_LT_OQ);
  g.blend(m, big, small);
  g.vmovaps(v, big);
}

// expm1 as 2^n (expm1(r) + 1) - 1 with x = n ln2 + r (as exp), written
// 2 (2^(n-1) expm1(r) + (2^(n-1) - 1/2)): for n = 0 that is expm1(r) itself,
// with no cancellation, and 2^(n-1) is a normal float for x clamped to
// [-87, 88.73] (e^x - 1 is -1 below, +inf above). expm1(r) = r + r^2 P(r),
// P a degree-5 Chebyshev fit on |r| <= ln2 / 2.
void emit_expm1(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &n = scratch[0], &e = scratch[1];
  clamp(g, v, -87.0f, 88.73f, n);
  reduce_ln2(g, v, n);
  g.vmovups(e, g.vconst(1.989098091e-04f));
  for (float c : {1.393364160e-03f, 8.333310485e-03f, 4.166646674e-02f, 1.666666716e-01f, 0.5f})
    g.vfmadd213ps(e, v, g.vconst_b(c));
  g.vmulps(e, e, v);
  g.vfmadd213ps(e, v, v);  // e = P(r) r^2 + r
  g.vcvtps2dq(n, n);       // 2^(n-1)
  g.vpaddd(n, n, g.vconst_bits_b(126));
  g.vpslld(n, n, 23);
  g.vsubps(v, n, g.vconst_b(0.5f));
  g.vfmadd231ps(v, n, e);
  g.vaddps(v, v, v);
}

// log1p(x) = log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the second
// term is the rounding error of u, to first order. It is NaN where u is 0 or
// inf (x = -1, +inf), and dropped there.
void emit_log1p(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &u = scratch[0], &c = scratch[1];
  g.vaddps(u, v, g.vconst_b(1.0f));
  g.vsubps(c, u, g.vconst_b(1.0f));
  g.vsubps(c, v, c);
  g.vdivps(c, c, u);
  g.vmovaps(v, u);
  emit_log(g, v, scratch + 2);
  const VMask m = g.mask(u);
  g.compare(m, c, c, _CMP_UNORD_Q);
  g.blend(m, c, g.vconst_b(0.0f));
  g.vaddps(v, v, c);
}

// The reference's softplus: x beta > threshold ? x : log1p(e^(x beta)) / beta.
void emit_softplus(Generator& g, const Xmm& v, const Xbyak::Operand& beta, const Xbyak::Operand& threshold,
                   const Xmm* scratch) {
  const Xmm& x = scratch[0];
  g.vmovaps(x, v);
  g.vmulps(v, v, beta);
  emit_exp(g, v, scratch + 1);
  emit_log1p(g, v, scratch + 1);
  g.vdivps(v, v, beta);
  g.vmulps(scratch[1], x, beta);
  const VMask m = g.mask(scratch[2]);
  g.compare(m, scratch[1], threshold, _CMP_GT_OQ);
  g.blend(m, v, x);
}

// pow(x, y) = e^(y log|x|) with log|x| = hi + lo carried in two floats (the
// decomposition of emit_log, with e C1 + f summed exactly) and the product
// y (hi + lo) = p + q split the same way, then e^p (1 + q): the error stays
// near exp's instead of growing with |y log|x||. Then std::pow's rules: the
// sign of an x < 0 (or -0, -inf) for an odd integer y, NaN for a finite
// x < 0 and a y that is not an integer, 1 for y = ±0 or x = 1 (NaN or not),
// 1 for |x| = 1 with y = ±inf, else NaN in gives NaN.
void emit_pow(Generator& g, const Xmm& v, const Xbyak::Operand& y, const Xmm* scratch) {
  const Xmm &x = scratch[0], &e = scratch[1], &t = scratch[2], &p = scratch[3], &u = scratch[4], &w = scratch[5];
  const VMask m = g.mask(scratch[6]);
  g.vmovaps(x, v);
  g.vand(v, v, g.vconst_bits_b(kAbsMask));
  g.vxor(e, e, e);
  g.compare(m, v, g.vconst_b(1.17549435e-38f), _CMP_LT_OQ);  // denormal: scaled by 2^23
  g.blend(m, e, g.vconst_b(-23.0f));
  g.vmulps(t, v, g.vconst_b(8388608.0f));
  g.blend(m, v, t);
  g.vpsrld(t, v, 23);
  g.vcvtdq2ps(t, t);
  g.vaddps(e, e, t);
  g.vsubps(e, e, g.vconst_b(126.0f));
  g.vand(v, v, g.vconst_bits_b(0x807fffffu));
  g.vor(v, v, g.vconst_bits_b(0x3f000000u));
  g.compare(m, v, g.vconst_b(0.707106781186547524f), _CMP_LT_OQ);
  g.vsubps(t, e, g.vconst_b(1.0f));
  g.blend(m, e, t);
  g.vaddps(t, v, v);
  g.blend(m, v, t);
  g.vsubps(v, v, g.vconst_b(1.0f));  // f, exact
  g.vmulps(t, v, v);
  g.vmovups(p, g.vconst(7.0376836292e-2f));
  for (float c : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
                  2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f})
    g.vfmadd213ps(p, v, g.vconst_b(c));
  g.vmulps(p, p, v);
  g.vmulps(p, p, t);
  g.vfmadd231ps(p, e, g.vconst_b(-2.12194440e-4f));
  g.vfmadd231ps(p, t, g.vconst_b(-0.5f));  // the small part: f^3 P(f) - f^2 / 2 + e C2
  g.vmulps(e, e, g.vconst_b(0.693359375f));  // e C1, exact
  g.vaddps(t, e, v);                       // two-sum of e C1 and f: t + error
  g.vsubps(u, t, e);
  g.vsubps(w, t, u);
  g.vsubps(e, e, w);
  g.vsubps(v, v, u);
  g.vaddps(v, v, e);
  g.vaddps(v, v, p);
  g.vaddps(e, t, v);  // hi
  g.vsubps(u, e, t);
  g.vsubps(v, v, u);  // lo
  g.vand(u, x, g.vconst_bits_b(kAbsMask));
  g.compare(m, u, g.vconst_b(0.0f), _CMP_EQ_OQ);
  g.blend(m, e, g.vconst_b(-INFINITY));
  g.compare(m, u, g.vconst_b(INFINITY), _CMP_EQ_OQ);
  g.blend(m, e, g.vconst_b(INFINITY));
  g.vmulps(p, e, y);  // p = y hi
  g.vmovaps(t, p);
  g.vfmsub231ps(t, e, y);  // y hi - p, exact
  g.vmulps(v, v, y);
  g.vaddps(v, v, t);  // q
  g.vand(t, v, g.vconst_bits_b(kAbsMask));  // p = ±inf: e^p is 0 or inf, q is not finite and unused
  g.compare(m, t, g.vconst_b(INFINITY), _CMP_NLT_UQ);
  g.blend(m, v, g.vconst_b(0.0f));
  // p > 0: e^p (1 + q) = 2 e^(p - C1) (1 + q + e^(C1 - ln2) - 1) with C1
  // exact, so e^p does not overflow where the result does not (x^1 at FLT_MAX)
  g.vxor(w, w, w);
  g.compare(m, p, w, _CMP_GT_OQ);
  g.vsubps(t, p, g.vconst_b(0.693359375f));
  g.blend(m, p, t);
  g.vaddps(t, v, g.vconst_b(2.12216954e-4f));
  g.blend(m, v, t);
  g.vmovups(w, g.vconst(1.0f));
  g.blend(m, w, g.vconst_b(2.0f));
  const Xmm exp_scratch[] = {t, u};
  emit_exp(g, p, exp_scratch);
  g.vmulps(t, p, v);  // e^p q, dropped where e^p is inf (inf - inf would make a NaN)
  g.compare(m, p, g.vconst_b(INFINITY), _CMP_EQ_OQ);
  g.blend(m, t, g.vconst_b(0.0f));
  g.vaddps(p, p, t);
  g.vmulps(p, p, w);
  g.compare(m, p, p, _CMP_UNORD_Q);  // inf * 0: |x| = 1, y = ±inf
  g.blend(m, p, g.vconst_b(1.0f));
  g.compare(m, x, y, _CMP_UNORD_Q);
  g.blend(m, p, g.vconst_bits_b(0x7fc00000u));
  g.vmovups(t, g.vconst(0.5f));  // y is an odd integer where |y - 2 round(y / 2)| = 1
  g.vmulps(t, t, y);
  round_nearest(g, t, t);
  g.vaddps(t, t, t);
  g.vsubps(t, t, y);
  g.vand(t, t, g.vconst_bits_b(kAbsMask));
  g.compare(m, t, g.vconst_b(1.0f), _CMP_EQ_OQ);
  g.vand(u, x, g.vconst_bits_b(kSignBit));
  g.vxor(w, w, w);
  g.blend(m, w, u);
  g.vor(p, p, w);
  g.vmovups(t, y);  // y not an integer and x finite and < 0: NaN
  round_nearest(g, u, t);
  g.compare(m, u, t, _CMP_NEQ_OQ);
  g.vmovups(w, g.vconst(1.0f));
  g.blend(m, w, x);
  g.compare(m, w, g.vconst_b(-INFINITY), _CMP_EQ_OQ);
  g.blend(m, w, g.vconst_b(1.0f));
  g.compare(m, w, g.vconst_b(0.0f), _CMP_LT_OQ);
  g.blend(m, p, g.vconst_bits_b(0x7fc00000u));
  g.compare(m, x, g.vconst_b(1.0f), _CMP_EQ_OQ);
  g.blend(m, p, g.vconst_b(1.0f));
  g.vxor(t, t, t);
  g.compare(m, t, y, _CMP_EQ_OQ);
  g.blend(m, p, g.vconst_b(1.0f));
  g.vmovaps(v, p);
}

// x > 0 ? x : alpha expm1(x), as the reference (NaN stays NaN).
void emit_elu(Generator& g, const Xmm& v, const Xbyak::Operand& alpha, const Xmm* scratch) {
  const Xmm& x = scratch[0];
  g.vmovaps(x, v);
  emit_expm1(g, v, scratch + 1);
  g.vmulps(v, v, alpha);
  const VMask m = g.mask(scratch[1]);
  g.compare(m, x, g.vconst_b(0.0f), _CMP_GT_OQ);
  g.blend(m, v, x);
}

// x > 0 ? x : x slope (NaN stays NaN).
void emit_leaky_relu(Generator& g, const Xmm& v, const Xbyak::Operand& slope, const Xmm* scratch) {
  const Xmm& t = scratch[0];
  g.vmulps(t, v, slope);
  const VMask m = g.mask(scratch[1]);
  g.compare(m, v, g.vconst_b(0.0f), _CMP_LE_OQ);  // a NaN x stays itself, as x slope would be NaN
  g.blend(m, v, t);
}

// (0 < x) - (x < 0): 0 at ±0 and NaN.
void emit_sign(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm& s = scratch[0];
  const VMask m = g.mask(scratch[1]);
  g.vxor(s, s, s);
  g.compare(m, v, g.vconst_b(0.0f), _CMP_GT_OQ);
  g.blend(m, s, g.vconst_b(1.0f));
  g.compare(m, v, g.vconst_b(0.0f), _CMP_LT_OQ);
  g.blend(m, s, g.vconst_b(-1.0f));
  g.vmovaps(v, s);
}

// vroundps / vrndscaleps with rounding `mode` (0 nearest even, 1 down, 2 up, 3 toward 0): exact, NaN stays.
void emit_round(Generator& g, const Xmm& v, int mode) {
  if (g.avx512()) g.vrndscaleps(v, v, uint8_t(mode));
  else g.vroundps(v, v, uint8_t(mode));
}

int injector_scratch(Prim p) {
  switch (p) {
    case Prim::kExp: return kExpScratch;
    case Prim::kLog: return kLogScratch;
    case Prim::kTanh: return kTanhScratch;
    case Prim::kSigmoid: return kSigmoidScratch;
    case Prim::kErf: return kErfScratch;
    case Prim::kExpm1: return kExpm1Scratch;
    case Prim::kLog1p: return kLog1pScratch;
    case Prim::kSoftplus: return kSoftplusScratch;
    case Prim::kPow: return kPowScratch;
    case Prim::kExp2: return kExpScratch;
    case Prim::kElu: return 1 + kExpm1Scratch;
    case Prim::kLeakyRelu: case Prim::kSign: return 2;
    default: return 0;
  }
}

void emit_injector(Generator& g, Prim p, const Xmm& v, const Xbyak::Operand& b, const Xbyak::Operand& c,
                   const Xmm* scratch) {
  switch (p) {
    case Prim::kExp: emit_exp(g, v, scratch); return;
    case Prim::kLog: emit_log(g, v, scratch); return;
    case Prim::kTanh: emit_tanh(g, v, scratch); return;
    case Prim::kSigmoid: emit_sigmoid(g, v, scratch); return;
    case Prim::kErf: emit_erf(g, v, scratch); return;
    case Prim::kExpm1: emit_expm1(g, v, scratch); return;
    case Prim::kLog1p: emit_log1p(g, v, scratch); return;
    case Prim::kSoftplus: emit_softplus(g, v, b, c, scratch); return;
    case Prim::kPow: emit_pow(g, v, b, scratch); return;
    case Prim::kExp2: emit_exp2(g, v, scratch); return;
    case Prim::kElu: emit_elu(g, v, b, scratch); return;
    case Prim::kLeakyRelu: emit_leaky_relu(g, v, b, scratch); return;
    case Prim::kSign: emit_sign(g, v, scratch); return;
    case Prim::kRound: emit_round(g, v, 0); return;
    case Prim::kFloor: emit_round(g, v, 1); return;
    case Prim::kCeil: emit_round(g, v, 2); return;
    case Prim::kTrunc: emit_round(g, v, 3); return;
    default: NNVM_CHECK(false, "emit_injector", prim_name(p), " has no injector");
  }
}

void emit_cast(Generator& g, const Xmm& d, const Xmm& x, DType to) {
  g.vcvttps2dq(d, x);
  if (to == kUInt8) {
    g.vand(d, d, g.vconst_bits_b(0xff));
  } else if (to == kInt8) {
    g.vpslld(d, d, 24);
    g.vpsrad(d, d, 24);
  }
  g.vcvtdq2ps(d, d);
}

void emit_widen(Generator& g, const Xmm& dst, DType t, const Xbyak::Operand& src, const Xbyak::Opmask* mask) {
  const Xmm to = mask ? dst | *mask | Xbyak::util::T_z : dst;
  switch (t) {
    case kFloat16: g.vcvtph2ps(to, src); return;
    case kBFloat16:  // the upper half of a float32
      g.vpmovzxwd(to, src);
      g.vpslld(dst, dst, 16);
      return;
    case kInt8: g.vpmovsxbd(to, src); break;
    default: g.vpmovzxbd(to, src);  // bool, uint8
  }
  g.vcvtdq2ps(dst, dst);
}

}  // namespace nnvm::jit::x86
