// The pointwise JIT on bool and integer operands: comparisons (NaN and
// infinities included), logic, where, masked_fill and casts against the
// interpreter's reference kernels, exactly, on every ISA, odd and empty
// shapes, broadcast and non-contiguous operands (in guard mode: a tail that
// touched one byte past a buffer would die); what declines and why; and a
// training step whose backward pass holds masks running them as JIT code.
#include "nnvm/nnvm.h"
#include "nnvm/jit/x86_backend.h"
#include "nnvm/trace/recorder.h"
#include "dtype_test_util.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

const OpDef& op(const char* name) { return find_op(name); }

const std::vector<DimVector> kShapes = {{0, 5}, {1}, {7}, {16}, {17}, {3, 33}, {2, 5, 129}, {4, 1000}};

// Halves in [-2, 2] (many ties between operands) with NaN, +inf and -inf spread through.
Tensor with_specials(IntArrayRef shape, uint64_t seed) {
  EagerGuard eager;
  Tensor x = (testing::random(shape, kFloat32, seed, -4, 4).round() * 0.5).contiguous();
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (i % 7 == 3) p[i] = NAN;
    else if (i % 11 == 5) p[i] = INFINITY;
    else if (i % 13 == 6) p[i] = -INFINITY;
  }
  return x;
}

// Marks `outs` as outputs and ORs them all into one more: the consumer merges
// their groups (fuse.h), so the trace is one group.
void mark_joined(Trace& t, const std::vector<ValueId>& outs) {
  ValueId any = outs[0];
  for (ValueId v : outs) t.mark_output(v);
  for (size_t k = 1; k < outs.size(); ++k) any = t.add_node1(op("logical_or"), {any, outs[k]});
  t.mark_output(any);
}

Trace comparisons(const std::vector<Tensor>& in) {
  Trace t;
  const ValueId x = t.add_input(in[0]), row = t.add_input(in[1]);
  std::vector<ValueId> outs;
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge"}) outs.push_back(t.add_node1(op(name), {x, row}));
  outs.push_back(t.add_node1(op("lt.Scalar"), {x}, {Scalar(0.5)}));
  // a bool inside the group, back to float: max(where(x > row, x, row), float(x >= 1))
  outs.push_back(t.add_node1(op("maximum"), {t.add_node1(op("where"), {t.add_node1(op("gt"), {x, row}), x, row}),
                                             t.add_node1(op("copy"), {t.add_node1(op("ge.Scalar"), {x}, {Scalar(1)})},
                                                         {kFloat32})}));
  mark_joined(t, outs);
  return t;
}

TEST(DtypeJit, ComparisonsFollowIeeeOnEveryIsaAndShape) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kShapes) {
      SCOPED_TRACE(shape_str(shape));
      const std::vector<Tensor> in = {with_specials(shape, 1), with_specials({shape.back()}, 2)};
      expect_exact(comparisons(in), in, isa);
    }
}

TEST(DtypeJit, LogicAndPredicatesOnEveryIsaAndShape) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kShapes) {
      SCOPED_TRACE(shape_str(shape));
      DimVector col(shape.size(), 1);
      col[0] = shape[0];
      const std::vector<Tensor> in = {with_specials(shape, 3), testing::random(col, kBool, 4),
                                      testing::random(shape, kInt32, 5, -3, 3)};
      Trace t;
      const ValueId x = t.add_input(in[0]), b = t.add_input(in[1]), i = t.add_input(in[2]);
      mark_joined(t, {t.add_node1(op("logical_not"), {x}), t.add_node1(op("logical_and"), {x, b}),
                      t.add_node1(op("logical_or"), {i, b}), t.add_node1(op("logical_xor"), {x, i}),
                      t.add_node1(op("isnan"), {x}), t.add_node1(op("isinf"), {x}), t.add_node1(op("isfinite"), {x})});
      expect_exact(t, in, isa);
    }
}

TEST(DtypeJit, WhereAndMaskedFillOnEveryIsaAndShape) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kShapes) {
      SCOPED_TRACE(shape_str(shape));
      DimVector col(shape.size(), 1);
      col[0] = shape[0];
      const std::vector<Tensor> in = {testing::random(col, kBool, 6), testing::random(shape, kFloat32, 7),
                                      testing::random(shape, kBool, 9), testing::random(shape, kUInt8, 10, 0, 255),
                                      testing::random({}, kUInt8, 11, 0, 255)};
      Trace t;
      const ValueId c = t.add_input(in[0]), a = t.add_input(in[1]), m = t.add_input(in[2]), u = t.add_input(in[3]),
                    u0 = t.add_input(in[4]);
      mark_joined(t, {t.add_node1(op("where"), {c, a, u0}),                 // a broadcast uint8 in float32
                      t.add_node1(op("masked_fill"), {a, m}, {Scalar(-3.5)}),  // a run-time Scalar
                      t.add_node1(op("masked_fill"), {m, c}, {Scalar(2.5)}),   // bool: 2.5 reads as true
                      t.add_node1(op("where"), {m, c, t.add_node1(op("logical_not"), {m})}),  // bool branches
                      t.add_node1(op("where"), {c, u, u0})});                                // uint8 branches
      expect_exact(t, in, isa);
    }
}

