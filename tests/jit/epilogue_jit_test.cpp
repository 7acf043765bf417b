// A matmul's pointwise epilogue as one JIT kernel (trace/group_program.h):
// on every ISA this CPU has and forced portable, against the interpreter's
// reference kernels; an epilogue value also read outside the group, run-time
// Scalars, batched operands with a broadcast bias, and dtypes the JIT does
// not take (the epilogue then runs node by node).
#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "isa_scope.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

const OpDef& op(const char* name) { return find_op(name); }

// The single matmul-epilogue group of `plan`.
const trace::GroupProgram& epilogue_group(const trace::FusedPlan& plan) {
  for (size_t g = 0; g < plan.fusion().groups.size(); ++g)
    if (plan.fusion().groups[g].kind == trace::GroupKind::kMatmulEpilogue) return plan.program(int32_t(g));
  ADD_FAILURE() << "no matmul epilogue group\n" << plan.to_string();
  return plan.program(0);
}

// Runs t's plan under every JIT ISA and portable, with `scalars` (empty: the
// recorded ones), against the interpreter. `jitted`: whether the epilogue
// must have a machine-code path.
void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, bool jitted,
                    const std::vector<Scalar>& scalars = {}) {
  std::vector<Isa> isas = jit_isas();
  isas.push_back(Isa::kPortable);
  for (Isa isa : isas) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    EagerGuard eager;
    const trace::FusedPlan plan(t);
    EXPECT_EQ(epilogue_group(plan).epilogue() != nullptr, jitted) << plan.to_string();
    const std::vector<Tensor> expected = trace::interpret(t, inputs, scalars);
    const std::vector<Tensor> actual = plan.run(inputs, scalars);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "output " << i << " " << shape_str(expected[i].sizes()));
      testing::expect_tensors_close(actual[i], expected[i], 2e-5, 1e-5);
    }
  }
}

// tanh(x·w + bias·alpha) * r, with the pre-activation also an output.
Trace cell(const std::vector<Tensor>& in, Scalar alpha) {
  Trace t;
  const ValueId x = t.add_input(in[0]), w = t.add_input(in[1]), bias = t.add_input(in[2]), r = t.add_input(in[3]);
  const ValueId pre = t.add_node1(op("add"), {t.add_node1(op("matmul"), {x, w}), bias}, {alpha});
  const ValueId y = t.add_node1(op("mul"), {t.add_node1(op("tanh"), {pre}), r});
  t.mark_output(y);
  t.mark_output(pre);
  return t;
}

TEST(EpilogueJit, MatchesTheInterpreterOnEveryIsa) {
  for (const DimVector& mkn : {DimVector{1, 64, 64}, DimVector{7, 33, 19}, DimVector{130, 65, 40}}) {
    SCOPED_TRACE(shape_str(mkn));
    const std::vector<Tensor> in = {testing::random({mkn[0], mkn[1]}, kFloat32, 1),
                                    testing::random({mkn[1], mkn[2]}, kFloat32, 2),
                                    testing::random({mkn[2]}, kFloat32, 3),
                                    testing::random({mkn[0], 1}, kFloat32, 4)};
    const Trace t = cell(in, Scalar(0.25));
    expect_matches(t, in, true);
    expect_matches(t, in, true, {Scalar(-3.0)});  // the Scalar is a run-time argument
  }
}

TEST(EpilogueJit, BatchedMatmulWithABroadcastBias) {
  const std::vector<Tensor> in = {testing::random({3, 5, 8}, kFloat32, 5), testing::random({8, 6}, kFloat32, 6),
                                  testing::random({1, 1, 6}, kFloat32, 7), testing::random({3, 5, 6}, kFloat32, 8)};
  expect_matches(cell(in, Scalar(1)), in, true);
}

TEST(EpilogueJit, Float64RunsTheEpilogueNodeByNode) {
  const std::vector<Tensor> in = {testing::random({4, 9}, kFloat64, 9), testing::random({9, 5}, kFloat64, 10),
                                  testing::random({5}, kFloat64, 11), testing::random({4, 5}, kFloat64, 12)};
  expect_matches(cell(in, Scalar(0.5)), in, false);
}

}  // namespace
}  // namespace nnvm::jit
