// matmul, mm, bmm, outer and linear against naive triple loops over doubles.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/gemm.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::values;

// Batched a·b with broadcast batch dims (both operands of rank >= 2).
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, DimVector* shape_out = nullptr) {
  const std::vector<double> va = values(a), vb = values(b);
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  const IntArrayRef ba = a.sizes().first(a.dim() - 2), bb = b.sizes().first(b.dim() - 2);
  DimVector batch = broadcast_shapes(ba, bb, "test");
  std::vector<double> out;
  testing::for_each_index(batch, [&](const DimVector& idx) {
    const int64_t oa = testing::broadcast_offset(idx, ba) * m * k, ob = testing::broadcast_offset(idx, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += va[size_t(oa + i * k + p)] * vb[size_t(ob + p * n + j)];
        out.push_back(s);
      }
  });
  if (shape_out) {
    *shape_out = batch;
    shape_out->push_back(m);
    shape_out->push_back(n);
  }
  return out;
}

// Runs body once per GEMM vector width this CPU runs (64, 32, 16 bytes: the
// AVX-512, AVX2 and SSE2 kernels), whatever the build's flags, and once more
// with the JIT's GEMM (jit/gemm_jit.h) where it is cpu::gemm's provider.
template <class F> void for_each_gemm_width(F body) {
  if (const cpu::GemmProvider jit = cpu::gemm_provider()) {
    SCOPED_TRACE("the JIT GEMM");
    body();
    cpu::set_gemm_provider(nullptr);
    for_each_gemm_width(body);
    cpu::set_gemm_provider(jit);
    return;
  }
  const int before = cpu::gemm_vector_bytes();
  for (int bytes : cpu::gemm_vector_widths()) {
    SCOPED_TRACE(::testing::Message() << "GEMM vectors of " << bytes << " bytes");
    cpu::set_gemm_vector_bytes(bytes);
    body();
  }
  cpu::set_gemm_vector_bytes(before);
}

double atol_for(DType t, int64_t k) { return (t == kFloat64 ? 1e-12 : 2e-6) * double(k + 1) * 4; }

TEST(LinalgMatmul, MatchesNaiveOnOddSizesAndLayouts) {
  for_each_gemm_width([] {
    const int64_t sizes[][3] = {{1, 1, 1}, {7, 33, 1}, {1, 65, 7}, {33, 7, 65}, {65, 130, 33}, {130, 65, 130},
                                {7, 1, 130}, {6, 256, 32}, {13, 300, 47},
                                {1, 64, 64}, {5, 70, 40}, {3, 300, 129},  // few rows, no packing
                                {2, 33, 70}};  // few rows, an odd k: the last row of B has no pair
    for (DType dt : {kFloat32, kFloat64}) {
      uint64_t seed = 1;
      for (const auto& s : sizes) {
        const Tensor a0 = testing::random({s[0], s[1]}, dt, seed++), b0 = testing::random({s[1], s[2]}, dt, seed++);
        const std::vector<double> expected = naive_matmul(a0, b0);
        for (testing::Layout la : testing::kLayouts)
          for (testing::Layout lb : testing::kLayouts) {
            SCOPED_TRACE(testing::layout_name(la) + std::string(" x ") + testing::layout_name(lb) + " " +
                         shape_str(a0.sizes()) + shape_str(b0.sizes()) + " " + std::string(dtype_name(dt)));
            const Tensor c = matmul(testing::with_layout(a0, la), testing::with_layout(b0, lb));
            ASSERT_EQ(shape_str(c.sizes()), shape_str({s[0], s[2]}));
            EXPECT_EQ(c.dtype(), dt);
            testing::expect_values(c, expected, testing::rtol_for(dt), atol_for(dt, s[1]));
          }
      }
    }
  });
}

