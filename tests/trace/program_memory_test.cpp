// Memory the program owns (from_blob) is read when libtorch would read it:
// when the op is recorded, not when its trace runs. Each kind of op reads a
// buffer that is overwritten, unmapped or freed right after the op is
// recorded; its result must be what eager mode computes from the buffer as
// it was (docs/TRACE.md, "Memory the program owns").
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "reference.h"

namespace nnvm {
namespace {

struct Kind {
  const char* name;
  IntArrayRef (*shape)();  // of the program's buffer, viewed contiguously
  std::function<Tensor(const Tensor& blob)> op;
};

IntArrayRef shape_4x6() {
  static const int64_t s[] = {4, 6};
  return s;
}
IntArrayRef shape_1000() {
  static const int64_t s[] = {1000};
  return s;
}

const Tensor& weights() {
  static const Tensor w = testing::random({6, 5}, kFloat32, 7);
  return w;
}

// One op of each kind the recorder can take a materialised input into.
std::vector<Kind> kinds() {
  return {
      {"clone", shape_1000, [](const Tensor& b) { return b.clone(); }},
      {"sum", shape_1000, [](const Tensor& b) { return b.sum(); }},
      {"mul_scalar", shape_4x6, [](const Tensor& b) { return b * 1.0; }},
      {"exp", shape_4x6, [](const Tensor& b) { return b.exp(); }},
      {"add_broadcast", shape_4x6, [](const Tensor& b) { return b + weights().mT()[0]; }},
      {"to_double", shape_4x6, [](const Tensor& b) { return b.to(kFloat64); }},
      {"transposed_contiguous", shape_4x6, [](const Tensor& b) { return b.mT().contiguous(); }},
      {"strided_view", shape_4x6, [](const Tensor& b) { return b.slice(1, 1, 6, 2) * 3; }},
      {"reshape_softmax", shape_4x6, [](const Tensor& b) { return softmax(b.reshape({6, 4}), -1); }},
      {"matmul", shape_4x6, [](const Tensor& b) { return b.matmul(weights()); }},
      {"cat", shape_4x6, [](const Tensor& b) { return cat({b, b * 2}, 0); }},
      {"index_select", shape_4x6,
       [](const Tensor& b) { return b.index_select(0, tensor<int64_t>({3, 0, 3})); }},
      {"copy_into", shape_4x6,
       [](const Tensor& b) {
         Tensor y = zeros({4, 6});
         y.copy_(b);
         return y;
       }},
      {"add_into", shape_4x6,
       [](const Tensor& b) {
         Tensor y = ones({4, 6});
         y.add_(b);
         return y;
       }},
  };
}

std::vector<float> values_for(IntArrayRef shape) {
  std::vector<float> v(size_t(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * float(i % 37) - 3.0f;
  return v;
}

Tensor eager_result(const Kind& k) {
  std::vector<float> v = values_for(k.shape());
  EagerGuard eager;
  return k.op(from_blob(v.data(), k.shape())).clone();
}

// Memory the test can take away: pages of their own, unmapped by release().
class Pages {
 public:
  explicit Pages(size_t bytes) : bytes_(std::max<size_t>(bytes, 1)) {
    data_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(data_, MAP_FAILED);
  }
  ~Pages() { release(); }
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  float* data() const { return static_cast<float*>(data_); }
  void release() {
    if (data_) munmap(data_, bytes_);
    data_ = nullptr;
  }

 private:
  size_t bytes_;
  void* data_;
};

// Rounds 0-2: cold, turning hot, hot (a plan replayed with new inputs).
constexpr int kRounds = 3;

TEST(ProgramMemory, OverwrittenRightAfterTheOpIsNotSeen) {
  for (const Kind& k : kinds()) {
    SCOPED_TRACE(k.name);
    const Tensor expected = eager_result(k);
    for (int round = 0; round < kRounds; ++round) {
      std::vector<float> buf = values_for(k.shape());
      const Tensor y = k.op(from_blob(buf.data(), k.shape()));
      std::fill(buf.begin(), buf.end(), std::numeric_limits<float>::quiet_NaN());
      testing::expect_tensors_close(y, expected, 1e-6, 1e-6);
    }
  }
}

TEST(ProgramMemory, UnmappedRightAfterTheOpIsNotRead) {
  for (const Kind& k : kinds()) {
    SCOPED_TRACE(k.name);
    const Tensor expected = eager_result(k);
    for (int round = 0; round < kRounds; ++round) {
      const std::vector<float> v = values_for(k.shape());
      Pages pages(v.size() * sizeof(float));
      std::copy(v.begin(), v.end(), pages.data());
      const Tensor y = k.op(from_blob(pages.data(), k.shape()));
      pages.release();  // a read of it now faults
      testing::expect_tensors_close(y, expected, 1e-6, 1e-6);
    }
  }
}

// The reproduction: a clone of a vector that goes out of scope
// (AddressSanitizer reports a read of it after it was freed).
TEST(ProgramMemory, ACloneOutlivesItsFreedBuffer) {
  for (int round = 0; round < kRounds; ++round) {
    Tensor t;
    {
      std::vector<float> buf(1000);
      std::iota(buf.begin(), buf.end(), 1.0f);
      t = from_blob(buf.data(), {1000}).clone();
    }
    EXPECT_EQ(t.sum().item<double>(), 500500.0);
  }
}

// A write between two ops that read the buffer is seen by the second only,
// as in eager mode.
TEST(ProgramMemory, AWriteBetweenTwoOpsIsSeenByTheSecondOnly) {
  for (int round = 0; round < kRounds; ++round) {
    std::vector<float> buf = {1, 2, 3};
    const Tensor t = from_blob(buf.data(), {3});
    const Tensor a = t * 2;
    buf[0] = 5;
    const Tensor b = t * 3;
    const Tensor c = a + b;
    buf[1] = 100;
    testing::expect_values(a, {2, 4, 6});
    testing::expect_values(b, {15, 6, 9});
    testing::expect_values(c, {17, 10, 15});
  }
}

// A training loop that wraps each batch's buffer with from_blob, as a
// libtorch data pipeline does; the buffer is refilled for the next batch
// before the step's trace has run. Gradients equal eager mode's.
TEST(ProgramMemory, ABatchBufferRefilledEachStepTrainsAsEagerMode) {
  auto train = [](Mode m) {
    set_mode(m);
    Tensor w = testing::random({6, 3}, kFloat32, 3).requires_grad_();
    std::vector<float> batch(8 * 6);
    std::vector<Tensor> losses;
    for (int step = 0; step < 5; ++step) {
      for (size_t i = 0; i < batch.size(); ++i) batch[i] = std::sin(float(i + 7 * size_t(step)));
      const Tensor x = from_blob(batch.data(), {8, 6});
      const Tensor loss = x.matmul(w).tanh().pow(2).mean();
      loss.backward();
      std::fill(batch.begin(), batch.end(), -1e30f);  // the next batch's garbage
      {
        NoGradGuard no_grad;
        w.sub_(w.grad() * 0.5);
        w.mutable_grad().zero_();
      }
      losses.push_back(loss.detach());
    }
    mark_step();
    losses.push_back(w.detach());
    return losses;
  };
  const Mode before = mode();
  const std::vector<Tensor> eager = train(Mode::Eager);
  const std::vector<Tensor> traced = train(Mode::Traced);
  set_mode(before);
  ASSERT_EQ(eager.size(), traced.size());
  for (size_t i = 0; i < eager.size(); ++i) testing::expect_tensors_close(traced[i], eager[i], 1e-5, 1e-6);
}

}  // namespace
}  // namespace nnvm
