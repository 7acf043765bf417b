#include "nnvm/jit/x86/rowwise_kernel.h"

#include <cmath>
#include <cstddef>

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

void RowwiseKernel::accumulate(const Xmm& acc, const Xmm& v, bool tail) {
  if (!tail) vaddps(acc, acc, v);
  else if (avx512()) vaddps(acc | kTail, acc, v);
  else {
    vandps(v, v, Ymm(kMaskReg));
    vaddps(acc, acc, v);
  }
}

void RowwiseKernel::accumulate_product(const Xmm& acc, const Xmm& a, const Xmm& b, bool tail) {
  if (!tail) vfmadd231ps(acc, a, b);
  else if (avx512()) vfmadd231ps(acc | kTail, a, b);
  else {
    vandps(a, a, Ymm(kMaskReg));
    vfmadd231ps(acc, a, b);
  }
}

template <class Body> void RowwiseKernel::pass(Body body) {
  mov(kN, qword[kCall + AT(cols)]);
  float_loop(kJ, kN, kUnroll, [&](int vectors, bool tail) {
    for (int u = 0; u < vectors; ++u) body(u, tail);
  });
}

void RowwiseKernel::init_accumulators(int first, float value) {
  for (int u = 0; u < kUnroll; ++u) {
    if (value == 0) vxor(vreg(first + u), vreg(first + u), vreg(first + u));
    else vmovups(vreg(first + u), vconst(value));
  }
}

void RowwiseKernel::combine(int first, bool max) {
  const Xmm a0 = vreg(first), a1 = vreg(first + 1), a2 = vreg(first + 2), a3 = vreg(first + 3);
  if (max) {
    vmaxps(a0, a0, a1);
    vmaxps(a2, a2, a3);
    vmaxps(a0, a0, a2);
  } else {
    vaddps(a0, a0, a1);
    vaddps(a2, a2, a3);
    vaddps(a0, a0, a2);
  }
  const Xmm t = vreg(kT0);
  butterfly(a0, t, [&] {
    if (max) vmaxps(a0, a0, t);
    else vaddps(a0, a0, t);
  });
}

void RowwiseKernel::emit_max(int dst) {
  init_accumulators(0, -INFINITY);
  pass([&](int u, bool tail) {
    load_filled(vreg(kT0), kX, u, tail, -INFINITY, vreg(kT1));
    vmaxps(vreg(u), vreg(u), vreg(kT0));
  });
  combine(0, true);
  vmovaps(vreg(dst), vreg(0));
}

void RowwiseKernel::emit_exp_sum(int shift, int dst, bool store_exp) {
  init_accumulators(0, 0);
  pass([&](int u, bool tail) {
    const Xmm t = vreg(kT0);
    const Xmm scratch[] = {vreg(kT1), vreg(kT2)};
    load(t, kX, u, tail);
    vsubps(t, t, vreg(shift));
    // x - max <= 0: the cheaper exp (0 instead of a denormal below FLT_MIN)
    emit_exp_nonpositive(*this, t, scratch);
    if (store_exp) store(kY, u, tail, t);
    accumulate(vreg(u), t, tail);
  });
  combine(0, false);
  vmovaps(vreg(dst), vreg(0));
}

// One pass over the row for the mean and the variance: the sums of d and
// d² for d = x - x[0] (shifted by the row's first element, so the variance
// stays accurate when the mean is large against the spread, where the plain
// sum of squares would cancel), then mean = x[0] + Σd/n and variance =
// Σd²/n - (Σd/n)², at least 0. Against the reference's two passes (mean,
// then Σ(x - mean)²: kernels/cpu/norm.cpp) it saves a pass over the row,
// which measured 1.5x the handwritten two-pass loop's time on [4096 × 1024]
// (docs/BENCHMARKS.md); the results agree to float rounding.
void RowwiseKernel::emit_moments() {
  const Xmm mean = vreg(8), rstd = vreg(9), count = vreg(10), shift = vreg(11);
  Label empty, shifted;
  cmp(qword[kCall + AT(cols)], 0);
  je(empty, T_NEAR);
  vbroadcastss(shift, dword[kX]);
  jmp(shifted, T_NEAR);
  L(empty);  // no element to shift by (and none to read)
  vxor(shift, shift, shift);
  L(shifted);
  vbroadcastss(count, dword[kCall + AT(cols_f)]);
  init_accumulators(0, 0);
  init_accumulators(4, 0);
  pass([&](int u, bool tail) {
    const Xmm d = vreg(kT0);
    load(d, kX, u, tail);
    if (!tail) vsubps(d, d, shift);
    else if (avx512()) vsubps(d | kTail | T_z, d, shift);
    else {
      vsubps(d, d, shift);
      vandps(d, d, Ymm(kMaskReg));
    }
    vaddps(vreg(u), vreg(u), d);
    vfmadd231ps(vreg(4 + u), d, d);
  });
  combine(0, false);
  combine(4, false);
  vdivps(mean, vreg(0), count);   // the mean of d
  vdivps(rstd, vreg(4), count);   // the mean of d²
  vmulps(vreg(kT0), mean, mean);
  vsubps(rstd, rstd, vreg(kT0));  // the variance
  vxor(vreg(kT0), vreg(kT0), vreg(kT0));
  vmaxps(rstd, rstd, vreg(kT0));
  vaddps(mean, mean, shift);
  emit_rstd(rstd);
}

