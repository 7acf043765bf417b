// The x86 reduction kernels through FusedPlan on every ISA this CPU has
// (forced from code) against the interpreter's reference kernels: sum, mean,
// amax, amin, max, min and prod alone (bit-identical: same double
// accumulation order), along the innermost dim, outer dims and all dims,
// empty, single, odd and long extents, keepdim or not; with a pointwise
// prologue (exp(x - c), square, a run-time Scalar); NaN and inf; strided rows
// and the layouts that fall back, with their reasons; one compile across
// batch sizes; column sums over many blocks of rows, on one thread and on
// three; the reduction axis in LoopIR's listing.
#include "guard_page.h"
#include "nnvm/core/thread_pool.h"
#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

// The reduction's attributes: (dims, keepdim[, dtype]).
Attrs reduce_attrs(const char* name, DimVector dims, bool keepdim) {
  const std::string n = name;
  if (n == "amax" || n == "amin" || n == "max" || n == "min") return {dims, keepdim};
  if (n == "norm") return {dims, keepdim, Scalar(2.0)};
  return {dims, keepdim, kFloat32};
}

Trace reduction(const char* name, const Tensor& x, DimVector dims, bool keepdim) {
  Trace t;
  t.mark_output(t.add_node1(find_op(name), {t.add_input(x)}, reduce_attrs(name, dims, keepdim)));
  return t;
}

// Runs `t`'s plan under `isa` against the interpreter; `jit`: whether the
// reduction kernel must have run (else it must have fallen back with a reason).
void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, Isa isa, bool jit = true, double rtol = 0,
                    double atol = 0) {
  expect_plan_matches<ReduceKernel>(t, inputs, isa, jit, [&](const auto& actual, const auto& expected) {
    testing::expect_tensors_close(actual[0], expected[0], rtol, atol);
  });
}

struct Case {
  DimVector shape, dims;
};

const std::vector<Case> kCases = {
    {{1}, {0}},          {{7}, {0}},          {{17}, {}},          {{1000}, {0}},        {{1025}, {0}},
    {{3, 7}, {1}},       {{5, 17}, {0}},      {{4, 1025}, {0}},    {{64, 4096}, {1}},    {{300, 33}, {0}},
    {{2, 3, 33}, {1}},   {{2, 3, 33}, {2}},   {{6, 5, 9}, {1, 2}}, {{40000}, {0}},       {{3, 20000}, {1}},
    {{600, 3}, {0}},     {{2, 0, 5}, {2}},    {{9, 1, 1}, {1}},
};

TEST(ReduceJit, EveryReductionIsBitIdenticalToTheReference) {
  for (Isa isa : jit_isas())
    for (const Case& c : kCases)
      for (const char* name : {"sum", "mean", "amax", "amin", "prod", "norm"})
        for (bool keepdim : {false, true}) {
          SCOPED_TRACE(::testing::Message() << name << shape_str(c.shape) << " dims " << shape_str(c.dims)
                                            << " keepdim " << keepdim);
          int64_t extent = 1;  // elements per output
          for (size_t d = 0; d < c.shape.size(); ++d)
            if (c.dims.empty() || std::find(c.dims.begin(), c.dims.end(), int64_t(d)) != c.dims.end())
              extent *= c.shape[d];
          if (extent == 0 && (std::string(name) == "amax" || std::string(name) == "amin")) continue;  // no identity
          // nothing to reduce (an empty tensor, or extents of one): the reference runs
          const bool trivial = numel_of(c.shape) == 0 || extent == 1;
          const bool prod = std::string(name) == "prod";
          const Tensor x = testing::random(c.shape, kFloat32, 1, prod ? 0.99 : -3, prod ? 1.01 : 3);
          expect_matches(reduction(name, x, c.dims, keepdim), {x}, isa, !trivial);
        }
}

