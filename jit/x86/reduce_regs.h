// The reduction kernel's fixed registers and argument-block offsets, shared
// by its two files: reduce_kernel.cpp (the float paths, the prologue's
// expressions, register allocation) and reduce_double.cpp (the sums kept in
// double and logsumexp over columns). Internal to those files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nnvm/jit/x86/reduce_kernel.h"

namespace nnvm::jit::x86::reduce {

inline const Xbyak::Reg64 kCall = Xbyak::util::rdi, kJ = Xbyak::util::r13, kN = Xbyak::util::rcx, kRow = Xbyak::util::r14,
                          kR = Xbyak::util::rdx;
inline const Xbyak::Reg64 kOperandRegs[kMaxReduceOperands] = {
    Xbyak::util::rbx, Xbyak::util::rbp, Xbyak::util::rsi, Xbyak::util::r8,
    Xbyak::util::r9,  Xbyak::util::r10, Xbyak::util::r11, Xbyak::util::r12};
inline const Xbyak::Opmask kTail = Xbyak::util::k1, kOff = Xbyak::util::k3;
inline constexpr int kUnroll = 4;
inline constexpr int kFirstPooled = 4;  // 0-3 are the accumulators

// The pool of vector registers ends at this one, the temporary; after it:
// logsumexp's shift (the row's max), then on AVX2 the tail mask (15).
inline int pool_end(bool avx512, ReduceOp op) { return (avx512 ? 31 : 14) - (op == ReduceOp::kLogSumExp); }
// ReduceKernel's prologue registers: from kFirstPooled to pool_end.
inline std::vector<int> pool(bool avx512, ReduceOp op) {
  std::vector<int> regs;
  for (int r = kFirstPooled; r < pool_end(avx512, op); ++r) regs.push_back(r);
  return regs;
}

inline int32_t ptr_at(int k) { return int32_t(offsetof(ReduceCall, ptr) + 8 * size_t(k)); }
inline int32_t row_stride_at(int k) { return int32_t(offsetof(ReduceCall, row_stride) + 8 * size_t(k)); }
inline int32_t red_stride_at(int k) { return int32_t(offsetof(ReduceCall, red_stride) + 8 * size_t(k)); }

}  // namespace nnvm::jit::x86::reduce

#define NNVM_REDUCE_AT(field) int32_t(offsetof(::nnvm::jit::x86::ReduceCall, field))
