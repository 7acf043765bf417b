// The CPU's measured multiply-add peak, the yardstick of the GEMM and
// convolution reference benchmarks' `peak_frac` (gemm_reference_bench.cpp,
// conv_reference_bench.cpp). Measured, not computed from a data sheet: what
// these cores reach under this load and this clock (a wide-vector clock
// drop included) is what a kernel can be expected to reach.
#pragma once

namespace nnvm::bench {

// GFLOP/s of `threads` threads each running independent float FMA chains on
// the widest vectors the CPU runs (AVX-512 or AVX2): measured once per thread
// count on first use, best of a few runs, then cached.
double fma_peak_gflops(int threads);

}  // namespace nnvm::bench
