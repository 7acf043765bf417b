#include "nnvm/jit/x86/pointwise_kernel.h"

#include <immintrin.h>

#include <cstddef>

#include "absl/strings/str_cat.h"
#include "nnvm/core/error.h"
#include "nnvm/jit/x86/vector_math.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;

namespace {

constexpr int32_t kFree = -1, kTemp = -2, kReserved = -3;
constexpr int kSlotBytes = 64;
const Reg64 kCall = rdi, kCols = rcx, kRows = rdx;
const Reg64 kOperandRegs[kMaxOperands] = {rbx, rbp, rsi, r8, r9, r10, r11, r12, r13, r14, r15};
const Opmask kTailMask = k1, kGatherMask = k3;

int32_t ptr_at(int k) { return int32_t(offsetof(PointwiseCall, ptr) + 8 * size_t(k)); }
int32_t row_stride_at(int k) { return int32_t(offsetof(PointwiseCall, row_stride) + 8 * size_t(k)); }
int32_t vec_step_at(int k) { return int32_t(offsetof(PointwiseCall, vec_step) + 8 * size_t(k)); }
int32_t lane_stride_at(int k) { return int32_t(offsetof(PointwiseCall, lane_stride) + 4 * size_t(k)); }

}  // namespace

std::string PointwiseKernel::declines(const LoopIR& ir, std::string_view accesses, Isa isa) {
  const size_t operands = size_t(ir.inputs) + ir.stores.size();
  if (isa == Isa::kPortable) return "the ISA is portable";
  if (operands > size_t(kMaxOperands))
    return absl::StrCat(operands, " operands; the kernel keeps at most ", kMaxOperands, " pointers in registers");
  if (ir.args.size() > size_t(kMaxArgs)) return absl::StrCat(ir.args.size(), " Scalar arguments; at most ", kMaxArgs);
  if (ir.exprs.size() > size_t(kMaxExprs)) return absl::StrCat(ir.exprs.size(), " expressions; at most ", kMaxExprs);
  NNVM_CHECK(accesses.size() == operands, "PointwiseKernel", "an access per operand: got ", accesses.size(),
             " for ", operands);
  int strided = 0;
  for (size_t k = 0; k < operands; ++k) {
    if (int32_t(k) >= ir.inputs && accesses[k] != 'c')
      return absl::StrCat("output ", k - size_t(ir.inputs), " is not contiguous along the inner dim");
    strided += accesses[k] == 's';
  }
  if (strided > kMaxStrided) return absl::StrCat(strided, " strided inputs; at most ", kMaxStrided);
  for (size_t k = 0; k < operands; ++k) {
    const DType t = ir.dtype(k);
    if (t == kInt64 || t == kFloat64) return absl::StrCat("operand ", k, " is ", std::string(dtype_name(t)));
  }
  return {};
}

PointwiseKernel::PointwiseKernel(const LoopIR& ir, std::string_view accesses, Isa isa, bool stream)
    : Generator(isa), ir_(ir), accesses_(accesses), stream_(stream) {
  const std::string why = declines(ir, accesses, isa);
  NNVM_CHECK(why.empty(), "PointwiseKernel", why);
  last_use_.assign(ir.exprs.size(), -1);
  invariant_.assign(ir.exprs.size(), false);
  for (size_t i = 0; i < ir.exprs.size(); ++i) {
    const Expr& e = ir.exprs[i];
    bool invariant = e.prim != Prim::kLoad;
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) {
        last_use_[size_t(o)] = int32_t(i);
        invariant = invariant && invariant_[size_t(o)];
      }
    invariant_[i] = invariant;
  }
  stored_by_.resize(ir.exprs.size());
  for (size_t o = 0; o < ir.stores.size(); ++o) stored_by_[size_t(ir.stores[o])].push_back(int32_t(o));
  generate();
  finalize();
}

