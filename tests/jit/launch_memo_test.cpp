// A JIT program reuses its last launch (loop space, variant, blocks) while
// its operands' layouts repeat: a run with other data pointers (a view at
// another offset), other strides or another batch size on the same program
// must compute what the interpreter computes, and so must two threads
// running one plan at once with different layouts.
#include <thread>

#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

Trace pointwise_chain(const Tensor& x, const Tensor& row) {
  Trace t;
  const ValueId xv = t.add_input(x), rv = t.add_input(row);
  const ValueId v = t.add_node1(find_op("mul"), {t.add_node1(find_op("add"), {xv, rv}, {Scalar(0.5)}), xv});
  t.mark_output(t.add_node1(find_op("tanh"), {v}));
  return t;
}

Trace row_sum(const Tensor& x) {
  Trace t;
  const ValueId v = t.add_node1(find_op("exp"), {t.add_input(x)});
  t.mark_output(t.add_node1(find_op("sum"), {v}, {DimVector{1}, false, kFloat32}));
  return t;
}

// Inputs of one program in turn: contiguous, the same layout at other
// offsets (rows of a larger tensor), other strides (a column window, a
// transpose), then the first layout again.
std::vector<Tensor> layouts(int64_t cols, uint64_t seed) {
  const Tensor wide = testing::random({9, cols + 7}, kFloat32, seed);
  const Tensor tall = testing::random({12, cols}, kFloat32, seed + 1);
  return {testing::random({4, cols}, kFloat32, seed + 2),
          tall.narrow(0, 1, 4),
          tall.narrow(0, 5, 4),
          wide.narrow(1, 3, cols).narrow(0, 2, 4),
          testing::random({cols, 4}, kFloat32, seed + 3).t(),
          wide.narrow(1, 2, cols).narrow(0, 5, 4),
          testing::random({4, cols}, kFloat32, seed + 4)};
}

// body(isa) under every JIT ISA this CPU has, eagerly.
template <class Body> void on_each_isa(Body body) {
  for (Isa isa : jit_isas()) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    EagerGuard eager;
    body(isa);
  }
}

void expect_runs_match(const trace::FusedPlan& plan, const Trace& t, const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> expected = trace::interpret(t, inputs, {});
  const std::vector<Tensor> actual = plan.run(inputs, {});
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) testing::expect_tensors_close(actual[i], expected[i], 1e-5, 1e-6);
}

TEST(LaunchMemo, PointwiseRecomputesForEveryNewLayout) {
  on_each_isa([&](Isa) {
    const Tensor row = testing::random({33}, kFloat32, 5);
    const Trace t = pointwise_chain(testing::random({4, 33}, kFloat32, 1), row);
    const trace::FusedPlan plan(t);
    ASSERT_NE(pointwise_jit(plan.program(0)), nullptr) << plan.to_string();
    for (const Tensor& x : layouts(33, 10)) expect_runs_match(plan, t, {x, row});
    const Tensor other_row = testing::random({40}, kFloat32, 6).narrow(0, 7, 33);  // the row at an offset
    for (const Tensor& x : layouts(33, 20)) expect_runs_match(plan, t, {x, other_row});
  });
}

TEST(LaunchMemo, ReductionRecomputesForEveryNewLayout) {
  on_each_isa([&](Isa) {
    const Trace t = row_sum(testing::random({4, 45}, kFloat32, 1));
    const trace::FusedPlan plan(t);
    ASSERT_NE(reduce_jit(plan.program(0)), nullptr) << plan.to_string();
    const int64_t runs = reduce_runs();
    for (const Tensor& x : layouts(45, 30)) expect_runs_match(plan, t, {x});
    EXPECT_GT(reduce_runs(), runs);
  });
}

// Traced: one recorded function over batch sizes and views that come and go.
TEST(LaunchMemo, ANewBatchSizeOrViewOffsetRecomputes) {
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  IsaGuard guard(jit_isas()[0]);
  auto f = [](const Tensor& x) {
    const Tensor y = ((x * 1.25 - 0.5).tanh() * x).abs();
    return std::pair{y, (y * 0.5).exp().sum({1})};
  };
  const Tensor big = testing::random({40, 96}, kFloat32, 3);
  for (int64_t batch : {8, 16, 8, 24, 8})
    for (int64_t start : {0, 3, 11}) {
      const Tensor x = big.narrow(0, start, batch);
      std::pair<Tensor, Tensor> expected;
      {
        EagerGuard eager;
        expected = f(x);
      }
      const auto [y, s] = f(x);
      testing::expect_tensors_close(y, expected.first, 1e-5, 1e-6);
      testing::expect_tensors_close(s, expected.second, 1e-5, 1e-5);
    }
}

