// The reference GEMM every CPU matmul and convolution kernel runs on:
//   C = A·B + beta·C     (A: m×k, B: k×n, C: m×n, row-major with row stride ldc)
// A and B are read through arbitrary row and column strides (in elements), so
// a transposed or sliced view needs no copy: panels of A and B are packed into
// contiguous, cache-sized buffers before the register-blocked micro-kernel runs.
//
// Blocks of C are spread over the thread pool. Every element of C is summed
// over k in the same fixed order whatever the blocking or thread count, so the
// result is bit-identical from run to run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nnvm::cpu {

// Strided view of a matrix operand: element (i, j) is at data[i * rs + j * cs].
template <class T> struct MatrixRef {
  const T* data;
  int64_t rs;
  int64_t cs;
};

// beta == 0 never reads C (it may hold garbage or NaN).
void gemm(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b, float beta, float* c,
          int64_t ldc);
void gemm(int64_t m, int64_t n, int64_t k, MatrixRef<double> a, MatrixRef<double> b, double beta, double* c,
          int64_t ldc);

// An operand whose rows are runs of one buffer at offsets a table gives:
// row p is base[rows[p] + j], j along the row. A stride-1 convolution's
// im2col matrix over an image copied into windows is one: each row (a tap)
// is a window shifted by the tap's offset, so the GEMM reads it where it
// lies (kernels/cpu/conv.cpp): as B (a convolution), in place or packed a
// k block at a time; as A (a weight gradient), rows copied a block at a
// time. The GEMM reads whole vectors: each row of a B must be readable for
// columns [0, n + kRowTableSlack), whatever the columns past n hold.
// With `segment` set, a B's columns come in runs of `segment` (several
// images' windows side by side): column j is base[(j / segment) ·
// segment_stride + rows[p] + j % segment], and the GEMM packs it (each
// segment's rows readable for `segment` columns).
struct RowTable {
  const float* base;
  const int64_t* rows;  // offsets, in elements
  int64_t segment = 0;  // columns per run; 0: one run
  int64_t segment_stride = 0;  // elements between runs
};
inline constexpr int64_t kRowTableSlack = 32;

// Work on each tile of C the GEMM finishes (after its last addition), called
// on the thread that computed it while the tile is in L1: a matmul's
// pointwise epilogue. apply(ctx, i0, i1, j0, j1) covers rows [i0, i1) ×
// columns [j0, j1); the tiles cover C once, in no particular order, on
// several threads at once.
struct GemmEpilogue {
  void (*apply)(const void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
  const void* ctx;
};

// What a product asks of the GEMM besides C = A·B + beta·C.
struct GemmExtras {
  const RowTable* row_table_b = nullptr;   // B's rows by a table (the MatrixRef b unused)
  const RowTable* row_table_a = nullptr;   // A's rows by a table (the MatrixRef a unused)
  const GemmEpilogue* epilogue = nullptr;
};

// A faster float32 GEMM that a layer above this one provides (the JIT's,
// jit/gemm_jit.h), with the same contract as gemm(). It returns false, having
// done nothing, for a product it leaves to the kernels here (sizes it does
// not take, no JIT for the CPU or the ISA forced to portable). Set once,
// when the library loads.
using GemmProvider = bool (*)(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b,
                              float beta, float* c, int64_t ldc, const GemmExtras& extras);
void set_gemm_provider(GemmProvider provider);
GemmProvider gemm_provider();

// C = A·B + beta·C with B's rows given by `b` (and `epilogue`, if any,
// applied to each finished tile), when the provider takes it; false
// otherwise (nothing ran), and the caller materialises B (im2col), or runs
// its epilogue after gemm().
bool gemm_row_table_b(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, const RowTable& b, float beta,
                      float* c, int64_t ldc, const GemmEpilogue* epilogue = nullptr);
// C = A·B + beta·C with A's rows given by `a`, when the provider takes it;
// false otherwise (nothing ran).
bool gemm_row_table_a(int64_t m, int64_t n, int64_t k, const RowTable& a, MatrixRef<float> b, float beta,
                      float* c, int64_t ldc);
// Whether the provider takes products whose A or B is a row table (asked before
// preparing one).
bool gemm_reads_row_tables();
bool gemm_with_epilogue(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b, float beta,
                        float* c, int64_t ldc, const GemmEpilogue& epilogue);

// A per-thread, 64-byte aligned buffer of at least `count` elements that
// only grows: slots 0 and 1 are two buffers (the packed blocks of A and B).
// A thread runs one product at a time, so the kernels here and the JIT's share them.
template <class T> T* gemm_scratch(int slot, int64_t count);
extern template float* gemm_scratch<float>(int, int64_t);
extern template double* gemm_scratch<double>(int, int64_t);

// Packs rows [0, kc) × columns [0, cols) of B (cols <= 2 · vector_bytes / 4)
// into one micro-panel, row by row, 2 · vector_bytes / 4 floats a row, the
// columns past `cols` zero: the layout the micro-kernels of `vector_bytes`
// wide vectors read, here and in the JIT's GEMM. A transposed B is
// transposed in registers a block at a time.
void gemm_pack_b(int vector_bytes, const float* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols,
                 float* out);

// The kernels exist for 64-, 32- and 16-byte vectors (AVX-512F, AVX2 with
// FMA, SSE2), and the widest this CPU runs is used, whatever the flags the
// library was built with (gemm.cpp, Note [GEMM widths]). Every width sums each
// element in the same order; a width whose code fuses multiply-adds (AVX2,
// AVX-512) may differ from one that does not in the last bits.
// The widths, in bytes, this CPU runs: widest first.
std::vector<int> gemm_vector_widths();
// The width in use.
int gemm_vector_bytes();
// Uses the kernels of `bytes`-wide vectors from now on, for every thread
// (tests, benchmarks); throws nnvm::Error when the CPU cannot run them.
void set_gemm_vector_bytes(int bytes);

// The few-row GEMM's domain: fewer rows than the packed micro-kernel's tile
// (MR), and B read in place, once, where packing it would read and write all
// of it per call for a handful of rows: a row-major B (C's rows as sums of
// B's rows), or, for products of kGemmParallelWork multiply-adds and more, a
// B whose columns are contiguous as A's rows are (a linear layer's Wᵀ: dot
// products). Products of kGemmParallelWork and more split over the threads.
inline constexpr int64_t kGemmFewRows = 6;
inline constexpr int64_t kGemmParallelWork = int64_t(1) << 18;
inline bool gemm_takes_few_rows(int64_t m, int64_t n, int64_t k, int64_t a_cs, int64_t b_rs, int64_t b_cs) {
  if (m >= kGemmFewRows) return false;
  return b_cs == 1 || (b_rs == 1 && a_cs == 1 && m * n * k >= kGemmParallelWork);
}

// Whether the float gemm of these sizes (and layouts) computes each element
// of A·B in full, rounded once, before it adds beta·C: then C = A·B,
// C += A'·B' gives bit for bit what C = A'·B', C += A·B gives (the last
// addition commutes), and a caller may run the two products in either order.
// True for the few-row products of a vector-matrix step (both few-row paths
// add beta·C last); a product with k <= 0 is 0 + beta·C exactly, and with m
// or n 0 there is nothing.
inline bool gemm_adds_c_last(int64_t m, int64_t n, int64_t k, int64_t a_cs, int64_t b_rs, int64_t b_cs) {
  return m <= 0 || n <= 0 || k <= 0 || gemm_takes_few_rows(m, n, k, a_cs, b_rs, b_cs);
}

}  // namespace nnvm::cpu
