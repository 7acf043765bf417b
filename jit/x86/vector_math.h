// Vector math injectors (STYLE: oneDNN's eltwise injectors): each rewrites
// one vector register in place and declares up front how many scratch vector
// registers it clobbers, so a kernel composes them (softplus = exp, then
// log1p = log + a correction) without knowing their insides. Written once
// over Generator's ISA helpers: the same steps run on zmm and ymm.
//
// Accuracy (tests/jit/vector_math_test.cpp measures it against double-precision
// libm over [-100, 100] in steps of 5e-4, log-spaced magnitudes in
// [1e-38, 1e38] of both signs, and ±0, ±inf, NaN, ±FLT_MAX, denormals; the
// worst error measured on AVX-512 and AVX2 alike, then the bound the test holds):
//   exp      1.00 ulp (bound 1.5); +inf above 88.72, denormal results
//            rounded once, 0 below -103.98; NaN stays NaN. Bit-identical to
//            kernels/cpu/exp.h's exp_vec (the test compares every bit over
//            the same inputs), and so sigmoid to the reference kernel's;
//            so are tanh, erf, exp2, expm1, log and log1p (but for the
//            sign of a zero) to their kernels/cpu/exp.h functions.
//   log      0.74 ulp (bound 1) for x > 0, denormals included; -inf at ±0,
//            NaN below 0 and at NaN, +inf at +inf.
//   tanh     4.41 ulp (bound 5): a rational fit, cheap rather than exact
//            (3.5 ulp below |x| = 5); |x| is clamped to 9.
//   sigmoid  2.23 ulp (bound 3) where the result is a normal float; 0 below
//            -88.72 (the true result is denormal: absolute error < 2^-126).
//   exp2     0.94 ulp (bound 1.5); the range of exp in powers of 2.
//   erf      1.42 ulp (bound 2); ±1 beyond |x| = 4.
//   expm1    1.37 ulp (bound 2), relative near 0 (no e^x - 1 cancellation);
//            -1 below -87, +inf above 88.72.
//   log1p    1.43 ulp (bound 2), relative near 0 (denormals kept); -inf
//            at -1, NaN below.
//   softplus 2.52 ulp (bound 3) against the reference's rule over beta in
//            {1, 2, 0.5, -1.5} and its threshold, where the result is a
//            normal float (e^(x beta) flushes to 0 below -103.98).
//   pow      1.70 ulp for |y| <= 7, 2.20 at y = 12.5, 4.34 at y = -25 (bound
//            2 + |y| / 10: log's error times |y|) where the result is a normal
//            float; std::pow's special cases exactly (±0, ±inf, NaN, x < 0).
//   elu as expm1's; leaky_relu, sign and the roundings (vroundps) exact.
// Composed in the kernels (tests/jit/activation_accuracy_test.cpp, the same
// sweep; ulps of max(|result|, |x| / 16), since x times a vanishing factor
// cancels far below x):
//   gelu       10.4 ulp (bound 12): erf's error, scaled where 1 + erf cancels.
//   gelu_tanh  31.0 ulp (bound 36): tanh's, scaled the same way near x = -4.
//   silu       2.07 ulp (bound 3).
#pragma once

#include "nnvm/jit/loop_ir.h"
#include "nnvm/jit/x86/generator.h"

namespace nnvm::jit::x86 {

inline constexpr int kExpScratch = 2;
inline constexpr int kSigmoidScratch = 2;
inline constexpr int kTanhScratch = 3;
inline constexpr int kLogScratch = 5;
inline constexpr int kErfScratch = 5;
inline constexpr int kExpm1Scratch = 2;
inline constexpr int kLog1pScratch = 2 + kLogScratch;
inline constexpr int kSoftplusScratch = 1 + kLog1pScratch;
inline constexpr int kPowScratch = 7;
inline constexpr int kMaxInjectorScratch = 8;

// `scratch` holds at least the injector's count of registers, none of them `v`.
void emit_exp(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_log(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_tanh(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_sigmoid(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
// e^v for v <= 0 or NaN only (2 scratch): emit_exp's bits on [-87.33, 0], 0 below.
void emit_exp_nonpositive(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_erf(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_expm1(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_log1p(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
// v = softplus(v; beta, threshold), the operands holding the Scalars in every lane.
void emit_softplus(Generator& g, const Xbyak::Xmm& v, const Xbyak::Operand& beta, const Xbyak::Operand& threshold,
                   const Xbyak::Xmm* scratch);
void emit_exp2(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
// v = pow(v, y), y holding the exponents.
void emit_pow(Generator& g, const Xbyak::Xmm& v, const Xbyak::Operand& y, const Xbyak::Xmm* scratch);

// The kernels' one dispatch over injector primitives: the scratch count of
// `p` (0 when it has no injector), and v = p(v, b, c), where b and c are the
// expression's other operands (softplus's beta and threshold, pow's exponent), ignored by
// the unary ones.
int injector_scratch(Prim p);
void emit_injector(Generator& g, Prim p, const Xbyak::Xmm& v, const Xbyak::Operand& b, const Xbyak::Operand& c,
                   const Xbyak::Xmm* scratch);

// d = x truncated toward zero to int32, wrapped to the width of `to` (int32,
// uint8, int8), back to float32: the kCast both kernels emit.
void emit_cast(Generator& g, const Xbyak::Xmm& d, const Xbyak::Xmm& x, DType to);

// dst = the lanes of narrow dtype t (float16, bfloat16, bool, uint8, int8) at
// src (memory, or a register's low bits) widened to float32, exactly; `mask`:
// EVEX zero-masking of the lanes a tail leaves out (faults suppressed there).
// The load both kernels emit.
void emit_widen(Generator& g, const Xbyak::Xmm& dst, DType t, const Xbyak::Operand& src,
                const Xbyak::Opmask* mask = nullptr);

}  // namespace nnvm::jit::x86
