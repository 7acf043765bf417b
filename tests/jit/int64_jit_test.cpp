// The pointwise JIT on int64 operands (loop_ir.h, Note [int64 halves]):
// comparisons, where, masked_fill and casts against the interpreter's
// reference kernels, exactly, on every ISA (an int64 -> float32 conversion
// declines on AVX2 and runs the tile program), odd and empty shapes,
// broadcast and non-contiguous operands, in guard mode; what still declines
// and why; and a traced accuracy count running its comparison as JIT code.
#include <cmath>
#include <functional>
#include <limits>

#include "nnvm/nnvm.h"
#include "nnvm/jit/x86_backend.h"
#include "nnvm/trace/recorder.h"
#include "dtype_test_util.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

const OpDef& op(const char* name) { return find_op(name); }

const std::vector<DimVector> kShapes = {{0, 5}, {1}, {7}, {8}, {9}, {16}, {17}, {3, 33}, {2, 5, 129}, {4, 1000}};

// Values around every boundary the halves and float32 have: 2^24, 2^31,
// 2^32, 2^53, the extremes, negatives; many repeats, so comparisons tie.
Tensor int64s(IntArrayRef shape, uint64_t seed) {
  static const int64_t kSpecial[] = {0, 1, -1, 2, 16777216, 16777217, -16777217, 2147483647, 2147483648LL,
                                     -2147483648LL, -2147483649LL, 4294967295LL, 4294967296LL, 4294967297LL,
                                     -4294967296LL, 9007199254740993LL, -9007199254740993LL,
                                     std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::min() + 1, 0x7fffffff00000000LL,
                                     0x00000000ffffffffLL, 0x100000000LL + 0x80000000LL,
                                     // float32 ties, and just past them where a double rounds onto the tie
                                     (1LL << 60) + (1LL << 36), (1LL << 60) + (1LL << 36) + 1,
                                     -((1LL << 60) + (1LL << 36) + 1), (1LL << 40) + (1LL << 16) + 1,
                                     (1LL << 60) + (1LL << 36) - 1, -((1LL << 60) + (1LL << 36) - 1)};
  EagerGuard eager;
  Tensor x = zeros(shape, kInt64);
  int64_t* p = x.data_ptr<int64_t>();
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = s >> 11;
    if (r % 3 == 0) p[i] = kSpecial[(r >> 3) % std::size(kSpecial)];
    else if (r % 3 == 1) p[i] = int64_t((r >> 5) % 7) - 3;
    else p[i] = int64_t(s ^ (s << 17)) >> ((r >> 7) % 60);  // every magnitude, both signs
  }
  return x;
}

std::vector<Isa> every_isa() {
  std::vector<Isa> isas = jit_isas();
  isas.push_back(Isa::kPortable);
  return isas;
}

// Marks the first of `bools` as an output, and all of them as one float32
// bit code (sum of bool_k * 2^k, exact; 2^k is add's alpha): few operands.
void mark_coded(Trace& t, const std::vector<ValueId>& bools) {
  t.mark_output(bools[0]);
  ValueId code = t.add_node1(op("copy"), {bools[0]}, {kFloat32});
  for (size_t k = 1; k < bools.size(); ++k)
    code = t.add_node1(op("add"), {code, t.add_node1(op("copy"), {bools[k]}, {kFloat32})}, {Scalar(int64_t(1) << k)});
  t.mark_output(code);
}

TEST(Int64Jit, ComparisonsOnEveryIsaAndShape) {
  for (Isa isa : every_isa())
    for (const DimVector& shape : kShapes)
      for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge"}) {
        SCOPED_TRACE(::testing::Message() << name << " " << shape_str(shape));
        // x against y, a row broadcast, an int32 and a bool tensor, and Scalars past 2^31 and 2^53
        const std::vector<Tensor> in = {int64s(shape, 1), int64s(shape, 2), int64s({shape.back()}, 3),
                                        testing::random(shape, kInt32, 4, -3, 3), testing::random(shape, kBool, 5)};
        Trace t;
        const ValueId x = t.add_input(in[0]), y = t.add_input(in[1]), row = t.add_input(in[2]),
                      i = t.add_input(in[3]), b = t.add_input(in[4]);
        const std::string scalar = std::string(name) + ".Scalar";
        mark_coded(t, {t.add_node1(op(name), {x, y}), t.add_node1(op(name), {row, x}), t.add_node1(op(name), {x, i}),
                       t.add_node1(op(name), {b, x}), t.add_node1(op(name), {x, x}),
                       t.add_node1(op(scalar.c_str()), {x}, {Scalar(int64_t(-2147483648LL))}),
                       t.add_node1(op(scalar.c_str()), {x}, {Scalar(int64_t(9007199254740993LL))}),
                       t.add_node1(op(scalar.c_str()), {b}, {Scalar(int64_t(1))})});  // bool against an int: int64
        expect_exact(t, in, isa);
      }
}

}  // namespace
}  // namespace nnvm::jit

