// The pointwise kernel's operand loads and stores (pointwise_kernel.h): each
// operand dtype's conversion to and from float32 lanes, broadcasts, gathers,
// strided 8- and 16-bit lanes staged element by element, and masked tails;
// and the int64 <-> float32 conversions inside a kernel.
#include <immintrin.h>

#include <array>

#include "nnvm/core/error.h"
#include "nnvm/jit/x86/operand_io.h"
#include "nnvm/jit/x86/vector_math.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;
using namespace pointwise;

void PointwiseKernel::emit_load(int32_t e, const Xmm& dst, bool tail) {
  const Expr& x = ir_.exprs[size_t(e)];
  const int k = x.arg;
  if (elem_bytes(k) == 8) {
    emit_load_int64(k, x.prim == Prim::kLoadHigh, dst, tail);
    return;
  }
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
    default: emit_gather(k, 0, dst, tail);
  }
  // round to nearest even, as static_cast<float>; kLoadLow keeps the bits
  if (ir_.dtype(size_t(k)) == kInt32 && x.prim == Prim::kLoad) vcvtdq2ps(dst, dst);
}

// The 32 bits at `offset` bytes into each of a vector's (or the tail's)
// elements of a strided operand; masked-off lanes are not read.
void PointwiseKernel::emit_gather(int k, int offset, const Xmm& dst, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const Xmm lanes_at = vreg(gather_reg_[size_t(k)]);
  if (avx512()) {
    if (tail) kmovw(kGatherMask, kTailMask);
    else kxnorw(kGatherMask, kGatherMask, kGatherMask);
    vxor(dst, dst, dst);
    vgatherdps(dst | kGatherMask, ptr[p + offset + lanes_at]);
  } else {
    const Xmm m = temp();
    if (tail) vmovaps(m, Ymm(tail_mask_reg_));
    else vpcmpeqd(m, m, m);
    vxorps(dst, dst, dst);
    vgatherdps(dst, ptr[p + offset + lanes_at], m);
    free_reg(m.getIdx());
  }
}

void PointwiseKernel::emit_store(int32_t output, int32_t e, bool tail) {
  if (ir_.dtype(size_t(ir_.inputs + output)) == kInt64) {
    emit_store_int64(ir_.inputs + output, e, tail);
    return;
  }
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
  emit_widen_narrow(k, dst, tail);
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
  emit_widen_narrow(k, dst, tail);
}

