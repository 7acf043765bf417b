// Constant folding and algebraic simplification: each pass must keep the
// trace's results (interpret before == after on random inputs), make the
// rewrites it promises, and decline the ones IEEE 754 forbids.
#include <cmath>
#include <cstring>

#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/pass_manager.h"
#include "nnvm/trace/passes/constant_fold.h"
#include "nnvm/trace/passes/dce.h"
#include "nnvm/trace/passes/simplify.h"
#include "nnvm/trace/signature.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_tensors_close;

const OpDef& op(const char* name) { return find_op(name); }

// The value rules below read Scalars, so these tests fix them at compile time;
// scalar_slots_test.cpp shows that recorded (run-time) Scalars are left alone.
constexpr ScalarBinding kFixed = ScalarBinding::kCompileTime;

bool has_op(const Trace& t, std::string_view name) {
  for (const Node& n : t.nodes())
    if (n.op->name == name) return true;
  return false;
}

// Runs `pass` and checks the outputs agree before and after on `inputs`;
// returns what the pass returned.
template <class Pass> int run_and_compare(Trace& t, const std::vector<Tensor>& inputs, Pass pass) {
  const std::vector<Tensor> before = interpret(t, inputs);
  const int changed = pass(t);
  verify(t);
  const std::vector<Tensor> after = interpret(t, inputs);
  EXPECT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].dtype(), before[i].dtype());
    expect_tensors_close(after[i], before[i], 0, 0);
    // the passes promise identical bits: -0.0 and NaN included
    const Tensor a = after[i].contiguous(), b = before[i].contiguous();
    EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0) << "output " << i << " differs in its bits";
  }
  return changed;
}

// y = x + (full(2) * 3 + arange) ; the bracket is all constants
Trace program_with_constants(double fill) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 3}, {3, 1});
  const ValueId f = t.add_node1(op("full"), {}, {DimVector{4, 3}, kFloat32, Scalar(fill)}, kFixed);
  const ValueId m = t.add_node1(op("mul.Scalar"), {f}, {Scalar(3.0)}, kFixed);
  const ValueId r = t.add_node1(op("arange"), {}, {DimVector{3}, kFloat32, Scalar(0.0), Scalar(0.5)}, kFixed);
  const ValueId c = t.add_node1(op("add"), {m, r}, {Scalar(1)}, kFixed);
  t.mark_output(t.add_node1(op("add"), {x, c}, {Scalar(1)}));
  return t;
}

TEST(ConstantFold, FoldsAllConstantNodesAndKeepsResults) {
  Trace t = program_with_constants(2.0);
  const Tensor x = testing::random({4, 3}, kFloat32, 1);
  FoldReport report;
  EXPECT_EQ(run_and_compare(t, {x}, [&](Trace& tr) { return constant_fold(tr, &report); }), 4);
  ASSERT_EQ(t.nodes().size(), 1u) << t.to_string();
  ASSERT_EQ(t.constants().size(), 1u);
  EXPECT_NE(t.to_string().find("= constant float32[4, 3]"), std::string::npos) << t.to_string();
  expect_tensors_close(interpret(t, {x})[0], x + (full({4, 3}, 6.0) + arange(0.0, 1.5, 0.5)));
  EXPECT_EQ(report.decisions.size(), 4u) << report.to_string();
  EXPECT_EQ(constant_fold(t), 0);
}

TEST(ConstantFold, ConstantsAreKeyedByValueOnceFolded) {
  // before folding a fill value is a run-time Scalar; once baked in, it is part of the key
  EXPECT_EQ(signature(program_with_constants(2.5)), signature(program_with_constants(5.0)));
  Trace a = program_with_constants(2.5), b = program_with_constants(5.0), a2 = program_with_constants(2.5);
  constant_fold(a);
  constant_fold(b);
  constant_fold(a2);
  EXPECT_FALSE(signature(a) == signature(b));
  EXPECT_EQ(signature(a), signature(a2));
  EXPECT_EQ(explain_difference(a, b), "constant 0 changed");
  EXPECT_NE(signature(a).key.find("const float32[4, 3][3, 1]="), std::string::npos) << signature(a).key;
}

TEST(ConstantFold, AnOutputCanBeAConstantAndOtherPassesKeepConstants) {
  Trace t;
  const ValueId x = t.add_input(kFloat64, {3, 3}, {3, 1});
  const ValueId identity = t.add_node1(op("eye"), {}, {DimVector{3, 3}, kFloat64});
  const ValueId tr = t.add_node1(op("transpose"), {identity}, {int64_t(0), int64_t(1)});  // a view of a constant
  t.add_node1(op("exp"), {x});  // dead
  t.mark_output(tr);
  t.mark_output(t.add_node1(op("mul"), {x, tr}));
  const Tensor in = testing::random({3, 3}, kFloat64, 2);
  EXPECT_EQ(run_and_compare(t, {in}, [](Trace& tr) { return constant_fold(tr); }), 2);
  EXPECT_TRUE(t.value(t.outputs()[0]).is_constant());
  EXPECT_EQ(run_and_compare(t, {in}, [](Trace& tr) { return dce(tr); }), 1);
  EXPECT_EQ(t.constants().size(), 1u);
  expect_tensors_close(interpret(t, {in})[0], nnvm::eye(3, std::nullopt, kFloat64));
}

