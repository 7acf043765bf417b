#include "nnvm/jit/x86/reduce_kernel.h"

#include <immintrin.h>

#include <cmath>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "nnvm/core/error.h"
#include "nnvm/jit/x86/reduce_regs.h"
#include "nnvm/jit/x86/vector_math.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;
using namespace reduce;

#define AT(field) NNVM_REDUCE_AT(field)

bool sums_int32(const LoopIR& ir) {
  if (ir.dtype(size_t(ir.inputs)) != kInt64 || ir.stores.empty()) return false;
  const Expr& e = ir.exprs[size_t(ir.stores[0])];
  return e.prim == Prim::kLoad && ir.dtype(size_t(e.arg)) == kInt32;
}

void load_as_float(Generator& g, const Xmm& dst, DType t, const Reg64& p, const Reg64& j, int u, bool tail,
                   const Reg64& count, bool raw) {
  const int bytes = int(itemsize(t)), lanes = g.lanes();
  if (bytes == 4) {
    const Address src = g.ptr[p + j + u * lanes * 4];
    if (!tail) g.vmovups(dst, src);
    else if (g.avx512()) g.vmovups(dst | k1 | T_z, src);
    else g.vmaskmovps(dst, Ymm(15), src);
    if (t == kInt32 && !raw) g.vcvtdq2ps(dst, dst);
    return;
  }
  g.mov(rax, j);  // the narrow elements' byte offset: j / 4 * bytes
  g.shr(rax, bytes == 2 ? 1 : 2);
  const int32_t at = u * lanes * bytes;
  const AddressFrame& frame = lanes * bytes == 32 ? g.yword : lanes * bytes == 16 ? g.xword : g.qword;
  const Address mem = frame[p + rax + at];
  const Xbyak::Xmm low(dst.getIdx());
  // EVEX masking suppresses faults on the lanes it leaves out; AVX2 has no
  // 8- or 16-bit masked load: the tail's elements one by one into low
  const bool masked = tail && g.avx512();
  if (tail && !g.avx512()) {
    g.vpxor(low, low, low);
    Label done;
    for (int i = 0; i < lanes; ++i) {
      g.cmp(count, u * lanes + i);
      g.jbe(done, CodeGenerator::T_NEAR);
      if (bytes == 2) g.vpinsrw(low, low, g.word[p + rax + at + i * 2], i);
      else g.vpinsrb(low, low, g.byte[p + rax + at + i], i);
    }
    g.L(done);
  }
  const Operand& src = tail && !g.avx512() ? static_cast<const Operand&>(low) : static_cast<const Operand&>(mem);
  emit_widen(g, dst, t, src, masked ? &k1 : nullptr);
}

void broadcast_as_float(Generator& g, const Xmm& dst, DType t, const Reg64& p, bool raw) {
  const Xbyak::Xmm low(dst.getIdx());
  switch (t) {
    case kFloat32: g.vbroadcastss(dst, g.dword[p]); return;
    case kInt32:
      g.vbroadcastss(dst, g.dword[p]);
      if (!raw) g.vcvtdq2ps(dst, dst);
      return;
    case kFloat16: case kBFloat16:
      g.movzx(eax, g.word[p]);
      if (t == kBFloat16) g.shl(eax, 16);
      g.vmovd(low, eax);
      if (t == kFloat16) g.vcvtph2ps(low, low);
      g.vbroadcastss(dst, low);
      return;
    default:
      if (t == kInt8) g.movsx(eax, g.byte[p]);
      else g.movzx(eax, g.byte[p]);
      g.vmovd(low, eax);
      g.vpbroadcastd(dst, low);
      g.vcvtdq2ps(dst, dst);
  }
}

std::string ReduceKernel::declines(const LoopIR& ir, std::string_view accesses, Isa isa) {
  if (isa == Isa::kPortable) return "the ISA is portable";
  if (ir.reduce == ReduceOp::kNone || ir.stores.size() != 1) return "not a reduction IR";
  const int have = pool_end(isa == Isa::kAvx512, ir.reduce) - kFirstPooled;
  if (ir.reduce == ReduceOp::kLogSumExp && have < 1 + kExpScratch)
    return absl::StrCat("logsumexp's exp needs ", 1 + kExpScratch, " vector registers; ", have, " are free");
  return Prologue::declines(ir, accesses, have);
}

