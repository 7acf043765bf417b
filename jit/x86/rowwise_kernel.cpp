#include "nnvm/jit/x86/rowwise_kernel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "nnvm/core/error.h"
#include "nnvm/jit/x86/vector_math.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;

namespace {

const Reg64 kCall = rdi, kX = rsi, kG = rdx, kY = r8, kW = r9, kB = r10, kDw = r11, kDb = r12, kJ = r13,
            kRow = r14, kN = rcx;
const Opmask kTail = k1;
constexpr int kUnroll = 4;
// Vector registers: 0-7 accumulators, 8-11 per-row values, 12-14 temporaries,
// 15 the AVX2 tail mask.
constexpr int kT0 = 12, kT1 = 13, kT2 = 14, kMaskReg = 15;

#define AT(field) int32_t(offsetof(RowwiseCall, field))

}  // namespace

const char* row_op_name(RowOp op) {
  switch (op) {
    case RowOp::kSoftmax: return "softmax";
    case RowOp::kLogSoftmax: return "log_softmax";
    case RowOp::kLayerNorm: return "layer_norm";
    case RowOp::kLayerNormBackward: return "layer_norm_backward";
    case RowOp::kRowLogSumExp: return "row_log_sum_exp";
    case RowOp::kCrossEntropyBackward: return "cross_entropy_backward";
    case RowOp::kRmsNorm: return "rms_norm";
    case RowOp::kRmsNormBackward: return "rms_norm_backward";
  }
  return "?";
}

std::string RowwiseSpec::name() const {
  std::string s = row_op_name(op);
  if (weight) s += "+w";
  if (bias) s += "+b";
  return s;
}

RowwiseKernel::RowwiseKernel(const RowwiseSpec& spec, Isa isa) : Generator(isa), spec_(spec) {
  generate();
  finalize();
}

void RowwiseKernel::load(const Xmm& v, const Reg64& base, int u, bool tail) {
  const Address at = ptr[base + kJ + u * lanes() * 4];
  if (!tail) vmovups(v, at);
  else if (avx512()) vmovups(v | kTail | T_z, at);
  else vmaskmovps(v, Ymm(kMaskReg), at);
}

void RowwiseKernel::load_filled(const Xmm& v, const Reg64& base, int u, bool tail, float fill, const Xmm& temp) {
  if (!tail) return load(v, base, u, false);
  const Address at = ptr[base + kJ + u * lanes() * 4];
  if (avx512()) {
    vmovups(v, vconst(fill));
    vmovups(v | kTail, at);
  } else {
    vmaskmovps(v, Ymm(kMaskReg), at);
    vmovups(temp, vconst(fill));
    vblendvps(v, temp, v, Ymm(kMaskReg));
  }
}

void RowwiseKernel::store(const Reg64& base, int u, bool tail, const Xmm& v) {
  const Address at = ptr[base + kJ + u * lanes() * 4];
  if (!tail) vmovups(at, v);
  else if (avx512()) vmovups(at | kTail, v);
  else vmaskmovps(at, Ymm(kMaskReg), v);
}

template <class Body> void RowwiseKernel::pass(Body body) {
  mov(kN, qword[kCall + AT(cols)]);
  float_loop(kJ, kN, kUnroll, [&](int vectors, bool tail) {
    for (int u = 0; u < vectors; ++u) body(u, tail);
  });
}

void RowwiseKernel::init_accumulators(int first, float value) {
  for (int u = 0; u < kUnroll; ++u) vmovups(vreg(first + u), vconst(value));
}

void RowwiseKernel::combine_max(int first) {
  const Xmm a0 = vreg(first), a1 = vreg(first + 1), a2 = vreg(first + 2), a3 = vreg(first + 3);
  vmaxps(a0, a0, a1);
  vmaxps(a2, a2, a3);
  vmaxps(a0, a0, a2);
  const Xmm t = vreg(kT0);
  butterfly(a0, t, [&] { vmaxps(a0, a0, t); });
}

void RowwiseKernel::emit_max(int dst) {
  init_accumulators(0, -INFINITY);
  pass([&](int u, bool tail) {
    load_filled(vreg(kT0), kX, u, tail, -INFINITY, vreg(kT1));
    vmaxps(vreg(u), vreg(u), vreg(kT0));
  });
  combine_max(0);
  vmovaps(vreg(dst), vreg(0));
}

