// Reductions whose values are not all float32 through the x86 reduction
// kernel (FusedPlan) on every ISA this CPU has, against the interpreter's
// reference kernels, bit for bit (the same double accumulation order, exact
// conversions): sums, means, extrema and products of float16, bfloat16, bool,
// uint8, int8 and int32 inputs (integer sums into int64, half sums into half,
// extrema into the input's dtype), over inner, outer and all dims, keepdim or
// not, empty, single, odd and long extents; strided rows and broadcast
// operands; comparisons feeding a cast inside the prologue; the int32 sum's
// extent limit and the pairs that decline; tails ending against a guard page;
// random shapes; the ISA forced portable; the traced accuracy program as one
// reduction.
#include <random>

#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

// reduce `name` over dims of one input; `dtype`: the sum/mean/prod dtype attribute
Trace reduction(const char* name, const Tensor& x, DimVector dims, bool keepdim, DType dtype) {
  const std::string n = name;
  Attrs attrs = n == "amax" || n == "amin" ? Attrs{dims, keepdim} : Attrs{dims, keepdim, dtype};
  Trace t;
  t.mark_output(t.add_node1(find_op(name), {t.add_input(x)}, std::move(attrs)));
  return t;
}

void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, Isa isa, bool jit) {
  expect_plan_matches<ReduceKernel>(t, inputs, isa, jit, [](const auto& actual, const auto& expected) {
    EXPECT_EQ(actual[0].dtype(), expected[0].dtype());
    testing::expect_tensors_close(actual[0], expected[0], 0, 0);
  });
}

DType widened(DType t) { return is_integral(t, true) ? kInt64 : t; }

// Random values of `dtype`: integers over their whole range (int32: up to 2^31).
Tensor values_of(IntArrayRef shape, DType dtype, uint64_t seed) {
  switch (dtype) {
    case kUInt8: return testing::random(shape, dtype, seed, 0, 255);
    case kInt8: return testing::random(shape, dtype, seed, -128, 127);
    case kInt32: return testing::random(shape, dtype, seed, -2147483648.0, 2147483647.0);
    default: return testing::random(shape, dtype, seed, -3, 3);
  }
}

struct Case {
  DimVector shape, dims;
};

const std::vector<Case> kCases = {
    {{1}, {0}},        {{7}, {0}},        {{17}, {}},        {{1025}, {0}},    {{3, 7}, {1}},
    {{5, 17}, {0}},    {{4, 1025}, {0}},  {{64, 300}, {1}},  {{300, 33}, {0}}, {{2, 3, 33}, {1}},
    {{2, 3, 33}, {2}}, {{40000}, {0}},    {{3, 20000}, {1}}, {{600, 3}, {0}},  {{2, 0, 5}, {2}},
    {{9, 1, 1}, {1}},
};

int64_t extent_of(const Case& c) {
  int64_t extent = 1;
  for (size_t d = 0; d < c.shape.size(); ++d)
    if (c.dims.empty() || std::find(c.dims.begin(), c.dims.end(), int64_t(d)) != c.dims.end()) extent *= c.shape[d];
  return extent;
}

TEST(ReduceDtypeJit, EveryInputDtypeIsBitIdenticalToTheReference) {
  struct Run {
    const char* name;
    bool float32_result;  // the dtype attribute float32, else the op's default result dtype
  };
  const Run runs[] = {{"sum", false},  {"sum", true},   {"mean", true}, {"mean", false},
                      {"amax", false}, {"amin", false}, {"prod", true}};
  for (Isa isa : jit_isas())
    for (DType dtype : {kFloat16, kBFloat16, kBool, kUInt8, kInt8, kInt32})
      for (const Case& c : kCases)
        for (const Run& run : runs)
          for (bool keepdim : {false, true}) {
            const std::string name = run.name;
            if (name == "mean" && !run.float32_result && !is_floating(dtype)) continue;  // a float mean only
            const bool extremum = name == "amax" || name == "amin";
            const int64_t extent = extent_of(c);
            if (extent == 0 && extremum) continue;  // no identity
            SCOPED_TRACE(::testing::Message() << name << " of " << dtype_name(dtype) << shape_str(c.shape) << " dims "
                                              << shape_str(c.dims) << " keepdim " << keepdim << " float32 "
                                              << run.float32_result);
            // prod: float values near 1, so the product stays finite
            const Tensor x = name == "prod" && is_floating(dtype) ? testing::random(c.shape, dtype, 1, 0.9, 1.1)
                                                                  : values_of(c.shape, dtype, 1);
            const DType attr = run.float32_result ? kFloat32 : widened(dtype);
            const bool trivial = numel_of(c.shape) == 0 || extent == 1;
            const bool declined = extremum && dtype == kInt32;  // int32 extrema are not exact in float32
            expect_matches(reduction(run.name, x, c.dims, keepdim, attr), {x}, isa, !trivial && !declined);
          }
}