// Packing only moves data: B read through any strides gives the bits of B
// contiguous, here across KC (256) and NR (float: 32 with AVX-512, 16 with
// AVX2, 8 with SSE2) block edges and the packer's 16-row blocks, for a
// transposed B and one with both strides apart from 1.
TEST(LinalgMatmul, AnOperandsLayoutChangesNoBit) {
  for_each_gemm_width([] {
    for (DType dt : {kFloat32, kFloat64})
      for (const auto& s : {std::array<int64_t, 3>{8, 300, 70}, {37, 529, 33}, {64, 1024, 96}, {6, 17, 31}}) {
        SCOPED_TRACE(::testing::Message() << s[0] << "x" << s[1] << " @ " << s[1] << "x" << s[2] << " "
                                          << dtype_name(dt));
        const Tensor a = testing::random({s[0], s[1]}, dt, 21), bt = testing::random({s[2], s[1]}, dt, 22);
        const Tensor contiguous = matmul(a, bt.t().contiguous());
        EXPECT_EQ(values(matmul(a, bt.t())), values(contiguous)) << "transposed";
        const Tensor wide = testing::random({2 * s[1], 3 * s[2]}, dt, 23);
        const Tensor strided = wide.slice(0, 0, 2 * s[1], 2).slice(1, 1, 3 * s[2], 3);  // strides (6 s[2], 3)
        EXPECT_EQ(values(matmul(a, strided)), values(matmul(a, strided.contiguous()))) << "strided";
      }
  });
}

// A column of C gets the same bits whatever tile computes it: a last tile of
// at most half the micro-kernel's width runs a kernel of one vector a row,
// a wider one the kernel of two. Column j of A·B[:, :n] against column j of
// A·B for n ending in half tiles, whole tiles and in between, for every
// vector width (the tile is 2·lanes wide: 32 floats with AVX-512).
TEST(LinalgMatmul, AColumnsBitsDoNotDependOnItsTile) {
  for_each_gemm_width([] {
    const int64_t lanes = cpu::gemm_vector_bytes() / int64_t(sizeof(float)), nr = 2 * lanes;
    const Tensor a = testing::random({13, 300}, kFloat32, 31), b = testing::random({300, 3 * nr}, kFloat32, 32);
    const Tensor whole = matmul(a, b);
    for (int64_t n : {int64_t(1), lanes / 2, lanes, lanes + 1, nr - 1, nr, nr + 1, nr + lanes, 2 * nr + lanes + 1}) {
      SCOPED_TRACE(::testing::Message() << "n = " << n << " of " << 3 * nr);
      EXPECT_EQ(values(matmul(a, b.slice(1, 0, n).contiguous())), values(whole.slice(1, 0, n).contiguous()));
    }
  });
}

TEST(LinalgMatmul, LargeProductIsCorrectAndDeterministic) {
  for_each_gemm_width([] {
    const Tensor a = testing::random({257, 700}, kFloat32, 11), b = testing::random({700, 263}, kFloat32, 12);
    const Tensor c = matmul(a, b);
    testing::expect_values(c, naive_matmul(a, b), 1e-5, atol_for(kFloat32, 700));
    const Tensor again = matmul(a, b);
    EXPECT_EQ(values(c), values(again));
  });
}

// The few-row products (fewer than 6 rows) read B in place, once, split over
// the threads when large: a row-major B of any size by the C++ kernels'
// panels, a large B = Wᵀ (W stored N × K, a batch-1 linear layer) by dot
// products. Against double sums, on every width, for rows 1..5, panels whole
// and ragged, the columns past the last whole block, k with and without a
// tail past its last vector, beta 0 (C's NaN never read), 1 and 0.5; and the
// same bits for 1, 2 and 3 threads.
TEST(LinalgMatmul, FewRowProductsOfAnySizeMatchNaiveWithAnyThreadCount) {
  for_each_gemm_width([] {
    const int64_t sizes[][2] = {{1, 1},      {17, 3},     {1000, 5},          {4096 + 19, 64},
                                {300, 1025}, {1000, 267}, {2 * 1024 + 64, 129}};
    const int threads_before = get_num_threads();
    uint64_t seed = 40;
    for (int64_t m = 1; m < cpu::kGemmFewRows; ++m)
      for (const auto& s : sizes) {
        const int64_t n = s[0], k = s[1];
        const Tensor a = testing::random({m, k}, kFloat32, seed++), b = testing::random({k, n}, kFloat32, seed++);
        const std::vector<double> ab = naive_matmul(a, b);
        const Tensor c0 = testing::random({m, n}, kFloat32, seed++);
        const std::vector<double> before = values(c0);
        const std::vector<float> pa = a.to_vector<float>(), pb = b.to_vector<float>();
        const std::vector<float> pw = b.t().contiguous().to_vector<float>();  // W = Bᵀ, N × K
        for (bool transposed : {false, true})
          for (float beta : {0.f, 1.f, 0.5f}) {
            SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k << (transposed ? " Wᵀ" : " B") << " beta "
                                              << beta);
            const cpu::MatrixRef<float> rhs = transposed ? cpu::MatrixRef<float>{pw.data(), 1, k}
                                                         : cpu::MatrixRef<float>{pb.data(), n, 1};
            std::vector<float> c(size_t(m * n), NAN);
            if (beta != 0.f) c = c0.to_vector<float>();
            std::vector<float> first;
            for (int threads : {1, 2, 3}) {
              set_num_threads(threads);
              std::vector<float> out = c;
              cpu::gemm(m, n, k, cpu::MatrixRef<float>{pa.data(), k, 1}, rhs, beta, out.data(), n);
              if (!first.empty()) {
                EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * sizeof(float)), 0)
                    << threads << " threads changed bits";
                continue;
              }
              first = out;
              int bad = 0;
              for (size_t i = 0; i < out.size(); ++i) {
                const double want = ab[i] + (beta != 0.f ? double(beta) * before[i] : 0.0);
                if (!(std::abs(double(out[i]) - want) <= 1e-5 * std::sqrt(double(k)) * 4) && bad++ < 3)
                  ADD_FAILURE() << "C[" << i << "] = " << out[i] << ", expected " << want;
              }
            }
          }
      }
    set_num_threads(threads_before);
  });
}

