// argmax and argmin through the x86 arg-reduction kernel (FusedPlan) on every
// ISA this CPU has, equal to the reference kernel's indices: along the
// innermost dim, outer dims and all dims, keepdim or not, empty, single, odd
// and long extents, ties (the first index), NaN (the first NaN), infinities,
// signed zeros, rows of -inf; float16 and bfloat16 inputs; strided rows,
// broadcast inputs and the layouts that fall back; pointwise prologues (several
// inputs, broadcasting, Scalars, NaN they make, registers enough for four
// vectors or for one, too many) and the 16-bit ones that decline; rows ending
// against a guard page; the API in traced mode equal to eager, a new batch
// size compiling nothing.
#include <cmath>

#include "guard_page.h"
#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;

Trace arg_of(const char* name, const Tensor& x, DimVector dims, bool keepdim) {
  Trace t;
  t.mark_output(t.add_node1(find_op(name), {t.add_input(x)}, {dims, keepdim}));
  return t;
}

std::vector<int64_t> indices(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// Runs `t`'s plan under `isa` against the interpreter; `jit`: whether the
// kernel must have run (false: it must have fallen back with a reason).
void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, Isa isa, bool jit = true) {
  expect_plan_matches<ReduceKernel>(t, inputs, isa, jit, [&](const auto& actual, const auto& expected) {
    ASSERT_EQ(actual.size(), 1u);
    EXPECT_EQ(shape_str(actual[0].sizes()), shape_str(expected[0].sizes()));
    EXPECT_EQ(indices(actual[0]), indices(expected[0]));
  });
}

void expect_matches(const Trace& t, const Tensor& x, Isa isa, bool jit = true) { expect_matches(t, std::vector<Tensor>{x}, isa, jit); }

struct Case {
  DimVector shape, dims;
};

// Values in a few levels: many ties.
Tensor tied(IntArrayRef shape, uint64_t seed) { return testing::random(shape, kFloat32, seed, -3, 3).round(); }

TEST(ArgReduceJit, EqualsTheReference) {
  const Case cases[] = {
      {{1}, {0}},        {{7}, {0}},        {{17}, {}},          {{1000}, {0}},     {{1025}, {0}},
      {{3, 7}, {1}},     {{5, 17}, {0}},    {{4, 1025}, {0}},    {{64, 4096}, {1}}, {{300, 33}, {0}},
      {{2, 3, 33}, {1}}, {{2, 3, 33}, {2}}, {{6, 5, 9}, {1, 2}}, {{40000}, {0}},    {{3, 20000}, {1}},
      {{600, 3}, {0}},   {{9, 1, 1}, {1}},  {{6, 5, 9}, {}},     {{2, 300, 41}, {1}}, {{0, 4}, {1}},
      {{2, 0, 5}, {2}},
  };
  for (Isa isa : jit_isas())
    for (const Case& c : cases)
      for (const char* name : {"argmax", "argmin"})
        for (bool keepdim : {false, true})
          for (bool ties : {false, true}) {
            SCOPED_TRACE(::testing::Message() << name << shape_str(c.shape) << " dims " << shape_str(c.dims)
                                              << " keepdim " << keepdim << " ties " << ties);
            int64_t extent = 1;
            for (size_t d = 0; d < c.shape.size(); ++d)
              if (c.dims.empty() || std::find(c.dims.begin(), c.dims.end(), int64_t(d)) != c.dims.end())
                extent *= c.shape[d];
            const Tensor x = ties ? tied(c.shape, 1) : testing::random(c.shape, kFloat32, 1);
            const DimVector dims = c.dims.size() > 1 ? DimVector{} : c.dims;  // one dim, or all
            const bool all = dims.empty();
            expect_matches(arg_of(name, x, dims, keepdim && !all), x, isa,
                           (extent > 1 || all) && numel_of(c.shape) > 0);
          }
}

