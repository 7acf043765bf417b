// matmul(a, b) + matmul(c, d) -> matmul_sum(a, b, c, d): the pass gives the
// chain's results (interpret before == after on random inputs, up to
// reassociation), declines every near miss with a reason, and a traced RNN
// cell runs its two products as one group with their epilogue.
#include <cmath>

#include "nnvm/nnvm.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/recorder.h"
#include "recognise_util.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_tensors_close;

struct Shapes {
  DimVector a, b, c, d;
};

// a b + c d on random inputs of these shapes.
Trace sum_of_products(DType dtype, const Shapes& s, std::vector<Tensor>& inputs, uint64_t seed) {
  Builder g;
  const ValueId a = g.input(dtype, s.a), b = g.input(dtype, s.b), c = g.input(dtype, s.c), d = g.input(dtype, s.d);
  g.t.mark_output(g.add(g.matmul(a, b), g.matmul(c, d)));
  inputs.clear();
  for (const DimVector* shape : {&s.a, &s.b, &s.c, &s.d}) inputs.push_back(testing::random(*shape, dtype, seed++));
  return std::move(g.t);
}

TEST(RecogniseMatmulSum, EveryShapeOfTwoProductsBecomesOneOp) {
  const Shapes shapes[] = {
      {{1, 64}, {64, 64}, {1, 64}, {64, 64}},            // an RNN step: the vector-matrix GEMM
      {{1, 70}, {70, 37}, {1, 5}, {5, 37}},              // columns past the last full vector
      {{3, 7}, {7, 5}, {3, 11}, {11, 5}},                // odd sizes
      {{9, 33}, {33, 17}, {9, 300}, {300, 17}},          // the packed GEMM, several k blocks
      {{2, 3, 4}, {4, 5}, {2, 3, 6}, {1, 6, 5}},         // batched, batch dims broadcast
      {{3, 0}, {0, 5}, {3, 2}, {2, 5}},                  // an empty k: a b is zeros
      {{3, 2}, {2, 5}, {3, 0}, {0, 5}},                  // and c d
      {{1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {{0, 4}, {4, 5}, {0, 3}, {3, 5}},                  // no rows
  };
  uint64_t seed = 1;
  for (DType dtype : {kFloat32, kFloat64}) {
    for (const Shapes& s : shapes) {
      std::vector<Tensor> inputs;
      Trace t = sum_of_products(dtype, s, inputs, seed += 4);
      const RecogniseReport report = recognise_and_compare(t, inputs);
      EXPECT_EQ(ops(t), "matmul_sum") << shape_str(s.a) << " " << shape_str(s.c) << "\n" << report.to_string();
    }
  }
}

// The vector-matrix GEMM sums each column's k in one block, so the op rounds
// as add(a b, c d) does: the same bits.
TEST(RecogniseMatmulSum, AVectorTimesMatricesGivesTheChainsBits) {
  std::vector<Tensor> inputs;
  Trace t = sum_of_products(kFloat32, {{1, 64}, {64, 64}, {1, 64}, {64, 64}}, inputs, 90);
  const Tensor before = interpret(t, inputs)[0];
  ASSERT_EQ(recognise(t), 1);
  const Tensor after = interpret(t, inputs)[0];
  EXPECT_EQ(after.to_vector<float>(), before.to_vector<float>());
}

TEST(RecogniseMatmulSum, NearMisses) {
  {
    Builder g;  // a b - c d: alpha -1
    const ValueId a = g.input(kFloat32, {2, 3}), b = g.input(kFloat32, {3, 4});
    g.t.mark_output(g.add(g.matmul(a, b), g.matmul(a, b), -1));
    expect_declined(g.t, "matmul_sum", "alpha of a b + alpha c d in node 2 (add) is -1, not 1");
  }
  {
    Builder g{{}, ScalarBinding::kRunTime};  // a b + s c d with s recorded: another trace may bring another s
    const ValueId a = g.input(kFloat32, {2, 3}), b = g.input(kFloat32, {3, 4});
    g.t.mark_output(g.add(g.matmul(a, b), g.matmul(a, b), 0.3));
    expect_declined(g.t, "matmul_sum", "alpha of a b + alpha c d in node 2 (add) is a run-time Scalar");
  }
  {
    Builder g;  // a product also read elsewhere: it would be computed twice
    const ValueId a = g.input(kFloat32, {2, 3}), b = g.input(kFloat32, {3, 4});
    const ValueId ab = g.matmul(a, b);
    g.t.mark_output(g.add(ab, g.matmul(a, b)));
    g.t.mark_output(ab);
    expect_declined(g.t, "matmul_sum", "node 0 (matmul) is also used outside the pattern");
  }
  {
    Builder g;  // the add broadcasts one product over the other's rows
    const ValueId a = g.input(kFloat32, {1, 3}), b = g.input(kFloat32, {3, 4});
    const ValueId c = g.input(kFloat32, {5, 2}), d = g.input(kFloat32, {2, 4});
    g.t.mark_output(g.add(g.matmul(a, b), g.matmul(c, d)));
    expect_declined(g.t, "matmul_sum", "the result's shape or dtype would change");
  }
  {
    Builder g;  // integers: the GEMM is float only
    const ValueId a = g.input(kInt64, {2, 3}), b = g.input(kInt64, {3, 4});
    g.t.mark_output(g.add(g.matmul(a, b), g.matmul(a, b)));
    expect_declined(g.t, "matmul_sum", "x is int64");
  }
  Builder g;  // a product plus something else: no pattern
  const ValueId a = g.input(kFloat32, {2, 3}), b = g.input(kFloat32, {3, 4}), c = g.input(kFloat32, {2, 4});
  g.t.mark_output(g.add(g.matmul(a, b), c));
  RecogniseReport report;
  EXPECT_EQ(recognise(g.t, &report), 0);
  EXPECT_TRUE(report.decisions.empty()) << report.to_string();
}

TEST(RecogniseMatmulSum, TheOpChecksItsOperands) {
  EagerGuard eager;
  const OpDef& op = find_op("matmul_sum");
  const Tensor a = zeros({2, 3}), b = zeros({3, 4}), c = zeros({2, 5}), d = zeros({5, 3});
  try {
    call1(op, {a, b, c, d});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul_sum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("different shapes"), std::string::npos) << e.what();
  }
  const Tensor i = zeros({2, 3}, kInt64), j = zeros({3, 4}, kInt64);
  EXPECT_THROW(call1(op, {i, j, i, j}), Error);
  // No gradient: the pass makes the op only in traces autograd has already
  // recorded, so one that reaches it is the caller's error, named.
  const Tensor w = zeros({3, 4}).requires_grad_();
  const Tensor y = call1(op, {a, w, a, w});
  try {
    y.sum().backward();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul_sum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not differentiable"), std::string::npos) << e.what();
  }
}

// An RNN cell in traced mode, with a transposed weight and odd sizes: its
// plan runs both products and the epilogue as one group, and gives what eager
// mode gives.
TEST(RecogniseMatmulSum, ATracedRnnCellRunsItsProductsAsOneGroup) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  Tensor x, h, w, u, bias;
  {
    EagerGuard eager;
    x = testing::random({3, 13}, kFloat32, 91);
    h = testing::random({3, 29}, kFloat32, 92);
    w = testing::random({29, 13}, kFloat32, 93);  // read transposed
    u = testing::random({29, 29}, kFloat32, 94);
    bias = testing::random({1, 29}, kFloat32, 95);
  }
  auto cell = [&] { return (matmul(x, w.mT()) + matmul(h, u) + bias).tanh(); };
  Tensor expected;
  {
    EagerGuard eager;
    expected = cell();
  }
  std::vector<Trace> flushed;
  mark_step();
  set_flush_observer([&](const Trace& t) { flushed.push_back(t); });
  for (int run = 0; run < std::max(3, knobs().hot + 1); ++run) {
    const Tensor got = cell();
    EagerGuard eager;
    expect_tensors_close(got, expected, 1e-5, 1e-5);
  }
  set_flush_observer(nullptr);
  ASSERT_FALSE(flushed.empty());
  const std::shared_ptr<const Plan> plan = compile_plan(flushed.back());
  const auto* fused = dynamic_cast<const FusedPlan*>(plan.get());
  ASSERT_NE(fused, nullptr);
  const std::string text = fused->to_string();
  int sums = 0, products = 0;
  for (const Node& n : plan->trace().nodes()) {
    sums += n.op->name == "matmul_sum";
    products += n.op->name == "matmul";
  }
  EXPECT_EQ(sums, 1) << text;
  EXPECT_EQ(products, 0) << text;
  size_t epilogues = 0;
  for (const FusionGroup& g : fused->fusion().groups) epilogues += g.kind == GroupKind::kMatmulEpilogue;
  EXPECT_EQ(epilogues, 1u) << text;
}

}  // namespace
}  // namespace nnvm::trace