void PointwiseKernel::generate() {
  const int operands = int(accesses_.size());
  // reserved vector registers, from the top: AVX2's tail mask, then gather lane offsets
  int top = num_vregs() - 1;
  if (!avx512()) tail_mask_reg_ = top--;
  gather_reg_.assign(size_t(operands), -1);
  for (int k = 0; k < operands; ++k)
    if (accesses_[size_t(k)] == 's' && elem_bytes(k) == 4) gather_reg_[size_t(k)] = top--;

  // stack: a spill slot per expression, a hoisted slot per expression, the staging slot
  preamble((2 * int64_t(ir_.exprs.size()) + 1) * kSlotBytes);
  for (int k = 0; k < operands; ++k) {
    if (gather_reg_[size_t(k)] < 0) continue;
    const Xmm g = vreg(gather_reg_[size_t(k)]);
    vpbroadcastd(g, dword[kCall + lane_stride_at(k)]);
    vpmulld(g, g, vconst_iota());
  }
  emit_invariants();
  Label row, unrolled, vec, tail, row_end;
  mov(kRows, qword[kCall + int32_t(offsetof(PointwiseCall, rows))]);
  L(row);
  for (int k = 0; k < operands; ++k) mov(kOperandRegs[k], qword[kCall + ptr_at(k)]);
  mov(kCols, qword[kCall + int32_t(offsetof(PointwiseCall, cols))]);
  L(unrolled);
  cmp(kCols, kUnroll * lanes());
  jb(vec, T_NEAR);
  for (int u = 0; u < kUnroll; ++u) {
    emit_body(false, u);
    advance_strided();
  }
  for (int k = 0; k < operands; ++k)
    if (accesses_[size_t(k)] == 'c') add(kOperandRegs[k], kUnroll * lanes() * elem_bytes(k));
  sub(kCols, kUnroll * lanes());
  jmp(unrolled, T_NEAR);
  L(vec);
  cmp(kCols, lanes());
  jb(tail, T_NEAR);
  emit_body(false);
  advance_strided();
  for (int k = 0; k < operands; ++k)
    if (accesses_[size_t(k)] == 'c') add(kOperandRegs[k], lanes() * elem_bytes(k));
  sub(kCols, lanes());
  jmp(vec, T_NEAR);
  L(tail);
  test(kCols, kCols);
  jz(row_end, T_NEAR);
  emit_tail_mask(kTailMask, tail_mask_reg_);  // kCols is rcx: the tail's length
  emit_body(true);
  L(row_end);
  for (int k = 0; k < operands; ++k) {
    mov(rax, qword[kCall + row_stride_at(k)]);
    add(qword[kCall + ptr_at(k)], rax);
  }
  dec(kRows);
  jnz(row, T_NEAR);
  if (stream_) sfence();  // non-temporal stores are weakly ordered: visible before the caller goes on
  postamble();
}

void PointwiseKernel::advance_strided() {
  for (size_t k = 0; k < accesses_.size(); ++k)
    if (accesses_[k] == 's') add(kOperandRegs[k], qword[kCall + vec_step_at(int(k))]);
}

void PointwiseKernel::reset_allocation() {
  loc_.assign(ir_.exprs.size(), Location{});
  holder_.assign(size_t(num_vregs()), kFree);
  for (int32_t g : gather_reg_)
    if (g >= 0) holder_[size_t(g)] = kReserved;
  if (tail_mask_reg_ >= 0) holder_[size_t(tail_mask_reg_)] = kReserved;
  pinned_.assign(size_t(num_vregs()), false);
  free_slots_.clear();
  for (int s = int(ir_.exprs.size()) - 1; s >= 0; --s) free_slots_.push_back(s);
}

// Each invariant expression once, into its hoisted slot; its operands are
// Scalars, constants or hoisted values, all in memory.
void PointwiseKernel::emit_invariants() {
  for (pos_ = 0; pos_ < int32_t(ir_.exprs.size()); ++pos_) {
    const Prim p = ir_.exprs[size_t(pos_)].prim;
    if (!invariant_[size_t(pos_)] || p == Prim::kArg || p == Prim::kConst) continue;
    if (last_use_[size_t(pos_)] < 0 && stored_by_[size_t(pos_)].empty()) continue;
    reset_allocation();
    emit_expr(pos_, false);
    vmovups(memory_of(pos_), vreg(loc_[size_t(pos_)].reg));
  }
}

