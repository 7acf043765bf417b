// The compile pipeline (trace/pipeline.h): compile_plan runs its stages in
// order, and the pipeline log names each with what it changed.
#include <regex>

#include "nnvm/trace/executor.h"
#include "nnvm/trace/pipeline.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

TEST(Pipeline, CompilePlanLogsEachStageInOrder) {
  std::vector<std::string> lines;
  set_pipeline_log([&](const std::string& line) { lines.push_back(line); });
  const Tensor x = testing::random({9, 7}, kFloat32, 1), w = testing::random({7, 5}, kFloat32, 2);
  Trace t;
  const ValueId xv = t.add_input(x), wv = t.add_input(w);
  const ValueId dead = t.add_node1(find_op("exp"), {xv});  // nothing reads it: dce removes it
  (void)dead;
  const ValueId y = t.add_node1(find_op("matmul"), {xv, wv});
  t.mark_output(t.add_node1(find_op("relu"), {t.add_node1(find_op("neg"), {y})}));
  std::shared_ptr<const Plan> plan;
  {
    EagerGuard eager;
    plan = compile_plan(t);
  }
  set_pipeline_log(nullptr);
  ASSERT_EQ(lines.size(), 6u);
  const char* stages[] = {"passes", "fuse", "lower", "schedule", "plan_memory", "plan"};
  for (size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    EXPECT_TRUE(std::regex_search(lines[i], std::regex(std::string("^pipeline [0-9a-f]{16} ") + stages[i] +
                                                       " +[0-9.]+ ms  ")));
  }
  for (const std::string& line : lines)  // one compile: named by the trace that turned hot
    EXPECT_EQ(line.substr(0, 26), lines[0].substr(0, 26));
  EXPECT_NE(lines[0].find("4 -> 3 nodes, dce 1"), std::string::npos);
  EXPECT_NE(lines[1].find("3 nodes into 1 groups (1 matmul_epilogue)"), std::string::npos);
  EXPECT_NE(lines[2].find("1 groups (x86 1)"), std::string::npos);
  // the plan computes what the trace does
  EagerGuard eager;
  const Tensor expected = (-x.matmul(w)).relu();
  testing::expect_tensors_close(plan->run({x, w}, {})[0], expected, 1e-5, 1e-5);
}

TEST(Pipeline, FusedPlanFromPartsEqualsFusedPlanFromTrace) {
  const Tensor x = testing::random({33, 4}, kFloat32, 3);
  Trace t;
  const ValueId xv = t.add_input(x);
  t.mark_output(t.add_node1(find_op("sum"), {t.add_node1(find_op("tanh"), {xv})}, {DimVector{1}, false, kFloat32}));
  EagerGuard eager;
  const FusedPlan a(t), b(plan_stages(t));
  EXPECT_EQ(a.to_string(), b.to_string());
  testing::expect_tensors_close(a.run({x}, {})[0], b.run({x}, {})[0], 0, 0);
}

}  // namespace
}  // namespace nnvm::trace
