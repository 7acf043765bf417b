#include "nnvm/jit/x86/pointwise_kernel.h"

#include <immintrin.h>

#include "absl/strings/str_cat.h"
#include "nnvm/core/error.h"
#include "nnvm/jit/x86/operand_io.h"
#include "nnvm/jit/x86/vector_math.h"
#include "nnvm/kernels/cpu/cpu_features.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;
using namespace pointwise;

namespace {

constexpr int32_t kFree = -1, kTemp = -2, kReserved = -3;

bool is_load(Prim p) { return p == Prim::kLoad || p == Prim::kLoadLow || p == Prim::kLoadHigh; }

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
    if (t == kFloat64) return absl::StrCat("operand ", k, " is ", std::string(dtype_name(t)));
  }
  const bool has_dq = cpu::cpu_features().avx512dq;
  for (const Expr& e : ir.exprs)
    if ((e.prim == Prim::kInt64ToFloat || e.prim == Prim::kTruncInt64) && isa == Isa::kAvx512 && !has_dq)
      return "int64 <-> float32 needs AVX-512DQ (vcvtqq2ps, vcvttps2qq)";
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
    bool invariant = !is_load(e.prim);
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
    if (accesses_[size_t(k)] == 's' && elem_bytes(k) >= 4) gather_reg_[size_t(k)] = top--;

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
    if (!invariant_[size_t(pos_)] || p == Prim::kArg || p == Prim::kConst || p == Prim::kBits || p == Prim::kPair)
      continue;
    if (last_use_[size_t(pos_)] < 0 && stored_by_[size_t(pos_)].empty()) continue;
    reset_allocation();
    emit_expr(pos_, false);
    vmovups(memory_of(pos_, false), vreg(loc_[size_t(pos_)].reg));
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

Address PointwiseKernel::memory_of(int32_t e, bool broadcast) {
  const Expr& x = ir_.exprs[size_t(e)];
  if (x.prim == Prim::kConst) return broadcast ? vconst_b(x.value) : vconst(x.value);
  if (x.prim == Prim::kBits) return broadcast ? vconst_bits_b(uint32_t(x.arg)) : vconst_bits(uint32_t(x.arg));
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
    vmovups(vreg(r), memory_of(e, false));
    if (l.slot >= 0) free_slots_.push_back(l.slot);
    l.slot = -1;
    l.reg = r;
    holder_[size_t(r)] = e;
  }
  pinned_[size_t(l.reg)] = true;
  return vreg(l.reg);
}

PointwiseKernel::Source PointwiseKernel::operand_of(int32_t e, bool broadcast) {
  const Location& l = loc_[size_t(e)];
  if (l.reg >= 0) {
    pinned_[size_t(l.reg)] = true;
    return Source{vreg(l.reg), std::nullopt};
  }
  return Source{Xmm(), memory_of(e, broadcast)};
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

// 1.0 where the 32-bit integer lanes compare so, else 0.0.
void PointwiseKernel::emit_int_compare(int32_t i) {
  const Expr& e = ir_.exprs[size_t(i)];
  const Xmm x = reg_of(e.a);
  const Source y = operand_of(e.b);
  if (avx512()) {
    const Opmask k = mask(x).k;
    if (e.prim == Prim::kIntEq) vpcmpeqd(k, x, y.op());
    else if (e.prim == Prim::kIntGt) vpcmpgtd(k, x, y.op());
    else vpcmpud(k, x, y.op(), 6);  // not less-or-equal
    const Xmm d = dest_for(i, e.a);
    vmovups(d | k | T_z, vconst(1.0f));
    return;
  }
  const Xmm t = temp();
  if (e.prim == Prim::kIntEq) {
    vpcmpeqd(t, x, y.op());
  } else if (e.prim == Prim::kIntGt) {
    vpcmpgtd(t, x, y.op());
  } else {  // unsigned order is the signed order with both sign bits flipped
    const Xmm u = temp();
    vxor(t, x, vconst_bits(0x80000000u));
    vmovups(u, vconst_bits(0x80000000u));
    vxor(u, u, y.op());
    vpcmpgtd(t, t, u);
    free_reg(u.getIdx());
  }
  const Xmm d = dest_for(i, e.a);
  vand(d, t, vconst(1.0f));
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
    case Prim::kLoadLow:
    case Prim::kLoadHigh: emit_load(i, dest_for(i, -1), tail); return;
    case Prim::kArg:
    case Prim::kConst:
    case Prim::kBits: return;  // memory operands, materialised where a register is needed
    case Prim::kPair: return;  // its halves are stored where it is
    case Prim::kIntEq:
    case Prim::kIntGt:
    case Prim::kUIntGt: emit_int_compare(i); return;
    case Prim::kInt64ToFloat: emit_int64_to_float(i); return;
    case Prim::kTruncInt64: emit_trunc_int64(i); return;
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
    case Prim::kFma: {  // into the register of an operand that dies here: a, else c, else a copy of a
      const Xmm x = reg_of(a), y = reg_of(b);
      const Source z = operand_of(e.c);
      const bool into_c = live_after(a, i) && !z.mem && !live_after(e.c, i);
      const Xmm d = dest_for(i, into_c ? e.c : a);
      if (d.getIdx() == x.getIdx()) {
        vfmadd213ps(d, y, z.op());
      } else if (into_c && d.getIdx() == z.reg.getIdx()) {
        vfmadd231ps(d, x, y);
      } else {
        vmovaps(d, x);
        vfmadd213ps(d, y, z.op());
      }
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
    case Prim::kToInt: case Prim::kSignOf: {
      const Xmm x = reg_of(a);
      const Xmm d = dest_for(i, a);
      if (e.prim == Prim::kToInt) vcvttps2dq(d, x);
      else vpsrad(d, x, 31);
      return;
    }
    default: {  // an injector rewrites its register in place; its other operands stay where they are
      const Xmm x = reg_of(a);
      // whole vectors: an injector may move its operands
      const std::optional<Source> y = e.b >= 0 ? std::optional(operand_of(e.b, false)) : std::nullopt;
      const std::optional<Source> z = e.c >= 0 ? std::optional(operand_of(e.c, false)) : std::nullopt;
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
