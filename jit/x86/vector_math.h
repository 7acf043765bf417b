// Vector math injectors (STYLE: oneDNN's eltwise injectors): each rewrites
// one vector register in place and declares up front how many scratch vector
// registers it clobbers, so a kernel composes them (gelu-tanh = polynomial +
// tanh, tanh = polynomial | exp) without knowing their insides. Written once
// over Generator's ISA helpers: the same steps run on zmm and ymm.
//
// Accuracy (tests/jit/vector_math_test.cpp measures it against double-precision
// libm over [-100, 100] and the specials ±0, ±inf, NaN, ±FLT_MAX, denormals):
//   exp      <= 2 ulp relative on the normal range; a denormal result has an
//            absolute error below 2^-149; +inf above 88.72, 0 below -103.98.
//   log      <= 2 ulp for x > 0 (denormals included); -inf at ±0, NaN below 0.
//   tanh     <= 3 ulp relative (and exactly ±1 for |x| > 9.01).
//   sigmoid  <= 3 ulp relative where the result is normal.
#pragma once

#include "nnvm/jit/x86/generator.h"

namespace nnvm::jit::x86 {

inline constexpr int kExpScratch = 2;
inline constexpr int kSigmoidScratch = 2;
inline constexpr int kTanhScratch = 5;
inline constexpr int kLogScratch = 5;

// `scratch` holds at least the injector's count of registers, none of them `v`.
void emit_exp(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_log(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_tanh(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);
void emit_sigmoid(Generator& g, const Xbyak::Xmm& v, const Xbyak::Xmm* scratch);

}  // namespace nnvm::jit::x86