void PointwiseKernel::emit_body(bool tail, int vector) {
  reset_allocation();
  vector_ = vector;
  for (pos_ = 0; pos_ < int32_t(ir_.exprs.size()); ++pos_) {
    if (last_use_[size_t(pos_)] < 0 && stored_by_[size_t(pos_)].empty()) continue;  // read by nothing
    if (!invariant_[size_t(pos_)]) emit_expr(pos_, tail);
    for (int32_t o : stored_by_[size_t(pos_)]) emit_store(o, pos_, tail);
    pinned_.assign(pinned_.size(), false);
    // values whose last reader this was die, and so does a value only stored
    const Expr& e = ir_.exprs[size_t(pos_)];
    for (int32_t o : {e.a, e.b, e.c, pos_}) {
      if (o < 0 || live_after(o, pos_)) continue;
      Location& l = loc_[size_t(o)];
      if (l.reg >= 0 && holder_[size_t(l.reg)] == o) free_reg(l.reg);
      if (l.slot >= 0) free_slots_.push_back(l.slot);
      l = Location{};
    }
  }
}

void PointwiseKernel::free_reg(int r) {
  if (holder_[size_t(r)] >= 0) loc_[size_t(holder_[size_t(r)])].reg = -1;
  holder_[size_t(r)] = kFree;
}

int PointwiseKernel::alloc() {
  for (int r = 0; r < num_vregs(); ++r)
    if (holder_[size_t(r)] == kFree) return r;
  // spill the value read furthest ahead
  int victim = -1;
  for (int r = 0; r < num_vregs(); ++r) {
    const int32_t e = holder_[size_t(r)];
    if (e < 0 || pinned_[size_t(r)]) continue;
    if (victim < 0 || last_use_[size_t(e)] > last_use_[size_t(holder_[size_t(victim)])]) victim = r;
  }
  NNVM_CHECK(victim >= 0, "PointwiseKernel", "no vector register left to spill");
  evict(holder_[size_t(victim)]);
  return victim;
}

void PointwiseKernel::evict(int32_t e) {
  Location& l = loc_[size_t(e)];
  if (!in_own_memory(e)) {
    l.slot = free_slots_.back();
    free_slots_.pop_back();
    vmovups(ptr[rsp + l.slot * kSlotBytes], vreg(l.reg));
  }
  holder_[size_t(l.reg)] = kFree;
  l.reg = -1;
}

bool PointwiseKernel::in_own_memory(int32_t e) const { return invariant_[size_t(e)]; }

Address PointwiseKernel::memory_of(int32_t e) {
  const Expr& x = ir_.exprs[size_t(e)];
  if (x.prim == Prim::kConst) return vconst(x.value);
  const int32_t hoisted = int32_t(ir_.exprs.size()) + e;
  const RegExp at = x.prim == Prim::kArg     ? kCall + int32_t(offsetof(PointwiseCall, args)) + x.arg * kSlotBytes
                    : invariant_[size_t(e)] ? rsp + hoisted * kSlotBytes
                                            : rsp + loc_[size_t(e)].slot * kSlotBytes;
  return avx512() ? zword[at] : yword[at];
}

Xmm PointwiseKernel::reg_of(int32_t e) {
  Location& l = loc_[size_t(e)];
  if (l.reg < 0) {
    const int r = alloc();
    vmovups(vreg(r), memory_of(e));
    if (l.slot >= 0) free_slots_.push_back(l.slot);
    l.slot = -1;
    l.reg = r;
    holder_[size_t(r)] = e;
  }
  pinned_[size_t(l.reg)] = true;
  return vreg(l.reg);
}

PointwiseKernel::Source PointwiseKernel::operand_of(int32_t e) {
  const Location& l = loc_[size_t(e)];
  if (l.reg >= 0) {
    pinned_[size_t(l.reg)] = true;
    return Source{vreg(l.reg), std::nullopt};
  }
  return Source{Xmm(), memory_of(e)};
}

Xmm PointwiseKernel::dest_for(int32_t e, int32_t reuse) {
  if (reuse >= 0 && !live_after(reuse, e)) {
    Location& l = loc_[size_t(reuse)];
    if (l.reg >= 0 && holder_[size_t(l.reg)] == reuse) {
      const int r = l.reg;
      l.reg = -1;
      holder_[size_t(r)] = e;
      loc_[size_t(e)].reg = r;
      pinned_[size_t(r)] = true;
      return vreg(r);
    }
  }
  const int r = alloc();
  holder_[size_t(r)] = e;
  loc_[size_t(e)].reg = r;
  pinned_[size_t(r)] = true;
  return vreg(r);
}