// Column sums in blocks of 256 reduced rows run as units of their own, then
// merge in order: a short last block (and one not a multiple of four rows),
// inner dims that fit the accumulators (with a tail) or not, a tile split
// across threads, outer dims; on one thread and on three.
TEST(ReduceJit, ColumnSumsAcrossBlocksTilesAndThreads) {
  const int threads = get_num_threads();
  const std::vector<Case> cases = {
      {{7, 40}, {0}},     {{259, 33}, {0}},   {{1030, 16}, {0}},   {{513, 20}, {0}},   {{300, 32}, {0}},
      {{520, 48}, {0}},   {{600, 1030}, {0}}, {{4096, 100}, {0}},  {{3, 300, 70}, {1}}, {{2, 600, 3}, {1}},
      {{2, 257, 2100}, {1}},
  };
  for (int n : {1, 3}) {
    set_num_threads(n);
    for (Isa isa : jit_isas())
      for (const Case& c : cases)
        for (const char* name : {"sum", "mean", "prod", "norm"}) {
          SCOPED_TRACE(::testing::Message() << n << " threads " << name << shape_str(c.shape) << " dims "
                                            << shape_str(c.dims));
          const bool prod = std::string(name) == "prod";
          const Tensor x = testing::random(c.shape, kFloat32, 13, prod ? 0.99 : -3, prod ? 1.01 : 3);
          expect_matches(reduction(name, x, c.dims, false), {x}, isa);
        }
    for (Isa isa : jit_isas())  // x * w, w one value per reduced row: a broadcast input that moves with the rows
      for (const DimVector& shape : {DimVector{600, 70}, DimVector{1030, 9}}) {
        SCOPED_TRACE(::testing::Message() << n << " threads x * w " << shape_str(shape));
        const Tensor x = testing::random(shape, kFloat32, 14), w = testing::random({shape[0], 1}, kFloat32, 15);
        Trace t;
        const ValueId xw = t.add_node1(find_op("mul"), {t.add_input(x), t.add_input(w)});
        t.mark_output(t.add_node1(find_op("sum"), {xw}, {DimVector{0}, false, kFloat32}));
        expect_matches(t, {x, w}, isa);
      }
  }
  set_num_threads(threads);
}

TEST(ReduceJit, MaxAndMinOverEveryDim) {
  const Tensor x = testing::random({37, 11}, kFloat32, 2);
  for (Isa isa : jit_isas())
    for (const char* name : {"max", "min"}) expect_matches(reduction(name, x, {}, false), {x}, isa);
}

TEST(ReduceJit, NanAndInfinities) {
  Tensor x = testing::random({5, 40}, kFloat32, 3);
  float* p = x.data_ptr<float>();
  p[0 * 40 + 17] = NAN;
  p[1 * 40 + 39] = INFINITY;
  p[2 * 40 + 0] = -INFINITY;
  p[3 * 40 + 5] = NAN;
  p[3 * 40 + 6] = INFINITY;
  for (Isa isa : jit_isas())
    for (const char* name : {"sum", "mean", "amax", "amin", "prod", "norm"})
      for (int64_t dim : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << name << " dim " << dim);
        expect_matches(reduction(name, x, {dim}, false), {x}, isa);
      }
}

// sum(exp(x - c)) with c per row, mean(square(x)), amax(|x| * s) with a run-time s.
TEST(ReduceJit, PointwisePrologues) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : {DimVector{3, 7}, DimVector{8, 1025}, DimVector{129, 40}})
      for (int64_t dim : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << shape_str(shape) << " dim " << dim);
        DimVector cshape = shape;
        cshape[size_t(dim)] = 1;
        const Tensor x = testing::random(shape, kFloat32, 4), c = testing::random(cshape, kFloat32, 5);
        {
          Trace t;
          const ValueId xv = t.add_input(x), cv = t.add_input(c);
          const ValueId e = t.add_node1(find_op("exp"), {t.add_node1(find_op("add"), {xv, cv}, {Scalar(-1)})});
          t.mark_output(t.add_node1(find_op("sum"), {e}, {DimVector{dim}, true, kFloat32}));
          expect_matches(t, {x, c}, isa, true, 1e-6, 1e-6);
        }
        {
          Trace t;
          const ValueId sq = t.add_node1(find_op("square"), {t.add_input(x)});
          t.mark_output(t.add_node1(find_op("mean"), {sq}, {DimVector{dim}, false, kFloat32}));
          expect_matches(t, {x}, isa);
        }
        {
          Trace t;
          const ValueId a = t.add_node1(find_op("abs"), {t.add_input(x)});
          const ValueId s = t.add_node1(find_op("mul.Scalar"), {a}, {Scalar(1.5)});
          t.mark_output(t.add_node1(find_op("amax"), {s}, {DimVector{dim}, false}));
          expect_matches(t, {x}, isa);
        }
      }
}

