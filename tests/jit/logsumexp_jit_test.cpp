// logsumexp through the x86 reduction kernels (FusedPlan) on every ISA this
// CPU has, bit-identical to the reference kernel: the max, then the exps
// (emit_exp, the reference's exp bit for bit) added in double in the
// reference's order, then log in double. Along the innermost dim and outer
// dims, empty, single, odd and long extents, keepdim or not, strided rows,
// NaN and infinities, a pointwise prologue, rows ending against a guard page;
// the API in traced mode hot == eager with one compile across batch sizes.
#include <cmath>
#include <cstring>
#include <optional>

#include "guard_page.h"
#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

Trace logsumexp_of(const Tensor& x, DimVector dims, bool keepdim) {
  Trace t;
  t.mark_output(t.add_node1(find_op("logsumexp"), {t.add_input(x)}, {dims, keepdim}));
  return t;
}

// Every bit equal (any NaN equals any NaN).
void expect_bitwise(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(shape_str(actual.sizes()), shape_str(expected.sizes()));
  const Tensor a = actual.contiguous(), e = expected.contiguous();
  const float *pa = a.data_ptr<float>(), *pe = e.data_ptr<float>();
  int64_t differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(pa + i, pe + i, 4) != 0 && !(std::isnan(pa[i]) && std::isnan(pe[i])) && differ++ < 5)
      ADD_FAILURE() << "element " << i << ": " << pa[i] << " vs the reference's " << pe[i];
  EXPECT_EQ(differ, 0);
}

// Runs `t`'s plan under `isa` against the interpreter; `jit`: whether the
// kernel must have run (false: it must have fallen back with a reason).
void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, Isa isa, bool jit = true) {
  expect_plan_matches<ReduceKernel>(t, inputs, isa, jit, [&](const auto& actual, const auto& expected) {
    ASSERT_EQ(actual.size(), 1u);
    expect_bitwise(actual[0], expected[0]);
  });
}

struct Case {
  DimVector shape, dims;
};

TEST(LogSumExpJit, BitIdenticalToTheReference) {
  const Case cases[] = {
      {{1}, {0}},        {{7}, {0}},        {{17}, {}},        {{1000}, {0}},      {{1025}, {0}},
      {{3, 7}, {1}},     {{5, 17}, {0}},    {{4, 1025}, {0}},  {{64, 4096}, {1}},  {{300, 33}, {0}},
      {{2, 3, 33}, {1}}, {{2, 3, 33}, {2}}, {{6, 5, 9}, {1, 2}}, {{40000}, {0}},   {{3, 20000}, {1}},
      {{600, 3}, {0}},   {{9, 1, 1}, {1}},  {{2, 700, 300}, {1}}, {{5, 29}, {1}},   {{7, 13}, {1}},
      {{2, 0, 5}, {2}},  {{3, 0}, {1}},     {{0, 4}, {1}},
  };
  for (Isa isa : jit_isas())
    for (const Case& c : cases)
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(::testing::Message() << shape_str(c.shape) << " dims " << shape_str(c.dims) << " keepdim "
                                          << keepdim);
        int64_t extent = 1;
        for (size_t d = 0; d < c.shape.size(); ++d)
          if (c.dims.empty() || std::find(c.dims.begin(), c.dims.end(), int64_t(d)) != c.dims.end())
            extent *= c.shape[d];
        // values past exp's range: a wrong shift gives inf, not a rounding difference
        for (double lo : {-20.0, 80.0}) {
          const Tensor x = testing::random(c.shape, kFloat32, 1, lo, lo + 40);
          // nothing to reduce (no outputs, an empty or one-element extent): the reference runs
          expect_matches(logsumexp_of(x, c.dims, keepdim), {x}, isa, extent > 1 && numel_of(c.shape) > 0);
        }
      }
}

