// The reduction kernel's double-precision paths: sums, means and products
// kept in double over rows and over columns (the reference's accumulator,
// in its order), and logsumexp over columns. The class is in
// reduce_kernel.h; its float paths are in reduce_kernel.cpp.
#include <immintrin.h>

#include "nnvm/jit/x86/reduce_kernel.h"
#include "nnvm/jit/x86/reduce_regs.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;
using namespace reduce;

#define AT(field) NNVM_REDUCE_AT(field)

// Sixteen double lanes: AVX-512 zmm0 (lanes 0-7) and zmm1 (8-15), one float
// vector a step; AVX2 ymm0-3 (4 lanes each), two float vectors a step.
void ReduceKernel::generate_rows_double() {
  const int inputs = ir_.inputs;
  const Reg64& out = kOperandRegs[inputs];
  const Xmm temp = vreg(pool_end(avx512(), ir_.reduce));
  const int accs = avx512() ? 2 : 4;
  const bool lse = ir_.reduce == ReduceOp::kLogSumExp;
  for (int k = 0; k <= inputs; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
  xor_(kRow, kRow);
  Label row, vec, tail, done, next;
  L(row);
  if (lse) {  // the row's max, finite, is the shift, stored as the output
    if (!avx512()) {  // the float pass's tail mask: the double pass below rewrites ymm15
      mov(rcx, qword[kCall + AT(tail)]);
      and_(ecx, lanes() - 1);
      emit_tail_mask(kTail, 15);
    }
    pass_op_ = ReduceOp::kMax;
    float_row_pass(temp);
    pass_op_ = ReduceOp::kLogSumExp;
    finite_shift(vreg(0), temp);
    vmovss(dword[out], Xbyak::Xmm(0));
  }
  vmovups(temp, vconst(identity()));
  for (int a = 0; a < accs; ++a) vcvtps2pd(vreg(a), avx512() ? Ymm(temp.getIdx()) : Xbyak::Xmm(temp.getIdx()));
  xor_(kJ, kJ);
  mov(kN, qword[kCall + AT(reduced)]);
  // the float vector u of a 16-element step into its lanes' accumulators
  auto step = [&](int u, bool is_tail) {
    const Xmm v = vreg(evaluate(u, is_tail));
    if (lse) shifted_exp(v, shift());
    if (is_tail) fill_identity(v, temp);
    accumulate_double(vreg(2 * u), vreg(2 * u + 1), v, temp);
    release();
  };
  auto avx2_tail_mask = [&](int first) {  // ymm15 = lanes first.. of the step below kN
    mov(eax, ecx);
    if (first) sub(eax, first);
    vmovd(Xbyak::Xmm(15), eax);
    vpbroadcastd(Ymm(15), Xbyak::Xmm(15));
    vpcmpgtd(Ymm(15), Ymm(15), vconst_iota());
  };
  L(vec);
  cmp(kN, 16);
  jb(tail, T_NEAR);
  for (int u = 0; u < 16 / lanes(); ++u) step(u, false);
  add(kJ, 64);
  sub(kN, 16);
  jmp(vec, T_NEAR);
  L(tail);
  test(kN, kN);
  jz(done, T_NEAR);
  if (avx512()) {
    step(0, true);
  } else {
    avx2_tail_mask(0);
    step(0, true);
    avx2_tail_mask(8);
    step(1, true);
  }
  L(done);
  for (int a = 0; a < accs; ++a) vmovupd(ptr[rsp + a * lanes() * 4], vreg(a));
  const Xbyak::Xmm x0(0);
  vmovsd(x0, qword[rsp]);
  for (int k = 1; k < 16; ++k) {
    if (ir_.reduce == ReduceOp::kProd) vmulsd(x0, x0, qword[rsp + 8 * k]);
    else vaddsd(x0, x0, qword[rsp + 8 * k]);
  }
  Label finished;
  mov(rax, qword[kCall + AT(partial)]);
  test(rax, rax);
  jz(finished, T_NEAR);
  vmovsd(qword[rax + kRow * 8], x0);
  jmp(next, T_NEAR);
  L(finished);
  finish_double_scalar(dword[out]);
  L(next);
  for (int k = 0; k <= inputs; ++k) add(kOperandRegs[k], qword[kCall + row_stride_at(k)]);
  inc(kRow);
  cmp(kRow, qword[kCall + AT(rows)]);
  jb(row, T_NEAR);
}

// A block of reduced rows at a time, and in it a row at a time across every
// inner vector of the call (contiguous runs, as the reference streams whole
// rows): each output's block sum in double, kept in memory at `partial` +
// kInnerBlock, then merged into its total at `partial`; last, the totals
// finished and stored as floats (an int64 result: left in `partial` for the
// caller).
void ReduceKernel::generate_columns_double() {
  const int inputs = ir_.inputs;
  const Reg64& out = kOperandRegs[inputs];
  const Xmm temp = vreg(pool_end(avx512(), ir_.reduce));
  mov(out, qword[kCall + ptr_at(inputs)]);
  auto identity_into = [&](int first) {
    vmovups(temp, vconst(identity()));
    for (int a = first; a < first + 2; ++a)
      vcvtps2pd(vreg(a), avx512() ? Ymm(temp.getIdx()) : Xbyak::Xmm(temp.getIdx()));
  };
  // the doubles of lanes [half * lanes / 2, ...) of vector u from kJ: totals, or (block) the block's sums
  auto sums = [&](int u, int half, bool block) {
    return ptr[rax + kJ * 2 + u * lanes() * 8 + half * lanes() * 4 + (block ? kInnerBlockBytes : 0)];
  };
  // body(vectors, tail) over the vectors of the inner dim from kJ (bytes of float32), the last one masked;
  // whole vectors of sums even in the tail: `partial` holds 2 * kInnerBlock doubles
  auto over_inner = [&](int unroll, auto body) {
    mov(kN, qword[kCall + AT(inner)]);
    float_loop(kJ, kN, unroll, body);
  };
  auto reset = [&](bool block) {
    over_inner(1, [&](int, bool) {
      identity_into(0);
      mov(rax, qword[kCall + AT(partial)]);
      for (int a = 0; a < 2; ++a) vmovupd(sums(0, a, block), vreg(a));
    });
  };
  reset(false);
  for (int k = 0; k < inputs; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
  mov(kR, qword[kCall + AT(reduced)]);
  Label block, row;
  L(block);
  mov(r15, qword[kCall + AT(block)]);
  cmp(kR, r15);
  cmovb(r15, kR);
  sub(kR, r15);
  reset(true);
  L(row);
  over_inner(kUnroll, [&](int vectors, bool tail) {
    prefetch_ahead(vectors);
    for (int u = 0; u < vectors; ++u) {
      const Xmm v = vreg(evaluate(u, tail));
      mov(rax, qword[kCall + AT(partial)]);  // after the loads, which may use rax
      for (int a = 0; a < 2; ++a) vmovupd(vreg(a), sums(u, a, true));
      accumulate_double(vreg(0), vreg(1), v, temp);
      release();
      for (int a = 0; a < 2; ++a) vmovupd(sums(u, a, true), vreg(a));
    }
  });
  for (int k = 0; k < inputs; ++k) add(kOperandRegs[k], qword[kCall + red_stride_at(k)]);
  dec(r15);
  jnz(row, T_NEAR);
  over_inner(1, [&](int, bool) {  // the blocks merge in order
    mov(rax, qword[kCall + AT(partial)]);
    for (int a = 0; a < 2; ++a) {
      vmovupd(vreg(a), sums(0, a, true));
      if (ir_.reduce == ReduceOp::kProd) vmulpd(vreg(a), vreg(a), sums(0, a, false));
      else vaddpd(vreg(a), vreg(a), sums(0, a, false));
      vmovupd(sums(0, a, false), vreg(a));
    }
  });
  test(kR, kR);
  jnz(block, T_NEAR);
  if (double_out_) return;  // the caller converts the sums to int64
  over_inner(1, [&](int, bool tail) {
    mov(rax, qword[kCall + AT(partial)]);
    for (int a = 0; a < 2; ++a) vmovupd(vreg(2 + a), sums(0, a, false));
    if (ir_.reduce == ReduceOp::kMean) {
      if (avx512()) vbroadcastsd(Zmm(temp.getIdx()), qword[kCall + AT(count)]);
      else vbroadcastsd(Ymm(temp.getIdx()), qword[kCall + AT(count)]);
      vdivpd(vreg(2), vreg(2), temp);
      vdivpd(vreg(3), vreg(3), temp);
    }
    if (avx512()) {
      vcvtpd2ps(Ymm(2), Zmm(2));
      vcvtpd2ps(Ymm(3), Zmm(3));
      vinsertf64x4(Zmm(2), Zmm(2), Ymm(3), 1);
    } else {
      vcvtpd2ps(Xbyak::Xmm(2), Ymm(2));
      vcvtpd2ps(Xbyak::Xmm(3), Ymm(3));
      vinsertf128(Ymm(2), Ymm(2), Xbyak::Xmm(3), 1);
    }
    if (!tail) vmovups(ptr[out + kJ], vreg(2));
    else if (avx512()) vmovups(ptr[out + kJ] | kTail, vreg(2));
    else vmaskmovps(ptr[out + kJ], Ymm(15), vreg(2));
  });
}

// Two vectors of the inner dim's outputs at a time (four cache lines of a
// reduced row on AVX-512): the max over every reduced index in order (NaN
// wins), finite, stored as the output and subtracted from there; then per
// output the exps added in double in order (the reference's one run of the
// column), the doubles left in `partial` for the caller's finish.
void ReduceKernel::generate_columns_lse() {
  constexpr int kVectors = 2;  // their double sums fill accumulators 0-3
  const int inputs = ir_.inputs;
  const Reg64& out = kOperandRegs[inputs];
  const Xmm temp = vreg(pool_end(avx512(), ir_.reduce));
  mov(out, qword[kCall + ptr_at(inputs)]);
  auto over_reduced = [&](auto body) {
    for (int k = 0; k < inputs; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
    mov(kR, qword[kCall + AT(reduced)]);
    Label r;
    L(r);
    body();
    for (int k = 0; k < inputs; ++k) add(kOperandRegs[k], qword[kCall + red_stride_at(k)]);
    dec(kR);
    jnz(r, T_NEAR);
  };
  auto chunk = [&](int vectors, bool tail) {
    pass_op_ = ReduceOp::kMax;
    for (int u = 0; u < vectors; ++u) vmovups(vreg(u), vconst(identity()));
    over_reduced([&] {
      for (int u = 0; u < vectors; ++u) {
        extremum(vreg(u), vreg(evaluate(u, tail)), temp);
        release();
      }
    });
    pass_op_ = ReduceOp::kLogSumExp;
    for (int u = 0; u < vectors; ++u) {
      finite_shift(vreg(u), temp);
      if (!tail) vmovups(ptr[out + kJ + u * lanes() * 4], vreg(u));
      else if (avx512()) vmovups(ptr[out + kJ] | kTail, vreg(u));
      else vmaskmovps(ptr[out + kJ], Ymm(15), vreg(u));
    }
    for (int a = 0; a < 2 * vectors; ++a) vxorpd(vreg(a), vreg(a), vreg(a));
    over_reduced([&] {
      for (int u = 0; u < vectors; ++u) {
        const Xmm v = vreg(evaluate(u, tail));
        // a tail's shift stays in its register: the output past it is not ours to read
        if (tail) shifted_exp(v, shift());
        else shifted_exp(v, ptr[out + kJ + u * lanes() * 4]);
        accumulate_double(vreg(2 * u), vreg(2 * u + 1), v, temp);
        release();
      }
    });
    mov(rax, qword[kCall + AT(partial)]);
    for (int u = 0; u < vectors; ++u) {
      vmovupd(ptr[rax + kJ * 2 + u * lanes() * 8], vreg(2 * u));
      vmovupd(ptr[rax + kJ * 2 + u * lanes() * 8 + lanes() * 4], vreg(2 * u + 1));
    }
  };
  mov(kN, qword[kCall + AT(inner)]);
  float_loop(kJ, kN, kVectors, chunk);
}

#undef AT

}  // namespace nnvm::jit::x86