TEST(LinalgMatmul, VectorOperandsArePromotedAndDropped) {
  struct Case { DimVector a, b, out; };
  const Case cases[] = {{{5}, {5}, {}},          {{4, 5}, {5}, {4}},          {{5}, {5, 3}, {3}},
                        {{5}, {2, 5, 3}, {2, 3}}, {{2, 4, 5}, {5}, {2, 4}},   {{1}, {1}, {}},
                        {{0}, {0}, {}}};
  uint64_t seed = 20;
  for (const Case& cs : cases) {
    const Tensor a = testing::random(cs.a, kFloat64, seed++), b = testing::random(cs.b, kFloat64, seed++);
    const Tensor c = matmul(a, b);
    ASSERT_EQ(shape_str(c.sizes()), shape_str(cs.out)) << shape_str(cs.a) << " x " << shape_str(cs.b);
    const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a, b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    testing::expect_values(c, naive_matmul(a2, b2), 1e-12, 1e-12);
  }
}

TEST(LinalgMatmul, BroadcastsBatchDims) {
  struct Case { DimVector a, b, out; };
  const Case cases[] = {{{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}},
                        {{3, 4}, {2, 4, 5}, {2, 3, 5}},
                        {{2, 3, 4}, {4, 5}, {2, 3, 5}},
                        {{1, 7, 9}, {3, 9, 2}, {3, 7, 2}},
                        {{0, 3, 4}, {4, 2}, {0, 3, 2}}};
  uint64_t seed = 40;
  for (const Case& cs : cases)
    for (DType dt : {kFloat32, kFloat64})
      for (testing::Layout l : testing::kLayouts) {
        const Tensor a = testing::with_layout(testing::random(cs.a, dt, seed++), l);
        const Tensor b = testing::with_layout(testing::random(cs.b, dt, seed++), l);
        DimVector shape;
        const std::vector<double> expected = naive_matmul(a, b, &shape);
        const Tensor c = matmul(a, b);
        ASSERT_EQ(shape_str(c.sizes()), shape_str(cs.out));
        ASSERT_EQ(shape_str(c.sizes()), shape_str(shape));
        testing::expect_values(c, expected, testing::rtol_for(dt), atol_for(dt, a.size(-1)));
      }
  // An expanded (stride-0) batch is read in place.
  const Tensor a = testing::random({3, 4}, kFloat32, 60).expand({5, 3, 4});
  const Tensor b = testing::random({5, 4, 2}, kFloat32, 61);
  testing::expect_values(bmm(a, b), naive_matmul(a, b), 1e-5, atol_for(kFloat32, 4));
}

