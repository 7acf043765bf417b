// The JIT GEMM (jit/README.md): float32
//   C = A·B + beta·C     (A: m×k, B: k×n, any row and column strides)
// on micro-kernels generated for the CPU at run time (x86/gemm_kernel.h).
// It is kernels/cpu/gemm.h's provider: every float matmul, linear layer,
// convolution (im2col and its gradients) and fused matmul group reaches it
// through cpu::gemm, which keeps the C++ kernels as the portable fallback
// (NNVM_ISA=portable, a CPU without AVX2, and the few-row products whose
// order of sums callers rely on: gemm_adds_c_last).
//
// Blocking, from the CPU found at run time:
//   - register tile: `mr` rows × 2 vectors (AVX-512: 32 columns, AVX2: 16);
//   - kc, the k block: B's micro-panel (kc × NR) a 32nd of L2 (it streams
//     from L2 while the row tiles pass it); k is cut into equal blocks of at
//     most that size;
//   - mc, the rows of A one pass over B's panel meets: half of L2;
//   - nc, the columns of a packed panel of B: a share of L3.
// A row-major A is read in place (each row a stream along k) or, where its
// rows would share sets of L1, copied a block at a time to a padded stride;
// any other A is packed a block at a time. B is packed once per (k block, panel) per thread,
// and read in place when the thread has a single row tile to run over it, or
// when its rows are runs at offsets a table gives (a convolution's windows,
// cpu::RowTable: never packed). An A given by a table (a weight gradient's
// windows) is copied a block of rows at a time.
//
// Threads: the output is split into a grid of tm × tn blocks, one per
// thread, choosing the grid that copies the least: splitting rows packs B
// once per row block, splitting columns reads A once per column block.
//
// Tuning: where more than one tile height is plausible (AVX-512: 12, 14 and
// 8 rows), the first calls of a shape class (sizes rounded up to powers of
// two, the operands' layouts, the thread count) run each in turn, timed, and
// the fastest is kept for the class, in memory and, under NNVM_CACHE_DIR, in
// a file that later processes on the same CPU read. Every tile height sums
// each element in the same order (kc depends on the CPU and k only), so
// tuning never changes a result: results are bit-identical from run to run,
// and for any thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/kernels/cpu/gemm_int8.h"

namespace nnvm::jit {

// The JIT GEMM, or false when it leaves the product to the C++ kernels:
// cpu::gemm's provider. `extras`: A's or B's rows by a table (any m, n, k),
// an epilogue applied to each tile of C after its last k block.
bool jit_gemm(int64_t m, int64_t n, int64_t k, cpu::MatrixRef<float> a, cpu::MatrixRef<float> b, float beta,
              float* c, int64_t ldc, const cpu::GemmExtras& extras = {});

// The INT8 GEMM (kernels/cpu/gemm_int8.h) on AVX512_VNNI's vpdpbusd: tiles
// of 12 rows (for fewer than 48 rows, the height padding fewest) × 32 int32
// columns over every quad of k, B's packed panel in L1/L2 while
// the row tiles pass it; dequantized in the tile's store. False (nothing
// ran) where the CPU has no AVX512_VNNI or the ISA is forced below AVX-512.
bool jit_gemm_u8s8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_b, void* c,
                   int64_t ldc, const cpu::Int8Dequant* dq);

// How the kernel reads A: where it is (a row-major A whose rows fall in
// different sets of L1), its rows of a block copied a padded stride apart
// (a row-major A whose rows would evict each other: a power-of-two leading
// dim), or packed into panels of the tile's rows, column by column (any other).
enum class GemmA : uint8_t { kInPlace, kCopiedRows, kPanels };

// The blocking a product gets (for logs, tests and benchmarks).
struct GemmPlan {
  int mr = 0;           // rows of the register tile
  int nr = 0;           // columns of the register tile
  int64_t kc = 0, mc = 0, nc = 0;
  int tm = 1, tn = 1;   // the thread grid
  GemmA a = GemmA::kPanels;
  bool b_direct = false;
  bool b_table = false;  // B's rows by a table (cpu::RowTable)
  bool b_table_packed = false;  // ... packed from the table a k block at a time, not read in place
  std::string describe() const;
};
GemmPlan gemm_plan(int64_t m, int64_t n, int64_t k, cpu::MatrixRef<float> a, cpu::MatrixRef<float> b,
                   int threads);

// The tile heights tuning chooses among on the active ISA (the first is the
// default); forcing one (tests, benchmarks) skips tuning; 0 restores it.
std::vector<int> gemm_tile_rows_candidates();
void set_gemm_tile_rows(int mr);

// Forgets every tuned choice (tests).
void reset_gemm_tuning();
// The directory tuned choices persist in (default NNVM_CACHE_DIR; empty: none).
void set_gemm_tuning_dir(std::string dir);
std::string gemm_tuning_file();
// The tile height tuning chose for a shape class so far (0: still measuring
// or never seen), by the class's key as NNVM_LOG=jit prints it.
int gemm_tuned_rows(const std::string& key);

}  // namespace nnvm::jit
