// The recorder's cursor (trace/recorder.cpp): while a trace repeats the last
// flushed one node for node, ops take their outputs from that trace's nodes
// without shape inference, and a whole repeat skips the signature comparison.
// A program that repeats a trace and then changes one thing must see the
// change: each test runs a base program until the cursor follows it, then a
// variant, and compares both with eager mode.
#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "nnvm/trace/recorder.h"
#include "nnvm/trace/signature.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_tensors_close;
using testing::random;
using Program = std::function<Tensor()>;

class Cursor : public ::testing::Test {
 protected:
  void SetUp() override {
    if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
    mark_step();
  }
};

Tensor eager(const Program& p) {
  EagerGuard eager;
  return p();
}

// Runs p traced and flushes; the result has its value.
Tensor traced(const Program& p) {
  Tensor r = p();
  mark_step();
  return r;
}

trace::RecorderStats stats() { return trace::recorder_stats(); }

// For a test that counts the nodes of one trace: a smaller NNVM_TRACE_CAP
// would split its program into several traces. Restores the cap on exit.
class WholeTraces {
 public:
  WholeTraces() : cap_(trace_cap()) { set_trace_cap(std::max<int64_t>(cap_, 64)); }
  ~WholeTraces() { set_trace_cap(cap_); }
  WholeTraces(const WholeTraces&) = delete;
  WholeTraces& operator=(const WholeTraces&) = delete;

 private:
  int64_t cap_;
};

// Runs `base` until the cursor follows it whole, then `variant` once: both
// must agree with eager mode. Returns how many of the variant's ops the
// cursor gave their outputs.
int64_t check_variant(const Program& base, const Program& variant) {
  for (int k = 0; k < 3; ++k) expect_tensors_close(traced(base), eager(base));
  trace::RecorderStats before = stats();
  const Tensor repeat = traced(base);
  trace::RecorderStats after = stats();
  EXPECT_GT(after.nodes_repeated, before.nodes_repeated) << "the cursor does not follow the base program";
  EXPECT_EQ(after.flushes_repeated, before.flushes_repeated + 1);
  expect_tensors_close(repeat, eager(base));
  // The variant repeats the base when it has the base's signature (or
  // another recent trace's: the values below tell a wrong one).
  std::vector<trace::Trace> flushed;
  trace::set_flush_observer([&](const trace::Trace& t) { flushed.push_back(t); });
  traced(base);
  before = stats();
  const Tensor got = traced(variant);
  after = stats();
  trace::set_flush_observer(nullptr);
  EXPECT_EQ(flushed.size(), 2u);
  if (flushed.size() == 2 && trace::same_signature(flushed[0], flushed[1])) {
    EXPECT_EQ(after.flushes_repeated - before.flushes_repeated, 1);
  }
  const Tensor want = eager(variant);
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(got.sizes(), want.sizes());
  expect_tensors_close(got, want);
  return after.nodes_repeated - before.nodes_repeated;
}

TEST_F(Cursor, ARepeatedTraceIsRecordedFromTheCursorAndFlushedWithoutComparison) {
  const WholeTraces whole;  // it counts one trace's nodes
  const Tensor a = random({16}, kFloat32, 1), b = random({16}, kFloat32, 2);
  const Program p = [&] { return ((a * b + a).exp() - b).relu().sum(); };
  for (int k = 0; k < 3; ++k) traced(p);  // the first flush has a and b's own ops too
  for (int k = 0; k < 3; ++k) {
    const trace::RecorderStats before = stats();
    const Tensor y = traced(p);
    EXPECT_EQ(stats().nodes_repeated - before.nodes_repeated, 6);
    EXPECT_EQ(stats().flushes_repeated - before.flushes_repeated, 1);
    if (knobs().hot <= 2) {  // compiled by now
      EXPECT_EQ(stats().flushes_unbuilt - before.flushes_unbuilt, 1) << "run " << k;
    }
    expect_tensors_close(y, eager(p));
  }
}