Xmm PointwiseKernel::temp() {
  const int r = alloc();
  holder_[size_t(r)] = kTemp;
  return vreg(r);
}

void PointwiseKernel::emit_load(int32_t e, const Xmm& dst, bool tail) {
  const int k = ir_.exprs[size_t(e)].arg;
  if (elem_bytes(k) == 2) {
    emit_load_half(k, dst, tail);
    return;
  }
  if (elem_bytes(k) == 1) {
    emit_load_byte(k, dst, tail);
    return;
  }
  const Reg64& p = kOperandRegs[k];
  const int32_t at = vector_ * lanes() * 4;
  switch (accesses_[size_t(k)]) {
    case 'b':
      vbroadcastss(dst, dword[p]);
      break;
    case 'c':
      if (!tail) vmovups(dst, ptr[p + at]);
      else if (avx512()) vmovups(dst | kTailMask | T_z, ptr[p]);
      else vmaskmovps(dst, Ymm(tail_mask_reg_), ptr[p]);
      break;
    default: {  // gathered: masked-off lanes are not read
      const Xmm lanes_at = vreg(gather_reg_[size_t(k)]);
      if (avx512()) {
        if (tail) kmovw(kGatherMask, kTailMask);
        else kxnorw(kGatherMask, kGatherMask, kGatherMask);
        vxor(dst, dst, dst);
        vgatherdps(dst | kGatherMask, ptr[p + lanes_at]);
      } else {
        const Xmm m = temp();
        if (tail) vmovaps(m, Ymm(tail_mask_reg_));
        else vpcmpeqd(m, m, m);
        vxorps(dst, dst, dst);
        vgatherdps(dst, ptr[p + lanes_at], m);
        free_reg(m.getIdx());
      }
    }
  }
  if (ir_.dtype(size_t(k)) == kInt32) vcvtdq2ps(dst, dst);  // round to nearest even, as static_cast<float>
}

void PointwiseKernel::emit_store(int32_t output, int32_t e, bool tail) {
  const Xmm v = reg_of(e);
  if (elem_bytes(ir_.inputs + output) == 2) {
    emit_store_half(ir_.inputs + output, v, tail);
    return;
  }
  if (ir_.dtype(size_t(ir_.inputs + output)) != kFloat32) {
    emit_store_integer(ir_.inputs + output, v, tail);
    return;
  }
  const Reg64& p = kOperandRegs[ir_.inputs + output];
  const int32_t at = vector_ * lanes() * 4;
  if (!tail && stream_) vmovntps(ptr[p + at], v);
  else if (!tail) vmovups(ptr[p + at], v);
  else if (avx512()) vmovups(ptr[p] | kTailMask, v);
  else vmaskmovps(ptr[p], Ymm(tail_mask_reg_), v);
}

void PointwiseKernel::emit_load_half(int k, const Xmm& dst, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const bool half = ir_.dtype(size_t(k)) == kFloat16;
  const Xbyak::Xmm low(dst.getIdx());  // dst's low 128 bits
  if (accesses_[size_t(k)] == 'b') {
    movzx(eax, word[p]);
    if (!half) shl(eax, 16);
    vmovd(low, eax);
    if (half) vcvtph2ps(low, low);
    vbroadcastss(dst, low);
    return;
  }
  const Address src = narrow_source(k, tail);
  // EVEX masking suppresses faults on the lanes it leaves out
  const bool masked = tail && avx512() && accesses_[size_t(k)] != 's';
  if (half) {
    if (masked) vcvtph2ps(dst | kTailMask | T_z, src);
    else vcvtph2ps(dst, src);
  } else {
    if (masked) vpmovzxwd(dst | kTailMask | T_z, src);
    else vpmovzxwd(dst, src);
    vpslld(dst, dst, 16);
  }
}