ReduceKernel::ReduceKernel(const LoopIR& ir, std::string_view accesses, ReduceAxis axis, Isa isa)
    : Generator(isa),
      ir_(ir),
      raw_int32_(sums_int32(ir)),
      accesses_(accesses), axis_(axis), pass_op_(ir.reduce),
      prologue_(*this, ir, accesses, pool(avx512(), ir.reduce), raw_int32_) {
  const std::string why = declines(ir, accesses, isa);
  NNVM_CHECK(why.empty(), "ReduceKernel", why);
  preamble(in_double() ? 16 * 8 : 0);  // the sixteen double lanes of a row, added in order
  mov(rcx, qword[kCall + AT(tail)]);  // the tail's lanes: length % lanes
  and_(ecx, lanes() - 1);
  emit_tail_mask(kTail, 15);
  if (avx512()) knotw(kOff, kTail);
  if (axis == ReduceAxis::kRows) in_double() ? generate_rows_double() : generate_rows();
  else if (ir.reduce == ReduceOp::kLogSumExp) generate_columns_lse();
  else in_double() ? generate_columns_double() : generate_columns();
  postamble();
  finalize();
}

float ReduceKernel::identity() const {
  switch (pass_op_) {
    case ReduceOp::kMax: return -INFINITY;
    case ReduceOp::kMin: return INFINITY;
    case ReduceOp::kProd: return 1.0f;
    default: return 0.0f;
  }
}

// max/min as the reference's reducer: a NaN in either operand wins.
void ReduceKernel::extremum(const Xmm& acc, const Xmm& v, const Xmm& temp) {
  if (pass_op_ == ReduceOp::kMax) vmaxps(acc, v, acc);  // acc when either is NaN
  else vminps(acc, v, acc);
  const VMask m = mask(temp);
  compare(m, v, v, _CMP_UNORD_Q);
  blend(m, acc, v);
}

void ReduceKernel::combine(const Xmm& acc, const Xmm& v, const Xmm& temp) {
  switch (pass_op_) {
    case ReduceOp::kMax: case ReduceOp::kMin: extremum(acc, v, temp); return;
    case ReduceOp::kProd: vmulps(acc, acc, v); return;
    default: vaddps(acc, acc, v);
  }
}

void ReduceKernel::fill_identity(const Xmm& v, const Xmm& temp) {
  if (avx512()) {
    vmovups(v | kOff, vconst(identity()));
  } else {
    vmovups(temp, vconst(identity()));
    vblendvps(v, temp, v, Ymm(15));
  }
}

void ReduceKernel::accumulate(const Xmm& acc, const Xmm& v, bool tail, const Xmm& temp) {
  if (tail) fill_identity(v, temp);
  combine(acc, v, temp);
}

void ReduceKernel::accumulate_double(const Xmm& lo, const Xmm& hi, const Xmm& v, const Xmm& temp) {
  auto op = [&](const Xmm& acc) {
    if (ir_.reduce == ReduceOp::kNorm2) vmulpd(temp, temp, temp);  // exact: a float's square fits a double
    if (ir_.reduce == ReduceOp::kProd) vmulpd(acc, acc, temp);
    else vaddpd(acc, acc, temp);
  };
  // to double: v's float lanes, or its int32 lanes when summed exactly
  auto widen = [&](const Xmm& d, const Operand& s) { raw_int32_ ? vcvtdq2pd(d, s) : vcvtps2pd(d, s); };
  if (avx512()) {
    widen(Zmm(temp.getIdx()), Ymm(v.getIdx()));
    op(lo);
    vextractf64x4(Ymm(temp.getIdx()), Zmm(v.getIdx()), 1);
    widen(Zmm(temp.getIdx()), Ymm(temp.getIdx()));
  } else {
    widen(Ymm(temp.getIdx()), Xbyak::Xmm(v.getIdx()));
    op(lo);
    vextractf128(Xbyak::Xmm(temp.getIdx()), Ymm(v.getIdx()), 1);
    widen(Ymm(temp.getIdx()), Xbyak::Xmm(temp.getIdx()));
  }
  op(hi);
}

void ReduceKernel::finish_double_scalar(const Address& out) {
  const Xbyak::Xmm x0(0);
  if (ir_.reduce == ReduceOp::kMean) vdivsd(x0, x0, qword[kCall + AT(count)]);
  if (ir_.reduce == ReduceOp::kNorm2) vsqrtsd(x0, x0, x0);
  vcvtsd2ss(x0, x0, x0);
  vmovss(out, x0);
}