// The Euclidean norm: the squares summed in double in the reference's
// order, then the root (bit-identical), with a prologue ((x - y).norm(), a
// gradient-clipping norm of a difference) and a float16 input; another p
// stays with the reference, whether the trace has it or a replay binds it
// (p is a run-time Scalar).
TEST(ReduceJit, TheEuclideanNorm) {
  auto norm_of = [](const Tensor& x, const DimVector& dims, double p) {
    Trace t;
    t.mark_output(t.add_node1(find_op("norm"), {t.add_input(x)}, {dims, false, Scalar(p)}));
    return t;
  };
  for (Isa isa : jit_isas())
    for (const DimVector& shape : {DimVector{1, 64}, DimVector{8, 1025}, DimVector{300, 33}, DimVector{3000}}) {
      const Tensor x = testing::random(shape, kFloat32, 30), y = testing::random(shape, kFloat32, 31);
      for (const DimVector& dims : {DimVector{}, DimVector{int64_t(shape.size()) - 1}, DimVector{0}}) {
        SCOPED_TRACE(::testing::Message() << "(x - y).norm() " << shape_str(shape) << " dims " << shape_str(dims));
        Trace t;
        const ValueId d = t.add_node1(find_op("add"), {t.add_input(x), t.add_input(y)}, {Scalar(-1)});
        t.mark_output(t.add_node1(find_op("norm"), {d}, {dims, false, Scalar(2.0)}));
        const bool one_element = dims == DimVector{0} && shape[0] == 1;  // nothing to reduce: the reference runs
        expect_matches(t, {x, y}, isa, !one_element);
      }
      SCOPED_TRACE(::testing::Message() << shape_str(shape));
      const Tensor h = testing::random(shape, kFloat16, 32);
      expect_matches(norm_of(h, {}, 2.0), {h}, isa);
      for (double p : {1.0, 3.0, double(INFINITY)}) expect_matches(norm_of(x, {}, p), {x}, isa, false);
    }
}

// A plan lowered for p = 2 replayed with another p (the same signature: p is
// a Scalar slot) runs the reference for that run, and the kernel again for p = 2.
TEST(ReduceJit, ANormReplayedWithAnotherPRunsTheReference) {
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  IsaGuard guard(jit_isas()[0]);
  const Tensor x = testing::random({4, 50}, kFloat32, 33);
  Trace t;
  t.mark_output(t.add_node1(find_op("norm"), {t.add_input(x)}, {DimVector{1}, false, Scalar(2.0)}));
  EagerGuard eager;
  const trace::FusedPlan plan(t);
  for (double p : {2.0, 3.0, 2.0, 1.0}) {
    SCOPED_TRACE(::testing::Message() << "p " << p);
    const int64_t runs = reduce_runs();
    const std::vector<Tensor> got = plan.run({x}, {Scalar(p)});
    testing::expect_tensors_close(got[0], x.norm(p, {1}), 0, 0);
    if (p == 2.0) EXPECT_GT(reduce_runs(), runs);
    else EXPECT_EQ(reduce_runs(), runs);
  }
}

TEST(ReduceJit, StridedRowsRunAndOtherLayoutsFallBack) {
  const Tensor wide = testing::random({12, 40}, kFloat32, 6);
  const Tensor rows = wide.narrow(1, 3, 29);                    // unit-stride rows 40 apart
  const Tensor transposed = testing::random({29, 12}, kFloat32, 7).t();  // the reduced dim 12 apart
  for (Isa isa : jit_isas()) {
    expect_matches(reduction("sum", rows, {1}, false), {rows}, isa);
    expect_matches(reduction("sum", rows, {0}, false), {rows}, isa);
    // a transposed input: the vectors would run along a strided dim either way
    expect_matches(reduction("sum", transposed, {0}, false), {transposed}, isa, false);
    expect_matches(reduction("amax", transposed, {1}, false), {transposed}, isa, false);
    const Tensor x = testing::random({6, 5, 9}, kFloat32, 8);
    expect_matches(reduction("sum", x, {0, 2}, false), {x}, isa, false);  // two blocks
  }
}