TEST(DtypeJit, CastsTruncateAndWrapOnEveryIsaAndShape) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kShapes) {
      SCOPED_TRACE(shape_str(shape));
      // floats within int32, past uint8 and int8 both ways; large int32s; an int8 column
      // (contiguous at rank 1, broadcast along the inner dim above)
      DimVector col(shape.size(), 1);
      col[0] = shape[0];
      const std::vector<Tensor> in = {testing::random(shape, kFloat32, 12, -300, 300),
                                      testing::random(shape, kInt32, 13, -5e8, 5e8),
                                      testing::random(col, kInt8, 14, -128, 127),
                                      testing::random(shape, kUInt8, 15, 0, 255)};
      Trace t;
      const ValueId x = t.add_input(in[0]), i = t.add_input(in[1]), s = t.add_input(in[2]), u = t.add_input(in[3]);
      std::vector<ValueId> outs;
      for (DType to : {kInt32, kUInt8, kBool}) outs.push_back(t.add_node1(op("copy"), {x}, {to}));
      // an int8 cast read back as float inside the group
      outs.push_back(t.add_node1(op("mul.Scalar"), {t.add_node1(op("copy"), {x}, {kInt8})}, {Scalar(0.5)}));
      // int32 * 1.5 + int8 -> float32
      outs.push_back(t.add_node1(op("add"), {t.add_node1(op("mul.Scalar"), {i}, {Scalar(1.5)}), s}, {Scalar(1)}));
      outs.push_back(t.add_node1(op("copy"), {u}, {kInt8}));          // uint8 -> int8 wraps
      mark_joined(t, outs);
      expect_exact(t, in, isa);
    }
}

// Masks over 16-bit floats: loads, compares and selects are exact, and so is
// the 16-bit store of a loaded 16-bit value.
TEST(DtypeJit, MasksOverHalfTypes) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kShapes) {
      SCOPED_TRACE(shape_str(shape));
      const std::vector<Tensor> in = {with_specials(shape, 24).to(kFloat16), with_specials(shape, 25).to(kBFloat16),
                                      testing::random({shape.back()}, kBool, 26)};
      Trace t;
      const ValueId h = t.add_input(in[0]), b = t.add_input(in[1]), m = t.add_input(in[2]);
      mark_joined(t, {t.add_node1(op("lt"), {h, b}), t.add_node1(op("where"), {m, h, b}),
                      t.add_node1(op("masked_fill"), {h, m}, {Scalar(1.5)}),
                      t.add_node1(op("masked_fill"), {b, t.add_node1(op("isnan"), {h})}, {Scalar(-2)})});
      expect_exact(t, in, isa);
    }
}

TEST(DtypeJit, NonContiguousIntegerOperands) {
  for (Isa isa : jit_isas())
    for (testing::Layout layout : testing::kLayouts)
      for (const DimVector& shape : {DimVector{9, 23}, DimVector{40, 3, 77}}) {
        SCOPED_TRACE(::testing::Message() << testing::layout_name(layout) << shape_str(shape));
        DimVector col(shape.size(), 1);
        col[0] = shape[0];
        const std::vector<Tensor> in = {
            testing::with_layout(testing::random(shape, kInt32, 16, -1000, 1000), layout),
            testing::with_layout(testing::random(shape, kBool, 17), layout), testing::random(shape, kFloat32, 18),
            testing::random(col, kInt32, 19, -1e6, 1e6),
            testing::with_layout(testing::random(shape, kFloat16, 20), layout)};
        Trace t;
        const ValueId i = t.add_input(in[0]), m = t.add_input(in[1]), y = t.add_input(in[2]), c = t.add_input(in[3]),
                      h = t.add_input(in[4]);
        const ValueId p = t.add_node1(op("mul"), {t.add_node1(op("mul"), {i, y}), c});  // c: a broadcast int32
        t.mark_output(t.add_node1(op("mul"), {t.add_node1(op("masked_fill"), {p, m}, {Scalar(0)}), h}));
        expect_exact(t, in, isa);
      }
}

