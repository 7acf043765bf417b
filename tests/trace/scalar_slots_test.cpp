// Recorded Scalars are run-time arguments (docs/DESIGN.md §3.4): a plan compiled from
// one trace replays another with other values, so no pass may depend on what
// a slotted Scalar holds now, and the interpreter and bind_scalars take the
// values of the trace being replayed.
#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/passes/constant_fold.h"
#include "nnvm/trace/passes/cse.h"
#include "nnvm/trace/passes/simplify.h"
#include "nnvm/trace/signature.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_tensors_close;

const OpDef& op(const char* name) { return find_op(name); }

TEST(ScalarSlots, AddNodeGivesEachRecordedScalarASlot) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {3}, {1});
  t.add_node1(op("add.Scalar"), {x}, {Scalar(0.5), Scalar(2)});
  t.add_node1(op("mul.Scalar"), {x}, {Scalar(4.0)}, ScalarBinding::kCompileTime);
  ASSERT_EQ(t.scalars().size(), 2u);
  EXPECT_EQ(t.scalars()[0].to_double(), 0.5);
  EXPECT_EQ(t.scalars()[1].to_int(), 2);
  ASSERT_EQ(t.nodes()[0].slots.size(), 2u);
  EXPECT_EQ(t.nodes()[0].slots[1].attr, 1);
  EXPECT_EQ(t.nodes()[0].slots[1].slot, 1);
  EXPECT_TRUE(t.nodes()[1].slots.empty());
}

TEST(ScalarSlots, BindScalarsReplacesOnlySlottedAttributes) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {3}, {1});
  t.add_node1(op("add.Scalar"), {x}, {Scalar(0.5), Scalar(2)});
  t.add_node1(op("mul.Scalar"), {x}, {Scalar(4.0)}, ScalarBinding::kCompileTime);
  const std::vector<Scalar> other = {Scalar(-1.5), Scalar(7)};
  const Attrs bound = bind_scalars(t.nodes()[0], other);
  EXPECT_EQ(bound.d(0), -1.5);
  EXPECT_EQ(bound.s(1).to_int(), 7);
  EXPECT_EQ(t.nodes()[0].attrs.d(0), 0.5);  // the node keeps its recorded values
  EXPECT_EQ(bind_scalars(t.nodes()[1], other).d(0), 4.0);  // a compile-time Scalar is not an argument
}

TEST(ScalarSlots, InterpretUsesTheValuesItIsGiven) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {2, 3}, {3, 1});
  const ValueId b = t.add_input(kFloat32, {3}, {1});
  const ValueId y = t.add_node1(op("add"), {x, b}, {Scalar(0.5)});
  t.mark_output(t.add_node1(op("mul.Scalar"), {y}, {Scalar(2.0)}));
  const Tensor xv = testing::random({2, 3}, kFloat32, 1), bv = testing::random({3}, kFloat32, 2);
  expect_tensors_close(interpret(t, {xv, bv})[0], (xv + bv * 0.5) * 2.0);
  expect_tensors_close(interpret(t, {xv, bv}, std::vector<Scalar>{Scalar(-3.0), Scalar(0.25)})[0],
                       (xv + bv * -3.0) * 0.25);
  testing::expect_error([&] { interpret(t, {xv, bv}, std::vector<Scalar>{Scalar(1.0)}); },
                        {"interpret", "2 Scalar slots", "got 1"});
}

TEST(ScalarSlots, ARunTimeScalarIsNeverFolded) {
  Trace t;
  const ValueId f = t.add_node1(op("full"), {}, {DimVector{4}, kFloat32, Scalar(2.5)});
  t.mark_output(t.add_node1(op("mul.Scalar"), {f}, {Scalar(3.0)}, ScalarBinding::kCompileTime));
  FoldReport report;
  EXPECT_EQ(constant_fold(t, &report), 0);
  EXPECT_TRUE(t.constants().empty());
  EXPECT_NE(report.to_string().find("(full): kept: reads a run-time Scalar"), std::string::npos)
      << report.to_string();
  // the fill is still an argument: a replay with another value computes with it
  expect_tensors_close(interpret(t, {}, std::vector<Scalar>{Scalar(5.0)})[0], full({4}, 15.0));
}