// One pass: the sum of squares (lanes past the row load as zero).
void RowwiseKernel::emit_rms() {
  const Xmm rstd = vreg(9);
  init_accumulators(0, 0);
  pass([&](int u, bool tail) {
    load(vreg(kT0), kX, u, tail);
    vfmadd231ps(vreg(u), vreg(kT0), vreg(kT0));
  });
  combine(0, false);
  vbroadcastss(vreg(kT0), dword[kCall + AT(cols_f)]);
  vdivps(rstd, vreg(0), vreg(kT0));
  emit_rstd(rstd);
}

void RowwiseKernel::emit_rstd(const Xmm& rstd) {
  vbroadcastss(vreg(kT0), dword[kCall + AT(eps)]);
  vaddps(rstd, rstd, vreg(kT0));
  vsqrtps(rstd, rstd);
  vmovups(vreg(kT0), vconst(1.0f));
  vdivps(rstd, vreg(kT0), rstd);
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
      emit_exp_sum(8, 9, !log);
      if (!log) {  // y *= 1 / sum
        vmovups(vreg(kT0), vconst(1.0f));
        vdivps(vreg(9), vreg(kT0), vreg(9));
        pass([&](int u, bool tail) {
          load(vreg(kT0), kY, u, tail);
          vmulps(vreg(kT0), vreg(kT0), vreg(9));
          store(kY, u, tail, vreg(kT0));
        });
      } else {  // y = (x - max) - log(sum)
        emit_log(9);
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
        vmulps(t, t, vreg(9));
        if (spec_.weight) {
          load(vreg(kT1), kW, u, tail);
          vmulps(t, t, vreg(kT1));
        }
        if (spec_.bias) {
          load(vreg(kT1), kB, u, tail);
          vaddps(t, t, vreg(kT1));
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
      init_accumulators(0, 0);
      if (centred) init_accumulators(4, 0);
      pass([&](int u, bool tail) {
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
        accumulate_product(vreg(u), d, xhat, tail);
        if (centred) accumulate(vreg(4 + u), d, tail);
      });
      combine(0, false);
      vmovaps(vreg(11), vreg(0));
      if (centred) {
        combine(4, false);
        vmovaps(vreg(10), vreg(4));
      }
      vbroadcastss(vreg(kT0), dword[kCall + AT(cols_f)]);
      vdivps(vreg(11), vreg(11), vreg(kT0));  // mean(d * xhat)
      if (centred) vdivps(vreg(10), vreg(10), vreg(kT0));  // mean(d)
      pass([&](int u, bool tail) {
        const Xmm xhat = vreg(kT0), g = vreg(kT1), d = vreg(kT2);
        load_xhat_and_d(u, tail, centred, xhat, g, d);
        if (centred) vsubps(d, d, vreg(10));
        vmulps(xhat, xhat, vreg(11));
        vsubps(d, d, xhat);
        vmulps(d, d, vreg(9));
        store(kY, u, tail, d);
      });
      break;
    }
    case RowOp::kRowLogSumExp: {
      emit_max(8);
      emit_exp_sum(8, 9, false);
      init_accumulators(0, 0);
      pass([&](int u, bool tail) {
        load(vreg(kT0), kX, u, tail);
        vaddps(vreg(u), vreg(u), vreg(kT0));
      });
      combine(0, false);
      imul(rax, kRow, 12);
      add(rax, qword[kCall + AT(row_out)]);
      vmovss(dword[rax], Xbyak::Xmm(8));
      vmovss(dword[rax + 4], Xbyak::Xmm(9));
      vmovss(dword[rax + 8], Xbyak::Xmm(0));
      break;
    }
    case RowOp::kCrossEntropyBackward: {
      emit_max(8);
      emit_exp_sum(8, 9, false);
      emit_log(9);
      vaddps(vreg(9), vreg(9), vreg(8));  // lse = max + log(sum)
      mov(rax, qword[kCall + AT(row_a)]);
      vbroadcastss(vreg(10), dword[rax + kRow * 4]);
      mov(rax, qword[kCall + AT(row_b)]);
      vbroadcastss(vreg(11), dword[rax + kRow * 4]);
      pass([&](int u, bool tail) {  // y = a * exp(x - lse) - b * weight
        const Xmm t = vreg(kT0);
        const Xmm scratch[] = {vreg(kT1), vreg(kT2)};
        load(t, kX, u, tail);
        vsubps(t, t, vreg(9));
        emit_exp(*this, t, scratch);
        vmulps(t, t, vreg(10));
        if (spec_.weight) {
          load(vreg(kT1), kW, u, tail);
          vfnmadd231ps(t, vreg(kT1), vreg(11));
        } else {
          vsubps(t, t, vreg(11));
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
