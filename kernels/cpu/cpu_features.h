// What the CPU running the process can execute, read once: the GEMM picks
// its vector width from it, the JIT its instruction set. Each feature counts
// only when the operating system also saves its registers (libgcc's
// __builtin_cpu_supports checks XCR0 for the AVX and AVX-512 state).
#pragma once

#include <cstdint>
#include <string>

namespace nnvm::cpu {

struct CpuFeatures {
  bool avx2_fma = false;  // AVX2 with FMA3: 32-byte vectors
  bool avx512f = false;   // 64-byte vectors
  bool avx512dq = false;  // AVX-512 int64 <-> float conversions
  // The low-precision units (CPUID leaf 7), counted only beside AVX-512F:
  bool avx512_vnni = false;  // vpdpbusd: uint8 · int8 dot products into int32
  bool avx512_bf16 = false;  // vdpbf16ps: bfloat16 pair products into float32
  bool avx512_fp16 = false;  // float16 arithmetic (vfmadd231ph, ...)
  bool amx_bf16 = false;     // AMX tiles (reported; the OS must also grant them)
  bool amx_int8 = false;
  // Data cache sizes in bytes, as the C library reads them from CPUID
  // (sysconf); a size it cannot read is a common one (48 KiB, 1 MiB, 16 MiB).
  int64_t l1d_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t l3_bytes = 0;  // the whole level 3, shared by the cores
  std::string model;     // CPUID's brand string ("" where there is none)
};

const CpuFeatures& cpu_features();

}  // namespace nnvm::cpu
