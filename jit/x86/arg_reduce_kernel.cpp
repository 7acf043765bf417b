#include "nnvm/jit/x86/arg_reduce_kernel.h"

#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include "nnvm/core/error.h"
#include "nnvm/jit/x86/reduce_regs.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;
using namespace reduce;

#define AT(field) NNVM_REDUCE_AT(field)

namespace {

const Reg64 kOut = r15;  // the output (kOperandRegs hold the inputs)
const Opmask kHigh = k3, kA = k4, kB = k5, kPast = k6;
// Vector registers: per unrolled vector u the best values (u) and their
// indices (4 + u); the current index, temporaries, on AVX2 the tail mask. The
// others are the prologue's.
constexpr int kBest = 0, kIndex = 4, kAt = 8, kXv = 9, kT0 = 10, kT1 = 11, kT2 = 12, kT3 = 13, kMaskReg = 15;
constexpr uint32_t kNone = kArgNone;  // an index no element has
constexpr int32_t kStateIndex = kArgStateIndex;

// The prologue's registers while `unroll` vectors of outputs are kept.
std::vector<int> pool(bool avx512, int unroll) {
  std::vector<int> regs;
  for (int r = 0; r < (avx512 ? 32 : 16); ++r) {
    const bool kept = (r >= kBest && r < kBest + unroll) || (r >= kIndex && r < kIndex + unroll);
    if (!kept && r != kAt && (r < kT0 || r > kT3) && r != kMaskReg) regs.push_back(r);
  }
  return regs;
}

// Vectors of outputs a step keeps: kColumns four, unless the prologue needs their registers.
int unroll_for(const LoopIR& ir, ReduceAxis axis, bool avx512) {
  const bool fits = Prologue::pressure(ir) <= int(pool(avx512, kUnroll).size());
  return axis == ReduceAxis::kColumns && fits ? kUnroll : 1;
}

}  // namespace

std::string ArgReduceKernel::declines(const LoopIR& ir, std::string_view accesses, Isa isa) {
  if (isa == Isa::kPortable) return "the ISA is portable";
  if ((ir.reduce != ReduceOp::kArgMax && ir.reduce != ReduceOp::kArgMin) || ir.stores.size() != 1)
    return "not an arg-reduction IR";
  return Prologue::declines(ir, accesses, int(pool(isa == Isa::kAvx512, 1).size()));
}

ArgReduceKernel::ArgReduceKernel(const LoopIR& ir, std::string_view accesses, ReduceAxis axis, Isa isa)
    : Generator(isa),
      max_(ir.reduce == ReduceOp::kArgMax),
      inputs_(ir.inputs),
      unroll_(unroll_for(ir, axis, isa == Isa::kAvx512)),
      prologue_(*this, ir, accesses, pool(isa == Isa::kAvx512, unroll_), false) {
  const std::string why = declines(ir, accesses, isa);
  NNVM_CHECK(why.empty(), "ArgReduceKernel", why);
  preamble(0);
  mov(rcx, qword[kCall + AT(tail)]);
  and_(ecx, lanes() - 1);
  emit_tail_mask(kTail, kMaskReg);
  if (avx512()) {
    kshiftrw(kHigh, kTail, 8);
    knotw(kPast, kTail);
  }
  if (axis == ReduceAxis::kRows) generate_rows();
  else generate_columns();
  postamble();
  finalize();
}

void ArgReduceKernel::update(int u, const Xmm& x, const Xmm& at) {
  const Xmm best = vreg(kBest + u), index = vreg(kIndex + u);
  const int better = max_ ? _CMP_GT_OQ : _CMP_LT_OQ;
  if (avx512()) {
    vcmpps(k2, x, best, better);
    vcmpps(kA, x, x, _CMP_UNORD_Q);
    vcmpps(kB, best, best, _CMP_ORD_Q);
    kandw(kA, kA, kB);
    korw(k2, k2, kA);
    vmovaps(best | k2, x);
    vmovdqa32(index | k2, at);
  } else {
    const Ymm m(kT0), nan(kT1), ord(kT2);
    vcmpps(m, Ymm(x.getIdx()), Ymm(best.getIdx()), better);
    vcmpps(nan, Ymm(x.getIdx()), Ymm(x.getIdx()), _CMP_UNORD_Q);
    vcmpps(ord, Ymm(best.getIdx()), Ymm(best.getIdx()), _CMP_ORD_Q);
    vandps(nan, nan, ord);
    vorps(m, m, nan);
    vblendvps(Ymm(best.getIdx()), Ymm(best.getIdx()), Ymm(x.getIdx()), m);
    vblendvps(Ymm(index.getIdx()), Ymm(index.getIdx()), Ymm(at.getIdx()), m);
  }
}

