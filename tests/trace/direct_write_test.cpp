// Outputs computed straight into the tensors they are bound for (Plan::run_into):
// an in-place update of a materialised tensor writes its memory directly when
// every read of the old contents comes first, and falls back to a fresh
// output otherwise; either way the values are eager's. And the memory this
// saves: a training step's traced peak against eager's.
#include <cmath>

#include "nnvm/core/mode.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_traced_equals_eager;

using testing::expect_tensors_close;

const OpDef& op(const char* name) { return find_op(name); }

struct Written {
  std::vector<Tensor> results;
  WrittenFlags written;
};

// Runs `t`'s plan with `targets`, after computing what the interpreter gives
// on the same inputs (before any target changes).
Written run_against_interpreter(const Trace& t, const std::vector<Tensor>& inputs, const std::vector<Tensor>& targets) {
  EagerGuard eager;
  std::vector<Tensor> expected = interpret(t, inputs);
  for (Tensor& e : expected) e = e.clone();
  const FusedPlan plan(t);
  Written w;
  std::vector<Tensor> borrowed = inputs;
  plan.run_into(absl::MakeSpan(borrowed), {}, targets, w.written, w.results);
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_TRUE(borrowed[i].is_same(inputs[i])) << "input " << i << " given back";
  EXPECT_EQ(w.results.size(), expected.size());
  for (size_t i = 0; i < expected.size() && i < w.results.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "output " << i << "\n" << plan.to_string());
    expect_tensors_close(w.results[i], expected[i]);
  }
  return w;
}

TEST(DirectWrite, UpdateWritesItsTargetInPlace) {
  EagerGuard eager;
  const Tensor p = testing::random({64, 90}, kFloat32, 1), g = testing::random({64, 90}, kFloat32, 2);
  Trace t;
  const ValueId pv = t.add_input(p), gv = t.add_input(g);
  // exp joins the update's tiled loop: the add reads p at the elements it writes
  t.mark_output(t.add_node1(op("add"), {pv, t.add_node1(op("exp"), {gv})}, {Scalar(-0.1)}));
  void* memory = p.storage()->data();
  const Written w = run_against_interpreter(t, {p, g}, {p});
  ASSERT_EQ(w.written, WrittenFlags{1});
  EXPECT_EQ(w.results[0].storage()->data(), memory);
  expect_tensors_close(p, testing::random({64, 90}, kFloat32, 1) - g.exp() * 0.1);
}

TEST(DirectWrite, MatmulEpilogueWritesATargetAtAStorageOffset) {
  EagerGuard eager;
  const Tensor big = testing::random({40, 24}, kFloat32, 14);
  const Tensor a = testing::random({20, 9}, kFloat32, 15), b = testing::random({9, 24}, kFloat32, 16);
  const Tensor p = big.narrow(0, 5, 20);  // rows 5..24: contiguous, at offset 120
  const Tensor before = big.clone();
  Trace t;
  const ValueId pv = t.add_input(p), av = t.add_input(a), bv = t.add_input(b);
  // the add is the matmul's epilogue: that group runs node by node
  t.mark_output(t.add_node1(op("add"), {pv, t.add_node1(op("matmul"), {av, bv})}, {Scalar(-0.5)}));
  const Written w = run_against_interpreter(t, {p, a, b}, {p});
  ASSERT_EQ(w.written, WrittenFlags{1});
  expect_tensors_close(big.narrow(0, 0, 5), before.narrow(0, 0, 5), 0, 0);
  expect_tensors_close(big.narrow(0, 25, 15), before.narrow(0, 25, 15), 0, 0);
}

TEST(DirectWrite, UpdatedValueReadLaterInTheSameTrace) {
  EagerGuard eager;
  const Tensor p = testing::random({30, 40}, kFloat32, 3), g = testing::random({30, 40}, kFloat32, 4);
  Trace t;
  const ValueId pv = t.add_input(p), gv = t.add_input(g);
  const ValueId updated = t.add_node1(op("add"), {pv, gv}, {Scalar(-0.5)});
  t.mark_output(updated);
  t.mark_output(t.add_node1(op("sum"), {t.add_node1(op("mul.Scalar"), {updated}, {Scalar(2.0)})},
                            {DimVector{1}, false, kFloat32}));
  const Written w = run_against_interpreter(t, {p, g}, {p, Tensor()});
  EXPECT_EQ(w.written, (WrittenFlags{1, 0}));
}

