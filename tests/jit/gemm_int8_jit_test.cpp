// The INT8 GEMM (kernels/cpu/gemm_int8.h): the JIT's vpdpbusd tiles against
// the C++ loops, bit for bit, in int32 and dequantized, over odd sizes,
// every tile height and both thread counts; the AVX2 kernels against the
// loops the same way; the loops against a plain triple loop over the
// unpacked operands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "isa_scope.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/jit/gemm_jit.h"
#include "nnvm/kernels/cpu/cpu_features.h"
#include "nnvm/kernels/cpu/gemm_int8.h"

namespace nnvm::jit {
namespace {

// Every buffer from nnvm's allocator, exactly as long as the product reads
// it: in guard mode (tests/jit) a read or write past one dies.
struct Operands {
  int64_t m, n, k, lda;
  std::vector<int8_t> b;  // k × n row-major
  Tensor a, packed, offset, scale, bias;

  // lda_extra: A's rows that many bytes (a multiple of 4) further apart than k needs.
  Operands(int64_t m_, int64_t n_, int64_t k_, uint32_t seed, int64_t lda_extra = 0)
      : m(m_), n(n_), k(k_), lda((k_ + 3) / 4 * 4 + lda_extra) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
    a = empty({m * lda}, kUInt8);
    for (int64_t i = 0; i < m * lda; ++i)  // columns past k too: they must meet B's zero rows
      a.data_ptr<uint8_t>()[i] = uint8_t(u8(gen));
    b.resize(size_t(k * n));
    for (auto& v : b) v = int8_t(s8(gen));
    packed = empty({cpu::int8_packed_bytes(k, n)}, kInt8);
    cpu::pack_int8_b({b.data(), n, 1}, k, n, packed.data_ptr<int8_t>());
    std::uniform_real_distribution<float> f(-1.f, 1.f);
    offset = empty({n}, kInt32);
    scale = empty({n});
    bias = empty({n});
    for (int64_t j = 0; j < n; ++j) {
      offset.data_ptr<int32_t>()[j] = int32_t(s8(gen)) * 100;
      scale.data_ptr<float>()[j] = 1e-3f * (1.5f + f(gen));
      bias.data_ptr<float>()[j] = f(gen);
    }
  }
  // A's values (columns past k too) and B's drawn again from [a_lo, a_hi] and [b_lo, b_hi].
  void fill(int a_lo, int a_hi, int b_lo, int b_hi, uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> u8(a_lo, a_hi), s8(b_lo, b_hi);
    std::generate_n(a.data_ptr<uint8_t>(), m * lda, [&] { return uint8_t(u8(gen)); });
    std::generate(b.begin(), b.end(), [&] { return int8_t(s8(gen)); });
    cpu::pack_int8_b({b.data(), n, 1}, k, n, packed.data_ptr<int8_t>());
  }
  const uint8_t* a_data() const { return a.data_ptr<uint8_t>(); }
  const int8_t* b_data() const { return packed.data_ptr<int8_t>(); }
  cpu::Int8Dequant dq() const { return {offset.data_ptr<int32_t>(), scale.data_ptr<float>(), bias.data_ptr<float>()}; }
};

std::vector<int32_t> values(const Tensor& c) {
  const int32_t* p = c.data_ptr<int32_t>();
  return std::vector<int32_t>(p, p + c.numel());
}

bool has_vnni() { return cpu::cpu_features().avx512_vnni && isa_supported(Isa::kAvx512); }

TEST(GemmInt8, LoopsMatchATripleLoop) {
  const Operands x(7, 45, 13, 1);
  std::vector<int32_t> c(size_t(x.m * x.n));
  cpu::gemm_u8s8_reference(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), c.data(), x.n, nullptr);
  std::vector<int32_t> sums(size_t(x.n));
  cpu::int8_column_sums(x.b_data(), x.k, x.n, sums.data());
  for (int64_t j = 0; j < x.n; ++j) {
    int32_t s = 0;
    for (int64_t p = 0; p < x.k; ++p) s += x.b[size_t(p * x.n + j)];
    EXPECT_EQ(sums[size_t(j)], s);
  }
  for (int64_t i = 0; i < x.m; ++i)
    for (int64_t j = 0; j < x.n; ++j) {
      int32_t s = 0;
      for (int64_t p = 0; p < x.k; ++p) s += int32_t(x.a_data()[i * x.lda + p]) * int32_t(x.b[size_t(p * x.n + j)]);
      ASSERT_EQ(c[size_t(i * x.n + j)], s) << i << "," << j;
    }
}