// Two plans of one program (an RNN's first step and the others) replayed in
// turn with the strides their traces recorded: after each has run once, no
// run compares the launch key (jit::LaunchStamp), and every run still
// computes what the interpreter does. A run at other strides compares it.
TEST(LaunchMemo, PlansInTurnWithTheirRecordedStridesCompareNoKey) {
  on_each_isa([&](Isa) {
    const Tensor row = testing::random({33}, kFloat32, 5);
    const Tensor x = testing::random({4, 33}, kFloat32, 1);
    const Trace pt = pointwise_chain(x, row), rt = row_sum(x);
    const trace::FusedPlan p1(pt), p2(pt), r1(rt), r2(rt);
    ASSERT_EQ(&p1.program(0), &p2.program(0)) << "the kernel cache shares one program";
    ASSERT_NE(reduce_jit(r1.program(0)), nullptr) << r1.to_string();
    const Tensor tall = testing::random({12, 33}, kFloat32, 2);
    auto round = [&](const Tensor& in) {
      expect_runs_match(p1, pt, {in, row});
      expect_runs_match(p2, pt, {in, row});
      expect_runs_match(r1, rt, {in});
      expect_runs_match(r2, rt, {in});
    };
    round(x);
    round(tall.narrow(0, 3, 4));  // the recorded strides at another offset
    const int64_t compares = launch_key_compares();
    for (int k = 0; k < 3; ++k) round(tall.narrow(0, int64_t(k) * 2, 4));
    EXPECT_EQ(launch_key_compares(), compares);
    round(testing::random({33, 4}, kFloat32, 3).t());  // other strides: the key decides
    EXPECT_GT(launch_key_compares(), compares);
  });
}

// A thread keeps the launches of a few programs (find_launch): more programs
// than it has places, in turn and with their layouts changing, share places
// and must each find their own launch or make one.
TEST(LaunchMemo, MoreProgramsThanAThreadKeepsInTurn) {
  on_each_isa([&](Isa) {
    const Tensor row = testing::random({33}, kFloat32, 5);
    std::vector<Trace> traces;
    std::vector<std::unique_ptr<trace::FusedPlan>> plans;
    for (int k = 0; k < 11; ++k) {  // k products with the row after the chain: eleven programs
      Trace t;
      const ValueId xv = t.add_input(testing::random({4, 33}, kFloat32, 1)), rv = t.add_input(row);
      ValueId v = t.add_node1(find_op("tanh"), {t.add_node1(find_op("add"), {xv, rv}, {Scalar(0.5)})});
      for (int i = 0; i < k; ++i) v = t.add_node1(find_op("mul"), {v, rv});
      t.mark_output(v);
      plans.push_back(std::make_unique<trace::FusedPlan>(t));
      ASSERT_NE(pointwise_jit(plans.back()->program(0)), nullptr) << plans.back()->to_string();
      ASSERT_EQ(pointwise_jit(plans.back()->program(0))->declined(), "");
      traces.push_back(std::move(t));
    }
    // each round one layout for all: programs in one place see keys that match
    for (const Tensor& x : layouts(33, 40))
      for (size_t p = 0; p < plans.size(); ++p) expect_runs_match(*plans[p], traces[p], {x, row});
  });
}

TEST(LaunchMemo, TwoThreadsRunOnePlanWithDifferentLayouts) {
  on_each_isa([&](Isa isa) {
    const Tensor row = testing::random({33}, kFloat32, 5);
    const Trace pt = pointwise_chain(testing::random({4, 33}, kFloat32, 1), row);
    const Trace rt = row_sum(testing::random({4, 33}, kFloat32, 2));
    const trace::FusedPlan pointwise(pt), reduce(rt);
    auto many = [&](uint64_t seed) {
      IsaGuard here(isa);
      EagerGuard eager_here;
      for (uint64_t i = 0; i < 30; ++i)
        for (const Tensor& x : layouts(33, seed + i)) {
          expect_runs_match(pointwise, pt, {x, row});
          expect_runs_match(reduce, rt, {x});
        }
    };
    std::thread other(many, 1000);
    many(2000);
    other.join();
  });
}

}  // namespace
}  // namespace nnvm::jit