TEST(DtypeJit, IntegerArithmeticAndWideIntegersDecline) {
  auto declined = [](DType a, DType b, const char* name, Attrs attrs = {}) {
    Trace t;
    const ValueId x = t.add_input(a, {8}, {1}), y = t.add_input(b, {8}, {1});
    t.mark_output(t.add_node1(op("neg"), {t.add_node1(op(name), {x, y}, std::move(attrs))}));
    return lower_only_group(t).declined;
  };
  EXPECT_EQ(declined(kInt32, kInt32, "mul"), "mul computes in int32: integer arithmetic runs in int64 in the reference");
  EXPECT_NE(declined(kUInt8, kUInt8, "add", {Scalar(1)}).find("integer arithmetic"), std::string::npos);
  EXPECT_EQ(declined(kInt64, kInt64, "mul"), "mul computes in int64: integer arithmetic runs in int64 in the reference");
  EXPECT_NE(declined(kFloat64, kFloat32, "mul").find("float64: the JIT computes in float32"), std::string::npos);
  {
    Trace t;  // int32 values differing past float32's precision compare in int64
    const ValueId x = t.add_input(kInt32, {8}, {1}), y = t.add_input(kInt32, {8}, {1});
    t.mark_output(t.add_node1(op("logical_not"), {t.add_node1(op("lt"), {x, y})}));
    EXPECT_EQ(lower_only_group(t).declined,
              "lt compares in int32: exact in float32 for floats, bool, uint8 and int8 only");
  }
  {
    Trace t;
    const ValueId x = t.add_input(kInt32, {8}, {1}), m = t.add_input(kBool, {8}, {1});
    t.mark_output(t.add_node1(op("copy"), {t.add_node1(op("masked_fill"), {x, m}, {Scalar(3)})}, {kFloat32}));
    EXPECT_EQ(lower_only_group(t).declined, "masked_fill fills int32 with a Scalar read as int64");
  }
  {
    Trace t;
    const ValueId x = t.add_input(kInt32, {8}, {1});
    t.mark_output(t.add_node1(op("copy"), {t.add_node1(op("copy"), {x}, {kUInt8})}, {kFloat32}));
    EXPECT_EQ(lower_only_group(t).declined, "copy from int32 to uint8 wraps integers wider than float32 holds");
  }
  {
    Trace t;  // uint8 tensors compare exactly; a Scalar against them would compare in int64
    const ValueId x = t.add_input(kUInt8, {8}, {1}), y = t.add_input(kUInt8, {8}, {1});
    const ValueId lt = t.add_node1(op("lt"), {x, y});
    t.mark_output(t.add_node1(op("logical_and"), {lt, t.add_node1(op("gt.Scalar"), {x}, {Scalar(3)})}));
    EXPECT_EQ(lower_only_group(t).declined,
              "gt.Scalar compares in uint8: exact in float32 for floats, bool, uint8 and int8 only");
  }
}

TEST(DtypeJit, MasksAndCastsPrintInTheIr) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {8}, {1});
  const ValueId m = t.add_node1(op("le.Scalar"), {x}, {Scalar(0)});
  const ValueId filled = t.add_node1(op("masked_fill"), {x, m}, {Scalar(0)});
  t.mark_output(filled);
  t.mark_output(t.add_node1(op("copy"), {filled}, {kUInt8}));
  const Lowering l = lower_only_group(t);
  ASSERT_TRUE(l.ok()) << l.declined;
  const std::string s = l.ir.to_string();
  EXPECT_NE(s.find("= le e0, e"), std::string::npos) << s;
  EXPECT_NE(s.find("= select e"), std::string::npos) << s;
  EXPECT_NE(s.find("= cast uint8 e4"), std::string::npos) << s;
  EXPECT_NE(s.find("out1 = e"), std::string::npos) << s;
  EXPECT_EQ(l.ir.dtypes, (std::vector<DType>{kFloat32, kFloat32, kUInt8}));
}

}  // namespace
}  // namespace nnvm::jit