namespace nnvm::jit {
namespace {

// Pure data movement: where and masked_fill over int64 (an int32 or bool
// branch widened), small integers and bools widened to int64, int64 read
// as a truth value (logic, a cast to bool).
TEST(Int64Jit, WhereMaskedFillAndWideningOnEveryIsaAndShape) {
  for (Isa isa : every_isa())
    for (const DimVector& shape : kShapes) {
      SCOPED_TRACE(shape_str(shape));
      DimVector col(shape.size(), 1);
      col[0] = shape[0];
      const std::vector<Tensor> in = {testing::random(col, kBool, 6), int64s(shape, 7), int64s(shape, 8),
                                      testing::random(shape, kInt32, 9, -2e9, 2e9),
                                      testing::random(shape, kInt8, 10, -128, 127), int64s({}, 11)};
      Trace t;
      const ValueId c = t.add_input(in[0]), x = t.add_input(in[1]), y = t.add_input(in[2]), i = t.add_input(in[3]),
                    s = t.add_input(in[4]), x0 = t.add_input(in[5]);
      const ValueId m = t.add_node1(op("lt"), {x, y});
      const ValueId w = t.add_node1(op("where"), {c, x, y});
      const ValueId f = t.add_node1(op("masked_fill"), {w, m}, {Scalar(int64_t(-6000000000LL))});
      const ValueId g = t.add_node1(op("masked_fill"), {f, c}, {Scalar(-2.75)});  // read as int64: -2
      const ValueId wi = t.add_node1(op("where"), {m, i, x0});  // an int32 branch, a broadcast int64
      const ValueId ws = t.add_node1(op("where"), {m, t.add_node1(op("copy"), {s}, {kInt64}), x0});
      const ValueId truth = t.add_node1(op("logical_xor"), {x, t.add_node1(op("copy"), {y}, {kBool})});
      t.mark_output(g);
      t.mark_output(wi);
      t.mark_output(ws);
      t.mark_output(t.add_node1(op("copy"), {m}, {kInt64}));
      t.mark_output(t.add_node1(op("where"), {truth, g, t.add_node1(op("copy"), {i}, {kInt64})}));
      expect_exact(t, in, isa);
    }
}

// int64 -> float32 rounds to nearest even (AVX-512DQ: vcvtqq2ps; AVX2: a
// double rounded to odd, then to float32): casts, mixed arithmetic and float
// comparisons read the converted value.
TEST(Int64Jit, ConversionsToFloat32OnEveryIsaAndShape) {
  for (Isa isa : every_isa())
    for (const DimVector& shape : kShapes) {
      SCOPED_TRACE(shape_str(shape));
      const std::vector<Tensor> in = {int64s(shape, 12), testing::random({shape.back()}, kFloat32, 13, -1e10, 1e10)};
      Trace t;
      const ValueId x = t.add_input(in[0]), f = t.add_input(in[1]);
      const ValueId as_float = t.add_node1(op("copy"), {x}, {kFloat32});
      const ValueId le = t.add_node1(op("le"), {x, f});
      const ValueId gt = t.add_node1(op("gt.Scalar"), {x}, {Scalar(16777217.5)});  // a float Scalar: in float32
      const ValueId sum = t.add_node1(op("add"), {t.add_node1(op("mul"), {x, f}), as_float}, {Scalar(1)});
      t.mark_output(as_float);
      t.mark_output(le);
      t.mark_output(t.add_node1(op("where"), {t.add_node1(op("logical_or"), {le, gt}), sum, as_float}));
      expect_exact(t, in, isa);
      // float16 computes in float: x compared as float(x), cast as Half(float(x)) (rounded on its store only)
      const std::vector<Tensor> halves = {in[0], testing::random(shape, kFloat16, 19, -7e4, 7e4)};
      Trace th;
      const ValueId hx = th.add_input(halves[0]), h = th.add_input(halves[1]);
      const ValueId hle = th.add_node1(op("le"), {hx, h});
      th.mark_output(hle);
      th.mark_output(th.add_node1(op("where"), {hle, h, th.add_node1(op("copy"), {hx}, {kFloat16})}));
      expect_exact(th, halves, isa);
    }
}

// Floats of every magnitude int64 holds (fractions, both signs, -2^63)
// truncated toward zero as static_cast<int64_t>: AVX-512DQ vcvttps2qq, AVX2
// an exact split in double.
TEST(Int64Jit, FloatsToInt64TruncateOnEveryIsaAndShape) {
  for (Isa isa : every_isa())
    for (const DimVector& shape : kShapes) {
      SCOPED_TRACE(shape_str(shape));
      Tensor f;
      {
        EagerGuard eager;
        const Tensor scale = (testing::random(shape, kFloat32, 22, 0, 62.99).floor() * std::log(2.0)).exp();
        f = (testing::random(shape, kFloat32, 23, -1, 1) * scale).contiguous();
        float* p = f.data_ptr<float>();
        for (int64_t i = 0; i < f.numel(); ++i)
          if (i % 9 == 4) p[i] = -9223372036854775808.0f;
          else if (i % 9 == 7) p[i] = std::ldexp(p[i] < 0 ? -1.0f : 1.0f, 31) + float(i % 3) - 1;
      }
      const std::vector<Tensor> in = {f, testing::random(shape, kFloat16, 24, -7e4, 7e4)};
      Trace t;
      const ValueId x = t.add_input(in[0]), h = t.add_input(in[1]);
      const ValueId a = t.add_node1(op("copy"), {x}, {kInt64});
      t.mark_output(a);
      t.mark_output(t.add_node1(op("where"), {t.add_node1(op("lt"), {x, h}), a,
                                              t.add_node1(op("copy"), {h}, {kInt64})}));
      expect_exact(t, in, isa);
    }
}

// Gathered (strided) and broadcast int64 inputs: each half read at its offset.
TEST(Int64Jit, NonContiguousInt64Operands) {
  for (Isa isa : every_isa())
    for (testing::Layout layout : testing::kLayouts)
      for (const DimVector& shape : {DimVector{9, 23}, DimVector{40, 3, 77}}) {
        SCOPED_TRACE(::testing::Message() << testing::layout_name(layout) << shape_str(shape));
        DimVector col(shape.size(), 1);
        col[0] = shape[0];
        const std::vector<Tensor> in = {testing::with_layout(int64s(shape, 14), layout),
                                        testing::with_layout(int64s(shape, 15), layout), int64s(col, 16),
                                        testing::with_layout(testing::random(shape, kBool, 17), layout)};
        Trace t;
        const ValueId x = t.add_input(in[0]), y = t.add_input(in[1]), c = t.add_input(in[2]), m = t.add_input(in[3]);
        const ValueId w = t.add_node1(op("where"), {m, x, c});
        t.mark_output(w);
        t.mark_output(t.add_node1(op("ge"), {t.add_node1(op("masked_fill"), {y, m}, {Scalar(int64_t(7))}), w}));
        expect_exact(t, in, isa);
      }
}

TEST(Int64Jit, ArithmeticAndNarrowingDecline) {
  auto declined = [](DType a, DType b, const char* name, Attrs attrs = {}) {
    Trace t;
    const ValueId x = t.add_input(a, {8}, {1}), y = t.add_input(b, {8}, {1});
    t.mark_output(t.add_node1(op("logical_not"), {t.add_node1(op(name), {x, y}, std::move(attrs))}));
    return lower_only_group(t).declined;
  };
  EXPECT_EQ(declined(kInt64, kInt64, "add", {Scalar(1)}),
            "add computes in int64: integer arithmetic runs in int64 in the reference");
  EXPECT_EQ(declined(kInt64, kInt32, "maximum"),
            "maximum computes in int64: integer arithmetic runs in int64 in the reference");
  EXPECT_EQ(declined(kFloat16, kInt64, "mul"), "");  // in float, as the reference computes float16
  auto cast = [](DType from, DType to) {
    Trace t;
    const ValueId x = t.add_input(from, {8}, {1});
    t.mark_output(t.add_node1(op("logical_not"), {t.add_node1(op("copy"), {x}, {to})}));
    return lower_only_group(t).declined;
  };
  EXPECT_EQ(cast(kInt64, kInt32), "copy from int64 to int32 wraps integers wider than float32 holds");
  EXPECT_EQ(cast(kFloat32, kInt64), "");
  EXPECT_EQ(cast(kInt64, kBool), "");
}

TEST(Int64Jit, HalvesPrintInTheIr) {
  Trace t;
  const ValueId x = t.add_input(kInt64, {8}, {1}), m = t.add_input(kBool, {8}, {1});
  const ValueId filled = t.add_node1(op("masked_fill"), {x, t.add_node1(op("lt.Scalar"), {x}, {Scalar(int64_t(-5))})},
                                     {Scalar(int64_t(1) << 40)});
  t.mark_output(t.add_node1(op("where"), {m, filled, t.add_node1(op("copy"), {m}, {kInt64})}));
  const Lowering l = lower_only_group(t);
  ASSERT_TRUE(l.ok()) << l.declined;
  const std::string s = l.ir.to_string();
  for (const char* line : {"e0 = load_low in0 int64\n", "e1 = load_high in0 int64\n", "e2 = pair e0, e1\n",
                           "= int_eq e", "= uint_gt e", "= int_gt e", "(node 0 attr 0 low)", "(node 0 attr 0 high)",
                           "(node 1 attr 0 high)", "= to_int e", "= sign_of e", "out0 = e"})
    EXPECT_NE(s.find(line), std::string::npos) << line << "\n" << s;
  EXPECT_EQ(l.ir.dtypes, (std::vector<DType>{kInt64, kBool, kInt64}));
}

// A classifier's accuracy, traced, as a count of the masked hits and as a
// mean: the int64 labels' comparison with the argmax runs in a JIT kernel
// (a pointwise group's: a lone comparison would run its reference kernel,
// as every one-node group does), and the result matches eager's.
TEST(Int64Jit, AccuracyRunsItsComparisonAsJitCode) {
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  IsaGuard guard(jit_isas()[0]);
  const Tensor logits = testing::random({37, 10}, kFloat32, 20);
  Tensor labels;
  {
    EagerGuard eager;
    labels = (testing::random({37}, kFloat32, 21, 0, 9.99).floor()).to(kInt64);
  }
  const std::function<double()> forms[] = {
      [&] { return double((logits.argmax(1) == labels).logical_and(labels >= 0).sum().item<int64_t>()); },
      [&] { return double((logits.argmax(1) == labels).to(kFloat32).mean().item<float>()); }};
  for (const auto& accuracy : forms) {
    double expected;
    {
      EagerGuard eager;
      expected = accuracy();
    }
    mark_step();
    std::vector<trace::Trace> flushed;
    trace::set_flush_observer([&](const trace::Trace& t) { flushed.push_back(t); });
    for (int run = 0; run <= std::max(3, knobs().hot + 1); ++run) EXPECT_EQ(accuracy(), expected) << "run " << run;
    trace::set_flush_observer(nullptr);
    ASSERT_FALSE(flushed.empty());
    const auto plan = std::dynamic_pointer_cast<const trace::FusedPlan>(trace::compile_plan(flushed.back()));
    ASSERT_NE(plan, nullptr);
    int compared = 0;
    for (size_t g = 0; g < plan->fusion().groups.size(); ++g) {
      const trace::GroupValues values = trace::group_values(plan->trace(), plan->fusion().groups[g]);
      const bool reads_int64 = std::any_of(values.ids.begin(), values.ids.begin() + values.inputs,
                                           [&](ValueId v) { return plan->trace().value(v).dtype == kInt64; });
      const PointwiseJit* jit = pointwise_jit(plan->program(int32_t(g)));
      if (!reads_int64 || !jit) continue;
      ++compared;
      EXPECT_EQ(jit->declined(), "") << plan->to_string();
      EXPECT_FALSE(jit->variant_names().empty()) << plan->to_string();
      expect_variants_compiled(*jit, jit_isas()[0]);
    }
    EXPECT_EQ(compared, 1) << plan->to_string();
  }
}

}  // namespace
}  // namespace nnvm::jit