// A batch whose entries' rows continue one another, against one matrix (a
// linear layer over [batch, time, features]), runs as one product of all the
// rows; a batch laid out otherwise runs an entry at a time. Either way each
// entry gets the bits of its own 2-D product (7 rows: the packed path, as
// the whole batch's).
TEST(LinalgMatmul, ABatchAgainstOneMatrixGivesEachEntrysBits) {
  const Tensor b = testing::random({33, 20}, kFloat32, 62);
  const Tensor stacked = testing::random({4, 7, 33}, kFloat32, 63);
  const Tensor permuted = testing::random({7, 4, 33}, kFloat32, 64).transpose(0, 1);  // rows 132 apart
  for (const Tensor& a : {stacked, permuted, stacked.unsqueeze(0).expand({2, 4, 7, 33})}) {
    SCOPED_TRACE(shape_str(a.sizes()) + " strides " + shape_str(a.strides()));
    const Tensor c = matmul(a, b), b3 = b.unsqueeze(0);
    const Tensor rows = a.reshape({-1, 7, 33});
    const Tensor flat = c.reshape({-1, 7, 20});
    for (int64_t i = 0; i < rows.size(0); ++i) {
      EXPECT_EQ(values(flat[i]), values(matmul(rows[i], b))) << "entry " << i;
      EXPECT_EQ(values(matmul(rows[i].unsqueeze(0), b3)), values(matmul(rows[i], b))) << "entry " << i;
    }
  }
}

TEST(LinalgMatmul, EmptyDims) {
  EXPECT_EQ(shape_str(matmul(zeros({0, 3}), zeros({3, 4})).sizes()), "[0, 4]");
  EXPECT_EQ(shape_str(matmul(zeros({3, 4}), zeros({4, 0})).sizes()), "[3, 0]");
  // k == 0: an empty sum is zero everywhere.
  const Tensor c = matmul(ones({2, 0}), ones({0, 3}));
  ASSERT_EQ(shape_str(c.sizes()), "[2, 3]");
  testing::expect_values(c, std::vector<double>(6, 0.0));
  const Tensor d = matmul(ones({4, 2, 0}, kFloat64), ones({0, 3}, kFloat64));
  testing::expect_values(d, std::vector<double>(24, 0.0));
}

TEST(LinalgMatmul, HalfAndIntegerOperands) {
  const Tensor a = testing::random({7, 33}, kFloat16, 70), b = testing::random({33, 5}, kFloat16, 71);
  const Tensor c = matmul(a, testing::with_layout(b, testing::Layout::Transposed));
  EXPECT_EQ(c.dtype(), kFloat16);
  testing::expect_values(c, naive_matmul(a, b), 5e-3, 2e-2);

  const Tensor bf = testing::random({3, 9, 4}, kBFloat16, 72), bg = testing::random({3, 4, 2}, kBFloat16, 73);
  const Tensor bc = bmm(bf, bg);
  EXPECT_EQ(bc.dtype(), kBFloat16);
  testing::expect_values(bc, naive_matmul(bf, bg), 2e-2, 5e-2);

  for (DType dt : {kInt32, kInt64, kUInt8}) {
    const Tensor x = testing::random({5, 65}, dt, 74, 0, 9), y = testing::random({65, 3}, dt, 75, 0, 9);
    const Tensor z = matmul(testing::with_layout(x, testing::Layout::Strided), y);
    EXPECT_EQ(z.dtype(), dt);
    if (dt == kUInt8) continue;  // sums past 255 wrap
    testing::expect_values(z, naive_matmul(x, y), 0, 0);
  }
}

TEST(LinalgMatmul, MmBmmOuter) {
  const Tensor a = testing::random({33, 7}, kFloat64, 80), b = testing::random({7, 65}, kFloat64, 81);
  testing::expect_values(mm(a, b), naive_matmul(a, b), 1e-12, 1e-12);
  testing::expect_values(a.mm(b), naive_matmul(a, b), 1e-12, 1e-12);
  const Tensor x = testing::random({4, 7, 33}, kFloat32, 82), y = testing::random({4, 33, 1}, kFloat32, 83);
  testing::expect_values(x.bmm(testing::with_layout(y, testing::Layout::Strided)), naive_matmul(x, y), 1e-5,
                         atol_for(kFloat32, 33));
  const Tensor u = testing::random({7}, kFloat64, 84), v = testing::random({130}, kFloat64, 85);
  const Tensor o = outer(u, testing::with_layout(v, testing::Layout::Strided));
  ASSERT_EQ(shape_str(o.sizes()), "[7, 130]");
  testing::expect_values(o, naive_matmul(u.unsqueeze(1), v.unsqueeze(0)), 1e-12, 0);
  EXPECT_EQ(shape_str(u.outer(zeros({0}, kFloat64)).sizes()), "[7, 0]");
}