void PointwiseKernel::emit_widen_narrow(int k, const Xmm& dst, bool tail) {
  const Address src = narrow_source(k, tail);
  // EVEX masking suppresses faults on the lanes it leaves out (a strided operand is staged whole)
  const bool masked = tail && avx512() && accesses_[size_t(k)] != 's';
  emit_widen(*this, dst, ir_.dtype(size_t(k)), src, masked ? &kTailMask : nullptr);
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

namespace {

// vpermi2d indices over (low, high): the qwords of lanes 8 * half ..; and over
// (qwords of lanes 0-7, of lanes 8-15): each lane's low (high) dword.
std::array<uint32_t, 16> interleaved(int half) {
  std::array<uint32_t, 16> lanes;
  for (uint32_t j = 0; j < 8; ++j) {
    lanes[2 * j] = 8 * uint32_t(half) + j;
    lanes[2 * j + 1] = 16 + 8 * uint32_t(half) + j;
  }
  return lanes;
}
std::array<uint32_t, 16> deinterleaved(bool high) {
  std::array<uint32_t, 16> lanes;
  for (uint32_t j = 0; j < 16; ++j) lanes[j] = 2 * j + uint32_t(high);
  return lanes;
}

const Opmask kHighTailMask = k4;  // the tail's lanes 8-15, as qwords

}  // namespace

void PointwiseKernel::emit_interleave(const Xmm& dst, const Xmm& low, const Xmm& high, int half) {
  vmovdqu32(dst, vconst_lanes(interleaved(half)));
  vpermi2d(dst, low, high);
}

void PointwiseKernel::emit_deinterleave(const Xmm& dst, const Xmm& first, const Operand& second, bool high) {
  vmovdqu32(dst, vconst_lanes(deinterleaved(high)));
  vpermi2d(dst, first, second);
}

// The low or high dwords of a vector's lanes, read as two vectors of qwords
// (under the tail mask, a qword per lane), then picked apart.
void PointwiseKernel::emit_load_int64(int k, bool high, const Xmm& dst, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const int half = high ? 4 : 0;
  switch (accesses_[size_t(k)]) {
    case 'b':
      vpbroadcastd(dst, dword[p + half]);
      return;
    case 's':
      emit_gather(k, half, dst, tail);
      return;
    default: break;
  }
  const int32_t at = vector_ * lanes() * 8, second = lanes() * 4;  // bytes of half a vector's qwords
  if (avx512()) {
    const Xmm a = temp();
    if (!tail) {
      vmovdqu64(a, zword[p + at]);
      emit_deinterleave(dst, a, zword[p + at + second], high);
    } else {
      const Xmm b = temp();
      kshiftrw(kHighTailMask, kTailMask, 8);
      vmovdqu64(a | kTailMask | T_z, zword[p]);
      vmovdqu64(b | kHighTailMask | T_z, zword[p + second]);
      emit_deinterleave(dst, a, b, high);
      free_reg(b.getIdx());
    }
    free_reg(a.getIdx());
    return;
  }
  // AVX2: vshufps takes dword 0 or 1 of each qword from both vectors, in the
  // lane order 0 1 4 5 2 3 6 7; vpermpd puts the pairs back in order
  const uint8_t pick = high ? 0xDD : 0x88;
  if (!tail) {
    vmovups(dst, yword[p + at]);
    vshufps(dst, dst, yword[p + at + second], pick);
  } else {
    const Xmm m = temp(), b = temp();
    const Xbyak::Xmm m128(m.getIdx());
    vpmovsxdq(m, Xbyak::Xmm(tail_mask_reg_));  // lanes 0-3 as qword masks
    vmaskmovpd(dst, m, yword[p]);
    vextracti128(m128, Ymm(tail_mask_reg_), 1);
    vpmovsxdq(m, m128);
    vmaskmovpd(b, m, yword[p + second]);
    vshufps(dst, dst, b, pick);
    free_reg(b.getIdx());
    free_reg(m.getIdx());
  }
  vpermpd(Ymm(dst.getIdx()), Ymm(dst.getIdx()), 0xD8);
}

// The pair's halves interleaved into qwords, two vectors of them (the tail's
// under masks).
void PointwiseKernel::emit_store_int64(int k, int32_t pair, bool tail) {
  const Reg64& p = kOperandRegs[k];
  const Expr& e = ir_.exprs[size_t(pair)];
  NNVM_CHECK(e.prim == Prim::kPair, "PointwiseKernel", "an int64 output stores a pair of halves");
  const Xmm low = reg_of(e.a), high = reg_of(e.b);
  const int32_t at = vector_ * lanes() * 8, second = lanes() * 4;
  const Xmm a = temp();
  if (avx512()) {
    emit_interleave(a, low, high, 0);
    if (tail) vmovdqu64(zword[p] | kTailMask, a);
    else vmovdqu64(zword[p + at], a);
    emit_interleave(a, low, high, 1);
    if (tail) {
      kshiftrw(kHighTailMask, kTailMask, 8);
      vmovdqu64(zword[p + second] | kHighTailMask, a);
    } else {
      vmovdqu64(zword[p + at + second], a);
    }
    free_reg(a.getIdx());
    return;
  }
  // AVX2: unpacking interleaves within 128-bit halves (lanes 0 1 | 4 5 and
  // 2 3 | 6 7); vperm2i128 gathers lanes 0-3 and 4-7
  const Xmm b = temp(), c = temp();
  vpunpckldq(b, low, high);
  vpunpckhdq(c, low, high);
  vperm2i128(Ymm(a.getIdx()), Ymm(b.getIdx()), Ymm(c.getIdx()), 0x20);
  vperm2i128(Ymm(b.getIdx()), Ymm(b.getIdx()), Ymm(c.getIdx()), 0x31);
  if (!tail) {
    vmovdqu(yword[p + at], Ymm(a.getIdx()));
    vmovdqu(yword[p + at + second], Ymm(b.getIdx()));
  } else {
    const Xbyak::Xmm c128(c.getIdx());
    vpmovsxdq(c, Xbyak::Xmm(tail_mask_reg_));
    vmaskmovpd(yword[p], c, a);
    vextracti128(c128, Ymm(tail_mask_reg_), 1);
    vpmovsxdq(c, c128);
    vmaskmovpd(yword[p + second], c, b);
  }
  free_reg(c.getIdx());
  free_reg(b.getIdx());
  free_reg(a.getIdx());
}

// AVX2 has no such conversion: each half of the lanes as 4 doubles, high *
// 2^32 + low rounded to odd (TwoSum's error says which way the double sum
// rounded: toward zero, keep it, else step back one ulp; inexact, set the
// last bit), then to float32. Rounding to odd at 53 >= 24 + 2 bits makes the
// second rounding give the correctly rounded result (Boldo and Melquiond).
void PointwiseKernel::emit_int64_to_float(int32_t i) {
  const Expr& e = ir_.exprs[size_t(i)];
  const Xmm high = reg_of(e.a), low = reg_of(e.b);
  const Xmm d = dest_for(i, -1), t = temp();
  if (!avx512()) {
    std::array<uint32_t, 16> two32{}, one{};  // 2^32 and the integer 1 in each qword
    for (size_t j = 0; j < 16; j += 2) {
      two32[j + 1] = 0x41F00000u;
      one[j] = 1;
    }
    const Ymm h(temp().getIdx()), l(temp().getIdx()), sum(temp().getIdx()), u(temp().getIdx());
    const Ymm y(t.getIdx());
    const Xbyak::Xmm t128(t.getIdx());
    for (int part = 0; part < 2; ++part) {
      if (part == 0) {
        vcvtdq2pd(h, Xbyak::Xmm(high.getIdx()));
        vcvtdq2pd(l, Xbyak::Xmm(low.getIdx()));
      } else {
        vextracti128(t128, Ymm(high.getIdx()), 1);
        vcvtdq2pd(h, t128);
        vextracti128(t128, Ymm(low.getIdx()), 1);
        vcvtdq2pd(l, t128);
      }
      vmulpd(h, h, vconst_lanes(two32));
      vxorpd(y, y, y);  // low is unsigned: 2^32 more where its int32 reading is negative
      vcmppd(y, l, y, _CMP_LT_OQ);
      vandpd(y, y, vconst_lanes(two32));
      vaddpd(l, l, y);
      vaddpd(sum, h, l);  // TwoSum: the error is (h - (sum - b')) + (l - b'), b' = sum - h
      vsubpd(y, sum, h);
      vsubpd(u, sum, y);
      vsubpd(u, h, u);
      vsubpd(y, l, y);
      vaddpd(u, u, y);
      vxorpd(y, y, y);
      vcmppd(y, u, y, _CMP_NEQ_OQ);  // inexact
      vxorpd(u, u, sum);  // sign bit: the error points back toward zero, so the sum rounded away
      vpxor(h, h, h);
      vpcmpgtq(u, h, u);
      vpand(u, u, y);
      vpaddq(sum, sum, u);  // one ulp toward zero
      vpand(y, y, vconst_lanes(one));
      vpor(sum, sum, y);
      if (part == 0) {
        vcvtpd2ps(Xbyak::Xmm(d.getIdx()), sum);
      } else {
        vcvtpd2ps(t128, sum);
        vinsertf128(Ymm(d.getIdx()), Ymm(d.getIdx()), t128, 1);
      }
    }
    for (const Ymm& r : {h, l, sum, u}) free_reg(r.getIdx());
    free_reg(t.getIdx());
    return;
  }
  emit_interleave(t, low, high, 0);
  vcvtqq2ps(Ymm(d.getIdx()), Zmm(t.getIdx()));
  emit_interleave(t, low, high, 1);
  vcvtqq2ps(Ymm(t.getIdx()), Zmm(t.getIdx()));
  vinsertf32x8(Zmm(d.getIdx()), Zmm(d.getIdx()), Ymm(t.getIdx()), 1);
  free_reg(t.getIdx());
}

// One half of static_cast<int64_t>(a) (a NaN or a float past int64's range,
// undefined behaviour in the reference, gives whatever the sequence gives).
// AVX2 has no such conversion: per 4 lanes in double (exact), truncated,
// split as high = floor(x / 2^32) and low = x - high * 2^32 (both exact),
// each converted to int32 (low offset by 2^31 into int32's range and back).
void PointwiseKernel::emit_trunc_int64(int32_t i) {
  const Expr& e = ir_.exprs[size_t(i)];
  const bool high = e.arg == 1;
  const Xmm x = reg_of(e.a);
  const Xmm d = dest_for(i, -1), t = temp(), u = temp();
  if (avx512()) {
    vcvttps2qq(Zmm(t.getIdx()), Ymm(x.getIdx()));
    vextractf32x8(Ymm(u.getIdx()), Zmm(x.getIdx()), 1);
    vcvttps2qq(Zmm(u.getIdx()), Ymm(u.getIdx()));
    emit_deinterleave(d, t, u, high);
  } else {
    std::array<uint32_t, 16> down{}, up{}, two31{};  // 2^-32, 2^32 and 2^31 in each qword
    for (size_t j = 1; j < 16; j += 2) {
      down[j] = 0x3DF00000u;
      up[j] = 0x41F00000u;
      two31[j] = 0x41E00000u;
    }
    const Ymm y(t.getIdx()), w(u.getIdx());
    const Xbyak::Xmm t128(t.getIdx()), w128(u.getIdx());
    for (int part = 0; part < 2; ++part) {
      if (part == 0) {
        vcvtps2pd(y, Xbyak::Xmm(x.getIdx()));
      } else {
        vextractf128(t128, Ymm(x.getIdx()), 1);
        vcvtps2pd(y, t128);
      }
      vroundpd(y, y, 3);  // toward zero
      vmulpd(w, y, vconst_lanes(down));
      vroundpd(w, w, 1);  // floor: the high half
      if (!high) {
        vmulpd(w, w, vconst_lanes(up));
        vsubpd(w, y, w);  // the low half, in [0, 2^32)
        vsubpd(w, w, vconst_lanes(two31));
      }
      vcvttpd2dq(w128, w);
      if (part == 0) vmovaps(Xbyak::Xmm(d.getIdx()), w128);
      else vinsertf128(Ymm(d.getIdx()), Ymm(d.getIdx()), w128, 1);
    }
    if (!high) vxor(d, d, vconst_bits(0x80000000u));
  }
  free_reg(u.getIdx());
  free_reg(t.getIdx());
}

}  // namespace nnvm::jit::x86
