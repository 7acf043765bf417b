// Vector math injectors (STYLE: oneDNN's eltwise injectors): each rewrites
// one vector register in place and declares up front how many scratch vector
// registers it clobbers, so a kernel composes them (gelu-tanh = polynomial +
// tanh, tanh = polynomial | exp) without knowing their insides. Written once
// over Generator's ISA helpers: the same steps run on zmm and ymm.
//
// Accuracy (tests/jit/vector_math_test.cpp measures it against double-precision
// libm over [-100, 100] in steps of 5e-4, log-spaced magnitudes in
// [1e-38, 1e38] of both signs, and ±0, ±inf, NaN, ±FLT_MAX, denormals; the
// worst error measured on AVX-512 and AVX2 alike, then the bound the test holds):
//   exp      1.00 ulp (bound 1.5); +inf above 88.72, denormal results
//            rounded once, 0 below -103.98; NaN stays NaN.
//   log      0.74 ulp (bound 1) for x > 0, denormals included; -inf at ±0,
//            NaN below 0 and at NaN, +inf at +inf.
//   tanh     1.10 ulp (bound 2); exactly ±1 for |x| > 9.01.
//   sigmoid  2.23 ulp (bound 3) where the result is a normal float; 0 below
//            -88.72 (the true result is denormal: absolute error < 2^-126).
//   exp_reference  bit-identical to kernels/cpu/exp.h's exp_vec (the test
//            compares every bit over the same inputs): Cephes' 1.7e-7 peak
//            relative error; 0 below -87.34, +inf above 88.72. Used where a
//            JIT result must equal the reference kernel's (logsumexp).
#pragma once

#include "nnvm/jit/x86/generator.h"

namespace nnvm::jit::x86 {

inline constexpr int kExpScratch = 2;
inline constexpr int kSigmoidScratch = 2;
inline constexpr int kTanhScratch = 5;
inline constexpr int kLogScratch = 5;
inline constexpr int kExpReferenceScratch = 4;

// `scratch` holds at least the injector's count of registers, none of them `v`.
void emit_exp(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_log(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_tanh(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_sigmoid(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_exp_reference(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);

}  // namespace nnvm::jit::x86