TEST(ArgReduceJit, NanInfinitiesAndSignedZeros) {
  Tensor x = testing::random({8, 40}, kFloat32, 3);
  float* p = x.data_ptr<float>();
  p[0 * 40 + 17] = NAN;                                    // row 0: one NaN
  p[1 * 40 + 31] = NAN;                                    // row 1: two NaN, the first wins
  p[1 * 40 + 5] = NAN;
  p[2 * 40 + 39] = INFINITY;                               // row 2: +inf last
  p[2 * 40 + 1] = -INFINITY;
  for (int j = 0; j < 40; ++j) p[3 * 40 + j] = -INFINITY;  // row 3: all -inf
  for (int j = 0; j < 40; ++j) p[4 * 40 + j] = INFINITY;   // row 4: all +inf
  for (int j = 0; j < 40; ++j) p[5 * 40 + j] = j % 2 ? 0.0f : -0.0f;  // row 5: signed zeros tie
  p[6 * 40 + 0] = NAN;                                     // row 6: NaN first, then +inf
  p[6 * 40 + 20] = INFINITY;
  p[7 * 40 + 39] = NAN;                                    // row 7: NaN in the tail
  for (Isa isa : jit_isas())
    for (const char* name : {"argmax", "argmin"})
      for (int64_t dim : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << name << " dim " << dim);
        expect_matches(arg_of(name, x, {dim}, false), x, isa);
      }
}

// float16 and bfloat16 inputs widen exactly: the same indices, ties (many,
// at half precision), NaN and infinities included; strided rows too.
// Columns over more than one block of 256 reduced rows: the blocks run
// apart and merge in order (ties across blocks: the first; a NaN in a later
// block wins; a column of -inf: index 0).
TEST(ArgReduceJit, ColumnBlocksMergeInOrder) {
  Tensor x = tied({1000, 37}, 50);
  float* p = x.data_ptr<float>();
  p[700 * 37 + 3] = NAN;                                          // column 3: a NaN in block 2
  p[100 * 37 + 4] = NAN;                                          // column 4: NaN in blocks 0 and 3
  p[900 * 37 + 4] = NAN;
  for (int64_t r = 0; r < 1000; ++r) p[r * 37 + 5] = -INFINITY;   // column 5: -inf throughout
  for (int64_t r = 0; r < 1000; ++r) p[r * 37 + 6] = r == 999 ? 8 : 1;  // column 6: the last row
  const Tensor wide = tied({1300, 2100}, 51);                     // several column tiles too
  for (Isa isa : jit_isas())
    for (const char* name : {"argmax", "argmin"}) {
      expect_matches(arg_of(name, x, {0}, false), x, isa);
      expect_matches(arg_of(name, wide, {0}, true), wide, isa);
    }
}

TEST(ArgReduceJit, HalfInputsEqualTheReference) {
  const Case cases[] = {{{7}, {0}},       {{17}, {}},      {{3, 7}, {1}},      {{5, 17}, {0}},
                        {{4, 1025}, {0}}, {{64, 300}, {1}}, {{2, 3, 33}, {1}}, {{300, 33}, {0}}};
  for (Isa isa : jit_isas())
    for (DType dtype : {kFloat16, kBFloat16})
      for (const Case& c : cases)
        for (const char* name : {"argmax", "argmin"}) {
          SCOPED_TRACE(::testing::Message() << name << " " << dtype_name(dtype) << shape_str(c.shape) << " dims "
                                            << shape_str(c.dims));
          Tensor values = testing::random(c.shape, kFloat32, 13, -3, 3);
          float* p = values.data_ptr<float>();
          const int64_t n = values.numel();
          p[n / 3] = NAN;
          p[n / 2] = INFINITY;
          p[n - 1] = -INFINITY;
          const Tensor x = values.to(dtype);
          expect_matches(arg_of(name, x, c.dims, false), x, isa);
        }
  for (Isa isa : jit_isas()) {
    const Tensor rows = testing::random({12, 40}, kFloat16, 14).narrow(1, 3, 29);
    expect_matches(arg_of("argmax", rows, {1}, false), rows, isa);
    expect_matches(arg_of("argmin", rows, {0}, true), rows, isa);
  }
}

