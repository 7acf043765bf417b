// A plan's small arena stays with the thread for the plan's next run
// (trace/executor.h): runs with new inputs, interleaved with other plans',
// on two threads at once, must each compute what the interpreter computes;
// an output that is a view into the arena keeps its values when the plan
// runs again (that arena is never kept).
#include <thread>

#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

const OpDef& op(const char* name) { return find_op(name); }

// exp(x)·w + b, and its row sums: the product crosses a group boundary (arena).
Trace dense(int64_t m, int64_t k, int64_t n) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {m, k}, {k, 1}), w = t.add_input(kFloat32, {k, n}, {n, 1});
  const ValueId b = t.add_input(kFloat32, {n}, {1});
  const ValueId y = t.add_node1(op("add"), {t.add_node1(op("matmul"), {t.add_node1(op("exp"), {x}), w}), b},
                                {Scalar(1)});
  t.mark_output(t.add_node1(op("sum"), {y}, {DimVector{1}, false, kFloat32}));
  return t;
}

std::vector<Tensor> dense_inputs(int64_t m, int64_t k, int64_t n, uint64_t seed) {
  return {testing::random({m, k}, kFloat32, seed), testing::random({k, n}, kFloat32, seed + 1),
          testing::random({n}, kFloat32, seed + 2)};
}

void expect_run_matches(const FusedPlan& plan, const Trace& t, const std::vector<Tensor>& in) {
  const std::vector<Tensor> actual = plan.run(in, {}), expected = interpret(t, in, {});
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) testing::expect_tensors_close(actual[i], expected[i], 1e-5, 1e-5);
}

TEST(ArenaReuse, RunsWithNewInputsInterleavedAndOnTwoThreads) {
  EagerGuard eager;
  const Trace t1 = dense(3, 5, 4), t2 = dense(2, 7, 6);
  const FusedPlan p1(t1), p2(t2);
  ASSERT_GT(p1.arena_bytes(), 0) << p1.to_string();
  ASSERT_GT(p2.arena_bytes(), 0) << p2.to_string();
  for (uint64_t i = 0; i < 4; ++i) {
    expect_run_matches(p1, t1, dense_inputs(3, 5, 4, 10 * i + 1));
    expect_run_matches(p1, t1, dense_inputs(3, 5, 4, 10 * i + 4));
    expect_run_matches(p2, t2, dense_inputs(2, 7, 6, 10 * i + 7));
  }
  auto many = [&](uint64_t seed) {
    EagerGuard eager_here;
    for (uint64_t i = 0; i < 20; ++i) expect_run_matches(p1, t1, dense_inputs(3, 5, 4, seed + i));
  };
  std::thread other(many, 1000);
  many(2000);
  other.join();
}

// The thread keeps the arenas of the last two plans: three plans in turn
// evict each other's, two in turn keep both.
TEST(ArenaReuse, ThreePlansInTurnAndTwoInTurn) {
  EagerGuard eager;
  const Trace t1 = dense(3, 5, 4), t2 = dense(2, 7, 6), t3 = dense(4, 3, 5);
  const FusedPlan p1(t1), p2(t2), p3(t3);
  for (uint64_t i = 0; i < 3; ++i) {
    expect_run_matches(p1, t1, dense_inputs(3, 5, 4, 10 * i + 1));
    expect_run_matches(p2, t2, dense_inputs(2, 7, 6, 10 * i + 4));
    expect_run_matches(p3, t3, dense_inputs(4, 3, 5, 10 * i + 7));
  }
  for (uint64_t i = 0; i < 3; ++i) {
    expect_run_matches(p3, t3, dense_inputs(4, 3, 5, 10 * i + 2));
    expect_run_matches(p1, t1, dense_inputs(3, 5, 4, 10 * i + 5));
  }
}

// A kept arena keeps its own tensors bound for the next run, and nothing of
// the run that kept it: its inputs and outputs are freed with their last user.
TEST(ArenaReuse, AKeptArenaHoldsNoInputOrOutput) {
  EagerGuard eager;
  const Trace t = dense(3, 5, 4);
  const FusedPlan plan(t);
  ASSERT_GT(plan.arena_bytes(), 0) << plan.to_string();
  std::vector<std::weak_ptr<Storage>> seen;
  {
    const std::vector<Tensor> in = dense_inputs(3, 5, 4, 1);
    const std::vector<Tensor> out = plan.run(in, {});
    for (const Tensor& x : in) seen.push_back(x.storage());
    for (const Tensor& x : out) seen.push_back(x.storage());
  }
  for (const std::weak_ptr<Storage>& s : seen) EXPECT_TRUE(s.expired());
  expect_run_matches(plan, t, dense_inputs(3, 5, 4, 2));
}

// A plan with no arena shares one buffer with the others like it and takes no
// kept slot: two plans with arenas run in turn with it keep theirs (their
// runs allocate only their outputs, as when they run alone).
TEST(ArenaReuse, PlansWithNoArenaTakeNoKeptSlot) {
  EagerGuard eager;
  const Trace t1 = dense(3, 5, 4), t2 = dense(2, 7, 6);
  Trace t0;
  t0.mark_output(t0.add_node1(op("exp"), {t0.add_input(kFloat32, {5}, {1})}));
  const FusedPlan p0(t0), p1(t1), p2(t2);
  ASSERT_EQ(p0.arena_bytes(), 0) << p0.to_string();
  const std::vector<Tensor> in1 = dense_inputs(3, 5, 4, 1), in2 = dense_inputs(2, 7, 6, 4);
  const std::vector<Tensor> in0 = {testing::random({5}, kFloat32, 7)};
  auto allocations = [](const FusedPlan& p, const std::vector<Tensor>& in) {
    const int64_t before = cpu_memory_stats().allocations;
    p.run(in, {});
    return cpu_memory_stats().allocations - before;
  };
  allocations(p1, in1);
  const int64_t alone = allocations(p1, in1);  // the arena kept from the run before
  for (int i = 0; i < 3; ++i) {
    allocations(p2, in2);
    allocations(p0, in0);
    EXPECT_EQ(allocations(p1, in1), alone);
  }
  expect_run_matches(p0, t0, in0);
}

TEST(ArenaReuse, AnOutputViewingTheArenaKeepsItsValues) {
  EagerGuard eager;
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 6}, {6, 1}), y = t.add_input(kFloat32, {6, 4}, {4, 1});
  const ValueId e = t.add_node1(op("exp"), {x});
  const ValueId tr = t.add_node1(op("transpose"), {e}, {int64_t(0), int64_t(1)});  // a view of an arena value
  t.mark_output(tr);
  t.mark_output(t.add_node1(op("mul"), {tr, y}));
  const FusedPlan plan(t);
  const std::vector<Tensor> in1 = {testing::random({4, 6}, kFloat32, 1), testing::random({6, 4}, kFloat32, 2)};
  const std::vector<Tensor> first = plan.run(in1, {});
  const std::vector<Tensor> expected = interpret(t, in1, {});
  for (uint64_t seed = 3; seed < 6; ++seed)
    plan.run({testing::random({4, 6}, kFloat32, seed), testing::random({6, 4}, kFloat32, seed + 10)}, {});
  for (size_t i = 0; i < first.size(); ++i) testing::expect_tensors_close(first[i], expected[i], 1e-6, 1e-6);
}

}  // namespace
}  // namespace nnvm::trace
