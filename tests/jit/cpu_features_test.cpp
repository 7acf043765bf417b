// One reading of the CPU serves the GEMM's vector width and the JIT's
// instruction set; Xbyak's own CPUID reader, which checks the operating
// system's register state (XGETBV) as well, must agree with it.
#include "nnvm/kernels/cpu/cpu_features.h"

#include <gtest/gtest.h>
#include <xbyak/xbyak_util.h>

#include <algorithm>

#include "nnvm/jit/x86/isa.h"
#include "nnvm/kernels/cpu/gemm.h"

namespace nnvm {
namespace {

TEST(CpuFeatures, AgreesWithXbyaksReading) {
  const Xbyak::util::Cpu xbyak;
  const cpu::CpuFeatures& f = cpu::cpu_features();
  EXPECT_EQ(f.avx512f, xbyak.has(Xbyak::util::Cpu::tAVX512F));
  EXPECT_EQ(f.avx512dq, xbyak.has(Xbyak::util::Cpu::tAVX512F) && xbyak.has(Xbyak::util::Cpu::tAVX512DQ));
  EXPECT_EQ(f.avx2_fma, xbyak.has(Xbyak::util::Cpu::tAVX2) && xbyak.has(Xbyak::util::Cpu::tFMA));
}

TEST(CpuFeatures, TheGemmAndTheJitRunTheSameWidths) {
  const std::vector<int> widths = cpu::gemm_vector_widths();
  auto runs = [&](int bytes) { return std::find(widths.begin(), widths.end(), bytes) != widths.end(); };
  EXPECT_EQ(runs(64), jit::isa_supported(jit::Isa::kAvx512));
  EXPECT_EQ(runs(32), jit::isa_supported(jit::Isa::kAvx2));
  EXPECT_TRUE(runs(16));
}

// The JIT GEMM's blocking reads the data caches' sizes (a default where the
// C library cannot tell), and the tuning file is named by the CPU's brand.
TEST(CpuFeatures, CacheSizesArePlausible) {
  const cpu::CpuFeatures& f = cpu::cpu_features();
  EXPECT_GE(f.l1d_bytes, 8 << 10);
  EXPECT_GE(f.l2_bytes, f.l1d_bytes);
  EXPECT_GE(f.l3_bytes, 0);
  const Xbyak::util::Cpu xbyak;
  if (xbyak.has(Xbyak::util::Cpu::tAVX2)) {
    EXPECT_FALSE(f.model.empty()) << "a CPU with AVX2 has a brand string";
  }
}

}  // namespace
}  // namespace nnvm