// Random ranks (1-3), sizes (0-70), reduced dims (one, two, or all), keepdim,
// dtypes, ops and layouts (contiguous, or every other element of the last
// dim): the kernel runs or falls back with a reason, and equals the reference.
TEST(ReduceDtypeJit, RandomShapesMatchTheReference) {
  std::mt19937 rng(20261130);
  auto below = [&](int n) { return int(rng() % uint32_t(n)); };
  const DType dtypes[] = {kFloat16, kBFloat16, kBool, kUInt8, kInt8, kInt32};
  const char* ops[] = {"sum", "mean", "amax", "amin"};
  for (int trial = 0; trial < 300; ++trial) {
    DimVector shape(size_t(1 + below(3)));
    for (int64_t& s : shape) s = below(8) == 0 ? below(2) : 1 + below(70);
    DimVector dims;
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      if (below(2)) dims.push_back(d);
    const DType dtype = dtypes[below(6)];
    const std::string name = ops[below(4)];
    const bool keepdim = below(2), strided = below(3) == 0;
    const Case c{shape, dims};
    const bool extremum = name == "amax" || name == "amin";
    if ((extremum && (extent_of(c) == 0 || dtype == kInt32)) || (name == "mean" && !is_floating(dtype))) continue;
    SCOPED_TRACE(::testing::Message() << name << " of " << dtype_name(dtype) << shape_str(shape) << " dims "
                                      << shape_str(dims) << " keepdim " << keepdim << " strided " << strided);
    Tensor x = values_of(shape, dtype, uint64_t(trial));
    if (strided) x = testing::with_layout(x, testing::Layout::Strided);
    const Trace t = reduction(name.c_str(), x, dims, keepdim, widened(dtype));
    for (Isa isa : jit_isas()) {
      IsaGuard guard(isa);
      EagerGuard eager;
      const trace::FusedPlan plan(t);
      const std::vector<Tensor> expected = trace::interpret(t, {x}, {});
      const std::vector<Tensor> actual = plan.run({x}, {});
      const ReduceJit* jit = reduce_jit(plan.program(0));
      ASSERT_NE(jit, nullptr);
      testing::expect_tensors_close(actual[0], expected[0], 0, 0);
      EXPECT_EQ(actual[0].dtype(), expected[0].dtype());
      if (numel_of(shape) > 0 && extent_of(c) > 1 && !strided && dims.size() < 2) {
        EXPECT_EQ(jit->declined(), "");  // one reduced block: the kernel takes it
        EXPECT_EQ(jit->last_fallback(), "");
      }
    }
  }
}

// Rows 40 apart, the reduced dim outer to them, and a broadcast operand of each dtype.
TEST(ReduceDtypeJit, StridedRowsAndBroadcastOperands) {
  for (Isa isa : jit_isas())
    for (DType dtype : {kFloat16, kBFloat16, kBool, kUInt8, kInt8, kInt32}) {
      SCOPED_TRACE(dtype_name(dtype));
      const Tensor rows = values_of({12, 40}, dtype, 2).narrow(1, 3, 29);
      expect_matches(reduction("sum", rows, {1}, false, widened(dtype)), {rows}, isa, true);
      expect_matches(reduction("sum", rows, {0}, true, kFloat32), {rows}, isa, true);
      for (int64_t dim : {0, 1}) {
        DimVector mshape = {37, 45};
        mshape[size_t(1 - dim)] = 1;  // broadcast along the reduced dim's neighbour: the vector axis for dim 1
        const Tensor x = testing::random({37, 45}, kFloat32, 3), m = values_of(mshape, dtype, 4);
        Trace t;
        const ValueId p = t.add_node1(find_op("mul"), {t.add_input(x), t.add_input(m)});
        t.mark_output(t.add_node1(find_op("sum"), {p}, {DimVector{dim}, false, kFloat32}));
        expect_matches(t, {x, m}, isa, true);
      }
    }
}

