// The base of every x86 kernel class (STYLE: oneDNN's jit_generator): an
// Xbyak code generator for one ISA that owns
//   - W^X memory: code is written into read+write pages, which become
//     read+exec in finalize(); no page is ever writable and executable;
//   - the System V preamble/postamble (callee-saved registers, a stack frame);
//   - a table of vector constants emitted after the code and addressed
//     rip-relative (each constant fills a whole zmm, so an ymm reads it too);
//   - the ISA's vector registers and masks: AVX-512 compares into opmask
//     registers and writes under them; AVX2 compares into a vector and blends.
// Kernels and injectors are written once over Xbyak::Xmm and run on both.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <xbyak/xbyak.h>

#include "nnvm/jit/x86/isa.h"

namespace nnvm::jit::x86 {

// A comparison result: an opmask register (AVX-512) or a vector of lane masks (AVX2).
struct VMask {
  Xbyak::Opmask k;
  Xbyak::Xmm v;
};

class Generator : public Xbyak::CodeGenerator {
 public:
  static constexpr size_t kMaxCodeBytes = 256 * 1024;

  explicit Generator(Isa isa);

  Isa isa() const { return isa_; }
  bool avx512() const { return isa_ == Isa::kAvx512; }
  int lanes() const { return avx512() ? 16 : 8; }
  int num_vregs() const { return avx512() ? 32 : 16; }
  Xbyak::Xmm vreg(int i) const;
  // A mask for a comparison: opmask k2 on AVX-512, else the vector register `v`.
  VMask mask(const Xbyak::Xmm& v) const { return VMask{Xbyak::Opmask(2), v}; }

  // A vector with `value` (or `bits`) in every lane, in the table after the code.
  Xbyak::Address vconst(float value);
  // The same constants as an arithmetic instruction's last source: on
  // AVX-512 one lane broadcast by the instruction ({1to16}: a 4-byte load,
  // not 64; ps and dword instructions only), else the whole vector.
  Xbyak::Address vconst_b(float value);
  Xbyak::Address vconst_bits_b(uint32_t bits);
  Xbyak::Address vconst_bits(uint32_t bits);
  // The int32 lane indices 0, 1, 2, ...
  Xbyak::Address vconst_iota();
  // A vector of 16 given lanes (its first 8 on AVX2).
  Xbyak::Address vconst_lanes(const std::array<uint32_t, 16>& lanes) { return table_entry(lanes); }

  // Bitwise and/or/xor of float lanes (vpandd etc. on AVX-512F, which has no vandps).
  void vand(const Xbyak::Xmm& dst, const Xbyak::Xmm& a, const Xbyak::Operand& b);
  void vor(const Xbyak::Xmm& dst, const Xbyak::Xmm& a, const Xbyak::Operand& b);
  void vxor(const Xbyak::Xmm& dst, const Xbyak::Xmm& a, const Xbyak::Operand& b);

  // m = a <pred> b, lane by lane (pred: a _CMP_ predicate).
  void compare(const VMask& m, const Xbyak::Xmm& a, const Xbyak::Operand& b, int pred);
  // dst = m ? value : dst.
  void blend(const VMask& m, const Xbyak::Xmm& dst, const Xbyak::Operand& value);

  // The entry point, valid after finalize().
  const void* entry() const { return getCode(); }
  // Calls the generated code as a function of `args`' types.
  template <class... Args>
  void run_code(Args... args) const {
    reinterpret_cast<void (*)(Args...)>(const_cast<void*>(entry()))(args...);
  }
  size_t code_bytes() const { return getSize(); }

 protected:
  // Saves the callee-saved GPRs and reserves `frame_bytes` of stack at rsp.
  void preamble(int64_t frame_bytes);
  void postamble();
  // Emits the constant table and makes the code read+exec. Call once, after generating.
  void finalize();

  // The mask of a tail of ecx lanes (0 <= ecx < lanes(); clobbers eax): opmask
  // `k` on AVX-512, else vector register `ymm` (lane i set when i < ecx).
  void emit_tail_mask(const Xbyak::Opmask& k, int ymm) {
    if (avx512()) {
      mov(eax, 1);
      shl(eax, cl);
      sub(eax, 1);
      kmovw(k, eax);
    } else {
      const Xbyak::Ymm m(ymm);
      vmovd(Xbyak::Xmm(ymm), ecx);
      vpbroadcastd(m, Xbyak::Xmm(ymm));
      vpcmpgtd(m, m, vconst_iota());
    }
  }

  // Combines the lanes of `v` in a butterfly (halves, quarters, pairs,
  // neighbours): before each `op()`, `t` holds v's lanes swapped at that
  // distance, and op folds t into v. Every lane ends with the same value from
  // the same order of operations.
  template <class Op> void butterfly(const Xbyak::Xmm& v, const Xbyak::Xmm& t, Op op) {
    if (avx512()) {
      vshuff32x4(Xbyak::Zmm(t.getIdx()), Xbyak::Zmm(v.getIdx()), Xbyak::Zmm(v.getIdx()), 0x4E);
      op();
      vshuff32x4(Xbyak::Zmm(t.getIdx()), Xbyak::Zmm(v.getIdx()), Xbyak::Zmm(v.getIdx()), 0xB1);
      op();
    } else {
      vperm2f128(Xbyak::Ymm(t.getIdx()), Xbyak::Ymm(v.getIdx()), Xbyak::Ymm(v.getIdx()), 0x01);
      op();
    }
    vpermilps(t, v, 0x4E);
    op();
    vpermilps(t, v, 0xB1);
    op();
  }

  // Emits a loop over the `n` float32 elements of a row (n in a register,
  // counted down to 0; `j` the byte offset, from 0): `unroll` vectors a step
  // while that many remain, then one at a time, then one masked tail.
  // `step(vectors, tail)` emits the work of `vectors` vectors at offset j.
  template <class Step>
  void float_loop(const Xbyak::Reg64& j, const Xbyak::Reg64& n, int unroll, Step step) {
    Xbyak::Label unrolled, single, tail, done;
    xor_(j, j);
    L(unrolled);
    cmp(n, unroll * lanes());
    jb(single, T_NEAR);
    step(unroll, false);
    add(j, unroll * lanes() * 4);
    sub(n, unroll * lanes());
    jmp(unrolled, T_NEAR);
    L(single);
    cmp(n, lanes());
    jb(tail, T_NEAR);
    step(1, false);
    add(j, lanes() * 4);
    sub(n, lanes());
    jmp(single, T_NEAR);
    L(tail);
    test(n, n);
    jz(done, T_NEAR);
    step(1, true);
    L(done);
  }

 private:
  Isa isa_;
  int64_t frame_bytes_ = 0;
  Xbyak::Label table_at_;
  Xbyak::Address table_entry(const std::array<uint32_t, 16>& lanes, bool broadcast = false);
  std::vector<std::array<uint32_t, 16>> table_;  // one zmm each
};

}  // namespace nnvm::jit::x86