TEST(ConstantFold, NeverFoldsRandomOpsOrHugeResults) {
  Trace t;
  const ValueId u = t.add_node1(op("uniform"), {}, {DimVector{8}, kFloat32, Scalar(int64_t(1)), Scalar(int64_t(0)),
                                                    Scalar(0.0), Scalar(1.0)});
  const ValueId half = t.add_node1(op("full"), {}, {DimVector{8}, kFloat32, Scalar(0.5)}, kFixed);
  const ValueId p = t.add_node1(op("bernoulli"), {half}, {Scalar(int64_t(1)), Scalar(int64_t(0))});
  const ValueId big =
      t.add_node1(op("full"), {}, {DimVector{kMaxFoldedElements + 1}, kFloat32, Scalar(1.0)}, kFixed);
  t.mark_output(t.add_node1(op("mul.Scalar"), {u}, {Scalar(2.0)}));
  t.mark_output(p);
  t.mark_output(big);
  FoldReport report;
  EXPECT_EQ(constant_fold(t, &report), 1);  // only `half`
  EXPECT_TRUE(has_op(t, "uniform") && has_op(t, "bernoulli") && has_op(t, "full"));
  const std::string text = report.to_string();
  EXPECT_NE(text.find("(uniform): kept: random"), std::string::npos) << text;
  EXPECT_NE(text.find("(bernoulli): kept: random"), std::string::npos) << text;
  EXPECT_NE(text.find("(full): kept: 65537 elements is over the limit"), std::string::npos) << text;
  verify(t);
}

}  // namespace
}  // namespace nnvm::trace

namespace nnvm::trace {
namespace {

std::string rules(const SimplifyReport& r, bool applied) {
  std::string s;
  for (const SimplifyDecision& d : r.decisions)
    if (d.applied == applied) s += d.rule + "\n";
  return s;
}

TEST(Simplify, RewritesEveryExactIdentity) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 3}, {3, 1});
  ValueId v = t.add_node1(op("mul.Scalar"), {x}, {Scalar(1.0)}, kFixed);
  v = t.add_node1(op("div.Scalar"), {v}, {Scalar(4.0)}, kFixed);
  v = t.add_node1(op("neg"), {v});
  v = t.add_node1(op("neg"), {v});
  v = t.add_node1(op("add.Scalar"), {v}, {Scalar(0.0), Scalar(-1)}, kFixed);  // x - 0.0 == x + (-0.0)
  v = t.add_node1(op("transpose"), {v}, {int64_t(0), int64_t(1)});
  v = t.add_node1(op("transpose"), {v}, {int64_t(1), int64_t(-2)});
  v = t.add_node1(op("view"), {v}, {DimVector{12}});
  v = t.add_node1(op("unsqueeze"), {v}, {int64_t(0)});
  v = t.add_node1(op("view"), {v}, {DimVector{2, 6}});
  v = t.add_node1(op("copy"), {v}, {kFloat64});
  v = t.add_node1(op("copy"), {v}, {kFloat32});
  v = t.add_node1(op("div.Scalar"), {v}, {Scalar(1)}, kFixed);
  t.mark_output(v);
  // -0.0 must survive x - 0.0; NaN and inf must pass through
  Tensor in = testing::random({4, 3}, kFloat32, 3);
  in.data_ptr<float>()[0] = -0.0f;
  in.data_ptr<float>()[1] = NAN;
  in.data_ptr<float>()[2] = -INFINITY;
  SimplifyReport report;
  EXPECT_EQ(run_and_compare(t, {in}, [&](Trace& tr) { return simplify(tr, &report); }), 9) << report.to_string();
  EXPECT_EQ(rules(report, true),
            "x * 1 -> x\nx / c -> x * (1/c)\nneg(neg(x)) -> x\nx + 0 -> x\ntranspose(transpose(x)) -> x\n"
            "view(view(x)) -> view(x)\nview(view(x)) -> view(x)\ncopy(copy(x)) -> x\nx / 1 -> x\n");
  EXPECT_EQ(report.applied(), 9);
  run_and_compare(t, {in}, [](Trace& tr) { return dce(tr); });
  ASSERT_EQ(t.nodes().size(), 2u) << t.to_string();  // float32 -> float64 -> float32 is gone
  EXPECT_EQ(t.nodes()[0].op->name, "mul.Scalar");
  EXPECT_EQ(t.nodes()[0].attrs.d(0), 0.25);
  EXPECT_EQ(t.nodes()[1].op->name, "view");
  EXPECT_EQ(std::signbit(interpret(t, {in})[0].data_ptr<float>()[0]), true);
  EXPECT_EQ(simplify(t), 0);
}

