#include "nnvm/jit/x86/gemm_kernel.h"

#include <cstddef>

#include "nnvm/core/error.h"
#include "nnvm/kernels/cpu/cpu_features.h"

namespace nnvm::jit::x86 {

using namespace Xbyak;
using namespace Xbyak::util;

namespace {

// Rows are addressed from three base pointers, six rows each: base + 0,
// + s, + 2s, + 3s, + 4s, + 5s with s, 3s and 5s in registers.
constexpr int kRowsPerBase = 6;
constexpr int kMaxRows = 3 * kRowsPerBase;
// The k loop's unrolling.
constexpr int kUnroll = 4;

// Registers besides the accumulators: the B vectors, one broadcast
// temporary, and on AVX2 one more so the store has a mask, a loaded C and
// beta at once (AVX-512 keeps the mask in k1 and reads C from memory).
int registers_needed(Isa isa, int mr, int vectors) {
  return mr * vectors + vectors + 1 + (isa == Isa::kAvx2 ? 1 : 0);
}

}  // namespace

std::string GemmTileSpec::name() const {
  return std::string(u8s8 ? "gemm-u8s8-" : "gemm-") + std::to_string(mr) + "x" + std::to_string(vectors) +
         (b_rows ? "-rows" : "");
}

bool GemmTileKernel::fits(Isa isa, int mr, int vectors) {
  if (isa == Isa::kPortable || mr < 1 || mr > kMaxRows || vectors < 1 || vectors > 2) return false;
  return registers_needed(isa, mr, vectors) <= (isa == Isa::kAvx512 ? 32 : 16);
}

int GemmTileKernel::max_rows(Isa isa, int vectors) {
  int mr = 0;
  while (fits(isa, mr + 1, vectors)) ++mr;
  return mr;
}

GemmTileKernel::GemmTileKernel(Isa isa, const GemmTileSpec& spec) : Generator(isa), spec_(spec) {
  NNVM_CHECK(fits(isa, spec.mr, spec.vectors), "GemmTileKernel", "a ", spec.mr, "x", spec.vectors,
             " tile does not fit ", isa_name(isa), "'s registers");
  NNVM_CHECK(!spec.u8s8 || (isa == Isa::kAvx512 && cpu::cpu_features().avx512_vnni && !spec.b_rows),
             "GemmTileKernel", "a uint8 x int8 tile needs AVX512_VNNI (and B packed)");
  generate();
  finalize();
}

void GemmTileKernel::generate() {
  const int mr = spec_.mr, nv = spec_.vectors, width = lanes();
  const int bases = (mr + kRowsPerBase - 1) / kRowsPerBase;
  const Reg64 args = rdi, c = rsi, ldc = rax, kleft = rdx;
  const Reg64 base[3] = {r8, r9, r10};
  const Reg64 s1 = r11, s3 = r12, s5 = r13, a_step = r14, b = r15, b_step = rbx;
  const Reg64 table = rcx, offset = rbp;  // a b_rows kernel's (rcx is free until the store)
  auto acc = [&](int i, int h) { return vreg(i * nv + h); };
  auto bvec = [&](int h) { return vreg(mr * nv + h); };
  const Xmm tmp = vreg(mr * nv + nv);
  auto row_of_a = [&](int i) -> Address {
    const Reg64& p = base[i / kRowsPerBase];
    switch (i % kRowsPerBase) {
      case 0: return ptr[p];
      case 1: return ptr[p + s1];
      case 2: return ptr[p + s1 * 2];
      case 3: return ptr[p + s3];
      case 4: return ptr[p + s1 * 4];
      default: return ptr[p + s5];
    }
  };
  auto arg = [&](size_t offset) { return ptr[args + int(offset)]; };

  preamble(0);
  mov(base[0], arg(offsetof(GemmTileCall, a)));
  mov(s1, arg(offsetof(GemmTileCall, a_row_bytes)));
  lea(s3, ptr[s1 + s1 * 2]);
  lea(s5, ptr[s1 + s1 * 4]);
  for (int q = 1; q < bases; ++q) {
    mov(base[q], s3);
    add(base[q], base[q]);  // 6 rows on from the previous base
    add(base[q], base[q - 1]);
  }
  mov(a_step, arg(offsetof(GemmTileCall, a_k_bytes)));
  mov(b, arg(offsetof(GemmTileCall, b)));
  mov(b_step, arg(offsetof(GemmTileCall, b_k_bytes)));
  if (spec_.b_rows) mov(table, arg(offsetof(GemmTileCall, b_rows)));
  mov(c, arg(offsetof(GemmTileCall, c)));
  mov(ldc, arg(offsetof(GemmTileCall, ldc_bytes)));
  mov(kleft, arg(offsetof(GemmTileCall, kc)));

  // The tile of C is written last: ask for its lines now, owned.
  for (int i = 0; i < mr; ++i) {
    prefetchw(ptr[c]);
    if (nv * width * 4 > 64) prefetchw(ptr[c + nv * width * 4 - 4]);
    add(c, ldc);
  }
  mov(c, arg(offsetof(GemmTileCall, c)));

  for (int i = 0; i < mr; ++i)
    for (int h = 0; h < nv; ++h) vxor(acc(i, h), acc(i, h), acc(i, h));

  // One step of k: a row of B, then each row's broadcast element of A.
  auto step = [&]() {
    if (spec_.b_rows) {
      mov(offset, ptr[table]);
      add(table, 8);
      for (int h = 0; h < nv; ++h) vmovups(bvec(h), ptr[b + offset * 4 + h * width * 4]);
    } else {
      for (int h = 0; h < nv; ++h) vmovups(bvec(h), ptr[b + h * width * 4]);
    }
    for (int i = 0; i < mr; ++i) {
      if (spec_.u8s8) {  // four uint8s of A's row against each column's four int8s
        vpbroadcastd(tmp, row_of_a(i));
        for (int h = 0; h < nv; ++h) vpdpbusd(acc(i, h), tmp, bvec(h));
        continue;
      }
      if (avx512() && nv == 1) {
        vfmadd231ps(acc(i, 0), bvec(0), ptr_b[row_of_a(i).getRegExp()]);
        continue;
      }
      vbroadcastss(tmp, row_of_a(i));
      for (int h = 0; h < nv; ++h) vfmadd231ps(acc(i, h), bvec(h), tmp);
    }
    for (int q = 0; q < bases; ++q) add(base[q], a_step);
    if (!spec_.b_rows) add(b, b_step);
  };
  Label unrolled, single, stored;
  L(unrolled);
  cmp(kleft, kUnroll);
  jl(single, T_NEAR);
  for (int u = 0; u < kUnroll; ++u) step();
  sub(kleft, kUnroll);
  jmp(unrolled, T_NEAR);
  Label single_loop;
  L(single);
  test(kleft, kleft);
  jz(stored, T_NEAR);
  L(single_loop);
  step();
  dec(kleft);
  jnz(single_loop, T_NEAR);
  L(stored);

  // A tile as wide as its vectors stores them whole. A narrower one's last
  // vector of a row stores `cols - (vectors - 1) · lanes` lanes (1..lanes)
  // under a mask: k1 on AVX-512, a vector of lane masks on AVX2. The branch
  // is not for Intel's sake (a masked store there is a plain one's cost) but
  // AMD's: on Zen 3 an AVX2 vmaskmovps store of a full tile's 6 rows took
  // about a tenth of a convolution's tiles (kc 72) in `BM_Conv`.
  const Xmm mask = bvec(0), loaded = nv > 1 ? bvec(1) : tmp;
  const Xmm beta = avx512() ? tmp : vreg(mr * nv + nv + 1);
  mov(ldc, arg(offsetof(GemmTileCall, ldc_bytes)));
  vbroadcastss(beta, dword[args + int(offsetof(GemmTileCall, beta))]);

  auto store_rows = [&](GemmStore mode, bool whole) {
    for (int i = 0; i < mr; ++i) {
      for (int h = 0; h < nv; ++h) {
        const Xmm v = acc(i, h);
        const Address at = ptr[c + h * width * 4];
        const bool masked = !whole && h == nv - 1;
        if (mode != GemmStore::kOverwrite) {
          // The old C; for a masked vector under the mask (an AVX-512
          // masked memory operand never faults on a lane it does not read).
          const Operand* old = &at;  // (an Address copied into an Operand would lose its address)
          if (masked && !avx512()) {
            vmaskmovps(loaded, mask, at);
            old = &loaded;
          }
          const Xmm dst = masked && avx512() ? Xmm(v | k1) : v;
          if (mode == GemmStore::kAccumulate) vaddps(dst, v, *old);
          else vfmadd231ps(dst, beta, *old);
        }
        if (!masked) vmovups(at, v);
        else if (avx512()) vmovups(at | k1, v);
        else vmaskmovps(at, mask, v);
      }
      add(c, ldc);
    }
  };
  if (spec_.u8s8) {
    mov(ecx, dword[args + int(offsetof(GemmTileCall, cols))]);
    sub(ecx, (nv - 1) * width);
    emit_tail_mask(k1, mask.getIdx());  // (clobbers eax: ldc)
    mov(ldc, arg(offsetof(GemmTileCall, ldc_bytes)));
    store_u8s8(c, ldc, args);
    postamble();
    return;
  }
  // Each store mode, whole and masked.
  Label done;
  auto stores = [&](bool whole) {
    Label accumulate, scaled;
    mov(ecx, dword[args + int(offsetof(GemmTileCall, store))]);
    cmp(ecx, int(GemmStore::kAccumulate));
    je(accumulate, T_NEAR);
    cmp(ecx, int(GemmStore::kBeta));
    je(scaled, T_NEAR);
    store_rows(GemmStore::kOverwrite, whole);
    jmp(done, T_NEAR);
    L(accumulate);
    store_rows(GemmStore::kAccumulate, whole);
    jmp(done, T_NEAR);
    L(scaled);
    store_rows(GemmStore::kBeta, whole);
    jmp(done, T_NEAR);
  };
  Label narrow;
  cmp(dword[args + int(offsetof(GemmTileCall, cols))], nv * width);
  jne(narrow, T_NEAR);
  stores(true);
  L(narrow);
  mov(ecx, dword[args + int(offsetof(GemmTileCall, cols))]);
  sub(ecx, (nv - 1) * width);
  emit_tail_mask(k1, mask.getIdx());  // (clobbers eax: ldc)
  mov(ldc, arg(offsetof(GemmTileCall, ldc_bytes)));
  stores(false);
  L(done);
  postamble();
}

// A u8s8 tile's store: int32 sums as they are, or dequantized per column
// (GemmStore::kDequantize). The last vector of a row is under k1; its
// column operands are read under k1 too (AVX-512 suppresses faults on the
// lanes a mask leaves out), so nothing past column `cols` is read.
void GemmTileKernel::store_u8s8(const Reg64& c, const Reg64& ldc, const Reg64& args) {
  const int mr = spec_.mr, nv = spec_.vectors, width = lanes();
  auto acc = [&](int i, int h) { return vreg(i * nv + h); };
  const Reg64 offset = r8, bias = r9, scale = r10;
  auto vector = [&](const Reg64& base, int h) { return ptr[base + h * width * 4]; };
  auto masked = [&](const Xmm& x, int h) { return h == nv - 1 ? Xmm(x | k1) : x; };
  Label dequantize, done;
  mov(ecx, dword[args + int(offsetof(GemmTileCall, store))]);
  cmp(ecx, int(GemmStore::kDequantize));
  je(dequantize, T_NEAR);
  for (int i = 0; i < mr; ++i) {
    for (int h = 0; h < nv; ++h) vmovdqu32(h == nv - 1 ? vector(c, h) | k1 : vector(c, h), acc(i, h));
    add(c, ldc);
  }
  jmp(done, T_NEAR);
  L(dequantize);
  mov(offset, ptr[args + int(offsetof(GemmTileCall, col_offset))]);
  mov(scale, ptr[args + int(offsetof(GemmTileCall, col_scale))]);
  mov(bias, ptr[args + int(offsetof(GemmTileCall, bias))]);
  // the loop's B vectors are free: the column scales
  for (int h = 0; h < nv; ++h) {
    const Xmm scales = vreg(mr * nv + h);
    if (h == nv - 1) vmovups(scales | k1 | T_z, vector(scale, h));
    else vmovups(scales, vector(scale, h));
  }
  for (int i = 0; i < mr; ++i) {
    for (int h = 0; h < nv; ++h) {
      const Xmm v = acc(i, h);
      vpsubd(masked(v, h), v, vector(offset, h));
      vcvtdq2ps(v, v);
      vfmadd213ps(masked(v, h), vreg(mr * nv + h), vector(bias, h));
      vmovups(h == nv - 1 ? vector(c, h) | k1 : vector(c, h), v);
    }
    add(c, ldc);
  }
  L(done);
}

}  // namespace nnvm::jit::x86