// (x != 0).sum() into int64, ((a > b).float()).mean(), where and casts, (h < 0.5).sum() of float16.
TEST(ReduceDtypeJit, ComparisonsInThePrologue) {
  for (Isa isa : jit_isas())
    for (const Case& c : {Case{{3, 7}, {1}}, Case{{300, 33}, {0}}, Case{{3, 20000}, {1}}, Case{{17}, {}}}) {
      SCOPED_TRACE(shape_str(c.shape));
      const Tensor a = testing::random(c.shape, kFloat32, 5).round(), b = testing::random(c.shape, kFloat32, 6).round();
      {
        Trace t;
        const ValueId nz = t.add_node1(find_op("ne.Scalar"), {t.add_input(a)}, {Scalar(0)});
        t.mark_output(t.add_node1(find_op("sum"), {nz}, {c.dims, false, kInt64}));
        expect_matches(t, {a}, isa, true);
      }
      {
        Trace t;
        const ValueId gt = t.add_node1(find_op("gt"), {t.add_input(a), t.add_input(b)});
        const ValueId f = t.add_node1(find_op("copy"), {gt}, {kFloat32});
        t.mark_output(t.add_node1(find_op("mean"), {f}, {c.dims, true, kFloat32}));
        expect_matches(t, {a, b}, isa, true);
      }
      {  // where(m, a, b) summed; a cast to uint8 (wrapping) summed into int64
        const Tensor m = testing::random(c.shape, kBool, 8);
        Trace t;
        const ValueId w = t.add_node1(find_op("where"), {t.add_input(m), t.add_input(a), t.add_input(b)});
        t.mark_output(t.add_node1(find_op("sum"), {w}, {c.dims, false, kFloat32}));
        expect_matches(t, {m, a, b}, isa, true);
        Trace u;
        const ValueId k = u.add_node1(find_op("copy"), {u.add_input(a)}, {kUInt8});
        u.mark_output(u.add_node1(find_op("sum"), {k}, {c.dims, true, kInt64}));
        expect_matches(u, {a}, isa, true);
      }
      {
        const Tensor h = testing::random(c.shape, kFloat16, 7);
        Trace t;
        const ValueId lt = t.add_node1(find_op("lt.Scalar"), {t.add_input(h)}, {Scalar(0.5)});
        t.mark_output(t.add_node1(find_op("sum"), {lt}, {c.dims, false, kInt64}));
        expect_matches(t, {h}, isa, true);
      }
    }
}

TEST(ReduceDtypeJit, DeclinedPairsRunTheReference) {
  const Tensor i32 = values_of({4, 9}, kInt32, 8), f = testing::random({4, 9}, kFloat32, 9);
  const Tensor h = testing::random({4, 9}, kFloat16, 10);
  for (Isa isa : jit_isas()) {
    expect_matches(reduction("prod", i32, {1}, false, kInt64), {i32}, isa, false);  // int64 products wrap
    expect_matches(reduction("sum", f, {1}, false, kInt64), {f}, isa, false);      // truncated to int64 first
    expect_matches(reduction("sum", i32, {1}, false, kInt32), {i32}, isa, false);  // wraps in int32
    Trace lse;
    lse.mark_output(lse.add_node1(find_op("logsumexp"), {lse.add_input(h)}, {DimVector{1}, false}));
    expect_matches(lse, {h}, isa, false);
    Trace computed;  // an int32 value computed in the prologue
    const ValueId c = computed.add_node1(find_op("copy"), {computed.add_input(f)}, {kInt32});
    computed.mark_output(computed.add_node1(find_op("sum"), {c}, {DimVector{1}, false, kInt64}));
    expect_matches(computed, {f}, isa, false);
  }
  const Tensor b = values_of({4, 9}, kBool, 12);
  expect_matches(reduction("sum", b, {1}, false, kInt64), {b}, Isa::kPortable, false);  // the ISA forced portable
}

