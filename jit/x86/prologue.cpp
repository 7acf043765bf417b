#include "nnvm/jit/x86/prologue.h"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "nnvm/core/error.h"
#include "nnvm/jit/x86/reduce_regs.h"
#include "nnvm/jit/x86/vector_math.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;
using namespace reduce;

namespace {

int scratch_of(Prim p) {
  switch (p) {
    case Prim::kMax: case Prim::kMin: return 1;  // the AVX2 mask of the NaN check
    case Prim::kEq: case Prim::kNe: case Prim::kLt: case Prim::kLe: case Prim::kGt: case Prim::kGe:
    case Prim::kSelect: return 1;  // the AVX2 mask of the comparison
    default: return injector_scratch(p);
  }
}

// Whether emit_expr has code for p: a primitive added to LoopIR for the
// pointwise kernel declines here until the prologue learns it.
bool has_code(Prim p) {
  switch (p) {
    case Prim::kLoad: case Prim::kArg: case Prim::kConst: case Prim::kAdd: case Prim::kSub: case Prim::kMul:
    case Prim::kDiv: case Prim::kMax: case Prim::kMin: case Prim::kClampMin: case Prim::kClampMax: case Prim::kFma:
    case Prim::kNeg: case Prim::kAbs: case Prim::kRelu: case Prim::kSqrt: case Prim::kRecip: case Prim::kEq:
    case Prim::kNe: case Prim::kLt: case Prim::kLe: case Prim::kGt: case Prim::kGe: case Prim::kSelect:
    case Prim::kCast: case Prim::kExp: case Prim::kLog: case Prim::kTanh: case Prim::kSigmoid: case Prim::kErf:
    case Prim::kExpm1: case Prim::kLog1p: case Prim::kSoftplus: case Prim::kPow: case Prim::kExp2: case Prim::kElu:
    case Prim::kLeakyRelu: case Prim::kSign: case Prim::kRound: case Prim::kFloor: case Prim::kCeil:
    case Prim::kTrunc: return true;
    default: return false;
  }
}

// The _CMP_ predicate of a comparison primitive, as the pointwise kernel's.
int predicate_of(Prim p) {
  switch (p) {
    case Prim::kEq: return _CMP_EQ_OQ;
    case Prim::kNe: return _CMP_NEQ_UQ;
    case Prim::kLt: return _CMP_LT_OQ;
    case Prim::kLe: return _CMP_LE_OQ;
    case Prim::kGt: return _CMP_GT_OQ;
    default: return _CMP_GE_OQ;
  }
}

// Marks the expressions the store reads and, per expression, its last reader.
void liveness(const LoopIR& ir, std::vector<bool>& needed, std::vector<int32_t>& last_use) {
  const size_t n = ir.exprs.size();
  needed.assign(n, false);
  last_use.assign(n, -1);
  needed[size_t(ir.stores[0])] = true;
  for (size_t i = n; i-- > 0;) {
    if (!needed[i]) continue;
    for (int32_t o : {ir.exprs[i].a, ir.exprs[i].b, ir.exprs[i].c})
      if (o >= 0) needed[size_t(o)] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!needed[i]) continue;
    for (int32_t o : {ir.exprs[i].a, ir.exprs[i].b, ir.exprs[i].c})
      if (o >= 0) last_use[size_t(o)] = int32_t(i);
  }
  last_use[size_t(ir.stores[0])] = int32_t(n);  // held until it is accumulated
}

}  // namespace

int Prologue::pressure(const LoopIR& ir) {
  std::vector<bool> needed;
  std::vector<int32_t> last_use;
  liveness(ir, needed, last_use);
  int live = 0, peak = 0;
  for (size_t i = 0; i < ir.exprs.size(); ++i) {
    if (!needed[i]) continue;
    ++live;
    peak = std::max(peak, live + scratch_of(ir.exprs[i].prim));
    for (int32_t o : {ir.exprs[i].a, ir.exprs[i].b, ir.exprs[i].c})
      if (o >= 0 && last_use[size_t(o)] == int32_t(i)) --live;
  }
  return peak;
}

std::string Prologue::declines(const LoopIR& ir, std::string_view accesses, int pool) {
  if (ir.inputs + 1 > kMaxReduceOperands)
    return absl::StrCat(ir.inputs, " inputs; the kernels keep at most ", kMaxReduceOperands - 1, " in registers");
  if (ir.args.size() > size_t(kMaxReduceArgs)) return absl::StrCat(ir.args.size(), " Scalar arguments");
  NNVM_CHECK(accesses.size() == size_t(ir.inputs), "Prologue", "an access per input: got ", accesses.size(), " for ",
             ir.inputs);
  for (const Expr& e : ir.exprs)
    if (!has_code(e.prim)) return absl::StrCat(prim_name(e.prim), " has no code in the reduction kernels");
  const int need = pressure(ir);
  if (need > pool) return absl::StrCat("the prologue needs ", need, " vector registers; ", pool, " are free");
  return {};
}

Prologue::Prologue(Generator& g, const LoopIR& ir, std::string_view accesses, std::vector<int> pool, bool raw_int32)
    : g_(g), ir_(ir), accesses_(accesses), pool_(std::move(pool)), raw_int32_(raw_int32) {
  liveness(ir, needed_, last_use_);
  reg_.assign(ir.exprs.size(), -1);
  busy_.assign(pool_.size(), false);
}