// The cache compiles an entry from the sighting that turns it hot, whose
// Scalars may differ from the entry's own trace: an unbuilt repeat of the
// entry (its Scalars, bit for bit) must then bind them, not run the plan's.
TEST_F(Cursor, AnUnbuiltRepeatOfAnEntryCompiledWithOtherScalarsBindsItsOwn) {
  const Tensor a = random({16}, kFloat32, 1);
  mark_step();
  const auto scaled = [&](double s) -> Program { return [&a, s] { return (a * s).exp(); }; };
  // Values no simplification pins (0.5 would be part of the signature).
  traced(scaled(0.3));  // the entry's trace
  traced(scaled(0.7));  // the sighting that compiles it (at NNVM_HOT=2)
  for (int k = 0; k < 3; ++k) {
    const trace::RecorderStats before = stats();
    const Tensor y = traced(scaled(0.3));
    if (knobs().hot <= 2) {
      EXPECT_EQ(stats().flushes_unbuilt - before.flushes_unbuilt, 1) << "run " << k;
    }
    expect_tensors_close(y, eager(scaled(0.3)));
  }
  expect_tensors_close(traced(scaled(0.7)), eager(scaled(0.7)));
}

TEST_F(Cursor, AnUnbuiltRepeatWhosePlanFailsKeepsWhatDoesNotDependOnTheFailure) {
  const WholeTraces whole;  // it counts one trace's nodes
  const Tensor a = random({6, 8}, kFloat32, 1), good = full({6, 2}, 3, kInt64), bad = full({6, 2}, 99, kInt64);
  const Program independent = [&] { return (a * 2.0).exp(); };
  for (int k = 0; k < 4; ++k) {
    const trace::RecorderStats before = stats();
    const Tensor y = independent();
    const Tensor picked = a.gather(1, k < 3 ? good : bad);
    if (k < 3) {
      mark_step();
      expect_tensors_close(picked, eager([&] { return a.gather(1, good); }));
    } else {
      testing::expect_error([] { mark_step(); }, {"gather"});
      if (knobs().hot <= 2) {
        EXPECT_EQ(stats().flushes_unbuilt - before.flushes_unbuilt, 1);
      }
    }
    expect_tensors_close(y, eager(independent));
  }
}

TEST_F(Cursor, AnInputOfAnotherShapeIsInferredAgain) {
  const Tensor a = random({4, 3}, kFloat32, 1), b = random({5, 3}, kFloat32, 2);
  EXPECT_EQ(check_variant([&] { return (a * 2.5).sum({1}); }, [&] { return (b * 2.5).sum({1}); }), 0);
}

TEST_F(Cursor, AnInputOfAnotherDtypeIsInferredAgain) {
  const Tensor a = random({6}, kFloat32, 1), b = random({6}, kFloat64, 2), i = random({6}, kInt32, 3);
  check_variant([&] { return a.exp() + a; }, [&] { return b.exp() + b; });
  check_variant([&] { return a * 3; }, [&] { return i * 3; });
}

TEST_F(Cursor, AnInputWithOtherStridesIsInferredAgain) {
  const Tensor a = random({3, 4}, kFloat32, 1), b = random({4, 3}, kFloat32, 2).t();
  check_variant([&] { return (a + 1.5).cumsum(1); }, [&] { return (b + 1.5).cumsum(1); });
}

TEST_F(Cursor, OtherAttributesAreInferredAgain) {
  const Tensor a = random({3, 4}, kFloat32, 1);
  check_variant([&] { return (a * a).sum({0}); }, [&] { return (a * a).sum({1}); });
  check_variant([&] { return (a * a).sum({1}); }, [&] { return (a * a).sum({1}, true); });
}

TEST_F(Cursor, AnotherOpAtAPositionEndsTheRepeat) {
  const Tensor a = random({8}, kFloat32, 1), b = random({8}, kFloat32, 2);
  EXPECT_EQ(check_variant([&] { return (a * b).exp().sum(); }, [&] { return (a - b).exp().sum(); }), 0);
  // Matching ops after a mismatch do not resume following.
  EXPECT_EQ(check_variant([&] { return (a * b).exp().sum(); }, [&] { return (a * b).tanh().sum(); }), 1);
}