void ReduceKernel::float_row_pass(const Xmm& temp) {
  for (int u = 0; u < kUnroll; ++u) vmovups(vreg(u), vconst(identity()));
  mov(kN, qword[kCall + AT(reduced)]);
  float_loop(kJ, kN, kUnroll, [&](int vectors, bool is_tail) {
    for (int u = 0; u < vectors; ++u) {
      const int v = evaluate(u, is_tail);
      accumulate(vreg(u), vreg(v), is_tail, temp);
      release();
    }
  });
  combine(vreg(0), vreg(1), temp);
  combine(vreg(2), vreg(3), temp);
  combine(vreg(0), vreg(2), temp);
  butterfly(vreg(0), vreg(1), [&] { combine(vreg(0), vreg(1), temp); });
}

void ReduceKernel::finite_shift(const Xmm& m, const Xmm& temp) {
  const VMask inf = mask(temp);
  vand(temp, m, vconst_bits(0x7fffffffu));
  compare(inf, temp, vconst(INFINITY), _CMP_EQ_OQ);
  blend(inf, m, vconst(0.0f));
  vmovaps(shift(), m);
}

void ReduceKernel::shifted_exp(const Xmm& v, const Operand& shift) {
  vsubps(v, v, shift);
  Xmm scratch[kExpScratch];
  int regs[kExpScratch];
  for (int s = 0; s < kExpScratch; ++s) scratch[s] = vreg(regs[s] = alloc());
  emit_exp(*this, v, scratch);
  for (int s = 0; s < kExpScratch; ++s) free_reg(regs[s]);
}

Xmm ReduceKernel::shift() const { return vreg(pool_end(avx512(), ir_.reduce) + 1); }

void ReduceKernel::generate_rows() {
  const int inputs = ir_.inputs;
  const Reg64& out = kOperandRegs[inputs];
  const Xmm temp = vreg(pool_end(avx512(), ir_.reduce));
  for (int k = 0; k <= inputs; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
  xor_(kRow, kRow);
  Label row;
  L(row);
  float_row_pass(temp);
  vmovss(dword[out], Xbyak::Xmm(0));
  for (int k = 0; k <= inputs; ++k) add(kOperandRegs[k], qword[kCall + row_stride_at(k)]);
  inc(kRow);
  cmp(kRow, qword[kCall + AT(rows)]);
  jb(row, T_NEAR);
}

void ReduceKernel::prefetch_ahead(int vectors) {
  for (int k = 0; k < ir_.inputs; ++k) {
    if (accesses_[size_t(k)] != 'c' || itemsize(ir_.dtype(size_t(k))) != 4) continue;
    mov(rax, qword[kCall + red_stride_at(k)]);
    lea(rax, ptr[kJ + rax * 4]);  // four rows on
    for (int32_t at = 0; at < vectors * lanes() * 4; at += 64) prefetcht1(ptr[kOperandRegs[k] + rax + at]);
  }
}

void ReduceKernel::generate_columns() {
  const int inputs = ir_.inputs;
  const Reg64& out = kOperandRegs[inputs];
  const Xmm temp = vreg(pool_end(avx512(), ir_.reduce));
  mov(out, qword[kCall + ptr_at(inputs)]);
  // `vectors` vectors of the inner dim from kJ, each reduced over every reduced index.
  auto chunk = [&](int vectors, bool tail) {
    for (int u = 0; u < vectors; ++u) vmovups(vreg(u), vconst(identity()));
    for (int k = 0; k < inputs; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
    mov(kR, qword[kCall + AT(reduced)]);
    Label r;
    L(r);
    for (int u = 0; u < vectors; ++u) {
      const int v = evaluate(u, tail);
      combine(vreg(u), vreg(v), temp);  // lanes past the data are never stored
      release();
    }
    for (int k = 0; k < inputs; ++k) add(kOperandRegs[k], qword[kCall + red_stride_at(k)]);
    dec(kR);
    jnz(r, T_NEAR);
    for (int u = 0; u < vectors; ++u) {
      if (!tail) vmovups(ptr[out + kJ + u * lanes() * 4], vreg(u));
      else if (avx512()) vmovups(ptr[out + kJ] | kTail, vreg(u));
      else vmaskmovps(ptr[out + kJ], Ymm(15), vreg(u));
    }
  };
  mov(kN, qword[kCall + AT(inner)]);
  float_loop(kJ, kN, kUnroll, chunk);
}

#undef AT

}  // namespace nnvm::jit::x86