template <class Value> void RowwiseKernel::lane_sums(const std::vector<Sum>& sums, Value value) {
  // sum s in vectors 4 s (AVX-512: sixteen lanes) or 4 s and 4 s + 1 (AVX2)
  for (size_t s = 0; s < sums.size(); ++s)
    for (int u = 0; u < 16 / lanes(); ++u) vxor(vreg(4 * int(s) + u), vreg(4 * int(s) + u), vreg(4 * int(s) + u));
  // vector u from kJ into its lanes' accumulators
  auto step = [&](int u, bool tail) {
    const std::array<Xmm, 4> v = value(u, tail);
    if (tail) {  // lanes past the row add +0
      std::vector<int> zeroed;
      for (size_t s = 0; s < sums.size(); ++s)
        for (size_t k = 0; k < (sums[s] == Sum::kProducts ? 2u : 1u); ++k) {
          const int r = v[2 * s + k].getIdx();
          if (std::find(zeroed.begin(), zeroed.end(), r) != zeroed.end()) continue;
          zeroed.push_back(r);
          if (avx512()) vmovaps(vreg(r) | kTail | T_z, vreg(r));
          else vandps(Ymm(r), Ymm(r), Ymm(kMaskReg));
        }
    }
    for (size_t s = 0; s < sums.size(); ++s) {
      const Xmm acc = vreg(4 * int(s) + u % (16 / lanes()));
      if (sums[s] == Sum::kProducts) vfmadd231ps(acc, v[2 * s], v[2 * s + 1]);
      else vaddps(acc, acc, v[2 * s]);
    }
  };
  // 32 elements a step (more independent work in flight), then 16, then the tail
  Label step32, step16, tail, done;
  xor_(kJ, kJ);
  mov(kN, qword[kCall + AT(cols)]);
  L(step32);
  cmp(kN, 32);
  jb(step16, T_NEAR);
  for (int u = 0; u < 32 / lanes(); ++u) step(u, false);
  add(kJ, 128);
  sub(kN, 32);
  jmp(step32, T_NEAR);
  L(step16);
  cmp(kN, 16);
  jb(tail, T_NEAR);
  for (int u = 0; u < 16 / lanes(); ++u) step(u, false);
  add(kJ, 64);
  sub(kN, 16);
  L(tail);  // kN < 16 left; the tail mask holds cols % lanes() lanes
  test(kN, kN);
  jz(done, T_NEAR);
  if (avx512()) {
    step(0, true);
  } else {
    Label short_tail;
    cmp(kN, 8);
    jb(short_tail, T_NEAR);
    step(0, false);
    cmp(kN, 8);
    je(done, T_NEAR);
    step(1, true);
    jmp(done, T_NEAR);
    L(short_tail);
    step(0, true);
  }
  L(done);
  // each sum's tree: lane i + 8 into i, then i + 4, i + 2, i + 1
  for (size_t s = 0; s < sums.size(); ++s) {
    const int a = 4 * int(s);
    if (avx512()) vextractf64x4(Ymm(a + 1), Zmm(a), 1);
    vaddps(Ymm(a), Ymm(a), Ymm(a + 1));
    vextractf128(Xmm(a + 1), Ymm(a), 1);
    vaddps(Xmm(a), Xmm(a), Xmm(a + 1));
    vmovhlps(Xmm(a + 1), Xmm(a + 1), Xmm(a));
    vaddps(Xmm(a), Xmm(a), Xmm(a + 1));
    vmovshdup(Xmm(a + 1), Xmm(a));
    vaddss(Xmm(a), Xmm(a), Xmm(a + 1));
  }
}

void RowwiseKernel::double_to_lanes(const Xmm& dst, const Xmm& x) {
  vcvtsd2ss(Xmm(x.getIdx()), Xmm(x.getIdx()), Xmm(x.getIdx()));
  vbroadcastss(dst, Xmm(x.getIdx()));
}