void PointwiseKernel::emit_store_half(int k, const Xmm& v, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const int32_t at = vector_ * lanes() * 2;
  const Xmm t = temp();
  const Xbyak::Xmm t128(t.getIdx());
  if (ir_.dtype(size_t(k)) == kFloat16) {  // imm 0: round to nearest even
    if (avx512()) vcvtps2ph(tail ? yword[p] | kTailMask : yword[p + at], v, 0);
    else vcvtps2ph(t128, v, 0);
  } else {  // bfloat16 = (x + 0x7fff + ((x >> 16) & 1)) >> 16; a NaN keeps its top half, made quiet
    vpsrld(t, v, 16);
    vand(t, t, vconst_bits(1));
    vpaddd(t, t, v);
    vpaddd(t, t, vconst_bits(0x7fff));
    vpsrld(t, t, 16);
    const Xmm nan = temp(), m = temp();
    vpsrld(nan, v, 16);
    vor(nan, nan, vconst_bits(0x40));
    compare(mask(m), v, v, _CMP_UNORD_Q);
    blend(mask(m), t, nan);
    free_reg(m.getIdx());
    free_reg(nan.getIdx());
    if (avx512()) {
      vpmovdw(tail ? yword[p] | kTailMask : yword[p + at], t);
    } else {  // 8 dwords < 2^16 -> 8 words: pack within 128-bit halves, then gather qwords 0 and 2
      vpackusdw(t, t, t);
      vpermq(Ymm(t.getIdx()), Ymm(t.getIdx()), 0x08);
    }
  }
  if (!avx512()) {
    if (!tail) {
      vmovdqu(xword[p + at], t128);
    } else {  // the staging slot, then the cols < 8 elements one by one
      vmovdqu(xword[staging()], t128);
      emit_copy_tail(p, staging(), 2);
    }
  }
  free_reg(t.getIdx());
}

void PointwiseKernel::emit_load_byte(int k, const Xmm& dst, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const bool sign = ir_.dtype(size_t(k)) == kInt8;
  if (accesses_[size_t(k)] == 'b') {
    if (sign) movsx(eax, byte[p]);
    else movzx(eax, byte[p]);
    const Xbyak::Xmm low(dst.getIdx());
    vmovd(low, eax);
    vpbroadcastd(dst, low);
    vcvtdq2ps(dst, dst);
    return;
  }
  const Address src = narrow_source(k, tail);
  // EVEX masking suppresses faults on the lanes it leaves out
  const bool masked = tail && avx512() && accesses_[size_t(k)] != 's';
  if (sign) {
    if (masked) vpmovsxbd(dst | kTailMask | T_z, src);
    else vpmovsxbd(dst, src);
  } else {
    if (masked) vpmovzxbd(dst | kTailMask | T_z, src);
    else vpmovzxbd(dst, src);
  }
  vcvtdq2ps(dst, dst);
}

Address PointwiseKernel::narrow_source(int k, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const int bytes = elem_bytes(k);
  const AddressFrame& frame = lanes() * bytes == 32 ? yword : lanes() * bytes == 16 ? xword : qword;
  if (accesses_[size_t(k)] == 's') {
    emit_stage_strided(k, tail);
    return frame[staging()];
  }
  if (tail && !avx512()) {  // copy the cols < 8 elements to the staging slot, then load it whole
    emit_copy_tail(staging(), p, bytes);
    return frame[staging()];
  }
  return frame[p + vector_ * lanes() * bytes];
}

// A strided 8- or 16-bit input (no gather instruction reads those) element by
// element into the staging slot: a vector's lanes, or the tail's cols.
void PointwiseKernel::emit_stage_strided(int k, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const int bytes = elem_bytes(k);
  Label done;
  for (int j = 0; j < lanes(); ++j) {
    if (tail && j > 0) {
      cmp(kCols, j);
      jbe(done, T_NEAR);
    }
    RegExp at = p;
    if (j > 0) {
      movsxd(rax, dword[kCall + lane_stride_at(k)]);
      imul(rax, rax, j);
      at = p + rax;
    }
    emit_copy_element(staging() + bytes * j, at, bytes);
  }
  L(done);
}

RegExp PointwiseKernel::staging() const { return rsp + int32_t(2 * ir_.exprs.size()) * kSlotBytes; }

void PointwiseKernel::emit_copy_element(const RegExp& dst, const RegExp& src, int bytes) {
  if (bytes == 1) {
    movzx(eax, byte[src]);
    mov(byte[dst], al);
  } else {
    movzx(eax, word[src]);
    mov(word[dst], ax);
  }
}

