// The pointwise kernel's fixed registers and argument-block offsets, shared
// by its two halves: pointwise_kernel.cpp (the loop, register allocation and
// arithmetic) and operand_io.cpp (the operand loads and stores: every dtype's
// conversion, gathers, staged and masked tails). Internal to those files.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nnvm/jit/x86/pointwise_kernel.h"

namespace nnvm::jit::x86::pointwise {

inline constexpr int kSlotBytes = 64;  // a stack slot: one vector of any ISA
inline const Xbyak::Reg64 kCall = Xbyak::util::rdi, kCols = Xbyak::util::rcx, kRows = Xbyak::util::rdx;
inline const Xbyak::Reg64 kOperandRegs[kMaxOperands] = {
    Xbyak::util::rbx, Xbyak::util::rbp, Xbyak::util::rsi, Xbyak::util::r8,  Xbyak::util::r9, Xbyak::util::r10,
    Xbyak::util::r11, Xbyak::util::r12, Xbyak::util::r13, Xbyak::util::r14, Xbyak::util::r15};
inline const Xbyak::Opmask kTailMask = Xbyak::util::k1, kGatherMask = Xbyak::util::k3;

inline int32_t ptr_at(int k) { return int32_t(offsetof(PointwiseCall, ptr) + 8 * size_t(k)); }
inline int32_t row_stride_at(int k) { return int32_t(offsetof(PointwiseCall, row_stride) + 8 * size_t(k)); }
inline int32_t vec_step_at(int k) { return int32_t(offsetof(PointwiseCall, vec_step) + 8 * size_t(k)); }
inline int32_t lane_stride_at(int k) { return int32_t(offsetof(PointwiseCall, lane_stride) + 4 * size_t(k)); }

}  // namespace nnvm::jit::x86::pointwise