TEST(DirectWrite, OldContentsReadAfterTheUpdateKeepTheirOwnOutput) {
  EagerGuard eager;
  // r reads the update and, through another input, the old p: the update may
  // not overwrite p before r runs.
  const Tensor p = testing::random({16, 24}, kFloat32, 5), g = testing::random({16, 24}, kFloat32, 6);
  Trace t;
  const ValueId pv = t.add_input(p), gv = t.add_input(g), old = t.add_input(p);
  const ValueId updated = t.add_node1(op("add"), {pv, gv}, {Scalar(-0.5)});
  t.mark_output(updated);
  const ValueId m = t.add_node1(op("matmul"), {updated, t.add_node1(op("transpose"), {old}, {int64_t(0), int64_t(1)})});
  t.mark_output(m);
  const Written w = run_against_interpreter(t, {p, g, p}, {p, Tensor()});
  EXPECT_EQ(w.written, (WrittenFlags{0, 0}));
}

TEST(DirectWrite, AnotherReadOfTheTargetInTheSameLoopKeepsItsOwnOutput) {
  EagerGuard eager;
  // Both the update and q read p in one tiled loop: q must see the old p.
  const Tensor p = testing::random({50, 70}, kFloat32, 7), g = testing::random({50, 70}, kFloat32, 8);
  Trace t;
  const ValueId pv = t.add_input(p), gv = t.add_input(g);
  const ValueId e = t.add_node1(op("exp"), {gv});
  t.mark_output(t.add_node1(op("add"), {pv, e}, {Scalar(-0.1)}));
  t.mark_output(t.add_node1(op("mul"), {e, pv}));
  const Written w = run_against_interpreter(t, {p, g}, {p, Tensor()});
  EXPECT_EQ(w.written, (WrittenFlags{0, 0}));
}

TEST(DirectWrite, NonContiguousOrViewTargetsAreCopiedInto) {
  EagerGuard eager;
  const Tensor p = testing::random({20, 30}, kFloat32, 9), g = testing::random({20, 30}, kFloat32, 10);
  const Tensor pt = p.transpose(0, 1).contiguous().transpose(0, 1);  // the same values, column-major
  Trace t;
  const ValueId pv = t.add_input(pt), gv = t.add_input(g);
  t.mark_output(t.add_node1(op("add"), {pv, gv}, {Scalar(1)}));
  const Written w = run_against_interpreter(t, {pt, g}, {pt});
  EXPECT_EQ(w.written, WrittenFlags{0});
}

std::vector<Tensor> parameter_and_grad() {
  return {testing::random({12, 20}, kFloat32, 11), testing::random({12, 20}, kFloat32, 12),
          testing::random({5, 12}, kFloat32, 13)};
}

TEST(DirectWrite, ParameterReadAfterItsUpdateMatchesEager) {
  expect_traced_equals_eager(parameter_and_grad, [](std::vector<Tensor>& in) {
    Tensor p = in[0];
    const Tensor y = in[2].matmul(p);  // reads the old p
    p.sub_(in[1], 0.25);
    const Tensor z = in[2].matmul(p) + y;  // reads the new p
    return std::vector<Tensor>{p, y, z};
  });
}

TEST(DirectWrite, OldParameterReadByAGroupScheduledAfterTheUpdateMatchesEager) {
  // The update is the gradient's last reader once the sum has run, so it is
  // scheduled before r, which reads the old p: p may not be written early.
  expect_traced_equals_eager(parameter_and_grad, [](std::vector<Tensor>& in) {
    Tensor p = in[0];
    const Tensor grad = in[2].mT().matmul(in[2].matmul(in[1]));
    const Tensor r = p * grad.sum({0});
    p.sub_(grad, 0.25);
    return std::vector<Tensor>{p, r};
  });
}

TEST(DirectWrite, ViewOfTheParameterReadBeforeItsUpdateMatchesEager) {
  expect_traced_equals_eager(parameter_and_grad, [](std::vector<Tensor>& in) {
    Tensor p = in[0];
    const Tensor column_sums = p.narrow(1, 3, 7).mT().sum({1});  // a view of the old p, at another layout
    const Tensor head = p.narrow(0, 2, 4) * 3.0;
    p.add_(in[1].exp(), -0.5);
    return std::vector<Tensor>{p, column_sums, head};
  });
}

// A parameter that does not start its storage (a slice of a flat buffer):
// the trace reads views of a value through as_strided and updates them with
// strided_update, both counting offsets from the value's start, so such a
// value may not be computed straight into the parameter.
TEST(DirectWrite, TargetAtAStorageOffsetReadAndUpdatedThroughViewsMatchesEager) {
  const auto sliced_parameter = [] {
    Tensor flat = testing::random({1 + 6 * 8}, kFloat32, 21);
    return std::vector<Tensor>{flat.narrow(0, 1, 6 * 8).view({6, 8}), testing::random({6, 8}, kFloat32, 22)};
  };
  expect_traced_equals_eager(sliced_parameter, [](std::vector<Tensor>& in) {
    const Tensor p = in[0];
    const Tensor next = p * 2.0 + in[1];
    const Tensor row_sums = next.narrow(0, 1, 3).sum({1});  // a view of the new value, read in the trace
    p.copy_(next);
    return std::vector<Tensor>{p, row_sums};
  });
  expect_traced_equals_eager(sliced_parameter, [](std::vector<Tensor>& in) {
    const Tensor p = in[0];
    const Tensor next = p - in[1];
    next.narrow(1, 2, 3).add_(100.0);  // an update through a view of the new value
    p.copy_(next);
    return std::vector<Tensor>{p};
  });
}

