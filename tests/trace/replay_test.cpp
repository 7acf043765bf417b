// A hot plan's captured kernel calls (trace/replay.h, FusedPlan::replay): the
// recorder's flush of a trace that repeats a compiled entry with the plan's
// own Scalars, every output a lazy tensor, calls the kernels straight with
// this run's operand addresses. Each test checks the replays against eager
// mode, and against the executor's run of the same inputs bit for bit.
#include <thread>

#include <gtest/gtest.h>

#include "../jit/isa_scope.h"
#include "nnvm/nnvm.h"
#include "nnvm/trace/recorder.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_tensors_close;
using testing::random;

class Replay : public ::testing::Test {
 protected:
  void SetUp() override {
    if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
    mark_step();
  }
};

int64_t replays() { return trace::recorder_stats().flushes_replayed; }

// Whether this process replays at all: a JIT ISA, plans compiled by the second sighting.
bool replays_expected() { return jit::active_isa() != jit::Isa::kPortable && knobs().hot <= 2; }

std::vector<float> bits(const Tensor& t) { return t.to_vector<float>(); }

// h = tanh(x W + h U + b) and |h|, as an RNN step: one GEMM group with its
// epilogue, one reduction; x a row of xs (a view at another offset each step).
struct Cell {
  Tensor w = random({16, 16}, kFloat32, 1), u = random({16, 16}, kFloat32, 2), b = random({1, 16}, kFloat32, 3);
  Tensor xs = random({8, 1, 16}, kFloat32, 4);
  std::pair<Tensor, Tensor> step(const Tensor& h, int64_t t) const {
    const Tensor next = (matmul(xs[t], w) + matmul(h, u) + b).tanh();
    return {next, next.norm()};
  }
};

TEST_F(Replay, AHotStepReplaysItsKernelsWithEachStepsOperands) {
  const Cell cell;
  Tensor h = random({1, 16}, kFloat32, 5) * 0.1, he = h;
  const int64_t before = replays();
  for (int64_t t = 0; t < 8; ++t) {
    auto [next, norm] = cell.step(h, t);
    const float got = norm.item<float>();
    EagerGuard eager;
    auto [want, want_norm] = cell.step(he, t);
    expect_tensors_close(next, want);
    EXPECT_NEAR(got, want_norm.item<float>(), 1e-5 * std::abs(got)) << "step " << t;
    h = next;
    he = want;
  }
  if (replays_expected()) {
    EXPECT_GE(replays() - before, 4);
  }
}

TEST_F(Replay, AReplayHasTheExecutorsBits) {
  const Cell cell;
  const Tensor h = random({1, 16}, kFloat32, 6);
  mark_step();
  // The same inputs each time: a run of the compiled plan through the
  // executor captures its calls, the later ones replay them; every result
  // the same bits.
  std::vector<std::vector<float>> results;
  const int64_t before = replays();
  for (int k = 0; k < 6; ++k) {
    auto [next, norm] = cell.step(h, 3);
    norm.item<float>();
    results.push_back(bits(next));
    results.back().push_back(norm.item<float>());
  }
  if (replays_expected()) {
    EXPECT_GE(replays() - before, 3);
  }
  // Run 0 is cold (the reference kernels), run 1 compiles; from run 2 on
  // (NNVM_HOT up to 3) every run is the compiled plan's.
  for (size_t k = 3; k < results.size(); ++k) EXPECT_EQ(results[k], results[2]) << "run " << k;
}

// Row-wise kernels: softmax of a layer norm with and without its affine
// parameters, over rows of a larger tensor (each step's at another offset).
TEST_F(Replay, RowwiseKernelsReplayWithEachStepsRows) {
  const Tensor xs = random({6, 5, 33}, kFloat32, 13), w = random({33}, kFloat32, 14), b = random({33}, kFloat32, 15);
  mark_step();
  auto step = [&](int64_t t) {
    const Tensor x = xs[t];
    return std::vector<Tensor>{softmax(layer_norm(x, {33}, w, b), -1), rms_norm(x, {33}, w).log_softmax(-1),
                               layer_norm(x, {33}, {}, b)};
  };
  std::vector<std::vector<float>> first;  // the compiled plan's results per t, through the executor
  const int64_t before = replays();
  for (int round = 0; round < 3; ++round) {
    for (int64_t t = 0; t < 6; ++t) {
      const std::vector<Tensor> got = step(t);
      mark_step();
      std::vector<Tensor> want;
      {
        EagerGuard eager;
        want = step(t);
      }
      std::vector<float> all;
      for (size_t k = 0; k < got.size(); ++k) {
        expect_tensors_close(got[k], want[k]);
        for (float v : bits(got[k])) all.push_back(v);
      }
      if (round == 1) first.push_back(all);
      if (round == 2) {
        EXPECT_EQ(all, first[size_t(t)]) << "step " << t;
      }
    }
  }
  if (replays_expected()) {
    EXPECT_GE(replays() - before, 6);
  }
}

