// What the CPU running the process can execute, read once: the GEMM picks
// its vector width from it, the JIT its instruction set. Each feature counts
// only when the operating system also saves its registers (libgcc's
// __builtin_cpu_supports checks XCR0 for the AVX and AVX-512 state).
#pragma once

namespace nnvm::cpu {

struct CpuFeatures {
  bool avx2_fma = false;  // AVX2 with FMA3: 32-byte vectors
  bool avx512f = false;   // 64-byte vectors
  bool avx512dq = false;  // AVX-512 int64 <-> float conversions
};

const CpuFeatures& cpu_features();

}  // namespace nnvm::cpu