// The best value over the lanes (a NaN when any lane holds one) in every lane
// of kT0, then the smallest index among the lanes holding it.
void ArgReduceKernel::horizontal_index() {
  const Xmm best = vreg(kBest), index = vreg(kIndex), h = vreg(kT0), t = vreg(kT1), m = vreg(kT2);
  vmovaps(h, best);
  auto extremum = [&] {  // h = best of (h, t), NaN wins
    const VMask nan = mask(m);
    if (max_) vmaxps(h, t, h);
    else vminps(h, t, h);
    compare(nan, t, t, _CMP_UNORD_Q);
    blend(nan, h, t);
  };
  butterfly(h, t, extremum);
  // candidates: lanes equal to the best, or NaN (only when the best is NaN)
  const Xmm cand = vreg(kXv);
  if (avx512()) {
    vcmpps(k2, best, h, _CMP_EQ_OQ);
    vcmpps(kA, best, best, _CMP_UNORD_Q);
    korw(k2, k2, kA);
    vmovups(h, vconst_bits(kNone));
    vmovdqa32(h | k2, index);
  } else {
    vcmpps(Ymm(cand.getIdx()), Ymm(best.getIdx()), Ymm(h.getIdx()), _CMP_EQ_OQ);
    vcmpps(Ymm(m.getIdx()), Ymm(best.getIdx()), Ymm(best.getIdx()), _CMP_UNORD_Q);
    vorps(Ymm(cand.getIdx()), Ymm(cand.getIdx()), Ymm(m.getIdx()));
    vmovups(h, vconst_bits(kNone));
    vblendvps(Ymm(h.getIdx()), Ymm(h.getIdx()), Ymm(index.getIdx()), Ymm(cand.getIdx()));
  }
  butterfly(h, t, [&] { vpminsd(h, h, t); });
  vmovd(eax, Xbyak::Xmm(h.getIdx()));
  xor_(edx, edx);
  cmp(eax, kNone);
  cmove(eax, edx);
}