TEST(Simplify, DeclinesWhatIEEEForbids) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {5}, {1});
  const ValueId d = t.add_node1(op("add"), {x, x}, {Scalar(-1)}, kFixed);     // x - x: inf - inf is NaN
  const ValueId z = t.add_node1(op("mul.Scalar"), {x}, {Scalar(0.0)}, kFixed);     // x * 0: NaN * 0, -x * 0
  const ValueId p = t.add_node1(op("add.Scalar"), {x}, {Scalar(0.0), Scalar(1)}, kFixed);  // x + 0.0: -0.0 -> +0.0
  const ValueId q = t.add_node1(op("div.Scalar"), {x}, {Scalar(3.0)}, kFixed);     // 1/3 is rounded
  const ValueId h = t.add_node1(op("copy"), {x}, {kFloat16});                 // float32 -> float16 rounds
  const ValueId back = t.add_node1(op("copy"), {h}, {kFloat32});
  for (ValueId v : {d, z, p, q, back}) t.mark_output(v);
  const std::string before = t.to_string();
  Tensor in = testing::random({5}, kFloat32, 4);
  in.data_ptr<float>()[0] = INFINITY;
  in.data_ptr<float>()[1] = -0.0f;
  in.data_ptr<float>()[2] = 3.1f;
  SimplifyReport report;
  EXPECT_EQ(run_and_compare(t, {in}, [&](Trace& tr) { return simplify(tr, &report); }), 0);
  EXPECT_EQ(t.to_string(), before);
  EXPECT_EQ(rules(report, false),
            "x - x -> 0\nx * 0 -> 0\nx + 0 -> x\nx / c -> x * (1/c)\ncopy(copy(x)) -> copy(x)\n");
  const std::string text = report.to_string();
  EXPECT_NE(text.find("maps -0.0 to +0.0"), std::string::npos) << text;
  EXPECT_NE(text.find("float32 -> float16 rounds"), std::string::npos) << text;
}

TEST(Simplify, KeepsDtypeChangesAndIntegerZeros) {
  Trace t;
  const ValueId x = t.add_input(kInt32, {6}, {1});
  const ValueId promoted = t.add_node1(op("mul.Scalar"), {x}, {Scalar(1.0)}, kFixed);  // int32 * 1.0 is float32
  const ValueId same = t.add_node1(op("mul.Scalar"), {x}, {Scalar(1)}, kFixed);
  const ValueId plus0 = t.add_node1(op("add.Scalar"), {same}, {Scalar(0), Scalar(1)}, kFixed);  // exact for integers
  t.mark_output(promoted);
  t.mark_output(plus0);
  SimplifyReport report;
  const Tensor in = testing::random({6}, kInt32, 5, -100, 100);
  EXPECT_EQ(run_and_compare(t, {in}, [&](Trace& tr) { return simplify(tr, &report); }), 2) << report.to_string();
  EXPECT_EQ(t.value(t.outputs()[0]).dtype, kFloat32);
  EXPECT_EQ(t.outputs()[1], t.inputs()[0]);
  EXPECT_NE(report.to_string().find("x * 1 -> x declined: the result's dtype or layout would change"),
            std::string::npos)
      << report.to_string();
}

TEST(Simplify, LosslessCasts) {
  EXPECT_TRUE(is_lossless_cast(kFloat32, kFloat64));
  EXPECT_TRUE(is_lossless_cast(kBFloat16, kFloat32));
  EXPECT_TRUE(is_lossless_cast(kInt8, kBFloat16));
  EXPECT_TRUE(is_lossless_cast(kInt32, kFloat64));
  EXPECT_FALSE(is_lossless_cast(kInt32, kFloat32));  // 2^24 + 1
  EXPECT_FALSE(is_lossless_cast(kFloat16, kBFloat16));
  EXPECT_FALSE(is_lossless_cast(kFloat64, kFloat32));
  EXPECT_FALSE(is_lossless_cast(kInt64, kFloat64));
  // the claim holds on the values that would break it: every int8 and uint8 through bfloat16
  const Tensor i8 = arange(-128, 128, 1, kInt32).to(kInt8);
  expect_tensors_close(i8.to(kBFloat16).to(kInt32), i8.to(kInt32), 0, 0);
  const Tensor big = full({1}, (1 << 24) + 1, kInt32);
  EXPECT_NE(big.to(kFloat32).to(kInt32).item<int32_t>(), (1 << 24) + 1);
}

}  // namespace
}  // namespace nnvm::trace
