#include "nnvm/jit/x86/vector_math.h"

#include <immintrin.h>

#include <cmath>

namespace nnvm::jit::x86 {

using Xbyak::Xmm;

namespace {
constexpr uint32_t kSignBit = 0x80000000u, kAbsMask = 0x7fffffffu;

// Round to nearest even, the same as (v + 1.5 * 2^23) - 1.5 * 2^23 in kernels/cpu/exp.h.
void round_nearest(Generator& g, const Xmm& dst, const Xmm& src) {
  if (g.avx512()) g.vrndscaleps(dst, src, 0);
  else g.vroundps(dst, src, 0);
}
}  // namespace

// Cephes expf (as kernels/cpu/exp.h): x = n ln2 + r, ln2 split into
// 0.693359375 (n * C1 exact) and -2.12194440e-4, a degree-6 polynomial for
// e^r on |r| <= ln2 / 2 (Cephes: peak relative error 1.7e-7). The input is
// clamped to [-104, 89] first (NaN passes: the bound is the first operand of
// min/max, which return the second when either is NaN). 2^n is applied as two
// factors 2^(n>>1) and 2^(n - (n>>1)), each a normal float for n in
// [-150, 128], so results overflow to +inf and underflow through the
// denormals to 0 with one rounding.
void emit_exp(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &n = scratch[0], &y = scratch[1];
  g.vmovups(n, g.vconst(89.0f));
  g.vminps(v, n, v);
  g.vmovups(n, g.vconst(-104.0f));
  g.vmaxps(v, n, v);
  g.vmulps(n, v, g.vconst(1.44269504088896341f));  // n = round(x / ln2)
  round_nearest(g, n, n);
  g.vfnmadd231ps(v, n, g.vconst(0.693359375f));     // r = x - n C1
  g.vfnmadd231ps(v, n, g.vconst(-2.12194440e-4f));  //   - n C2
  g.vmovups(y, g.vconst(1.9875691500e-4f));         // y = P(r), Horner
  g.vfmadd213ps(y, v, g.vconst(1.3981999507e-3f));
  g.vfmadd213ps(y, v, g.vconst(8.3334519073e-3f));
  g.vfmadd213ps(y, v, g.vconst(4.1665795894e-2f));
  g.vfmadd213ps(y, v, g.vconst(1.6666665459e-1f));
  g.vfmadd213ps(y, v, g.vconst(5.0000001201e-1f));
  g.vmulps(y, y, v);                                // y = P(r) r^2 + r + 1
  g.vfmadd213ps(y, v, v);
  g.vaddps(y, y, g.vconst(1.0f));
  g.vcvtps2dq(n, n);                                // 2^n = 2^a 2^b, a = n >> 1, b = n - a
  g.vpsrad(v, n, 1);
  g.vpsubd(n, n, v);
  g.vpaddd(v, v, g.vconst_bits(127));
  g.vpslld(v, v, 23);
  g.vmulps(y, y, v);
  g.vpaddd(n, n, g.vconst_bits(127));
  g.vpslld(n, n, 23);
  g.vmulps(v, y, n);
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
  g.compare(m, v, g.vconst(1.17549435e-38f), _CMP_LT_OQ);  // denormal (or <= 0: fixed at the end)
  g.blend(m, e, g.vconst(-23.0f));
  g.vmulps(t, v, g.vconst(8388608.0f));
  g.blend(m, v, t);
  g.vpsrld(t, v, 23);                                      // e += biased exponent - 126
  g.vcvtdq2ps(t, t);
  g.vaddps(e, e, t);
  g.vsubps(e, e, g.vconst(126.0f));
  g.vand(v, v, g.vconst_bits(0x807fffffu));              // m in [0.5, 1)
  g.vor(v, v, g.vconst_bits(0x3f000000u));
  g.compare(m, v, g.vconst(0.707106781186547524f), _CMP_LT_OQ);
  g.vsubps(t, e, g.vconst(1.0f));                          // m < sqrt(1/2): e - 1, f = 2m - 1
  g.blend(m, e, t);
  g.vaddps(t, v, v);
  g.blend(m, v, t);
  g.vsubps(v, v, g.vconst(1.0f));                          // else f = m - 1
  g.vmulps(t, v, v);                                       // z = f^2
  g.vmovups(y, g.vconst(7.0376836292e-2f));
  g.vfmadd213ps(y, v, g.vconst(-1.1514610310e-1f));
  g.vfmadd213ps(y, v, g.vconst(1.1676998740e-1f));
  g.vfmadd213ps(y, v, g.vconst(-1.2420140846e-1f));
  g.vfmadd213ps(y, v, g.vconst(1.4249322787e-1f));
  g.vfmadd213ps(y, v, g.vconst(-1.6668057665e-1f));
  g.vfmadd213ps(y, v, g.vconst(2.0000714765e-1f));
  g.vfmadd213ps(y, v, g.vconst(-2.4999993993e-1f));
  g.vfmadd213ps(y, v, g.vconst(3.3333331174e-1f));
  g.vmulps(y, y, v);                                       // y = P(f) f z
  g.vmulps(y, y, t);
  g.vfmadd231ps(y, e, g.vconst(-2.12194440e-4f));          // + e C2
  g.vfmadd231ps(y, t, g.vconst(-0.5f));                    // - z / 2
  g.vaddps(v, v, y);
  g.vfmadd231ps(v, e, g.vconst(0.693359375f));             // + e C1
  g.compare(m, x, g.vconst(INFINITY), _CMP_EQ_OQ);
  g.blend(m, v, g.vconst(INFINITY));
  g.compare(m, x, g.vconst(0.0f), _CMP_EQ_OQ);
  g.blend(m, v, g.vconst(-INFINITY));
  g.compare(m, x, g.vconst(0.0f), _CMP_LT_OQ);
  g.blend(m, v, g.vconst_bits(0x7fc00000u));
  g.compare(m, x, x, _CMP_UNORD_Q);
  g.blend(m, v, x);
}

// Cephes tanhf: for |x| < 0.625, x + x z P(z) with z = x^2 and a degree-4 P;
// else sign(x) (1 - 2 / (e^(2|x|) + 1)), which is exactly 1 once e^(2|x|)
// passes 2^25 and stays 1 at inf. NaN takes the second branch and stays NaN.
void emit_tanh(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &big = scratch[0], &t = scratch[1], &small = scratch[2];
  const VMask m = g.mask(scratch[4]);
  g.vmulps(t, v, v);
  g.vmovups(small, g.vconst(-5.70498872745e-3f));
  g.vfmadd213ps(small, t, g.vconst(2.06390887954e-2f));
  g.vfmadd213ps(small, t, g.vconst(-5.37397155531e-2f));
  g.vfmadd213ps(small, t, g.vconst(1.33314422036e-1f));
  g.vfmadd213ps(small, t, g.vconst(-3.33332819422e-1f));
  g.vmulps(small, small, t);
  g.vfmadd213ps(small, v, v);
  g.vand(big, v, g.vconst_bits(kAbsMask));
  g.vaddps(big, big, big);
  const Xmm exp_scratch[] = {t, scratch[3]};
  emit_exp(g, big, exp_scratch);
  g.vaddps(big, big, g.vconst(1.0f));
  g.vmovups(t, g.vconst(2.0f));
  g.vdivps(big, t, big);
  g.vmovups(t, g.vconst(1.0f));
  g.vsubps(big, t, big);
  g.vand(t, v, g.vconst_bits(kSignBit));
  g.vor(big, big, t);
  g.vand(t, v, g.vconst_bits(kAbsMask));
  g.compare(m, t, g.vconst(0.625f), _CMP_LT_OQ);
  g.blend(m, big, small);
  g.vmovups(v, big);
}

// 1 / (1 + e^-x), as the reference kernel: 0 at -inf, 1 at +inf.
void emit_sigmoid(Generator& g, const Xmm& v, const Xmm* scratch) {
  g.vxor(v, v, g.vconst_bits(kSignBit));
  emit_exp(g, v, scratch);
  g.vaddps(v, v, g.vconst(1.0f));
  g.vmovups(scratch[0], g.vconst(1.0f));
  g.vdivps(v, scratch[0], v);
}

// kernels/cpu/exp.h's exp_vec step for step, with the fused multiply-adds
// GCC forms from its expressions (-march=native contracts a * b + c), so a
// reduction that adds its exps in the reference's order (logsumexp) gives the
// reference's bits: n = (x log2e + 1.5 2^23) - 1.5 2^23 in one rounding,
// r = (x - n C1) + n C2, y = P(r) r^2 + r + 1 with r^2 rounded first. 2^n is
// applied as emit_exp does (two exact factors: the same result as exp_vec's
// 2^(n-1) 2 for n = 128 and its one rounding into the denormals); below
// -87.3365448 the result is 0, above 88.7228394 +inf, NaN stays the input.
void emit_exp_reference(Generator& g, const Xmm& v, const Xmm* scratch) {
  const Xmm &n = scratch[0], &y = scratch[1], &x = scratch[2], &t = scratch[3];
  g.vmovaps(x, v);
  g.vmovups(n, g.vconst(88.7228394f));
  g.vminps(v, n, v);
  g.vmovups(n, g.vconst(-87.3365448f));
  g.vmaxps(v, n, v);
  g.vmovups(n, g.vconst(12582912.0f));
  g.vfmadd231ps(n, v, g.vconst(1.44269504088896341f));
  g.vsubps(n, n, g.vconst(12582912.0f));
  g.vfnmadd231ps(v, n, g.vconst(0.693359375f));
  g.vfmadd231ps(v, n, g.vconst(2.12194440e-4f));
  g.vmovups(y, g.vconst(1.9875691500e-4f));
  g.vfmadd213ps(y, v, g.vconst(1.3981999507e-3f));
  g.vfmadd213ps(y, v, g.vconst(8.3334519073e-3f));
  g.vfmadd213ps(y, v, g.vconst(4.1665795894e-2f));
  g.vfmadd213ps(y, v, g.vconst(1.6666665459e-1f));
  g.vfmadd213ps(y, v, g.vconst(5.0000001201e-1f));
  g.vmulps(t, v, v);
  g.vfmadd213ps(y, t, v);
  g.vaddps(y, y, g.vconst(1.0f));
  g.vcvtps2dq(n, n);
  g.vpsrad(v, n, 1);
  g.vpsubd(n, n, v);
  g.vpaddd(v, v, g.vconst_bits(127));
  g.vpslld(v, v, 23);
  g.vmulps(y, y, v);
  g.vpaddd(n, n, g.vconst_bits(127));
  g.vpslld(n, n, 23);
  g.vmulps(v, y, n);
  const VMask m = g.mask(t);
  g.compare(m, x, g.vconst(-87.3365448f), _CMP_LT_OQ);
  g.blend(m, v, g.vconst(0.0f));
  g.compare(m, x, g.vconst(88.7228394f), _CMP_GT_OQ);
  g.blend(m, v, g.vconst(INFINITY));
  g.compare(m, x, x, _CMP_UNORD_Q);
  g.blend(m, v, x);
}

}  // namespace nnvm::jit::x86