TEST_F(Cursor, AChangedScalarIsUsedNotTheRecordedOne) {
  const Tensor a = random({8}, kFloat32, 1), i = random({8}, kInt64, 2);
  check_variant([&] { return (a * 0.25 + 3.5).sum(); }, [&] { return (a * 0.75 + 3.5).sum(); });
  check_variant([&] { return (a + 1.0).exp(); }, [&] { return (a + 1.5).exp(); });  // a pinned constant, then not
  check_variant([&] { return a.add(a, 2.0); }, [&] { return a.add(a, -2.0); });
  // Another kind of Scalar changes the result's dtype.
  check_variant([&] { return i + 2; }, [&] { return i + 2.5; });
  check_variant([&] { return i * 2; }, [&] { return i * 2.0; });
}

TEST_F(Cursor, TheSameTensorTwiceIsNotTwoTensors) {
  const Tensor a = random({8}, kFloat32, 1), b = random({8}, kFloat32, 2);
  check_variant([&] { return a * b; }, [&] { return a * a; });
  check_variant([&] { return a * a; }, [&] { return a * b; });
  check_variant([&] { return (a + b) * a; }, [&] { return (a + b) * b; });
}

TEST_F(Cursor, AViewInputAtAnotherOffsetReadsItsNewElements) {
  const Tensor xs = random({6, 6}, kFloat32, 1);
  for (int64_t t = 0; t < 4; ++t) {
    const Program p = [&] { return (xs[t] * 2.0).exp(); };
    expect_tensors_close(traced(p), eager(p));
  }
  check_variant([&] { return (xs[1] * 2.0).exp(); }, [&] { return (xs[3] * 2.0).exp(); });
  check_variant([&] { return xs[1] * 2.0; }, [&] { return xs.select(1, 2) * 2.0; });  // other strides
}

TEST_F(Cursor, AViewOfARecordedValueAtAnotherOffsetReadsItsNewElements) {
  const Tensor a = random({4, 6}, kFloat32, 1);
  auto view_of = [&](int64_t row) {
    return [&, row] {
      const Tensor y = a.exp();
      return y[row] * 3.0;
    };
  };
  check_variant(view_of(1), view_of(2));
  check_variant(view_of(2), [&] { return a.exp().narrow(1, 1, 4) * 3.0; });
}

TEST_F(Cursor, APrefixOrAnExtensionOfTheLastTraceIsItsOwnTrace) {
  const WholeTraces whole;  // it counts one trace's nodes
  const Tensor a = random({8}, kFloat32, 1);
  const Program base = [&] { return (a * 1.5).exp().sum(); };
  EXPECT_EQ(check_variant(base, [&] { return (a * 1.5).exp(); }), 2);
  EXPECT_EQ(check_variant(base, [&] { return (a * 1.5).exp().sum() * 2.5; }), 3);
}

TEST_F(Cursor, AnotherLiveIntermediateIsAnotherOutput) {
  const Tensor a = random({8}, kFloat32, 1);
  Tensor kept;
  const Program base = [&] { return (a * 1.5).exp().sum(); };
  check_variant(base, [&] {
    kept = (a * 1.5).exp();
    return kept.sum();
  });
  expect_tensors_close(kept, eager([&] { return (a * 1.5).exp(); }));
}

TEST_F(Cursor, InPlaceUpdatesOfParametersRepeat) {
  Tensor w = random({8}, kFloat32, 1);
  const Tensor g = random({8}, kFloat32, 2);
  Tensor reference = w.clone();
  for (int k = 0; k < 5; ++k) {
    const double lr = 0.1 * (k + 1);
    w.sub_(g * lr);
    mark_step();
    {
      EagerGuard eager;
      reference.sub_(g * lr);
    }
    expect_tensors_close(w, reference);
  }
  const trace::RecorderStats before = stats();
  w.sub_(g * 0.5);
  mark_step();
  EXPECT_EQ(stats().flushes_repeated, before.flushes_repeated + 1);
  reference = eager([&] { return reference - g * 0.5; });
  expect_tensors_close(w, reference);
}