TEST_F(Replay, AConstantOutputIsNotReplayed) {
  // Folded to constants: no kernel computes the outputs, so no call could.
  const Tensor a = random({5}, kFloat32, 7);
  for (int k = 0; k < 5; ++k) {
    const Tensor c = full({3}, 2.0) + 1;
    const Tensor y = (a * 2).exp();
    mark_step();
    EXPECT_EQ(bits(c), std::vector<float>(3, 3.f));
    expect_tensors_close(y, [&] {
      EagerGuard eager;
      return (a * 2).exp();
    }());
  }
}

TEST_F(Replay, AnUpdateOfAMaterialisedTensorRunsTheExecutor) {
  Tensor p = random({32}, kFloat32, 8), pe = p.clone();
  const Tensor g = random({32}, kFloat32, 9);
  const int64_t before = replays();
  for (int k = 0; k < 5; ++k) {
    p.sub_(g * 0.5);
    mark_step();
    EagerGuard eager;
    pe.sub_(g * 0.5);
  }
  EXPECT_EQ(replays(), before);
  EXPECT_EQ(bits(p), bits(pe));
}

TEST_F(Replay, AGroupOnReferenceKernelsIsNotReplayed) {
  // gather runs its reference kernel (it checks its indices): the plan declines.
  const Tensor a = random({6, 8}, kFloat32, 10), index = full({6, 2}, 3, kInt64);
  const int64_t before = replays();
  for (int k = 0; k < 5; ++k) {
    const Tensor y = a.gather(1, index).exp();
    mark_step();
    expect_tensors_close(y, [&] {
      EagerGuard eager;
      return a.gather(1, index).exp();
    }());
  }
  EXPECT_EQ(replays(), before);
}

TEST_F(Replay, AnotherIsaRunsTheExecutor) {
  const std::vector<jit::Isa> isas = jit::jit_isas();
  if (isas.empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  const Cell cell;
  const Tensor h = random({1, 16}, kFloat32, 11);
  std::vector<float> first;
  {
    const jit::IsaGuard isa(isas[0]);
    for (int k = 0; k < 4; ++k) first = bits(cell.step(h, 1).first);
  }
  const jit::IsaGuard portable(jit::Isa::kPortable);
  const int64_t before = replays();
  for (int k = 0; k < 3; ++k) expect_tensors_close(cell.step(h, 1).first, [&] {
      EagerGuard eager;
      return cell.step(h, 1).first;
    }());
  EXPECT_EQ(replays(), before);
}

TEST_F(Replay, TwoThreadsReplayOnePlanAtOnce) {
  const Cell cell;
  const Tensor hs = random({8, 1, 16}, kFloat32, 12);
  mark_step();  // the weights are this thread's lazy tensors until then
  // Each thread steps from rows of hs in its own order: views at other offsets.
  auto run = [&](int64_t stride, std::vector<std::vector<float>>* out) {
    for (int64_t k = 0; k < 200; ++k) {
      const int64_t t = k * stride % 8;
      out->push_back(bits(cell.step(hs[t], t).first));
    }
  };
  std::vector<std::vector<float>> a, b, want_a, want_b;
  int64_t replayed_a = 0, replayed_b = 0;
  auto counted = [&](int64_t stride, std::vector<std::vector<float>>* out, int64_t* replayed) {
    const int64_t before = replays();  // the thread's own count
    run(stride, out);
    *replayed = replays() - before;
  };
  std::thread ta(counted, 1, &a, &replayed_a), tb(counted, 3, &b, &replayed_b);
  ta.join();
  tb.join();
  if (replays_expected()) {
    EXPECT_GE(replayed_a, 100);
    EXPECT_GE(replayed_b, 100);
  }
  {
    EagerGuard eager;
    run(1, &want_a);
    run(3, &want_b);
  }
  ASSERT_EQ(a.size(), want_a.size());
  ASSERT_EQ(b.size(), want_b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    expect_tensors_close(tensor(a[k]), tensor(want_a[k]));
    expect_tensors_close(tensor(b[k]), tensor(want_b[k]));
  }
}

}  // namespace
}  // namespace nnvm