int Prologue::alloc() {
  for (size_t k = 0; k < pool_.size(); ++k)
    if (!busy_[k]) {
      busy_[k] = true;
      return pool_[k];
    }
  NNVM_CHECK(false, "Prologue", "no vector register left (the pressure check should have declined)");
  return -1;
}

void Prologue::free_reg(int r) { busy_[size_t(std::find(pool_.begin(), pool_.end(), r) - pool_.begin())] = false; }

void Prologue::release() {
  busy_.assign(busy_.size(), false);
  reg_.assign(reg_.size(), -1);
}

int Prologue::evaluate(int u, bool tail) {
  for (size_t i = 0; i < ir_.exprs.size(); ++i) {
    if (!needed_[i]) continue;
    emit_expr(int32_t(i), u, tail);
    const Expr& e = ir_.exprs[i];
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0 && last_use_[size_t(o)] == int32_t(i)) free_reg(reg_[size_t(o)]);
  }
  return reg_[size_t(ir_.stores[0])];
}

void Prologue::emit_expr(int32_t i, int u, bool tail) {
  Generator& g = g_;
  const Expr& e = ir_.exprs[size_t(i)];
  const int r = alloc();
  reg_[size_t(i)] = r;
  const Xmm d = g.vreg(r);
  auto in = [&](int32_t o) { return g.vreg(reg_[size_t(o)]); };
  switch (e.prim) {
    case Prim::kLoad: {
      const DType t = ir_.dtype(size_t(e.arg));
      const bool raw = raw_int32_ && i == ir_.stores[0];
      if (accesses_[size_t(e.arg)] == 'b') broadcast_as_float(g, d, t, kOperandRegs[e.arg], raw);
      else load_as_float(g, d, t, kOperandRegs[e.arg], kJ, u, tail, kN, raw);
      return;
    }
    case Prim::kArg: g.vmovups(d, g.ptr[kCall + int32_t(offsetof(ReduceCall, args)) + e.arg * 64]); return;
    case Prim::kConst: g.vmovups(d, g.vconst(e.value)); return;
    case Prim::kAdd: g.vaddps(d, in(e.a), in(e.b)); return;
    case Prim::kSub: g.vsubps(d, in(e.a), in(e.b)); return;
    case Prim::kMul: g.vmulps(d, in(e.a), in(e.b)); return;
    case Prim::kDiv: g.vdivps(d, in(e.a), in(e.b)); return;
    case Prim::kMax: case Prim::kMin: {  // a NaN in either propagates (torch.maximum)
      if (e.prim == Prim::kMax) g.vmaxps(d, in(e.a), in(e.b));
      else g.vminps(d, in(e.a), in(e.b));
      const int t = alloc();
      const VMask m = g.mask(g.vreg(t));
      g.compare(m, in(e.a), in(e.a), _CMP_UNORD_Q);
      g.blend(m, d, in(e.a));
      free_reg(t);
      return;
    }
    case Prim::kEq: case Prim::kNe: case Prim::kLt: case Prim::kLe: case Prim::kGt: case Prim::kGe: {
      const int t = alloc();  // 1.0 where true, else 0.0
      const VMask m = g.mask(g.vreg(t));
      g.compare(m, in(e.a), in(e.b), predicate_of(e.prim));
      if (g.avx512()) g.vmovups(d | m.k | T_z, g.vconst(1.0f));
      else g.vand(d, g.vreg(t), g.vconst(1.0f));
      free_reg(t);
      return;
    }
    case Prim::kSelect: {  // a != 0 ? b : c (NaN counts as nonzero)
      const int t = alloc();
      const VMask m = g.mask(g.vreg(t));
      g.compare(m, in(e.a), g.vconst(0.0f), _CMP_NEQ_UQ);
      g.vmovaps(d, in(e.c));
      g.blend(m, d, in(e.b));
      free_reg(t);
      return;
    }
    case Prim::kCast: emit_cast(g, d, in(e.a), DType(e.arg)); return;
    case Prim::kClampMin: g.vmaxps(d, in(e.b), in(e.a)); return;  // bound first: a NaN x stays
    case Prim::kClampMax: g.vminps(d, in(e.b), in(e.a)); return;
    case Prim::kFma:
      g.vmovaps(d, in(e.a));
      g.vfmadd213ps(d, in(e.b), in(e.c));
      return;
    case Prim::kNeg: g.vxor(d, in(e.a), g.vconst_bits(0x80000000u)); return;
    case Prim::kAbs: g.vand(d, in(e.a), g.vconst_bits(0x7fffffffu)); return;
    case Prim::kRelu: g.vmaxps(d, in(e.a), g.vconst(0.0f)); return;  // NaN gives 0, as the reference
    case Prim::kSqrt: g.vsqrtps(d, in(e.a)); return;
    case Prim::kRecip:
      g.vmovups(d, g.vconst(1.0f));
      g.vdivps(d, d, in(e.a));
      return;
    default: {  // an injector rewrites its register in place
      g.vmovaps(d, in(e.a));
      Xmm scratch[kMaxInjectorScratch];
      const int n = injector_scratch(e.prim);
      int regs[kMaxInjectorScratch];
      for (int s = 0; s < n; ++s) scratch[s] = g.vreg(regs[s] = alloc());
      emit_injector(g, e.prim, d, e.b >= 0 ? in(e.b) : d, e.c >= 0 ? in(e.c) : d, scratch);
      for (int s = 0; s < n; ++s) free_reg(regs[s]);
    }
  }
}

}  // namespace nnvm::jit::x86