TEST(GemmInt8, PacksATransposedB) {
  const Operands x(1, 37, 9, 2);
  std::vector<int8_t> bt(x.b.size()), packed(size_t(x.packed.numel()));
  for (int64_t p = 0; p < x.k; ++p)
    for (int64_t j = 0; j < x.n; ++j) bt[size_t(j * x.k + p)] = x.b[size_t(p * x.n + j)];
  cpu::pack_int8_b({bt.data(), 1, x.k}, x.k, x.n, packed.data());
  EXPECT_TRUE(std::equal(packed.begin(), packed.end(), x.b_data()));
}

TEST(GemmInt8, JitMatchesLoopsBitForBit) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX512_VNNI";
  const IsaGuard avx512(Isa::kAvx512);
  const int64_t shapes[][3] = {{1, 1, 1},   {1, 32, 4},   {3, 33, 5},    {13, 31, 7},  {14, 64, 64},
                               {29, 100, 3}, {64, 17, 255}, {200, 96, 130}, {12, 1, 1000}, {0, 5, 5}};
  uint32_t seed = 10;
  for (const auto& s : shapes) {
    const Operands x(s[0], s[1], s[2], seed++);
    for (bool dequantize : {false, true}) {
      const cpu::Int8Dequant dq = x.dq();
      const cpu::Int8Dequant* d = dequantize ? &dq : nullptr;
      const Tensor want = empty({x.m * x.n}, kInt32), got = empty({x.m * x.n}, kInt32);
      cpu::gemm_u8s8_reference(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), want.data_ptr<int32_t>(), x.n, d);
      ASSERT_TRUE(jit_gemm_u8s8(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), got.data_ptr<int32_t>(), x.n, d));
      EXPECT_EQ(values(got), values(want)) << s[0] << "x" << s[1] << "x" << s[2] << (dequantize ? " dequantized" : " int32");
    }
  }
}

TEST(GemmInt8, EveryThreadCountAndRowTileGivesTheSameSums) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX512_VNNI";
  const IsaGuard avx512(Isa::kAvx512);
  const Operands x(100, 300, 700, 3);  // big enough for the thread pool
  std::vector<int32_t> want(size_t(x.m * x.n)), got(want.size());
  cpu::gemm_u8s8_reference(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), want.data(), x.n, nullptr);
  for (int threads : {1, 2, 3}) {
    const int saved = get_num_threads();
    set_num_threads(threads);
    cpu::gemm_u8s8(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), got.data(), x.n, nullptr);
    set_num_threads(saved);
    EXPECT_EQ(got, want) << threads << " threads";
  }
  for (int64_t m : {8, 12, 14}) {  // each the padding-free tile height of some m
    cpu::gemm_u8s8(m, x.n, x.k, x.a_data(), x.lda, x.b_data(), got.data(), x.n, nullptr);
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + m * x.n, want.begin())) << m << " rows";
  }
}