TEST(ArgReduceJit, StridedRowsRunAndOtherLayoutsFallBack) {
  const Tensor rows = tied({12, 40}, 6).narrow(1, 3, 29);
  const Tensor transposed = testing::random({29, 12}, kFloat32, 7).t();
  const Tensor down = testing::random({1, 12}, kFloat32, 8).expand({50, 12});    // every index of dim 0 ties
  const Tensor across = testing::random({12, 1}, kFloat32, 8).expand({12, 50});  // a broadcast row: index 0
  for (Isa isa : jit_isas()) {
    expect_matches(arg_of("argmax", rows, {1}, false), rows, isa);
    expect_matches(arg_of("argmin", rows, {0}, true), rows, isa);
    expect_matches(arg_of("argmax", transposed, {0}, false), transposed, isa, false);
    expect_matches(arg_of("argmax", transposed, {1}, false), transposed, isa, false);
    expect_matches(arg_of("argmax", down, {0}, false), down, isa);
    expect_matches(arg_of("argmax", across, {1}, false), across, isa);
    const Tensor x64 = testing::random({4, 9}, kFloat64, 9);
    expect_matches(arg_of("argmax", x64, {1}, false), x64, isa, false);
  }
  expect_matches(arg_of("argmax", rows, {1}, false), rows, Isa::kPortable, false);
}

// arg(prologue(inputs)) along `dim`; the prologue is built by `body` from the inputs' values.
template <class Body>
Trace arg_after(const char* name, const std::vector<Tensor>& inputs, int64_t dim, Body body) {
  Trace t;
  std::vector<trace::ValueId> in;
  for (const Tensor& x : inputs) in.push_back(t.add_input(x));
  t.mark_output(t.add_node1(find_op(name), {body(t, in)}, {DimVector{dim}, false}));
  return t;
}

trace::ValueId op(Trace& t, const char* name, std::vector<trace::ValueId> in, Attrs attrs = {}) {
  return t.add_node1(find_op(name), in, std::move(attrs));
}

TEST(ArgReduceJit, AfterAPrologueEqualsTheReference) {
  const DimVector shapes[] = {{1, 1}, {3, 7}, {5, 17}, {4, 1025}, {64, 300}, {300, 33}, {2, 3000}, {33, 70}};
  for (Isa isa : jit_isas())
    for (const DimVector& shape : shapes)
      for (int64_t dim : {0, 1})
        for (const char* name : {"argmax", "argmin"}) {
          SCOPED_TRACE(::testing::Message() << name << shape_str(shape) << " dim " << dim);
          const bool jit = shape[size_t(dim)] > 1;  // one element per output reduces nothing
          const Tensor x = tied(shape, 21), y = tied(shape, 22);
          const Tensor row = tied({1, shape[1]}, 23), column = tied({shape[0], 1}, 24);
          // x * y + column: exact in float32, many ties, a broadcast along the rows
          expect_matches(arg_after(name, {x, y, column}, dim,
                                   [](Trace& t, auto in) { return op(t, "add", {op(t, "mul", {in[0], in[1]}), in[2]}, {Scalar(1)}); }),
                         {x, y, column}, isa, jit);
          // |x| * 1.5 - row, run-time Scalars
          expect_matches(arg_after(name, {x, row}, dim,
                                   [](Trace& t, auto in) {
                                     const auto scaled = op(t, "mul.Scalar", {op(t, "abs", {in[0]})}, {Scalar(1.5)});
                                     return op(t, "add", {scaled, in[1]}, {Scalar(-1)});
                                   }),
                         {x, row}, isa, jit);
          // sqrt(x): NaN wherever x < 0, the first one wins
          expect_matches(arg_after(name, {x}, dim, [](Trace& t, auto in) { return op(t, "sqrt", {in[0]}); }), {x}, isa, jit);
        }
}