void ArgReduceKernel::generate_rows() {
  const Xmm at = vreg(kAt), t0 = vreg(kT0);
  const float identity = max_ ? -INFINITY : INFINITY;
  for (int k = 0; k < inputs_; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
  mov(kOut, qword[kCall + ptr_at(inputs_)]);
  xor_(kRow, kRow);
  Label row, vec, tail, done;
  L(row);
  vmovups(vreg(kBest), vconst(identity));
  vmovups(vreg(kIndex), vconst_bits(kNone));
  vmovups(at, vconst_iota());
  xor_(kJ, kJ);
  mov(kN, qword[kCall + AT(reduced)]);
  L(vec);
  cmp(kN, lanes());
  jb(tail, T_NEAR);
  update(0, vreg(prologue_.evaluate(0, false)), at);
  prologue_.release();
  vpaddd(at, at, vconst_bits(uint32_t(lanes())));
  add(kJ, lanes() * 4);
  sub(kN, lanes());
  jmp(vec, T_NEAR);
  L(tail);
  test(kN, kN);
  jz(done, T_NEAR);
  const Xmm x = vreg(prologue_.evaluate(0, true));
  if (avx512()) {  // the lanes past the row: never better
    vmovups(x | kPast, vconst(identity));
  } else {
    vmovups(t0, vconst(identity));
    vblendvps(Ymm(x.getIdx()), Ymm(t0.getIdx()), Ymm(x.getIdx()), Ymm(kMaskReg));
  }
  update(0, x, at);
  prologue_.release();
  L(done);
  horizontal_index();
  mov(qword[kOut], rax);  // eax's write zeroed the upper half: a non-negative index
  for (int k = 0; k < inputs_; ++k) add(kOperandRegs[k], qword[kCall + row_stride_at(k)]);
  add(kOut, qword[kCall + row_stride_at(inputs_)]);
  inc(kRow);
  cmp(kRow, qword[kCall + AT(rows)]);
  jb(row, T_NEAR);
}

void ArgReduceKernel::store_indices(int u, bool tail) {
  const Xmm index = vreg(kIndex + u);
  const int32_t at = u * lanes() * 8;
  if (avx512()) {
    const Zmm lo(kT0), hi(kT1);
    vpmovsxdq(lo, Ymm(index.getIdx()));
    vextracti64x4(Ymm(kT1), Zmm(index.getIdx()), 1);
    vpmovsxdq(hi, Ymm(kT1));
    if (!tail) {
      vmovdqu64(ptr[kOut + kJ * 2 + at], lo);
      vmovdqu64(ptr[kOut + kJ * 2 + at + 64], hi);
    } else {
      vmovdqu64(ptr[kOut + kJ * 2] | kTail, lo);
      vmovdqu64(ptr[kOut + kJ * 2 + 64] | kHigh, hi);
    }
    return;
  }
  const Ymm lo(kT0), hi(kT1), mlo(kT2), mhi(kT3);
  vpmovsxdq(lo, Xbyak::Xmm(index.getIdx()));
  vextracti128(Xbyak::Xmm(kT1), Ymm(index.getIdx()), 1);
  vpmovsxdq(hi, Xbyak::Xmm(kT1));
  if (!tail) {
    vmovdqu(ptr[kOut + kJ * 2 + at], lo);
    vmovdqu(ptr[kOut + kJ * 2 + at + 32], hi);
    return;
  }
  vpmovsxdq(mlo, Xbyak::Xmm(kMaskReg));
  vextracti128(Xbyak::Xmm(kT3), Ymm(kMaskReg), 1);
  vpmovsxdq(mhi, Xbyak::Xmm(kT3));
  vpmaskmovq(ptr[kOut + kJ * 2], mlo, lo);
  vpmaskmovq(ptr[kOut + kJ * 2 + 32], mhi, hi);
}

// A row at a time across the call's outputs, so the rows stream whole from
// memory: each output's best value and index live in `partial` (the floats,
// then from kStateIndex bytes on the int32 indices), read and written back
// around each vector's update.
void ArgReduceKernel::generate_columns() {
  const Xmm at = vreg(kAt);
  const Reg64& state = kOut;  // the output's pointer is read only at the end
  auto best_at = [&](int u) { return ptr[state + kJ + u * lanes() * 4]; };
  auto index_at = [&](int u) { return ptr[state + kJ + kStateIndex + u * lanes() * 4]; };
  auto over_inner = [&](int unroll, auto body) {
    mov(kN, qword[kCall + AT(inner)]);
    float_loop(kJ, kN, unroll, body);
  };
  mov(state, qword[kCall + AT(partial)]);
  vmovups(vreg(kT0), vconst(max_ ? -INFINITY : INFINITY));
  vmovups(vreg(kT1), vconst_bits(kNone));
  over_inner(kUnroll, [&](int vectors, bool) {  // whole vectors: `partial` holds kInnerBlock outputs
    for (int u = 0; u < vectors; ++u) {
      vmovups(best_at(u), vreg(kT0));
      vmovups(index_at(u), vreg(kT1));
    }
  });
  for (int k = 0; k < inputs_; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
  vpxor(Xbyak::Xmm(at.getIdx()), Xbyak::Xmm(at.getIdx()), Xbyak::Xmm(at.getIdx()));  // zeroes the whole register
  mov(kR, qword[kCall + AT(reduced)]);
  Label row;
  L(row);
  over_inner(unroll_, [&](int vectors, bool tail) {  // lanes past the data are never stored
    for (int u = 0; u < vectors; ++u) {
      const Xmm x = vreg(prologue_.evaluate(u, tail));
      vmovups(vreg(kBest + u), best_at(u));
      vmovups(vreg(kIndex + u), index_at(u));
      update(u, x, at);
      prologue_.release();
      vmovups(best_at(u), vreg(kBest + u));
      vmovups(index_at(u), vreg(kIndex + u));
    }
  });
  vpaddd(at, at, vconst_bits(1));
  for (int k = 0; k < inputs_; ++k) add(kOperandRegs[k], qword[kCall + red_stride_at(k)]);
  dec(kR);
  jnz(row, T_NEAR);
  mov(rax, state);
  mov(kOut, qword[kCall + ptr_at(inputs_)]);
  over_inner(kUnroll, [&](int vectors, bool tail) {  // lanes that saw nothing better than the identity: index 0
    const Xmm none = vreg(kT0);
    for (int u = 0; u < vectors; ++u) {
      const Xmm index = vreg(kIndex + u);
      vmovups(index, ptr[rax + kJ + kStateIndex + u * lanes() * 4]);
      if (avx512()) {
        vpcmpeqd(k2, index, vconst_bits(kNone));
        vpxord(none, none, none);
        vmovdqa32(index | k2, none);
      } else {
        vpcmpeqd(Ymm(none.getIdx()), Ymm(index.getIdx()), vconst_bits(kNone));
        vpandn(Ymm(index.getIdx()), Ymm(none.getIdx()), Ymm(index.getIdx()));
      }
      store_indices(u, tail);
    }
  });
}

#undef AT

}  // namespace nnvm::jit::x86
