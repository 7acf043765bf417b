// How the recorder turns materialised tensors into trace inputs: once per
// tensor and layout, whether the trace reads a few (a scan) or many (a hash
// map, switched to mid-trace), as they were when recorded.
#include "nnvm/trace/recorder.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

// Sums n materialised tensors, then reads the first few again (after the
// switch to the map when n is large) and one of them at a new layout.
TEST(RecorderInputs, EachTensorIsOneInputWhetherFewOrMany) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  for (int64_t n : {3, 16, 17, 40}) {
    SCOPED_TRACE(n);
    std::vector<Tensor> xs;
    for (int64_t i = 0; i < n; ++i) xs.push_back(testing::random({4, 4}, kFloat32, uint64_t(i + 1)));
    auto program = [&] {
      Tensor s = xs[0];
      for (int64_t i = 1; i < n; ++i) s = s + xs[size_t(i)];
      for (int64_t i = 0; i < 3; ++i) s = s * xs[size_t(i)];
      return s + xs[1].mT();  // the same tensor at another layout: an input of its own
    };
    Tensor expected;
    {
      EagerGuard eager;
      expected = program();
    }
    mark_step();
    size_t inputs = 0;
    set_flush_observer([&](const Trace& t) { inputs = t.inputs().size(); });
    const Tensor actual = program();
    mark_step();
    set_flush_observer(nullptr);
    EXPECT_EQ(inputs, size_t(n) + 1);
    testing::expect_tensors_close(actual, expected, 1e-6, 1e-6);
  }
}

// A program may re-point a tensor between the op that reads it and the flush
// (Module::to, set_data): the trace reads what the tensor was when recorded,
// and an op recorded after reads what it is now. Three rounds: cold and hot.
TEST(RecorderInputs, ATensorRepointedBeforeTheFlushIsReadAsRecorded) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    Tensor x = testing::random({3, 4}, kFloat32, 1);
    const Tensor other = testing::random({2, 5}, kFloat64, 2);
    Tensor before, after;
    {
      EagerGuard eager;
      before = x * 2 + 1;
      after = other * 3;
    }
    mark_step();
    const Tensor y = x * 2 + 1;
    x.set_data(other);
    Tensor reuse;  // were x's old memory freed, the next tensor of its size would take it
    {
      EagerGuard eager;
      reuse = full({3, 4}, 7.0);
    }
    const Tensor z = x * 3;
    testing::expect_tensors_close(y, before, 0, 0);
    testing::expect_tensors_close(z, after, 0, 0);
  }
}

// A tensor re-pointed by editing its TensorImpl (not through set_data): the
// ops of the trace that read it fail with an nnvm::Error, the others keep
// their values, and nothing reads memory that may be gone.
TEST(RecorderInputs, ATensorEditedBehindTheTracesBackFailsItsReaders) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  for (int round = 0; round < 3; ++round) {  // cold and hot
    SCOPED_TRACE(round);
    Tensor x = testing::random({3, 4}, kFloat32, 1);
    const Tensor w = testing::random({3, 4}, kFloat32, 2);
    const Tensor view = x[0];  // keeps x's memory alive for the test's own check
    mark_step();
    const Tensor y = x * 2;
    const Tensor z = w * 2;
    x.impl()->storage = testing::random({3, 4}, kFloat32, 3).storage();
    EXPECT_THROW(y.to_vector<float>(), Error);
    EagerGuard eager;
    testing::expect_tensors_close(z, w * 2, 0, 0);
  }
}

}  // namespace
}  // namespace nnvm::trace