TEST(ReduceJit, ReadsNothingPastTheData) {
  for (const Case& c : {Case{{3, 17}, {1}}, Case{{5, 7}, {0}}, Case{{1025}, {0}}, Case{{9, 33}, {0}}}) {
    const testing::GuardedTensor x(testing::random(c.shape, kFloat32, 12));
    for (Isa isa : jit_isas())
      for (const char* name : {"sum", "amax"}) expect_matches(reduction(name, x.tensor(), c.dims, false), {x.tensor()}, isa);
  }
}

TEST(ReduceJit, DeclinesOtherDtypes) {
  const Tensor x = testing::random({4, 9}, kFloat64, 9);
  for (Isa isa : jit_isas()) {
    Trace t;
    t.mark_output(t.add_node1(find_op("sum"), {t.add_input(x)}, {DimVector{1}, false, kFloat64}));
    expect_matches(t, {x}, isa, false);
  }
}

TEST(ReduceJit, ForcedPortableRunsTheReference) {
  const Tensor x = testing::random({5, 40}, kFloat32, 10);
  const int64_t compiles = reduce_compiles();
  expect_matches(reduction("sum", x, {1}, false), {x}, Isa::kPortable, false);
  EXPECT_EQ(reduce_compiles(), compiles);
}

TEST(ReduceJit, ANewBatchSizeReusesTheKernel) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  IsaGuard guard(jit_isas()[0]);
  auto f = [](const Tensor& x) { return (x * 0.5).exp().sum({1}) * 3; };
  f(testing::random({8, 96}, kFloat32, 11)).data_ptr();
  const int64_t before = reduce_compiles(), runs = reduce_runs();
  for (int64_t batch : {8, 16, 24, 8})
    for (int k = 0; k < 3; ++k) {
      const Tensor x = testing::random({batch, 96}, kFloat32, uint64_t(batch + k));
      Tensor expected;
      {
        EagerGuard eager;
        expected = f(x);
      }
      testing::expect_tensors_close(f(x), expected, 1e-6, 1e-6);
    }
  EXPECT_LE(reduce_compiles() - before, 1) << "one kernel for every batch size";
  EXPECT_GT(reduce_runs(), runs);
}

TEST(ReduceJit, LoopIRListsTheReductionAxis) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 6}, {6, 1});
  const ValueId sq = t.add_node1(find_op("square"), {x});
  t.mark_output(t.add_node1(find_op("mean"), {sq}, {DimVector{1}, false, kFloat32}));
  const trace::FusionPlan f = trace::fuse(t);
  ASSERT_EQ(f.groups.size(), 1u);
  const Lowering l = lower_reduction(t, f.groups[0], trace::group_values(t, f.groups[0]));
  ASSERT_TRUE(l.ok()) << l.declined;
  EXPECT_EQ(l.ir.reduce, ReduceOp::kMean);
  EXPECT_EQ(l.ir.to_string(), "e0 = load in0\ne1 = mul e0, e0\nout0 = mean e1 over the reduction axis\n");
  EXPECT_FALSE(lower_pointwise(t, f.groups[0], trace::group_values(t, f.groups[0])).ok());

  const ReduceSpace space = reduce_space({4, 6, 5}, {1, 2}, true, {IntArrayRef({4, 6, 5}), IntArrayRef({4, 1, 1})},
                                         {IntArrayRef({30, 5, 1}), IntArrayRef({1, 1, 1})});
  EXPECT_EQ(space.axis, 1);
  EXPECT_EQ(space.to_string(), "[4, 30 r] in0 [30, 1] out0 [1, 0]");
}

}  // namespace
}  // namespace nnvm::jit
