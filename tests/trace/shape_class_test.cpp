// Programs whose sizes change from run to run (docs/TRACE.md "Shape
// classes"): a batch size, a sequence length, a slice's length. Traced mode
// computes what eager mode computes, outputs, gradients and updated
// parameters alike, and once a program's shape class has been seen `hot`
// times (NNVM_HOT) every new size runs a compiled plan from its first
// sight: no flush runs the interpreter. Size 1 is a class of its own.
#include <cmath>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nnvm/nnvm.h"
#include "nnvm/trace/kernel_cache.h"
#include "nnvm/trace/recorder.h"
#include "reference.h"

namespace nnvm::testing {
namespace {

// What one run leaves: its outputs, then its parameters after the update.
using Program = std::function<std::vector<Tensor>(int64_t size)>;

Tensor parameter(IntArrayRef shape, uint64_t seed) {
  Tensor p = random(shape, kFloat32, seed, -0.5, 0.5);
  p.requires_grad_();
  return p;
}

// p -= 0.1 p.grad, each parameter; returns them.
std::vector<Tensor> sgd(std::vector<Tensor> params) {
  NoGradGuard no_grad;
  for (Tensor& p : params) p.sub_(p.grad(), 0.1);
  return params;
}

// An MLP training step over a batch of `batch` rows, its parameters fresh.
std::vector<Tensor> mlp_step(int64_t batch) {
  Tensor w1 = parameter({24, 10}, 1), b1 = parameter({24}, 2), w2 = parameter({6, 24}, 3), b2 = parameter({6}, 4);
  const Tensor x = random({batch, 10}, kFloat32, 10 + uint64_t(batch));
  const Tensor target = random({batch, 6}, kFloat32, 20 + uint64_t(batch));
  const Tensor y = linear(gelu(linear(x, w1, b1)), w2, b2);
  const Tensor loss = mse_loss(y, target);
  loss.backward();
  std::vector<Tensor> out = {loss.detach(), y.detach()};
  for (const Tensor& p : sgd({w1, b1, w2, b2})) out.push_back(p.detach());
  return out;
}

// Self-attention over `length` positions of 2 sequences, with a layer norm,
// a reshape to [2 * length, 8] and a softmax cross-entropy over its rows.
std::vector<Tensor> attention_step(int64_t length) {
  Tensor wq = parameter({8, 8}, 5), wo = parameter({5, 8}, 6);
  const Tensor x = random({2, length, 8}, kFloat32, 30 + uint64_t(length));
  const Tensor h = layer_norm(x, {8});
  const Tensor q = matmul(h, wq);
  const Tensor scores = softmax(matmul(q, h.transpose(1, 2)) * (1.0 / std::sqrt(8.0)), -1);
  const Tensor mixed = matmul(scores, h).reshape({2 * length, 8});
  const Tensor target = randint(0, 5, {2 * length});
  const Tensor loss = cross_entropy(linear(mixed, wo), target);
  loss.backward();
  std::vector<Tensor> out = {loss.detach(), scores.detach()};
  for (const Tensor& p : sgd({wq, wo})) out.push_back(p.detach());
  return out;
}

// Views of symbolic length: a narrow, a cat, a row maximum, a broadcast.
std::vector<Tensor> slices(int64_t n) {
  Tensor w = parameter({n, 3}, 7);
  const Tensor x = random({n, 3}, kFloat32, 40 + uint64_t(n)) * w;
  const Tensor head = x.narrow(0, 0, n - 1), tail = x.narrow(0, 1, n - 1);
  const Tensor both = cat({head - tail, x.amax(1, true) + x}, 0);
  const Tensor loss = (both * both).mean();
  loss.backward();
  return {loss.detach(), both.detach(), sgd({w})[0].detach()};
}

std::vector<Tensor> run(const Program& program, int64_t size, Mode mode) {
  const Mode previous = nnvm::mode();
  set_mode(mode);
  manual_seed(1000 + uint64_t(size));  // a seed of 2 or 3 would be a pinned Scalar (trace/ir.h): another class
  std::vector<Tensor> out = program(size);
  mark_step();
  set_mode(previous);
  return out;
}

struct Case {
  const char* name;
  Program program;
  int64_t smallest = 2;  // below it a size makes some dim 0 or 1: a class of its own
};

class ShapeClasses : public ::testing::TestWithParam<Case> {};

TEST_P(ShapeClasses, NewSizesRunCompiledAndEqualEager) {
  const Program& program = GetParam().program;
  // Sizes the program has not seen; a class is hot after `hot` sightings, so
  // from the (hot+1)-th size on every flush runs compiled. A size that makes
  // a dim 1 is another class.
  const std::vector<int64_t> sizes = {5, 9, 2, 13, 1, 7, 4, 11, 3, 17, 6};
  const int hot = knobs().hot;
  int seen = 0;  // sizes of the class so far
  for (int64_t size : sizes) {
    SCOPED_TRACE(absl::StrCat(GetParam().name, " size ", size));
    const std::vector<Tensor> eager = run(program, size, Mode::Eager);
    const int64_t interpreted = trace::recorder_stats().flushes_interpreted;
    const std::vector<Tensor> traced = run(program, size, Mode::Traced);
    if (size >= GetParam().smallest && seen++ >= hot) {
      EXPECT_EQ(trace::recorder_stats().flushes_interpreted, interpreted);
    }
    ASSERT_EQ(traced.size(), eager.size());
    for (size_t k = 0; k < eager.size(); ++k) expect_tensors_close(traced[k], eager[k], 1e-4, 1e-5);
  }
  // the cache says which sizes became symbolic
  bool named = false;
  for (const ShapeClassStats& c : cache_stats().trace.classes)
    for (const std::string& s : c.symbolic) named |= s.find("symbolic after sizes 5, 9") != std::string::npos;
  EXPECT_TRUE(named);
}

INSTANTIATE_TEST_SUITE_P(Programs, ShapeClasses,
                         ::testing::Values(Case{"mlp_step", mlp_step}, Case{"attention_step", attention_step},
                                           Case{"slices", slices, 3}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// nnvm::cache_stats() is the caches' own statistics.
TEST(CacheStats, PublicStatsAreTheCaches) {
  const CacheStats before = cache_stats();
  run([](int64_t n) { return std::vector<Tensor>{(random({n}, kFloat32, 1).exp() * 3.0).sum()}; }, 3, Mode::Traced);
  const CacheStats after = cache_stats();
  EXPECT_GT(after.trace.hits + after.trace.misses, before.trace.hits + before.trace.misses);
  EXPECT_GE(after.kernels.hits + after.kernels.misses, before.kernels.hits + before.kernels.misses);
  EXPECT_EQ(after.kernels.compiles, trace::global_kernel_cache().stats().compiles);
  EXPECT_EQ(after.trace.entries, trace::global_trace_cache().stats().entries);
  EXPECT_LE(after.trace.recent_misses.size(), trace::kRecentMisses);
}

}  // namespace
}  // namespace nnvm::testing