// The AVX2 kernels against the loops on C rows ldc apart, in int32 and
// dequantized; C's gaps past n must stay as they were.
void expect_avx2_matches_loops(const Operands& x, int64_t ldc) {
  for (bool dequantize : {false, true}) {
    const cpu::Int8Dequant dq = x.dq();
    const cpu::Int8Dequant* d = dequantize ? &dq : nullptr;
    std::vector<int32_t> want(size_t(x.m * ldc), 0x7f7f7f7f), got(want);
    cpu::gemm_u8s8_reference(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), want.data(), ldc, d);
    ASSERT_TRUE(cpu::gemm_u8s8_avx2(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), got.data(), ldc, d));
    ASSERT_EQ(got, want) << x.m << "x" << x.n << "x" << x.k << " lda " << x.lda << " ldc " << ldc
                         << (dequantize ? " dequantized" : " int32");
  }
}

bool has_avx2() { return cpu::cpu_features().avx2_fma; }

TEST(GemmInt8, Avx2MatchesLoopsBitForBit) {
  if (!has_avx2()) GTEST_SKIP() << "no AVX2";
  const int64_t sizes[] = {0, 1, 2, 3, 5, 7, 16, 17, 31, 64, 65, 130, 300};
  std::mt19937 gen(20);
  std::uniform_int_distribution<size_t> pick(0, std::size(sizes) - 1);
  std::uniform_int_distribution<int64_t> extra(0, 3);
  for (int trial = 0; trial < 120; ++trial) {
    const int64_t m = sizes[pick(gen)], n = sizes[pick(gen)], k = sizes[pick(gen)];
    const Operands x(m, n, k, uint32_t(100 + trial), 4 * extra(gen));
    expect_avx2_matches_loops(x, n + extra(gen));
  }
}

TEST(GemmInt8, Avx2SumsTheExtremesExactly) {
  if (!has_avx2()) GTEST_SKIP() << "no AVX2";
  for (int64_t k : {int64_t(1), int64_t(4097), cpu::kInt8MaxK - 3, cpu::kInt8MaxK}) {
    for (int b : {-128, 127}) {  // the largest sums: pair sums past int16 (vpmaddubsw would saturate)
      Operands x(7, 9, k, 5, 4);
      x.fill(255, 255, b, b, 0);
      expect_avx2_matches_loops(x, 11);
      std::vector<int32_t> c(size_t(x.m * x.n));
      cpu::gemm_u8s8_avx2(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), c.data(), x.n, nullptr);
      EXPECT_EQ(c[0], int32_t(255 * b * k)) << k;
    }
    // Large sums that float32 does not hold exactly: float(sum - offset) rounds once.
    Operands x(7, 9, k, 6, 4);
    x.fill(200, 255, 100, 127, 7);
    expect_avx2_matches_loops(x, 11);
  }
}

TEST(GemmInt8, Avx2GivesTheSameBitsOnEveryThreadCount) {
  if (!has_avx2()) GTEST_SKIP() << "no AVX2";
  // Many row blocks; one row block, its columns split.
  for (const Operands& x : {Operands(100, 300, 700, 6), Operands(5, 300, 1000, 7)}) {
    const cpu::Int8Dequant dq = x.dq();
    std::vector<int32_t> want(size_t(x.m * x.n)), got(want.size());
    cpu::gemm_u8s8_reference(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), want.data(), x.n, &dq);
    for (int threads : {1, 2, 3, 4}) {
      const int saved = get_num_threads();
      set_num_threads(threads);
      cpu::gemm_u8s8_avx2(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), got.data(), x.n, &dq);
      set_num_threads(saved);
      EXPECT_EQ(got, want) << x.m << "x" << x.n << "x" << x.k << ", " << threads << " threads";
    }
  }
}

TEST(GemmInt8, ForcedBelowAvx512TheJitDeclines) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const IsaGuard avx2(Isa::kAvx2);
  const Operands x(5, 40, 9, 4);
  std::vector<int32_t> c(size_t(x.m * x.n));
  EXPECT_FALSE(jit_gemm_u8s8(x.m, x.n, x.k, x.a_data(), x.lda, x.b_data(), c.data(), x.n, nullptr));
}

}  // namespace
}  // namespace nnvm::jit
