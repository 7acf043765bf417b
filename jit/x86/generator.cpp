#include "nnvm/jit/x86/generator.h"

#include <algorithm>
#include <bit>

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;

namespace {
const Reg64 kSaved[] = {rbx, rbp, r12, r13, r14, r15};
constexpr int kConstBytes = 64;  // one zmm
}  // namespace

// DontSetProtectRWE: the buffer stays read+write (never executable) until finalize().
Generator::Generator(Isa isa) : CodeGenerator(kMaxCodeBytes, DontSetProtectRWE), isa_(isa) {}

Xmm Generator::vreg(int i) const { return avx512() ? Xmm(Zmm(i)) : Xmm(Ymm(i)); }

Address Generator::table_entry(const std::array<uint32_t, 16>& lanes, bool broadcast) {
  auto it = std::find(table_.begin(), table_.end(), lanes);
  const int64_t index = it - table_.begin();
  if (it == table_.end()) table_.push_back(lanes);
  const RegRip at = rip + table_at_ + int(index * kConstBytes);
  if (!avx512()) return yword[at];
  return broadcast ? ptr_b[at] : zword[at];
}

Address Generator::vconst_bits(uint32_t bits) {
  std::array<uint32_t, 16> lanes;
  lanes.fill(bits);
  return table_entry(lanes);
}

Address Generator::vconst_iota() {
  std::array<uint32_t, 16> lanes;
  for (uint32_t i = 0; i < 16; ++i) lanes[i] = i;
  return table_entry(lanes);
}

Address Generator::vconst(float value) { return vconst_bits(std::bit_cast<uint32_t>(value)); }

Address Generator::vconst_bits_b(uint32_t bits) {
  std::array<uint32_t, 16> lanes;
  lanes.fill(bits);
  return table_entry(lanes, true);
}

Address Generator::vconst_b(float value) { return vconst_bits_b(std::bit_cast<uint32_t>(value)); }

void Generator::vand(const Xmm& dst, const Xmm& a, const Operand& b) {
  if (avx512()) vpandd(dst, a, b);
  else vandps(dst, a, b);
}
void Generator::vor(const Xmm& dst, const Xmm& a, const Operand& b) {
  if (avx512()) vpord(dst, a, b);
  else vorps(dst, a, b);
}
void Generator::vxor(const Xmm& dst, const Xmm& a, const Operand& b) {
  if (avx512()) vpxord(dst, a, b);
  else vxorps(dst, a, b);
}

void Generator::compare(const VMask& m, const Xmm& a, const Operand& b, int pred) {
  if (avx512()) vcmpps(m.k, a, b, uint8_t(pred));
  else vcmpps(m.v, a, b, uint8_t(pred));
}

void Generator::blend(const VMask& m, const Xmm& dst, const Operand& value) {
  if (avx512()) vblendmps(dst | m.k, dst, value);
  else vblendvps(dst, dst, value, m.v);
}

void Generator::preamble(int64_t frame_bytes) {
  for (const Reg64& r : kSaved) push(r);
  frame_bytes_ = frame_bytes;
  if (frame_bytes_ > 0) sub(rsp, frame_bytes_);
}

void Generator::postamble() {
  if (frame_bytes_ > 0) add(rsp, frame_bytes_);
  for (auto r = std::rbegin(kSaved); r != std::rend(kSaved); ++r) pop(*r);
  vzeroupper();  // no AVX-SSE transition penalty in the caller
  ret();
}

void Generator::finalize() {
  align(kConstBytes);
  L(table_at_);
  for (const auto& lanes : table_)
    for (uint32_t bits : lanes) dd(bits);
  ready();
  setProtectModeRE();  // W^X: from here on the code is read+exec, never writable
}

}  // namespace nnvm::jit::x86