TEST(LinalgLinear, MatchesNaive) {
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor x = testing::random({2, 5, 33}, dt, 90), w = testing::random({7, 33}, dt, 91);
    const Tensor bias = testing::random({7}, dt, 92);
    std::vector<double> expected = naive_matmul(x, w.t());
    const Tensor y0 = linear(x, w);
    ASSERT_EQ(shape_str(y0.sizes()), "[2, 5, 7]");
    testing::expect_values(y0, expected, testing::rtol_for(dt), atol_for(dt, 33));
    const std::vector<double> vb = values(bias);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] += vb[i % 7];
    testing::expect_values(linear(x, testing::with_layout(w, testing::Layout::Transposed), bias), expected,
                           testing::rtol_for(dt), atol_for(dt, 33));
  }
  const Tensor v = testing::random({4}, kFloat64, 93), w = testing::random({3, 4}, kFloat64, 94);
  const Tensor y = linear(v, w);
  ASSERT_EQ(shape_str(y.sizes()), "[3]");
  testing::expect_values(y, naive_matmul(v.unsqueeze(0), w.t()), 1e-12, 1e-12);
}

TEST(LinalgErrors, NameOpAndShapes) {
  testing::expect_error([] { matmul(ones({2, 3}), ones({4, 5})); }, {"matmul", "[2, 3]", "[4, 5]"});
  testing::expect_error([] { matmul(ones({3}), ones({4})); }, {"matmul", "[3]", "[4]"});
  testing::expect_error([] { matmul(ones({2, 2, 3}), ones({3, 3, 1})); }, {"matmul", "[2, 2, 3]", "[3, 3, 1]"});
  testing::expect_error([] { matmul(ones({}), ones({3})); }, {"matmul", "[]"});
  testing::expect_error([] { matmul(ones({2, 3}), ones({3, 2}, kFloat64)); }, {"matmul", "float32", "float64"});
  testing::expect_error([] { matmul(ones({2, 3}, kBool), ones({3, 2}, kBool)); }, {"matmul", "bool"});
  testing::expect_error([] { mm(ones({2, 3, 1}), ones({3, 2})); }, {"mm", "[2, 3, 1]", "2-D"});
  testing::expect_error([] { mm(ones({2, 3}), ones({2, 3})); }, {"mm", "[2, 3]"});
  testing::expect_error([] { bmm(ones({2, 3}), ones({2, 3, 4})); }, {"bmm", "[2, 3]", "3-D"});
  testing::expect_error([] { bmm(ones({2, 3, 4}), ones({3, 4, 1})); }, {"bmm", "[2, 3, 4]", "[3, 4, 1]"});
  testing::expect_error([] { outer(ones({2, 3}), ones({3})); }, {"outer", "[2, 3]"});
  testing::expect_error([] { linear(ones({2, 3}), ones({4, 5})); }, {"linear", "[2, 3]", "[4, 5]"});
  testing::expect_error([] { linear(ones({2, 3}), ones({4, 3}), ones({5})); }, {"linear", "[5]", "[4, 3]"});
}

// The widest kernels the CPU runs are the default; 16-byte ones run anywhere;
// a width with no kernels, or one the CPU cannot run, is an error.
TEST(LinalgGemmWidths, WidestIsTheDefaultAndOthersAreChecked) {
  const std::vector<int> widths = cpu::gemm_vector_widths();
  ASSERT_FALSE(widths.empty());
  EXPECT_EQ(cpu::gemm_vector_bytes(), widths.front());
  EXPECT_EQ(widths.back(), 16);
  testing::expect_error([] { cpu::set_gemm_vector_bytes(24); }, {"set_gemm_vector_bytes", "24", "64, 32 or 16"});
  for (int bytes : {64, 32})
    if (std::find(widths.begin(), widths.end(), bytes) == widths.end())
      testing::expect_error([bytes] { cpu::set_gemm_vector_bytes(bytes); },
                            {"set_gemm_vector_bytes", std::to_string(bytes), "cannot run"});
  EXPECT_EQ(cpu::gemm_vector_bytes(), widths.front());
}

}  // namespace
}  // namespace nnvm