// Four live values and an injector's scratch: AVX2 keeps one vector of
// outputs a step (its registers go to the prologue); AVX-512 still four.
TEST(ArgReduceJit, APrologueNeedingManyRegistersKeepsFewerVectors) {
  auto deep = [](Trace& t, auto in) {
    const auto a = op(t, "tanh", {in[0]}), b = op(t, "sigmoid", {in[1]}), c = op(t, "mul", {in[2], in[3]});
    return op(t, "add", {op(t, "mul", {a, b}), op(t, "maximum", {c, in[0]})}, {Scalar(1)});
  };
  for (Isa isa : jit_isas())
    for (const DimVector& shape : {DimVector{9, 100}, DimVector{70, 33}, DimVector{2, 1025}})
      for (int64_t dim : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << shape_str(shape) << " dim " << dim);
        std::vector<Tensor> in;
        for (uint64_t k = 0; k < 4; ++k) in.push_back(testing::random(shape, kFloat32, 30 + k));
        expect_matches(arg_after("argmax", in, dim, deep), in, isa);
        expect_matches(arg_after("argmin", in, dim, deep), in, isa);
      }
}

TEST(ArgReduceJit, SixteenBitValuesComputedInThePrologueDecline) {
  const Tensor x = testing::random({6, 40}, kFloat32, 40);
  const Tensor h = x.to(kFloat16);
  for (Isa isa : jit_isas()) {
    // float16 products round in the reference before they are compared
    const Trace rounded = arg_after("argmax", {h, h}, 1, [](Trace& t, auto in) { return op(t, "mul", {in[0], in[1]}); });
    expect_matches(rounded, {h, h}, isa, false);
    const trace::FusedPlan plan(rounded);
    const std::string declined = ReduceKernel::of(plan.program(0))->declined();
    EXPECT_NE(declined.find("the reference compares the rounded values"), std::string::npos) << declined;
    // float16 loads widened exactly, then float32 arithmetic: runs
    const Trace widened = arg_after("argmin", {h, x}, 0, [](Trace& t, auto in) {
      return op(t, "mul", {op(t, "copy", {in[0]}, {kFloat32}), in[1]});
    });
    expect_matches(widened, {h, x}, isa);
  }
}

TEST(ArgReduceJit, ReadsAndWritesNothingPastTheData) {
  for (const Case& c : {Case{{3, 17}, {1}}, Case{{5, 7}, {0}}, Case{{1025}, {0}}, Case{{9, 33}, {0}}}) {
    const testing::GuardedTensor x(testing::random(c.shape, kFloat32, 12));
    for (Isa isa : jit_isas())
      for (const char* name : {"argmax", "argmin"}) expect_matches(arg_of(name, x.tensor(), c.dims, false), x.tensor(), isa);
  }
}

TEST(ArgReduceJit, TracedApiEqualsEager) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    const int64_t runs = reduce_runs();
    int64_t compiles = -1;  // after the first batch size: another one compiles nothing
    for (int64_t batch : {8, 16, 8}) {
      for (int k = 0; k < 3; ++k) {
        const Tensor x = tied({batch, 96}, uint64_t(batch + k));
        const Tensor shift = tied({1, 96}, uint64_t(batch + k + 100));
        auto logits = [&] { return (x * 2 + shift).relu(); };  // a prologue fused into the arg reduction
        std::vector<Tensor> expected;
        {
          EagerGuard eager;
          expected = {x.argmax(1), x.argmin(0, true), x.argmax(), logits().argmax(1), logits().argmin(0)};
        }
        EXPECT_EQ(indices(x.argmax(1)), indices(expected[0]));
        EXPECT_EQ(indices(x.argmin(0, true)), indices(expected[1]));
        EXPECT_EQ(indices(x.argmax()), indices(expected[2]));
        EXPECT_EQ(indices(logits().argmax(1)), indices(expected[3]));
        EXPECT_EQ(indices(logits().argmin(0)), indices(expected[4]));
      }
      if (compiles < 0) compiles = reduce_compiles();
    }
    EXPECT_GT(reduce_runs(), runs);
    EXPECT_EQ(reduce_compiles(), compiles);
  }
}

}  // namespace
}  // namespace nnvm::jit
