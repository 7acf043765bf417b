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

// One block of reduced rows (the caller's: `reduced` at most
// cpu::kColumnBlock): per output the block's sum in double, its rows in
// order, left in `partial`; the caller merges the blocks in order and
// finishes. An inner dim that fits the accumulators (two vectors) is summed
// down every row in registers; a wider one is swept four rows at a time
// across every inner vector, as the reference sweeps (four streams of
// contiguous rows, the next sweep's prefetched), each sum in a register over
// the four rows and in `partial` between sweeps.
void ReduceKernel::generate_columns_double() {
  constexpr int kVectors = 2;  // their double sums fill accumulators 0-3
  const int inputs = ir_.inputs;
  const Reg64& sums = r15;
  const Xmm temp = vreg(pool_end(avx512(), ir_.reduce));
  // the doubles of lanes [half * lanes / 2, ...) of vector u from kJ
  auto at = [&](int u, int half) { return ptr[sums + kJ * 2 + u * lanes() * 8 + half * lanes() * 4]; };
  auto identity_into = [&](int accumulators) {
    vmovups(temp, vconst(identity()));
    for (int a = 0; a < accumulators; ++a)
      vcvtps2pd(vreg(a), avx512() ? Ymm(temp.getIdx()) : Xbyak::Xmm(temp.getIdx()));
  };
  auto store_sums = [&](int vectors) {
    for (int u = 0; u < vectors; ++u)
      for (int a = 0; a < 2; ++a) vmovupd(at(u, a), vreg(2 * u + a));
  };
  // every input `rows` reduced rows on (back, when negative)
  auto move_rows = [&](int rows) {
    for (int k = 0; k < inputs; ++k) {
      if (rows == 1) {
        add(kOperandRegs[k], qword[kCall + red_stride_at(k)]);
        continue;
      }
      mov(rax, qword[kCall + red_stride_at(k)]);
      imul(rax, rax, rows);
      add(kOperandRegs[k], rax);
    }
  };
  // the inputs' current row of `vectors` vectors from kJ into their accumulators
  auto add_row = [&](int vectors, bool tail) {
    for (int u = 0; u < vectors; ++u) {
      accumulate_double(vreg(2 * u), vreg(2 * u + 1), vreg(evaluate(u, tail)), temp);
      release();
    }
  };
  mov(sums, qword[kCall + AT(partial)]);
  for (int k = 0; k < inputs; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
  Label wide, four, one, done;
  cmp(qword[kCall + AT(inner)], kVectors * lanes());
  ja(wide, T_NEAR);
  mov(kN, qword[kCall + AT(inner)]);
  float_loop(kJ, kN, kVectors, [&](int vectors, bool tail) {
    identity_into(2 * vectors);
    mov(kR, qword[kCall + AT(reduced)]);
    Label row;
    L(row);
    add_row(vectors, tail);
    move_rows(1);
    dec(kR);
    jnz(row, T_NEAR);
    for (int k = 0; k < inputs; ++k) {  // back to the block's first row
      mov(rax, qword[kCall + red_stride_at(k)]);
      imul(rax, qword[kCall + AT(reduced)]);
      sub(kOperandRegs[k], rax);
    }
    store_sums(vectors);
  });
  jmp(done, T_NEAR);

  L(wide);
  mov(kN, qword[kCall + AT(inner)]);
  float_loop(kJ, kN, 1, [&](int, bool) {  // whole vectors even in the tail: `partial` holds kInnerBlock doubles
    identity_into(2);
    store_sums(1);
  });
  // `rows` rows from the inputs' pointers across the inner dim, then the pointers `rows` rows on
  auto sweep = [&](int rows) {
    mov(kN, qword[kCall + AT(inner)]);
    float_loop(kJ, kN, kVectors, [&](int vectors, bool tail) {
      for (int u = 0; u < vectors; ++u)
        for (int a = 0; a < 2; ++a) vmovupd(vreg(2 * u + a), at(u, a));
      for (int r = 0; r < rows; ++r) {
        if (r > 0) move_rows(1);
        prefetch_ahead(vectors);
        add_row(vectors, tail);
      }
      if (rows > 1) move_rows(1 - rows);
      store_sums(vectors);
    });
    move_rows(rows);
  };
  mov(kR, qword[kCall + AT(reduced)]);
  L(four);
  cmp(kR, 4);
  jb(one, T_NEAR);
  sweep(4);
  sub(kR, 4);
  jmp(four, T_NEAR);
  L(one);
  test(kR, kR);
  jz(done, T_NEAR);
  sweep(1);
  dec(kR);
  jmp(one, T_NEAR);
  L(done);
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