TEST(ScalarSlots, ARunTimeScalarIsNeverSimplifiedByValue) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {5}, {1});
  // None is a pinned constant (trace/ir.h), so none may be relied on.
  const ValueId one = t.add_node1(op("mul.Scalar"), {x}, {Scalar(1.25)});
  const ValueId half = t.add_node1(op("div.Scalar"), {one}, {Scalar(4.0)});             // exact reciprocal now
  t.mark_output(t.add_node1(op("add.Scalar"), {half}, {Scalar(0.1), Scalar(1)}));
  const std::string before = t.to_string();
  SimplifyReport report;
  EXPECT_EQ(simplify(t, &report), 0) << report.to_string();
  EXPECT_EQ(t.to_string(), before);
  EXPECT_NE(report.to_string().find("c is a run-time Scalar"), std::string::npos) << report.to_string();
  const Tensor xv = testing::random({5}, kFloat32, 3);
  const std::vector<Scalar> next = {Scalar(3.0), Scalar(5.0), Scalar(0.75), Scalar(2)};
  expect_tensors_close(interpret(t, {xv}, next)[0], xv * 3.0 / 5.0 + 1.5);
}

TEST(ScalarSlots, CseMergesOnlyNodesOfTheSameSlot) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {6}, {1});
  const ValueId a = t.add_node1(op("mul.Scalar"), {x}, {Scalar(2.5)});
  const ValueId same_value = t.add_node1(op("mul.Scalar"), {x}, {Scalar(2.5)});  // its own slot: kept
  const ValueId same_slot = t.copy_node(t.nodes()[0], {x})[0];                   // slot 0 again: merged
  const ValueId s = t.add_node1(op("add"), {a, same_value}, {Scalar(1)});
  t.mark_output(t.add_node1(op("add"), {s, same_slot}, {Scalar(1)}));
  EXPECT_EQ(cse(t), 1);
  EXPECT_EQ(t.nodes().size(), 4u) << t.to_string();
  const Tensor xv = testing::random({6}, kFloat32, 4);
  const std::vector<Scalar> next = {Scalar(3.0), Scalar(-1.0), Scalar(1), Scalar(1)};
  expect_tensors_close(interpret(t, {xv}, next)[0], xv * 3.0 + xv * -1.0 + xv * 3.0);
}

}  // namespace
}  // namespace nnvm::trace

namespace nnvm::trace {
namespace {

// A pinned constant (0, -0, ±1, ±0.5, ±2, 3, gelu's constants) is part of the
// signature, so every trace sharing a plan has it, and passes may rely on it.
TEST(ScalarSlots, PinnedConstantsAreKeyedAndKnown) {
  auto program = [](double c) {
    Trace t;
    const ValueId x = t.add_input(kFloat32, {5}, {1});
    t.mark_output(t.add_node1(op("mul.Scalar"), {x}, {Scalar(c)}));
    return t;
  };
  EXPECT_GE(pinned_constant(Scalar(1.0)), 0);
  EXPECT_GE(pinned_constant(Scalar(double(0.044715f))), 0);
  EXPECT_NE(pinned_constant(Scalar(double(0.044715f))), pinned_constant(Scalar(0.044715)));
  EXPECT_NE(pinned_constant(Scalar(-0.0)), pinned_constant(Scalar(0.0)));
  EXPECT_EQ(pinned_constant(Scalar(0.3)), -1);
  EXPECT_EQ(signature(program(0.3)), signature(program(0.7)));    // run-time values: one plan
  EXPECT_NE(signature(program(1.0)), signature(program(0.7)));    // a pinned one is in the key
  EXPECT_NE(signature(program(1.0)), signature(program(-1.0)));
  EXPECT_NE(explain_difference(program(1.0), program(0.7)).find("attributes changed at node 0"), std::string::npos);
  Trace t = program(1.0);
  EXPECT_TRUE(scalar_is_known(t.nodes()[0], 0));
  SimplifyReport report;
  EXPECT_EQ(simplify(t, &report), 1) << report.to_string();  // x * 1 -> x, safe for every trace of this key
  EXPECT_FALSE(scalar_is_known(program(0.7).nodes()[0], 0));
}

}  // namespace
}  // namespace nnvm::trace
