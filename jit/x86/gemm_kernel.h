// The GEMM micro-kernel kind (jit/README.md): one tile of
//   C[rows × cols] = A[rows × kc] · B[kc × cols]  (+ C, or + beta·C)
// with the tile's accumulators in vector registers for the whole k loop.
//
// Register blocking: a tile is `mr` rows of C by `vectors` vectors of
// columns (NR = vectors · lanes). Per step of k the kernel loads the
// vectors of one row of B, and for each row of A broadcasts one element and
// multiply-adds it into that row's accumulators: mr · vectors FMAs against
// vectors + mr loads. AVX-512's 32 registers hold up to 28 accumulators (a
// 14 × 32 tile), AVX2's 16 hold 12 (6 × 16); which mr runs is the driver's
// choice (jit/gemm_jit.h), measured per shape class.
//
// Operands are read through run-time byte strides, so one kernel serves a
// packed A (rows 4 bytes apart, k steps mr·4 apart) and an A read in place
// (a row-major A: rows lda·4 apart, k steps 4 apart), a packed B panel
// (k steps NR·4 apart) and a row-major B read in place; a kernel made for
// it reads B's rows at offsets from a table instead (a convolution's
// shifted image, gemm.h RowTable). Rows past `rows` are
// neither computed nor stored (each row count is its own kernel); columns
// past `cols` are computed on whatever B holds there and never stored
// (AVX-512: opmask, AVX2: vmaskmovps), so no byte past C's tile is touched.
//
// Every element of C is one chain of FMAs over k in increasing order,
// starting from zero, then stored, added to C, or added to beta·C: the same
// sums whatever mr, the tile's place or the thread that runs it.
#pragma once

#include <cstdint>
#include <string>

#include "nnvm/jit/x86/generator.h"

namespace nnvm::jit::x86 {

struct GemmTileSpec {
  int mr = 12;      // rows of the tile computed (1..14 on AVX-512, 1..6 on AVX2)
  int vectors = 2;  // vectors of columns (1 or 2)
  bool b_rows = false;  // B's rows at GemmTileCall::b_rows offsets from b
  // uint8 A · int8 B into int32 (AVX512_VNNI's vpdpbusd): each step of k is
  // a quad, a dword of four of A's k values broadcast against a row of B's
  // packed quads (kernels/cpu/gemm_int8.h); stores int32 or dequantizes.
  bool u8s8 = false;
  std::string name() const;  // "gemm-12x2", "gemm-12x2-rows", "gemm-u8s8-12x2"
};

// What to do with the old C.
enum class GemmStore : int32_t {
  kOverwrite = 0,  // C = A·B (C is never read)
  kAccumulate = 1, // C = C + A·B
  kBeta = 2,       // C = A·B + beta·C
  kDequantize = 3, // u8s8: C = fma(float(A·B - col_offset), col_scale, bias), per column
};

// The kernel's argument block, read by offsetof.
struct alignas(64) GemmTileCall {
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  int64_t a_row_bytes = 0;  // between rows of A
  int64_t a_k_bytes = 0;    // between steps of k along A
  int64_t b_k_bytes = 0;    // between rows of B
  const int64_t* b_rows = nullptr;  // a b_rows kernel's: row p of B at b + b_rows[p] floats
  int64_t ldc_bytes = 0;    // between rows of C
  int64_t kc = 0;           // >= 1 (u8s8: quads of k)
  int32_t cols = 0;         // columns of C stored, 1..vectors·lanes
  GemmStore store = GemmStore::kOverwrite;
  float beta = 0;
  // kDequantize's, from the tile's first column (kernels/cpu/gemm_int8.h Int8Dequant)
  const int32_t* col_offset = nullptr;
  const float* col_scale = nullptr;
  const float* bias = nullptr;
};

class GemmTileKernel : public Generator {
 public:
  GemmTileKernel(Isa isa, const GemmTileSpec& spec);  // u8s8: AVX-512 with AVX512_VNNI only

  // Whether a tile of `mr` rows and `vectors` vectors fits `isa`'s registers.
  static bool fits(Isa isa, int mr, int vectors);
  // The most rows a tile of `vectors` vectors has on `isa`.
  static int max_rows(Isa isa, int vectors);

  void run(const GemmTileCall& call) const { run_code(&call); }
  const GemmTileSpec& spec() const { return spec_; }

 private:
  GemmTileSpec spec_;
  void generate();
  void store_u8s8(const Xbyak::Reg64& c, const Xbyak::Reg64& ldc, const Xbyak::Reg64& args);
};

}  // namespace nnvm::jit::x86