void RowwiseKernel::mean_of_sum(const Xmm& dst, const Xmm& sum, const Xmm& temp) {
  vcvtss2sd(Xmm(sum.getIdx()), Xmm(sum.getIdx()), Xmm(sum.getIdx()));
  vcvtsi2sd(Xmm(temp.getIdx()), Xmm(temp.getIdx()), qword[kCall + AT(cols)]);
  vdivsd(Xmm(sum.getIdx()), Xmm(sum.getIdx()), Xmm(temp.getIdx()));
  double_to_lanes(dst, sum);
}

void RowwiseKernel::emit_exp_sum(int shift, bool store_exp) {
  lane_sums({Sum::kValues}, [&](int u, bool tail) {
    const Xmm v = vreg(kT0);
    const Xmm scratch[] = {vreg(kT1), vreg(kT2)};
    load(v, kX, u, tail);
    vsubps(v, v, vreg(shift));
    // x - max <= 0: the cheaper exp (0 instead of a denormal below FLT_MIN)
    emit_exp_nonpositive(*this, v, scratch);
    if (store_exp) store(kY, u, tail, v);
    return std::array<Xmm, 4>{v, v, v, v};
  });
}

void RowwiseKernel::emit_log_of_sum(int dst) {
  vbroadcastss(vreg(dst), Xmm(0));
  emit_log(dst);
}

// One pass over the row for the mean and the variance, as
// cpu::layer_norm_row: the sums of d and d² for d = x - x[0] in float lanes,
// then in double mean = x[0] + Σd/n and variance = max(Σd²/n - (Σd/n)², 0),
// v8 = the mean and v9 = 1 / sqrt(variance + eps) rounded to float. Against
// a two-pass loop (the mean, then Σ(x - mean)²) it saves a pass over the row,
// which measured 1.5x the one-pass loop's time on [4096 × 1024]
// (docs/BENCHMARKS.md); the shift keeps the variance accurate when the mean is
// large against the spread.
void RowwiseKernel::emit_moments() {
  const Xmm shift = vreg(11);
  Label empty, shifted;
  cmp(qword[kCall + AT(cols)], 0);
  je(empty, T_NEAR);
  vbroadcastss(shift, dword[kX]);
  jmp(shifted, T_NEAR);
  L(empty);  // no element to shift by (and none to read)
  vxor(shift, shift, shift);
  L(shifted);
  lane_sums({Sum::kValues, Sum::kProducts}, [&](int u, bool tail) {
    const Xmm d = vreg(kT0);
    load(d, kX, u, tail);
    vsubps(d, d, shift);
    return std::array<Xmm, 4>{d, d, d, d};
  });
  const Xmm s1(0), s2(4), t(1);
  vcvtss2sd(s1, s1, s1);
  vcvtss2sd(s2, s2, s2);
  vcvtsi2sd(t, t, qword[kCall + AT(cols)]);
  vdivsd(s1, s1, t);         // the mean of d
  vdivsd(s2, s2, t);         // the mean of d²
  vfnmadd231sd(s2, s1, s1);  // the variance
  vxorpd(t, t, t);
  vmaxsd(s2, t, s2);         // at least 0, NaN kept (the second operand)
  vcvtss2sd(t, t, Xmm(shift.getIdx()));
  vaddsd(s1, s1, t);
  double_to_lanes(vreg(8), s1);
  emit_rstd(s2);
}

// One pass: the sum of squares in float lanes; v9 = 1 / sqrt(Σx²/n + eps) in double.
void RowwiseKernel::emit_rms() {
  lane_sums({Sum::kProducts}, [&](int u, bool tail) {
    load(vreg(kT0), kX, u, tail);
    return std::array<Xmm, 4>{vreg(kT0), vreg(kT0), vreg(kT0), vreg(kT0)};
  });
  const Xmm s2(0), t(1);
  vcvtss2sd(s2, s2, s2);
  vcvtsi2sd(t, t, qword[kCall + AT(cols)]);
  vdivsd(s2, s2, t);
  emit_rstd(s2);
}