// An op whose input has a pending write at another layout (a view of a
// parameter just updated in place) flushes the trace first; it then starts
// the next trace, and repeats the first node of that trace's entry.
TEST_F(Cursor, AnOpThatFlushesFirstRepeatsTheFirstNodeOfTheNextTrace) {
  Tensor w = random({4, 6}, kFloat32, 1);
  Tensor reference = w.clone();
  const Tensor x = random({6, 4}, kFloat32, 2);
  mark_step();  // w materialised: mul_ records a write into it
  auto step = [](Tensor& p, const Tensor& in, double scale) {
    p.mul_(scale);             // a pending write of p's whole layout
    return (p.t() + in).exp();  // p.t() reads another layout of it: the write runs first
  };
  for (int k = 0; k < 6; ++k) {
    const double scale = 0.9 - 0.05 * k;
    const trace::RecorderStats before = stats();
    const Tensor y = step(w, x, scale);
    const trace::RecorderStats middle = stats();
    mark_step();
    const trace::RecorderStats after = stats();
    EXPECT_EQ(middle.flushes - before.flushes, 1) << "run " << k << ": the write did not flush first";
    if (k >= 3) {  // both traces are recent entries by now
      // add and exp (an in-place op records its node in full: mul_ is not counted)
      EXPECT_EQ(middle.nodes_repeated - before.nodes_repeated, 2) << "run " << k;
      EXPECT_EQ(after.flushes_repeated - before.flushes_repeated, 2) << "run " << k;
    }
    const Tensor want = eager([&] { return step(reference, x, scale); });
    expect_tensors_close(w, reference);
    expect_tensors_close(y, want);
  }
}

// The cursor remembers which tensor had an entry's input layout (by its
// TensorImpl's layout_id) and skips comparing it again: a parameter that
// set_data re-points to other strides between steps must be compared anew.
TEST_F(Cursor, AParameterRepointedToOtherStridesIsComparedAgain) {
  Tensor w = random({3, 4}, kFloat32, 1);
  const Tensor x = random({3, 4}, kFloat32, 2);
  mark_step();
  const Program p = [&] { return (w * 2.0 + x).exp(); };
  auto repeated = [&] {  // how many of p's nodes the cursor gave their outputs
    const trace::RecorderStats before = stats();
    const Tensor y = traced(p);
    const int64_t n = stats().nodes_repeated - before.nodes_repeated;
    expect_tensors_close(y, eager(p));
    return n;
  };
  for (int k = 0; k < 4; ++k) repeated();
  EXPECT_EQ(repeated(), 3) << "the cursor does not follow the program";
  w.set_data(random({4, 3}, kFloat32, 3).t());  // the same shape, column-major
  EXPECT_EQ(w.strides(), IntArrayRef({1, 3}));
  EXPECT_EQ(repeated(), 0) << "w's new strides taken for the old";
  for (int k = 0; k < 3; ++k) repeated();
  EXPECT_EQ(repeated(), 3);
}

TEST_F(Cursor, AnOpThatFailsAfterARepeatStillThrows) {
  const Tensor a = random({4, 3}, kFloat32, 1), b = random({3, 5}, kFloat32, 2), c = random({4, 5}, kFloat32, 3);
  for (int k = 0; k < 3; ++k) traced([&] { return matmul(a, b).exp(); });
  testing::expect_error([&] { traced([&] { return matmul(a, c).exp(); }); }, {"matmul"});
  expect_tensors_close(traced([&] { return matmul(a, b).exp(); }), eager([&] { return matmul(a, b).exp(); }));
}

}  // namespace
}  // namespace nnvm