namespace nnvm::jit {
namespace {

// An MLP step whose backward pass holds masks: relu's (x <= 0), clamp's
// (x < min, x > max) and leaky_relu's (x > 0) gradients.
struct MaskedMlp {
  Tensor x, target, w1, b1, w2, b2, w3, b3;
  MaskedMlp() {
    EagerGuard eager;
    x = testing::random({3, 13, 24}, kFloat32, 30);
    target = testing::random({3, 13, 8}, kFloat32, 31);
    w1 = testing::random({40, 24}, kFloat32, 32, -0.4, 0.4).requires_grad_();
    b1 = testing::random({40}, kFloat32, 33, -0.4, 0.4).requires_grad_();
    w2 = testing::random({40, 40}, kFloat32, 34, -0.4, 0.4).requires_grad_();
    b2 = testing::random({40}, kFloat32, 35, -0.4, 0.4).requires_grad_();
    w3 = testing::random({8, 40}, kFloat32, 36, -0.4, 0.4).requires_grad_();
    b3 = testing::random({8}, kFloat32, 37, -0.4, 0.4).requires_grad_();
  }
  // The gradients of one step, as values.
  std::vector<std::vector<double>> step() {
    const Tensor h1 = linear(x, w1, b1).relu();
    const Tensor h2 = (linear(h1, w2, b2) * 1.5).clamp(-0.5, 0.7);
    const Tensor y = leaky_relu(linear(h2, w3, b3), 0.1);
    mse_loss(y, target).backward();
    std::vector<Tensor> lazy;
    for (Tensor* p : {&w1, &b1, &w2, &b2, &w3, &b3}) {
      lazy.push_back(p->grad());
      p->mutable_grad() = Tensor();
    }
    mark_step();
    std::vector<std::vector<double>> grads;
    for (const Tensor& g : lazy) grads.push_back(g.to_vector<double>());
    return grads;
  }
};

TEST(DtypeJit, MaskedBackwardGroupsRunAsJitCode) {
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  IsaGuard guard(jit_isas()[0]);
  MaskedMlp mlp;
  std::vector<trace::Trace> flushed;
  mark_step();
  trace::set_flush_observer([&](const trace::Trace& t) { flushed.push_back(t); });
  const int64_t compiles = pointwise_compiles();
  const std::vector<std::vector<double>> cold = mlp.step();
  for (int run = 1; run <= std::max(3, knobs().hot + 1); ++run) {
    SCOPED_TRACE(::testing::Message() << "run " << run);
    EXPECT_EQ(mlp.step(), cold) << "hot gradients differ from cold ones";
  }
  trace::set_flush_observer(nullptr);
  EXPECT_GT(pointwise_compiles(), compiles) << "the hot runs compiled no pointwise kernel";
  ASSERT_FALSE(flushed.empty());
  const trace::Trace& t = *std::max_element(flushed.begin(), flushed.end(), [](const trace::Trace& a, const trace::Trace& b) {
    return a.nodes().size() < b.nodes().size();
  });
  const auto plan = std::dynamic_pointer_cast<const trace::FusedPlan>(trace::compile_plan(t));
  ASSERT_NE(plan, nullptr);
  // every group computing a mask runs it in a JIT kernel: a pointwise group's, or a matmul epilogue's
  int masked = 0;
  for (size_t g = 0; g < plan->fusion().groups.size(); ++g) {
    const trace::FusionGroup& group = plan->fusion().groups[g];
    const trace::GroupValues values = trace::group_values(plan->trace(), group);
    const bool holds_bool = std::any_of(values.ids.begin(), values.ids.end(),
                                        [&](ValueId v) { return plan->trace().value(v).dtype == kBool; });
    if (!holds_bool || group.kind == trace::GroupKind::kSingle) continue;
    ++masked;
    const trace::GroupProgram& program = plan->program(int32_t(g));
    const PointwiseJit* jit = pointwise_jit(program) ? pointwise_jit(program) : epilogue_jit(program);
    ASSERT_NE(jit, nullptr) << "group " << g << "\n" << plan->to_string();
    EXPECT_EQ(jit->declined(), "") << "group " << g;
  }
  EXPECT_GE(masked, 3) << plan->to_string();
}

// x.to(float16).to(float32) rounds through float16 hot as it does eagerly:
// the JIT, which rounds 16-bit values on store only, declines the group.
TEST(DtypeJit, AnExplicitCastThroughSixteenBitsRounds) {
  for (DType half : {kFloat16, kBFloat16}) {
    const auto program = [half](std::vector<Tensor>& in) {
      return std::vector<Tensor>{in[0].to(half).to(kFloat32) * 3 + 1};
    };
    testing::expect_traced_equals_eager([] { return std::vector<Tensor>{testing::random({5, 33}, kFloat32, 7)}; },
                                        program);
    const Tensor x = testing::random({5, 33}, kFloat32, 7);
    EXPECT_FALSE((x.to(half).to(kFloat32) * 3 + 1).allclose(x * 3 + 1, 1e-5, 0)) << "no rounding to test";
  }
}

}  // namespace
}  // namespace nnvm::jit
