// The trace IR, its signatures, the interpreter, and the DCE and CSE passes.
#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/passes/cse.h"
#include "nnvm/trace/passes/dce.h"
#include "nnvm/trace/signature.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_error;
using testing::expect_tensors_close;

const OpDef& op(const char* name) { return find_op(name); }

// x: [rows, cols] float32, b: [cols]: y = exp(x * 2.5 + b).sum(1)
Trace small_program(int64_t rows, int64_t cols, double scale = 2.5) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {rows, cols}, {cols, 1});
  const ValueId b = t.add_input(kFloat32, {cols}, {1});
  const ValueId m = t.add_node1(op("mul.Scalar"), {x}, {Scalar(scale)});
  const ValueId a = t.add_node1(op("add"), {m, b}, {Scalar(1)});
  const ValueId e = t.add_node1(op("exp"), {a});
  const ValueId s = t.add_node1(op("sum"), {e}, {DimVector{1}, false, kFloat32});
  t.mark_output(s);
  return t;
}

TEST(TraceIR, InfersShapesAndPrints) {
  const Trace t = small_program(4, 3);
  ASSERT_EQ(t.nodes().size(), 4u);
  const Value& out = t.value(t.outputs()[0]);
  EXPECT_EQ(out.shape, DimVector({4}));
  EXPECT_EQ(out.dtype, kFloat32);
  const std::string text = t.to_string();
  EXPECT_NE(text.find("%0 = input float32[4, 3] strides [3, 1]"), std::string::npos) << text;
  EXPECT_NE(text.find("= add(%2, %1)"), std::string::npos) << text;
  EXPECT_NE(text.find("outputs: %5"), std::string::npos) << text;
  Trace bad;
  const ValueId x = bad.add_input(kFloat32, {2, 3}, {3, 1});
  const ValueId y = bad.add_input(kFloat32, {4}, {1});
  expect_error([&] { bad.add_node(op("add"), {x, y}, {Scalar(1)}); }, {"add", "[2, 3]", "[4]"});
  expect_error([&] { bad.add_node(op("exp"), {x, y}); }, {"exp", "expected 1 inputs"});
}

TEST(TraceIR, ViewsKeepTheirStrides) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 6}, {6, 1});
  const ValueId v = t.add_node1(op("transpose"), {x}, {int64_t(0), int64_t(1)});
  EXPECT_EQ(t.value(v).strides, DimVector({1, 6}));
  const ValueId s = t.add_node1(op("slice"), {v}, {int64_t(0), int64_t(1), int64_t(5), int64_t(2)});
  EXPECT_EQ(t.value(s).shape, DimVector({2, 4}));
}

TEST(Signature, ScalarValuesAreRunTimeArguments) {
  // a learning rate that changes every step must not change the key
  EXPECT_EQ(signature(small_program(4, 3, 0.1)), signature(small_program(4, 3, 0.2)));
  EXPECT_EQ(explain_difference(small_program(4, 3, 0.1), small_program(4, 3, 0.2)), "");
  EXPECT_FALSE(signature(small_program(4, 3)) == signature(small_program(5, 3)));
  EXPECT_EQ(explain_difference(small_program(4, 3), small_program(5, 3)),
            "shape changed at input 0: [4, 3] -> [5, 3]");
  Trace other = small_program(4, 3);
  other.mark_output(other.outputs()[0]);
  EXPECT_EQ(explain_difference(small_program(4, 3), other), "new structure");
}

TEST(Signature, HasNoAddressesAndIsTheSameInEveryProcess) {
  const Signature s = signature(small_program(4, 3));
  EXPECT_EQ(s.key,
            "in float32[4, 3][3, 1];in float32[3][1];mul.Scalar(i0)[f64];add(0.0,i1)[i64=p2];exp(1.0);"
            "sum(2.0)[[1],false,float32];out(3.0)");
  // signature_hash's word stream for this trace, computed independently by a
  // short Python script following signature.cpp's description (dtype 7 =
  // float32; names as length + 8-byte little-endian words; values by role;
  // four lanes; a Scalar as its kind | (pinned constant + 1) << 8): a
  // constant, so every process computes the same hash.
  EXPECT_EQ(s.hash, 0xb66fd9fdc738cea2ull) << std::hex << s.hash;
}

TEST(Interpreter, MatchesEagerAndReadsViewsAtAnyOffset) {
  const Trace t = small_program(4, 3);
  const Tensor big = testing::random({10, 3}, kFloat32, 3);
  const Tensor b = testing::random({3}, kFloat32, 4);
  for (int64_t offset : {0, 2, 6}) {
    // the same plan, fed a view of the same storage at a new offset, computes on the new rows
    const Tensor x = big.narrow(0, offset, 4);
    const std::vector<Tensor> out = interpret(t, {x, b});
    expect_tensors_close(out[0], (x * 2.5 + b).exp().sum({1}));
  }
  // a transposed input (other strides) still computes the right values
  const Tensor xt = testing::random({3, 4}, kFloat32, 5).t();
  expect_tensors_close(interpret(t, {xt, b})[0], (xt * 2.5 + b).exp().sum({1}));
  expect_error([&] { interpret(t, {b, b}); }, {"interpret", "input 0", "float32[3]", "float32[4, 3]"});
  expect_error([&] { interpret(t, {b}); }, {"interpret", "2 inputs"});
}

TEST(Passes, DeadCodeElimination) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {5}, {1});
  const ValueId unused = t.add_node1(op("exp"), {x});
  t.add_node1(op("neg"), {unused});
  const ValueId used = t.add_node1(op("sin"), {x});
  t.mark_output(used);
  EXPECT_EQ(dce(t), 2);
  ASSERT_EQ(t.nodes().size(), 1u);
  EXPECT_EQ(t.nodes()[0].op->name, "sin");
  const Tensor in = testing::random({5}, kFloat32, 6);
  expect_tensors_close(interpret(t, {in})[0], in.sin());
  EXPECT_EQ(dce(t), 0);
}

TEST(Passes, CommonSubexpressionElimination) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {6}, {1});
  // compile-time Scalars are compared by value (run-time ones by slot: scalar_slots_test.cpp)
  constexpr ScalarBinding fixed = ScalarBinding::kCompileTime;
  const ValueId a1 = t.add_node1(op("mul.Scalar"), {x}, {Scalar(2.0)}, fixed);
  const ValueId a2 = t.add_node1(op("mul.Scalar"), {x}, {Scalar(2.0)}, fixed);  // same: merged
  const ValueId a3 = t.add_node1(op("mul.Scalar"), {x}, {Scalar(3.0)}, fixed);  // another value: kept
  const ValueId e1 = t.add_node1(op("exp"), {a1});
  const ValueId e2 = t.add_node1(op("exp"), {a2});  // same once a2 is a1
  const ValueId s = t.add_node1(op("add"), {e1, e2}, {Scalar(1)});
  const ValueId r = t.add_node1(op("add"), {s, a3}, {Scalar(1)});
  t.mark_output(r);
  const Tensor in = testing::random({6}, kFloat32, 7);
  const Tensor before = interpret(t, {in})[0];
  EXPECT_EQ(cse(t), 2);
  EXPECT_EQ(t.nodes().size(), 5u);
  expect_tensors_close(interpret(t, {in})[0], before);
  EXPECT_EQ(cse(t), 0);
}

}  // namespace
}  // namespace nnvm::trace
