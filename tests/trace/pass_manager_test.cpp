// The pass pipeline: passes run in order with per-pass statistics, user
// passes sit beside built-in ones, and the verifier names the pass that
// broke the IR.
#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/pass_manager.h"
#include "nnvm/trace/passes/constant_fold.h"
#include "nnvm/trace/passes/cse.h"
#include "nnvm/trace/passes/dce.h"
#include "nnvm/trace/passes/simplify.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_error;
using testing::expect_tensors_close;

const OpDef& op(const char* name) { return find_op(name); }

// exp(neg(neg(x)) * 1) + exp(x) * full(2) ...: every built-in pass has work
Trace redundant_program() {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {3, 4}, {4, 1});
  const ValueId n = t.add_node1(op("neg"), {t.add_node1(op("neg"), {x})});
  // the Scalars are compile-time values, as a pass would make them: value rules may read them
  constexpr ScalarBinding fixed = ScalarBinding::kCompileTime;
  const ValueId e1 = t.add_node1(op("exp"), {t.add_node1(op("mul.Scalar"), {n}, {Scalar(1.0)}, fixed)});
  const ValueId e2 = t.add_node1(op("exp"), {x});
  const ValueId one = t.add_node1(op("full"), {}, {DimVector{4}, kFloat32, Scalar(1.0)}, fixed);
  const ValueId two = t.add_node1(op("mul.Scalar"), {one}, {Scalar(2.0)}, fixed);
  const ValueId s = t.add_node1(op("add"), {e1, e2}, {Scalar(1)});
  t.mark_output(t.add_node1(op("mul"), {s, two}));
  return t;
}

PassManager standard_passes() {
  PassManager pm;
  pm.verify_each_pass = true;
  pm.add("constant_fold", [](Trace& t) { return constant_fold(t); })
      .add("simplify", [](Trace& t) { return simplify(t); })
      .add("cse", cse)
      .add("dce", dce);
  return pm;
}

TEST(PassManager, RunsPassesInOrderWithStatistics) {
  Trace t = redundant_program();
  const Tensor x = testing::random({3, 4}, kFloat32, 11);
  const Tensor before = interpret(t, {x})[0];
  PassManager pm = standard_passes();
  std::vector<std::string> seen;
  pm.add("count_nodes", [&](Trace& tr) {  // a user's pass: sees the trace after the built-in ones
    seen.push_back(std::to_string(tr.nodes().size()));
    return 0;
  });
  const std::vector<PassStats> stats = pm.run(t);
  ASSERT_EQ(stats.size(), 5u);
  const char* names[] = {"constant_fold", "simplify", "cse", "dce", "count_nodes"};
  for (size_t i = 0; i < stats.size(); ++i) EXPECT_EQ(stats[i].name, names[i]);
  EXPECT_EQ(stats[0].changes, 2);  // full, mul.Scalar
  EXPECT_EQ(stats[0].nodes_before - stats[0].nodes_after, 2);
  EXPECT_EQ(stats[1].changes, 2);  // neg(neg(x)), x * 1
  EXPECT_EQ(stats[2].changes, 1);  // exp(x) twice
  EXPECT_EQ(stats[3].changes, stats[3].nodes_before - stats[3].nodes_after);
  for (const PassStats& s : stats) EXPECT_GE(s.seconds, 0);
  EXPECT_EQ(seen, std::vector<std::string>{std::to_string(t.nodes().size())});
  EXPECT_EQ(t.nodes().size(), 3u) << t.to_string();  // exp, add, mul
  expect_tensors_close(interpret(t, {x})[0], before, 0, 0);
  EXPECT_NE(pm.stats_to_string().find("simplify"), std::string::npos) << pm.stats_to_string();
  pm.run(t);  // a second run finds nothing left and records its own statistics
  EXPECT_EQ(pm.stats().size(), 10u);
  EXPECT_EQ(pm.stats()[5].changes + pm.stats()[6].changes + pm.stats()[7].changes + pm.stats()[8].changes, 0);
}

// y = neg(exp(x)) with a second input of another shape
Trace two_shapes() {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4}, {1});
  t.add_input(kFloat32, {2}, {1});
  t.mark_output(t.add_node1(op("neg"), {t.add_node1(op("exp"), {x})}));
  return t;
}

// A user's pass with a bug: it forwards exp's uses to a value of another shape.
int broken_forward(Trace& t) {
  std::vector<ValueId> replace(t.values().size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = ValueId(v);
  replace[size_t(t.nodes()[0].outputs[0])] = t.inputs()[1];
  t.rewrite(std::vector<bool>(t.nodes().size(), true), replace);
  return 1;
}

TEST(PassManager, VerifierNamesTheBrokenPass) {
  Trace t = two_shapes();
  verify(t);
  PassManager pm = standard_passes();
  pm.add("broken_forward", broken_forward);
  expect_error([&] { pm.run(t); }, {"pass 'broken_forward' broke the trace", "node 1 (neg)", "float32[4]", "float32[2]"});
  // the passes before it ran and were recorded; the broken one was not
  ASSERT_EQ(pm.stats().size(), 4u);
  // without verification the bug goes unnoticed by the pipeline
  Trace quiet = two_shapes();
  PassManager unchecked;
  unchecked.verify_each_pass = false;
  unchecked.add("broken_forward", broken_forward);
  unchecked.run(quiet);
  expect_error([&] { verify(quiet); }, {"verify", "node 1 (neg)", "recorded as float32[4]"});
}

TEST(PassManager, VerifierCatchesADtypeChange) {
  Trace cast = two_shapes();
  std::vector<ValueId> r(cast.values().size());
  for (size_t v = 0; v < r.size(); ++v) r[v] = ValueId(v);
  const ValueId other = cast.add_input(kFloat64, {4}, {1});
  r.push_back(other);
  r[size_t(cast.nodes()[0].outputs[0])] = other;
  cast.rewrite({true, true}, r);
  expect_error([&] { verify(cast); }, {"verify", "node 1 (neg)", "float64[4]"});
}

}  // namespace
}  // namespace nnvm::trace