TEST(DirectWrite, UpdateBeforeAFailingIndexCheckHappensOnce) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  // The gather's index is out of range: its kernel throws while the plan runs,
  // and the recorder reruns the trace from its inputs, keeping what does not
  // depend on the gather. p must still hold its old contents then.
  for (int run = 1; run <= 3; ++run) {
    SCOPED_TRACE(::testing::Message() << "traced run " << run);
    Tensor p, g, want, index;
    {
      EagerGuard eager;
      p = testing::random({6, 8}, kFloat32, 17);
      g = testing::random({6, 8}, kFloat32, 18);
      want = p - g * 0.5;
      index = full({6, 2}, 99, kInt64);
    }
    p.sub_(g, 0.5);
    const Tensor picked = g.gather(1, index);
    testing::expect_error([] { mark_step(); }, {"gather"});
    expect_tensors_close(p, want);
  }
}

// An integer division checks its divisor: a hot plan must not drop an
// unused one (dead-code elimination) nor write the parameter update before
// it runs, or the error would vanish or the update happen twice.
TEST(DirectWrite, AnUnusedIntegerDivisionByZeroInAHotPlanStillThrowsAfterOneUpdate) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  Tensor p, g, numerator;
  {
    EagerGuard eager;
    p = testing::random({6, 8}, kFloat32, 17);
    g = testing::random({6, 8}, kFloat32, 18);
    numerator = full({6}, 7, kInt64);
  }
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE(::testing::Message() << "traced run " << run);
    Tensor want, divisor;
    {
      EagerGuard eager;
      want = p - g * 0.5;
      divisor = full({6}, run < 3 ? 2 : 0, kInt64);
    }
    p.sub_(g, 0.5);
    (numerator.div(divisor, "floor") + numerator % divisor).numel();  // results unused
    if (run < 3) {
      mark_step();
    } else {
      testing::expect_error([] { mark_step(); }, {"division by zero"});
    }
    expect_tensors_close(p, want);
  }
  // A float division by zero is inf, no error: an unused one is dropped.
  const Tensor x = testing::random({6}, kFloat32, 19);
  for (int run = 0; run < 3; ++run) {
    (x / zeros({6})).numel();
    mark_step();
  }
}

// Peak bytes the allocator held during one MLP training step above what it
// held before it (parameters, data), after warm-up steps (the traced ones
// turn the step's trace hot).
int64_t step_peak_above_start(Mode mode) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  manual_seed(0);
  constexpr int64_t kBatch = 64, kIn = 256, kHidden = 1024, kOut = 256;
  auto parameter = [](DimVector shape, int64_t fan_in) {
    Tensor p = randn(shape) * (1.0 / std::sqrt(double(fan_in)));
    p.requires_grad_();
    return p;
  };
  const std::vector<Tensor> params = {parameter({kHidden, kIn}, kIn), parameter({kHidden}, kIn),
                                      parameter({kOut, kHidden}, kHidden), parameter({kOut}, kHidden)};
  const Tensor x = randn({kBatch, kIn}), target = randn({kBatch, kOut});
  auto step = [&] {
    const Tensor y = linear(gelu(linear(x, params[0], params[1])), params[2], params[3]);
    mse_loss(y, target).backward();
    NoGradGuard no_grad;
    for (Tensor p : params) {
      p.sub_(p.grad(), 1e-2);
      p.mutable_grad() = Tensor();
    }
    mark_step();
  };
  for (int warm = 0; warm < 3; ++warm) step();
  CpuCachingAllocator& allocator = CpuCachingAllocator::instance();
  allocator.empty_cache();
  allocator.reset_peak();
  const int64_t start = allocator.stats().bytes_in_use;
  step();
  const int64_t peak = allocator.stats().peak_bytes_in_use - start;
  set_mode(previous);
  return peak;
}

TEST(DirectWrite, TracedTrainingStepPeaksBelowSevenTenthsOfEager) {
  const int64_t eager = step_peak_above_start(Mode::Eager);
  const int64_t traced = step_peak_above_start(Mode::Traced);
  EXPECT_LE(double(traced), 0.7 * double(eager)) << "traced " << traced << " bytes, eager " << eager << " bytes";
}

}  // namespace
}  // namespace nnvm::trace