// Past 2^22 int32 elements per output a double partial sum could round.
TEST(ReduceDtypeJit, LongInt32SumsFallBack) {
  const int64_t n = (int64_t(1) << 22) + 3;
  const Tensor x = values_of({n}, kInt32, 11);
  const Tensor ok = x.narrow(0, 0, int64_t(1) << 22);
  for (Isa isa : jit_isas()) {
    expect_matches(reduction("sum", x, {0}, false, kInt64), {x}, isa, false);
    expect_matches(reduction("sum", ok, {0}, false, kInt64), {ok}, isa, true);
  }
}

// Tests here allocate in guard mode: each buffer ends against a PROT_NONE
// page, so a tail load reading one narrow element too many faults.
TEST(ReduceDtypeJit, ReadsNothingPastTheData) {
  for (DType dtype : {kFloat16, kBFloat16, kBool, kInt8, kInt32})
    for (const Case& c : {Case{{3, 17}, {1}}, Case{{5, 7}, {0}}, Case{{1025}, {0}}, Case{{9, 33}, {0}}}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << shape_str(c.shape));
      const Tensor x = values_of(c.shape, dtype, 12);
      for (Isa isa : jit_isas()) {
        expect_matches(reduction("sum", x, c.dims, false, widened(dtype)), {x}, isa, true);
        if (dtype != kInt32) expect_matches(reduction("amax", x, c.dims, false, dtype), {x}, isa, true);
      }
    }
}

TEST(ReduceDtypeJit, LoopIRNamesTheDtypes) {
  Trace t;
  const ValueId x = t.add_input(kFloat16, {4, 6}, {6, 1});
  const ValueId nz = t.add_node1(find_op("ne.Scalar"), {x}, {Scalar(0)});
  t.mark_output(t.add_node1(find_op("sum"), {nz}, {DimVector{1}, false, kInt64}));
  const trace::FusionPlan f = trace::fuse(t);
  ASSERT_EQ(f.groups.size(), 1u);
  const Lowering l = lower_reduction(t, f.groups[0], trace::group_values(t, f.groups[0]));
  ASSERT_TRUE(l.ok()) << l.declined;
  EXPECT_EQ(l.ir.to_string(),
            "e0 = load in0 float16\ne1 = arg s0 (node 0 attr 0)\ne2 = ne e0, e1\n"
            "out0 = sum e2 over the reduction axis int64\n");
}

// The accuracy of a batch, traced: one reduction group whose prologue compares
// and casts, equal to eager.
TEST(ReduceDtypeJit, TracedAccuracyIsOneJitReduction) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    for (DType dtype : {kFloat32, kFloat16, kUInt8}) {
      SCOPED_TRACE(dtype_name(dtype));
      auto accuracy = [](const Tensor& pred, const Tensor& target) { return (pred == target).to(kFloat32).mean(); };
      const int64_t runs = reduce_runs();
      for (int64_t batch : {64, 64, 64, 100, 100, 100}) {  // a signature turns hot on its second sighting
        Tensor pred, target, expected;
        {
          EagerGuard eager;
          pred = testing::random({batch}, kFloat32, uint64_t(batch), 0, 9).round().to(dtype);
          target = testing::random({batch}, kFloat32, uint64_t(batch + 1), 0, 9).round().to(dtype);
          expected = accuracy(pred, target);
        }
        testing::expect_tensors_close(accuracy(pred, target), expected, 0, 0);
      }
      EXPECT_GE(reduce_runs(), runs + 4) << "each hot accuracy ran on the reduction kernel";
    }
  }
}

}  // namespace
}  // namespace nnvm::jit
