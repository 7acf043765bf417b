// A matmul's pointwise epilogue as one JIT kernel (trace/group_program.h):
// on every ISA this CPU has and forced portable, against the interpreter's
// reference kernels; an epilogue value also read outside the group, run-time
// Scalars, batched operands with a broadcast bias, and dtypes the JIT does
// not take (the epilogue then runs node by node).
#include <algorithm>

#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/jit/x86_backend.h"
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
// recorded ones), against the interpreter, dtypes included. `jitted`: whether
// the epilogue must have a machine-code path, and then that it ran as one on
// each JIT ISA (plans of one group signature share its program, so variants
// accumulate over the ISAs) and not on the portable one.
void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, bool jitted,
                    const std::vector<Scalar>& scalars = {}, double rtol = 2e-5, double atol = 1e-5) {
  std::vector<Isa> isas = jit_isas();
  isas.push_back(Isa::kPortable);
  for (Isa isa : isas) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    EagerGuard eager;
    const trace::FusedPlan plan(t);
    const PointwiseJit* epilogue = epilogue_jit(epilogue_group(plan));
    EXPECT_EQ(epilogue != nullptr, jitted) << plan.to_string();
    const size_t before = epilogue ? epilogue->variant_names().size() : 0;
    const std::vector<Tensor> expected = trace::interpret(t, inputs, scalars);
    const std::vector<Tensor> actual = plan.run(inputs, scalars);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "output " << i << " " << shape_str(expected[i].sizes()));
      EXPECT_EQ(actual[i].dtype(), expected[i].dtype());
      testing::expect_tensors_close(actual[i], expected[i], rtol, atol);
    }
    if (!epilogue) continue;
    const std::vector<std::string> variants = epilogue->variant_names();
    if (isa == Isa::kPortable) {
      EXPECT_EQ(variants.size(), before);
    } else {
      const std::string prefix = std::string(isa_name(isa)) + "-";
      EXPECT_TRUE(std::any_of(variants.begin(), variants.end(), [&](const std::string& v) { return v.rfind(prefix, 0) == 0; }))
          << ::testing::PrintToString(variants);
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

// bias, relu and a mask stored as bool: exact on every ISA.
TEST(EpilogueJit, AMaskOutputIsExact) {
  const std::vector<Tensor> in = {testing::random({33, 20}, kFloat32, 40), testing::random({20, 45}, kFloat32, 41),
                                  testing::random({45}, kFloat32, 42)};
  Trace t;
  const ValueId a = t.add_input(in[0]), b = t.add_input(in[1]), bias = t.add_input(in[2]);
  const ValueId y = t.add_node1(op("add"), {t.add_node1(op("matmul"), {a, b}), bias}, {Scalar(1)});
  t.mark_output(t.add_node1(op("relu"), {y}));
  t.mark_output(t.add_node1(op("le.Scalar"), {y}, {Scalar(0)}));
  expect_matches(t, in, true, {}, 0, 0);
}

TEST(EpilogueJit, BatchedMatmulWithABroadcastBias) {
  const std::vector<Tensor> in = {testing::random({3, 5, 8}, kFloat32, 5), testing::random({8, 6}, kFloat32, 6),
                                  testing::random({1, 1, 6}, kFloat32, 7), testing::random({3, 5, 6}, kFloat32, 8)};
  expect_matches(cell(in, Scalar(1)), in, true);
}

// Products of at least 2^20 multiply-adds take their epilogue inside the
// GEMM, tile by tile as it finishes them (cpu::GemmEpilogue): a transposed
// weight, ragged sizes, a full-size, a per-row and a per-column operand, two
// outputs, a run-time Scalar; and a matmul_sum (two products added).
TEST(EpilogueJit, TiledInsideTheGemmMatchesTheInterpreter) {
  for (const DimVector& mkn : {DimVector{130, 65, 300}, DimVector{257, 40, 129}, DimVector{64, 1024, 33}}) {
    SCOPED_TRACE(shape_str(mkn));
    const std::vector<Tensor> in = {testing::random({mkn[0], mkn[1]}, kFloat32, 21),
                                    testing::random({mkn[2], mkn[1]}, kFloat32, 22),  // read transposed
                                    testing::random({mkn[2]}, kFloat32, 23),
                                    testing::random({mkn[0], mkn[2]}, kFloat32, 24),
                                    testing::random({mkn[0], 1}, kFloat32, 25)};
    Trace t;
    const ValueId x = t.add_input(in[0]), w = t.add_input(in[1]), bias = t.add_input(in[2]);
    const ValueId residual = t.add_input(in[3]), row = t.add_input(in[4]);
    const ValueId wt = t.add_node1(op("transpose"), {w}, {int64_t(0), int64_t(1)});
    const ValueId pre = t.add_node1(op("add"), {t.add_node1(op("matmul"), {x, wt}), bias}, {Scalar(0.5)});
    const ValueId act = t.add_node1(op("tanh"), {pre});
    const ValueId y = t.add_node1(op("add"), {t.add_node1(op("mul"), {act, row}), residual}, {Scalar(1)});
    t.mark_output(y);
    t.mark_output(pre);
    const int64_t before = tiled_epilogue_runs();
    expect_matches(t, in, true);
    expect_matches(t, in, true, {Scalar(-2.0), Scalar(1)});
    if (!jit_isas().empty()) {
      EXPECT_GT(tiled_epilogue_runs(), before);
    }
  }
}

// The same through the public API, traced: the trace turns hot, its plan
// captures the GEMM with its tiled epilogue as one call and replays it with
// each step's new operands; every step equals the eager program's.
TEST(EpilogueJit, TiledEpilogueReplaysInAHotTrace) {
  const Tensor w = testing::random({96, 200}, kFloat32, 31), b = testing::random({96}, kFloat32, 32);
  const int64_t before = tiled_epilogue_runs();
  for (int step = 0; step < 6; ++step) {
    SCOPED_TRACE(step);
    const Tensor x = testing::random({150, 200}, kFloat32, uint64_t(40 + step));
    const Tensor r = testing::random({150, 96}, kFloat32, uint64_t(60 + step));
    auto program = [&] { return gelu(matmul(x, w.t()) + b) * 0.5 + r; };
    Tensor want;
    {
      EagerGuard eager;
      want = program();
    }
    const Tensor got = program();
    mark_step();
    testing::expect_tensors_close(got, want, 2e-5, 1e-5);
  }
  if (!jit_isas().empty() && mode() == Mode::Traced) {
    EXPECT_GT(tiled_epilogue_runs(), before);
  }
}

TEST(EpilogueJit, Float64RunsTheEpilogueNodeByNode) {
  const std::vector<Tensor> in = {testing::random({4, 9}, kFloat64, 9), testing::random({9, 5}, kFloat64, 10),
                                  testing::random({5}, kFloat64, 11), testing::random({4, 5}, kFloat64, 12)};
  expect_matches(cell(in, Scalar(0.5)), in, false);
}

}  // namespace
}  // namespace nnvm::jit