// v9 = 1 / sqrt(v + eps) in double (v: xmm's low double), rounded to float.
void RowwiseKernel::emit_rstd(const Xmm& v) {
  const Xmm t(v.getIdx() + 1);
  vcvtss2sd(t, t, dword[kCall + AT(eps)]);
  vaddsd(v, v, t);
  vsqrtsd(v, v, v);
  mov(rax, 0x3ff0000000000000);  // 1.0
  vmovq(t, rax);
  vdivsd(v, t, v);
  double_to_lanes(vreg(9), v);
}

void RowwiseKernel::load_xhat_and_d(int u, bool tail, bool centred, const Xmm& xhat, const Xmm& g, const Xmm& d) {
  load(xhat, kX, u, tail);
  if (centred) vsubps(xhat, xhat, vreg(8));
  vmulps(xhat, xhat, vreg(9));
  load(g, kG, u, tail);
  if (spec_.weight) {
    load(d, kW, u, tail);
    vmulps(d, d, g);
  } else {
    vmovaps(d, g);
  }
}

void RowwiseKernel::emit_log(int v) {
  const Xmm scratch[] = {vreg(0), vreg(1), vreg(2), vreg(3), vreg(4)};
  x86::emit_log(*this, vreg(v), scratch);
}

void RowwiseKernel::generate() {
  const RowOp op = spec_.op;
  preamble(0);
  mov(rcx, qword[kCall + AT(cols)]);  // the tail's lanes: cols % lanes
  and_(ecx, lanes() - 1);
  emit_tail_mask(kTail, kMaskReg);
  mov(kX, qword[kCall + AT(x)]);
  mov(kG, qword[kCall + AT(g)]);
  mov(kY, qword[kCall + AT(y)]);
  mov(kW, qword[kCall + AT(weight)]);
  mov(kB, qword[kCall + AT(bias)]);
  mov(kDw, qword[kCall + AT(dweight)]);
  mov(kDb, qword[kCall + AT(dbias)]);
  xor_(kRow, kRow);
  Label row;
  L(row);
  switch (op) {
    case RowOp::kSoftmax: case RowOp::kLogSoftmax: {
      const bool log = op == RowOp::kLogSoftmax;
      emit_max(8);
      emit_exp_sum(8, !log);
      if (!log) {  // y *= 1 / sum
        vmovups(vreg(kT0), vconst(1.0f));
        vdivss(Xmm(kT0), Xmm(kT0), Xmm(0));
        vbroadcastss(vreg(9), Xmm(kT0));
        pass([&](int u, bool tail) {
          load(vreg(kT0), kY, u, tail);
          vmulps(vreg(kT0), vreg(kT0), vreg(9));
          store(kY, u, tail, vreg(kT0));
        });
      } else {  // y = (x - max) - log(sum)
        emit_log_of_sum(9);
        pass([&](int u, bool tail) {
          load(vreg(kT0), kX, u, tail);
          vsubps(vreg(kT0), vreg(kT0), vreg(8));
          vsubps(vreg(kT0), vreg(kT0), vreg(9));
          store(kY, u, tail, vreg(kT0));
        });
      }
      break;
    }
    case RowOp::kLayerNorm: case RowOp::kRmsNorm: {
      // y = (x [- mean]) * rstd [* weight] [+ bias]
      const bool centred = op == RowOp::kLayerNorm;
      if (centred) emit_moments();
      else emit_rms();
      pass([&](int u, bool tail) {
        const Xmm t = vreg(kT0);
        load(t, kX, u, tail);
        if (centred) vsubps(t, t, vreg(8));
        if (spec_.bias) load(vreg(kT2), kB, u, tail);
        if (spec_.bias && !spec_.weight) {  // one rounding, as cpu::norm_value
          vfmadd213ps(t, vreg(9), vreg(kT2));
        } else {
          vmulps(t, t, vreg(9));
          if (spec_.weight) load(vreg(kT1), kW, u, tail);
          if (spec_.weight && spec_.bias) vfmadd213ps(t, vreg(kT1), vreg(kT2));
          else if (spec_.weight) vmulps(t, t, vreg(kT1));
        }
        store(kY, u, tail, t);
      });
      break;
    }
    case RowOp::kLayerNormBackward: case RowOp::kRmsNormBackward: {
      // d = g [* weight], xhat = (x [- mean]) * rstd; sums of d * xhat (and of
      // d, layer_norm) per row; dx = rstd * ((d [- mean(d)]) - xhat * mean(d * xhat))
      const bool centred = op == RowOp::kLayerNormBackward;
      if (centred) emit_moments();
      else emit_rms();
      // the sums of d * xhat and of d (layer_norm) in float lanes (cpu::row_fold)
      std::vector<Sum> sums = {Sum::kProducts};
      if (centred) sums.push_back(Sum::kValues);
      lane_sums(sums, [&](int u, bool tail) {
        const Xmm xhat = vreg(kT0), g = vreg(kT1), d = vreg(kT2), t = vreg(10);
        load_xhat_and_d(u, tail, centred, xhat, g, d);
        if (spec_.weight) {  // dweight += g * xhat
          load(t, kDw, u, tail);
          vfmadd231ps(t, g, xhat);
          store(kDw, u, tail, t);
        }
        if (spec_.bias) {  // dbias += g
          load(t, kDb, u, tail);
          vaddps(t, t, g);
          store(kDb, u, tail, t);
        }
        return std::array<Xmm, 4>{d, xhat, d, d};
      });
      mean_of_sum(vreg(11), Xmm(0), Xmm(1));             // mean(d * xhat)
      if (centred) mean_of_sum(vreg(10), Xmm(4), Xmm(5));  // mean(d)
      pass([&](int u, bool tail) {
        const Xmm xhat = vreg(kT0), g = vreg(kT1), d = vreg(kT2);
        load_xhat_and_d(u, tail, centred, xhat, g, d);
        if (centred) vsubps(d, d, vreg(10));
        vfnmadd231ps(d, xhat, vreg(11));  // one rounding, as cpu::norm_grad
        vmulps(d, d, vreg(9));
        store(kY, u, tail, d);
      });
      break;
    }
    case RowOp::kRowLogSumExp: {
      emit_max(8);
      emit_exp_sum(8, false);
      vmovaps(Xmm(9), Xmm(0));
      lane_sums({Sum::kValues}, [&](int u, bool tail) {
        load(vreg(kT0), kX, u, tail);
        return std::array<Xmm, 4>{vreg(kT0), vreg(kT0), vreg(kT0), vreg(kT0)};
      });
      imul(rax, kRow, 12);
      add(rax, qword[kCall + AT(row_out)]);
      vmovss(dword[rax], Xbyak::Xmm(8));
      vmovss(dword[rax + 4], Xbyak::Xmm(9));
      vmovss(dword[rax + 8], Xbyak::Xmm(0));
      break;
    }
    case RowOp::kCrossEntropyBackward: {
      emit_max(8);
      emit_exp_sum(8, false);
      emit_log_of_sum(9);
      vaddps(vreg(9), vreg(9), vreg(8));  // lse = max + log(sum)
      mov(rax, qword[kCall + AT(row_a)]);
      vbroadcastss(vreg(10), dword[rax + kRow * 4]);
      mov(rax, qword[kCall + AT(row_b)]);
      vbroadcastss(vreg(11), dword[rax + kRow * 4]);
      pass([&](int u, bool tail) {  // y = a * exp(x - lse) - b * weight (cpu::CrossEntropyRowGrad)
        const Xmm t = vreg(kT0);
        const Xmm scratch[] = {vreg(kT1), vreg(kT2)};
        load(t, kX, u, tail);
        vsubps(t, t, vreg(9));
        emit_exp(*this, t, scratch);
        if (spec_.weight) {
          vmulps(t, t, vreg(10));
          load(vreg(kT1), kW, u, tail);
          vfnmadd231ps(t, vreg(kT1), vreg(11));
        } else {
          vfmsub213ps(t, vreg(10), vreg(11));
        }
        store(kY, u, tail, t);
      });
      break;
    }
  }
  add(kX, qword[kCall + AT(x_stride)]);
  add(kG, qword[kCall + AT(g_stride)]);
  add(kY, qword[kCall + AT(y_stride)]);
  inc(kRow);
  cmp(kRow, qword[kCall + AT(rows)]);
  jb(row, T_NEAR);
  postamble();
}

#undef AT

}  // namespace nnvm::jit::x86