void PointwiseKernel::emit_copy_tail(const RegExp& dst, const RegExp& src, int bytes) {
  Label done;
  for (int j = 0; j < lanes() - 1; ++j) {
    cmp(kCols, j);
    jbe(done, T_NEAR);
    emit_copy_element(dst + bytes * j, src + bytes * j, bytes);
  }
  L(done);
}

void PointwiseKernel::emit_store_integer(int k, const Xmm& v, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const Xmm t = temp();
  vcvttps2dq(t, v);  // toward zero, like the reference's static_cast
  if (elem_bytes(k) == 4) {
    const int32_t at = vector_ * lanes() * 4;
    if (!tail) vmovups(ptr[p + at], t);
    else if (avx512()) vmovups(ptr[p] | kTailMask, t);
    else vmaskmovps(ptr[p], Ymm(tail_mask_reg_), t);
    free_reg(t.getIdx());
    return;
  }
  const int32_t at = vector_ * lanes();
  if (avx512()) {  // the low byte of each dword (a truncation, not a saturation)
    vpmovdb(tail ? xword[p] | kTailMask : xword[p + at], t);
    free_reg(t.getIdx());
    return;
  }
  // each 128-bit half: its 4 low bytes into its first dword; then the two dwords side by side
  const Xmm hi = temp();
  const Xbyak::Xmm t128(t.getIdx()), hi128(hi.getIdx());
  vpshufb(t, t, vconst_bits(0x0c080400));
  vextracti128(hi128, Ymm(t.getIdx()), 1);
  vpunpckldq(t128, t128, hi128);
  free_reg(hi.getIdx());
  if (!tail) {
    vmovq(qword[p + at], t128);
  } else {  // the staging slot, then the cols < 8 bytes one by one
    vmovq(qword[staging()], t128);
    emit_copy_tail(p, staging(), 1);
  }
  free_reg(t.getIdx());
}

// 1.0 where `a pred b`, else 0.0.
void PointwiseKernel::emit_compare(int32_t i, int pred) {
  const Expr& e = ir_.exprs[size_t(i)];
  const Xmm x = reg_of(e.a);
  const Source y = operand_of(e.b);
  const Xmm t = temp();
  const VMask m = mask(t);
  compare(m, x, y.op(), pred);
  const Xmm d = dest_for(i, e.a);
  if (avx512()) vmovups(d | m.k | T_z, vconst(1.0f));
  else vand(d, t, vconst(1.0f));
  free_reg(t.getIdx());
}

// a != 0 ? b : c. Every operand is read before the result takes over c's register.
void PointwiseKernel::emit_select(int32_t i) {
  const Expr& e = ir_.exprs[size_t(i)];
  const Xmm cond = reg_of(e.a);
  const Source yes = operand_of(e.b);
  const Xmm no = reg_of(e.c);
  const Xmm t = temp();
  const VMask m = mask(t);
  compare(m, cond, vconst(0.0f), _CMP_NEQ_UQ);
  const Xmm d = dest_for(i, e.c);
  if (d.getIdx() != no.getIdx()) vmovaps(d, no);
  blend(m, d, yes.op());
  free_reg(t.getIdx());
}

// Toward zero to int32, wrapped to the target's width, back to float32.
void PointwiseKernel::emit_cast(int32_t i) {
  const Expr& e = ir_.exprs[size_t(i)];
  const Xmm x = reg_of(e.a);
  x86::emit_cast(*this, dest_for(i, e.a), x, DType(e.arg));
}