TEST(LogSumExpJit, NanAndInfinities) {
  Tensor x = testing::random({6, 40}, kFloat32, 3, -5, 5);
  float* p = x.data_ptr<float>();
  p[0 * 40 + 17] = NAN;                                    // row 0: NaN
  p[1 * 40 + 39] = INFINITY;                               // row 1: +inf
  for (int j = 0; j < 40; ++j) p[2 * 40 + j] = -INFINITY;  // row 2: all -inf
  p[3 * 40 + 5] = NAN;                                     // row 3: NaN and +inf
  p[3 * 40 + 6] = INFINITY;
  p[4 * 40 + 9] = -INFINITY;                               // row 4: one -inf
  p[5 * 40 + 20] = 80;                                     // row 5: one large value
  for (Isa isa : jit_isas())
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << "dim " << dim);
      expect_matches(logsumexp_of(x, {dim}, false), {x}, isa);
    }
}

// logsumexp(x * s + c): the prologue is evaluated in both passes.
TEST(LogSumExpJit, PointwisePrologue) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : {DimVector{3, 7}, DimVector{8, 1025}, DimVector{129, 40}})
      for (int64_t dim : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << shape_str(shape) << " dim " << dim);
        const Tensor x = testing::random(shape, kFloat32, 4), c = testing::random({shape[1]}, kFloat32, 5);
        Trace t;
        const ValueId s = t.add_node1(find_op("mul.Scalar"), {t.add_input(x)}, {Scalar(3.5)});
        const ValueId a = t.add_node1(find_op("add"), {s, t.add_input(c)}, {Scalar(1)});
        t.mark_output(t.add_node1(find_op("logsumexp"), {a}, {DimVector{dim}, true}));
        expect_matches(t, {x, c}, isa);
      }
}

TEST(LogSumExpJit, StridedRowsRunAndOtherLayoutsFallBack) {
  const Tensor rows = testing::random({12, 40}, kFloat32, 6).narrow(1, 3, 29);
  const Tensor transposed = testing::random({29, 12}, kFloat32, 7).t();
  const Tensor x = testing::random({6, 5, 9}, kFloat32, 8);
  for (Isa isa : jit_isas()) {
    expect_matches(logsumexp_of(rows, {1}, false), {rows}, isa);
    expect_matches(logsumexp_of(rows, {0}, true), {rows}, isa);
    expect_matches(logsumexp_of(transposed, {0}, false), {transposed}, isa, false);
    expect_matches(logsumexp_of(transposed, {1}, false), {transposed}, isa, false);
    expect_matches(logsumexp_of(x, {0, 2}, false), {x}, isa, false);
  }
  expect_matches(logsumexp_of(x, {2}, false), {x}, Isa::kPortable, false);
}

TEST(LogSumExpJit, ReadsNothingPastTheData) {
  for (const Case& c : {Case{{3, 17}, {1}}, Case{{5, 7}, {0}}, Case{{1025}, {0}}, Case{{9, 33}, {0}}}) {
    const testing::GuardedTensor x(testing::random(c.shape, kFloat32, 12));
    for (Isa isa : jit_isas()) expect_matches(logsumexp_of(x.tensor(), c.dims, false), {x.tensor()}, isa);
  }
}

TEST(LogSumExpJit, TracedApiIsEagerBitForBitWithOneCompile) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    auto f = [](const Tensor& x) { return x.logsumexp({1}, true) + x.logsumexp({0}, false); };
    int64_t compiles = -1, runs = reduce_runs();
    for (int64_t batch : {8, 16, 24, 8})
      for (int k = 0; k < 3; ++k) {
        const Tensor x = testing::random({batch, 96}, kFloat32, uint64_t(batch + k), -10, 10);
        Tensor expected;
        {
          EagerGuard eager;
          expected = f(x);
        }
        expect_bitwise(f(x), expected);
        if (compiles < 0 && k == 2) compiles = reduce_compiles();
      }
    EXPECT_EQ(reduce_compiles(), compiles) << "one kernel per axis for every batch size";
    EXPECT_GT(reduce_runs(), runs);
  }
}

}  // namespace
}  // namespace nnvm::jit
