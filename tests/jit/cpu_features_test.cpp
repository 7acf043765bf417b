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

}  // namespace
}  // namespace nnvm