void PointwiseKernel::emit_expr(int32_t i, bool tail) {
  const Expr& e = ir_.exprs[size_t(i)];
  switch (e.prim) {
    case Prim::kLoad: emit_load(i, dest_for(i, -1), tail); return;
    case Prim::kArg:
    case Prim::kConst: return;  // memory operands, materialised where a register is needed
    default: break;
  }
  // Commutative ops take a memory operand (a Scalar, a constant) as their last source.
  int32_t a = e.a, b = e.b;
  const bool commutes = e.prim == Prim::kAdd || e.prim == Prim::kMul;
  if (commutes && loc_[size_t(a)].reg < 0 && loc_[size_t(b)].reg >= 0) std::swap(a, b);
  switch (e.prim) {
    case Prim::kAdd: case Prim::kSub: case Prim::kMul: case Prim::kDiv: {
      const Xmm x = reg_of(a);
      const Source y = operand_of(b);
      const Xmm d = dest_for(i, a);
      if (e.prim == Prim::kAdd) vaddps(d, x, y.op());
      else if (e.prim == Prim::kSub) vsubps(d, x, y.op());
      else if (e.prim == Prim::kMul) vmulps(d, x, y.op());
      else vdivps(d, x, y.op());
      return;
    }
    case Prim::kMax: case Prim::kMin: {  // max/min give the second source for a NaN; a NaN first source wins
      const Xmm x = reg_of(a);
      const Source y = operand_of(b);
      const Xmm d = dest_for(i, -1);
      if (e.prim == Prim::kMax) vmaxps(d, x, y.op());
      else vminps(d, x, y.op());
      const Xmm t = temp();
      const VMask m = mask(t);
      compare(m, x, x, _CMP_UNORD_Q);
      blend(m, d, x);
      free_reg(t.getIdx());
      return;
    }
    case Prim::kClampMin: case Prim::kClampMax: {  // bound first: a NaN x stays
      const Xmm bound = reg_of(b);
      const Source x = operand_of(a);
      const Xmm d = dest_for(i, b);
      if (e.prim == Prim::kClampMin) vmaxps(d, bound, x.op());
      else vminps(d, bound, x.op());
      return;
    }
    case Prim::kFma: {
      const Xmm x = reg_of(a), y = reg_of(b);
      const Source z = operand_of(e.c);
      const Xmm d = dest_for(i, -1);
      vmovaps(d, x);
      vfmadd213ps(d, y, z.op());
      return;
    }
    case Prim::kNeg: case Prim::kAbs: {  // flip or clear the sign bit
      const Xmm x = reg_of(a);
      const Xmm d = dest_for(i, a);
      if (e.prim == Prim::kNeg) vxor(d, x, vconst_bits(0x80000000u));
      else vand(d, x, vconst_bits(0x7fffffffu));
      return;
    }
    case Prim::kRelu: {  // x > 0 ? x : 0, so NaN gives 0 like the reference
      const Xmm x = reg_of(a);
      const Xmm d = dest_for(i, a);
      vmaxps(d, x, vconst(0.0f));
      return;
    }
    case Prim::kSqrt: {
      const Source x = operand_of(a);
      vsqrtps(dest_for(i, -1), x.op());
      return;
    }
    case Prim::kRecip: {
      const Source x = operand_of(a);
      const Xmm d = dest_for(i, -1);
      vmovups(d, vconst(1.0f));
      vdivps(d, d, x.op());
      return;
    }
    // ordered predicates are false for a NaN; ne is unordered, so true
    case Prim::kEq: emit_compare(i, _CMP_EQ_OQ); return;
    case Prim::kNe: emit_compare(i, _CMP_NEQ_UQ); return;
    case Prim::kLt: emit_compare(i, _CMP_LT_OQ); return;
    case Prim::kLe: emit_compare(i, _CMP_LE_OQ); return;
    case Prim::kGt: emit_compare(i, _CMP_GT_OQ); return;
    case Prim::kGe: emit_compare(i, _CMP_GE_OQ); return;
    case Prim::kSelect: emit_select(i); return;
    case Prim::kCast: emit_cast(i); return;
    default: {  // an injector rewrites its register in place; its other operands stay where they are
      const Xmm x = reg_of(a);
      const std::optional<Source> y = e.b >= 0 ? std::optional(operand_of(e.b)) : std::nullopt;
      const std::optional<Source> z = e.c >= 0 ? std::optional(operand_of(e.c)) : std::nullopt;
      const Xmm d = dest_for(i, e.b == a || e.c == a ? -1 : a);  // x ** x: the exponent must survive
      if (d.getIdx() != x.getIdx()) vmovaps(d, x);
      Xmm scratch[kMaxInjectorScratch];
      const int n = injector_scratch(e.prim);
      for (int s = 0; s < n; ++s) scratch[s] = temp();
      emit_injector(*this, e.prim, d, y ? y->op() : d, z ? z->op() : d, scratch);
      for (int s = 0; s < n; ++s) free_reg(scratch[s].getIdx());
    }
  }
}

}  // namespace nnvm::jit::x86
