// The tracing runtime through the public API: modes, flush triggers, hot
// traces fed with views at new offsets, Scalars as run-time arguments,
// signatures stable across processes, threads, failures, training steps.
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "nnvm/trace/kernel_cache.h"
#include "nnvm/trace/recorder.h"
#include "nnvm/trace/signature.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace nn = nnvm::nn;
namespace optim = nnvm::optim;
using testing::expect_error;
using testing::random;

// These tests are about traced mode; the suite also runs with NNVM_MODE=eager.
class Runtime : public ::testing::Test {
 protected:
  void SetUp() override {
    if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  }
};

bool is_lazy(const Tensor& t) { return !t.storage()->has_memory(); }

int64_t flushes() { return trace::recorder_stats().flushes; }
int64_t compiles() { return trace::global_trace_cache().stats().compiles; }

void expect_same(const Tensor& got, const Tensor& want, double rtol = 1e-6) {
  Tensor w;
  {
    EagerGuard eager;
    w = want.to(kFloat64).contiguous();
  }
  testing::expect_values(got, w.to_vector<double>(), rtol, rtol);
}

TEST_F(Runtime, TracedByDefaultEagerOnRequest) {
  const Tensor x = random({4, 3}, kFloat32, 1);
  mark_step();
  const Tensor y = x * 2 + 1;
  EXPECT_TRUE(is_lazy(y));
  EXPECT_GT(trace::recorder_stats().nodes, 0);
  {
    EagerGuard eager;  // entering it runs what was recorded
    EXPECT_FALSE(is_lazy(y));
    EXPECT_FALSE(is_recording());
    EXPECT_FALSE(is_lazy(x * 3));
  }
  set_mode(Mode::Eager);
  EXPECT_EQ(mode(), Mode::Eager);
  EXPECT_FALSE(is_lazy(x - 1));
  set_mode(Mode::Traced);
  EXPECT_TRUE(is_lazy(x - 1));
  mark_step();
}

TEST_F(Runtime, EveryValueAccessFlushes) {
  const Tensor x = random({5}, kFloat32, 2);
  mark_step();
  auto flushed_by = [&](const std::function<void(const Tensor&)>& access) {
    const Tensor y = (x * 3).exp();
    const int64_t before = flushes();
    access(y);
    EXPECT_FALSE(is_lazy(y));
    return flushes() - before;
  };
  EXPECT_EQ(flushed_by([](const Tensor& y) { (void)y.sum().item<float>(); }), 1);
  EXPECT_EQ(flushed_by([](const Tensor& y) { (void)y.to_vector<float>(); }), 1);
  EXPECT_EQ(flushed_by([](const Tensor& y) { (void)y.data_ptr(); }), 1);
  EXPECT_EQ(flushed_by([](const Tensor& y) { std::ostringstream os; os << y; }), 1);
  EXPECT_EQ(flushed_by([](const Tensor&) { mark_step(); }), 1);
  // a comparison used by an `if`
  EXPECT_EQ(flushed_by([](const Tensor& y) { if ((y > 0).all().item<bool>()) return; }), 1);
  // metadata needs no data
  const Tensor z = x * 4;
  EXPECT_EQ(z.sizes(), IntArrayRef({5}));
  EXPECT_TRUE(is_lazy(z));
  mark_step();
}

TEST_F(Runtime, TheSizeCapFlushes) {
  const int64_t cap = trace_cap();
  set_trace_cap(8);
  Tensor x = random({3}, kFloat32, 3);
  const int64_t before = flushes();
  for (int i = 0; i < 20; ++i) x = x * 1.01;
  EXPECT_GE(flushes() - before, 2);
  EXPECT_LT(trace::recorder_stats().nodes, 8);
  set_trace_cap(cap);
  expect_error([] { set_trace_cap(0); }, {"set_trace_cap", "positive"});
  mark_step();
}

TEST_F(Runtime, ShapeErrorsRaiseAtTheCall) {
  const Tensor a = random({2, 3}, kFloat32, 4), b = random({4}, kFloat32, 5);
  mark_step();
  expect_error([&] { (void)(a + b); }, {"add", "[2, 3]", "[4]"});
  EXPECT_EQ(trace::recorder_stats().nodes, 0);
}

// docs/DESIGN.md §3.4: storage offsets are run-time arguments. A peer's JIT replays
// the offset it captured; here the same plan must read the new rows.
TEST_F(Runtime, AHotTraceReadsViewsAtNewOffsets) {
  const Tensor big = random({12, 4}, kFloat32, 6);
  mark_step();
  int64_t compiled = 0;
  for (int64_t offset : {0, 3, 5, 8, 1, 7}) {
    const Tensor x = big.narrow(0, offset, 4);
    const Tensor y = (x * 0.5 + 1).exp().sum({1});
    expect_same(y, (x * 0.5 + 1).exp().sum({1}));
    if (offset == 3) compiled = compiles();  // hot after two sightings
  }
  EXPECT_EQ(compiles(), compiled);  // then one plan for every offset
}

TEST_F(Runtime, ANewScalarNeverRecompilesAndIsUsed) {
  const Tensor x = random({6}, kFloat32, 7);
  mark_step();
  int64_t compiled = 0;
  for (int i = 0; i < 8; ++i) {
    const double lr = 0.1 * (i + 1) + 0.013;  // never a pinned constant (trace/ir.h)
    const Tensor y = x - x.square() * lr;
    expect_same(y, x - x.square() * lr);
    if (i == 1) compiled = compiles();
  }
  EXPECT_EQ(compiles(), compiled);
}

// The child half of SignaturesAreTheSameInEveryProcess.
TEST_F(Runtime, PrintsTheSignatureOfAFixedProgram) {
  if (!std::getenv("NNVM_TEST_PRINT_SIGNATURE")) GTEST_SKIP() << "run by SignaturesAreTheSameInEveryProcess";
  uint64_t hash = 0;
  trace::set_flush_observer([&](const trace::Trace& t) { hash = trace::signature(t).hash; });
  const Tensor x = ones({3, 4});
  mark_step();
  (void)((x * 2).relu().sum({0}) + 1).sum().item<float>();
  trace::set_flush_observer(nullptr);
  std::printf("signature=%016llx\n", static_cast<unsigned long long>(hash));
}

TEST_F(Runtime, SignaturesAreTheSameInEveryProcess) {
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const std::string command = std::string("NNVM_TEST_PRINT_SIGNATURE=1 '") + self +
                              "' --gtest_filter=Runtime.PrintsTheSignatureOfAFixedProgram 2>&1";
  std::string hashes[2];
  for (std::string& h : hashes) {
    FILE* child = popen(command.c_str(), "r");
    ASSERT_NE(child, nullptr);
    char line[256];
    while (std::fgets(line, sizeof line, child))
      if (std::string_view(line).starts_with("signature=")) h = line;
    pclose(child);
  }
  ASSERT_FALSE(hashes[0].empty());
  EXPECT_EQ(hashes[0], hashes[1]);  // two processes: other addresses, other heap layouts, one key
}

TEST_F(Runtime, TensorsOfAnotherThreadsTraceAreAnError) {
  Tensor handed;
  std::barrier sync(2);
  std::thread other([&] {
    handed = random({3}, kFloat32, 8) * 2;  // lazy, in the other thread's trace
    sync.arrive_and_wait();
    sync.arrive_and_wait();  // stays alive, its trace unflushed, while the main thread tries
  });
  sync.arrive_and_wait();
  expect_error([&] { (void)(handed + 1); }, {"add", "another thread"});
  expect_error([&] { (void)handed.to_vector<float>(); }, {"another thread", "mark_step"});
  sync.arrive_and_wait();
  other.join();  // the thread's end flushed its trace
  EXPECT_FALSE(is_lazy(handed));
  EXPECT_EQ(handed.numel(), 3);
}

TEST_F(Runtime, AFailedTraceKeepsWhatDoesNotDependOnTheFailure) {
  const Tensor x = random({2, 5}, kFloat32, 9);
  mark_step();
  const Tensor fine = x * 3;
  const Tensor bad = x.gather(1, tensor<int64_t>({0, 7, 1, 2}).view({2, 2}));
  const Tensor after = bad + 1;
  expect_error([&] { (void)after.item<float>(); }, {"item", "4 elements"});  // metadata check, before any flush
  expect_error([&] { (void)after.to_vector<float>(); }, {"gather", "index 7", "out of bounds"});
  expect_error([&] { (void)bad.to_vector<float>(); }, {"trace failed", "gather", "index 7"});
  expect_error([&] { (void)(after * 2); }, {"mul", "trace failed"});
  expect_same(fine, x * 3);  // computed although its trace failed
}

// One Linear model and its data, made from `seed` on the calling thread (the
// default generator is process-wide, so models are made one at a time).
struct Job {
  nn::Linear model{nullptr};
  Tensor data, target;
};

Job make_job(uint64_t seed) {
  Generator gen(seed);
  Job job;
  job.data = rand({16, 5}, kFloat32, &gen);
  job.target = rand({16, 2}, kFloat32, &gen);
  manual_seed(seed);
  job.model = nn::Linear(5, 2);
  mark_step();  // the values exist before another thread trains on them
  return job;
}

// `steps` steps of SGD with momentum, the learning rate changing every step.
Tensor train_linear(Job& job, int steps) {
  optim::SGD opt(job.model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < steps; ++s) {
    opt.param_groups()[0].options().set_lr(0.1 / (1 + s));
    opt.zero_grad();
    mse_loss(job.model->forward(job.data), job.target).backward();
    opt.step();
  }
  return job.model->weight;
}

TEST_F(Runtime, TwoThreadsTrainTwoModelsAtOnce) {
  Tensor eager[2];
  {
    EagerGuard guard;
    for (int i = 0; i < 2; ++i) {
      Job job = make_job(100 + uint64_t(i));
      eager[i] = train_linear(job, 30);
    }
  }
  Job jobs[2] = {make_job(100), make_job(101)};
  Tensor traced[2];
  std::thread a([&] { traced[0] = train_linear(jobs[0], 30); });
  std::thread b([&] { traced[1] = train_linear(jobs[1], 30); });
  a.join();
  b.join();
  for (int i = 0; i < 2; ++i) expect_same(traced[i], eager[i], 1e-5);
}

TEST_F(Runtime, ForwardBackwardAndUpdateAreOneTrace) {
  manual_seed(3);
  nn::Linear model(4, 3);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05));
  const Tensor x = random({8, 4}, kFloat32, 10), y = random({8, 3}, kFloat32, 11);
  mark_step();
  std::vector<std::string> ops;
  trace::set_flush_observer([&](const trace::Trace& t) {
    ops.clear();
    for (const trace::Node& n : t.nodes()) ops.push_back(n.op->name);
  });
  const int64_t before = flushes();
  opt.zero_grad();
  mse_loss(model->forward(x), y).backward();
  opt.step();
  trace::set_flush_observer(nullptr);
  EXPECT_EQ(flushes() - before, 1);
  auto count = [&](std::string_view name) { return std::count(ops.begin(), ops.end(), name); };
  EXPECT_EQ(count("mse_loss"), 1);
  EXPECT_EQ(count("matmul"), 2) << "the forward product and the weight's gradient";
  EXPECT_GE(count("add"), 3) << "the bias, and the two parameter updates";
}

// The steady-state rule: 100 steps with a changing learning rate and
// a short last batch compile once per distinct shape, and never again.
TEST_F(Runtime, TrainingCompilesOncePerDistinctShape) {
  manual_seed(4);
  nn::Sequential model(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 1));
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.01));
  const Tensor data = random({40, 6}, kFloat32, 12), target = random({40, 1}, kFloat32, 13);
  mark_step();
  const int64_t compiled = compiles();
  int64_t after_warmup = 0;
  for (int step = 0; step < 100; ++step) {
    const int64_t start = (step % 3) * 16;  // batches of 16, 16 and 8 rows
    const int64_t rows = std::min<int64_t>(16, 40 - start);
    opt.param_groups()[0].options().set_lr(0.01 * (1.0 - step / 100.0));
    opt.zero_grad();
    mse_loss(model->forward(data.narrow(0, start, rows)), target.narrow(0, start, rows)).backward();
    opt.step();
    if (step == 9) after_warmup = compiles();
  }
  // two batch shapes, and Adam's first step (no state yet) differs from the rest
  EXPECT_LE(after_warmup - compiled, 4);
  EXPECT_EQ(compiles(), after_warmup) << "a compile after the warm-up: something in the key changes every step";
}

TEST_F(Runtime, InPlaceThroughViewsOfLazyTensorsReachesEveryView) {
  const Tensor x = random({3, 4}, kFloat32, 14);
  mark_step();
  auto program = [&] {
    Tensor a = x * 1;
    const Tensor row = a.select(0, 1);         // a view taken before the write
    Tensor cols = a.slice(1, 1, 3);
    cols.mul_(10);                             // written through another view
    a.t().add_(1);                             // and through a transposed one
    return std::vector<Tensor>{a, row, cols};
  };
  std::vector<Tensor> eager;
  {
    EagerGuard guard;
    eager = program();
  }
  for (int round = 0; round < 3; ++round) {  // cold, then hot
    const std::vector<Tensor> traced = program();
    for (size_t i = 0; i < traced.size(); ++i) expect_same(traced[i], eager[i]);
  }
}

TEST_F(Runtime, OptimizerUpdatesAParameterReadBeforeAndAfter) {
  auto program = [](Tensor p) {
    NoGradGuard no_grad;
    const Tensor before = p.t() * 1;  // reads the old values through a view
    p.mul_(0.5).add_(1);
    const Tensor after = p * 2;       // reads the new ones
    return std::vector<Tensor>{before, after};
  };
  Tensor pe = random({2, 3}, kFloat32, 15);
  Tensor pt = pe.clone();
  mark_step();
  std::vector<Tensor> eager;
  {
    EagerGuard guard;
    eager = program(pe);
  }
  const std::vector<Tensor> traced = program(pt);
  expect_same(traced[0], eager[0]);
  expect_same(traced[1], eager[1]);
  expect_same(pt, pe);
}

// docs/DESIGN.md §3.5: a loop whose trip count depends on the data records a
// different trace for each count, but the traces share their fusion groups,
// and each group compiles once.
TEST_F(Runtime, TracesOfADataDependentLoopShareTheirKernels) {
  const Tensor w = random({8, 8}, kFloat32, 16, -0.5, 0.5), b = random({8}, kFloat32, 17);
  const Tensor h0 = random({4, 8}, kFloat32, 18);
  mark_step();
  auto run = [&](int steps) {
    Tensor h = h0;
    for (int i = 0; i < steps; ++i) h = (h.matmul(w) + b).tanh() * 0.5 + h;
    return h;
  };
  std::vector<int> counts;  // trip counts read from values, as an `if` on item() would
  for (int steps = 1; steps <= 4; ++steps) counts.push_back(int(std::lround((h0.sum() * 0 + steps).item<float>())));
  const int64_t traces_before = compiles();
  const int64_t kernels_before = trace::global_kernel_cache().stats().compiles;
  std::vector<Tensor> results;
  for (int round = 0; round < 3; ++round) {
    for (int count : counts) {
      results.push_back(run(count));
      mark_step();
    }
  }
  const int64_t traces = compiles() - traces_before;
  const int64_t kernels = trace::global_kernel_cache().stats().compiles - kernels_before;
  EXPECT_EQ(traces, 4) << "one plan per trip count";
  EXPECT_LT(kernels, traces) << "the steps' shared groups compile once, not once per trace";
  for (size_t i = 0; i < results.size(); ++i) expect_same(results[i], run(counts[i % counts.size()]));
}

// A step's temporaries die before its flush; the recorder keeps their
// storage objects for the lazy tensors of later steps, here of other sizes,
// larger and smaller: each holds its own bytes and values, and a temporary
// still held at the flush is an output like any other.
TEST_F(Runtime, StoragesOfDroppedTemporariesServeLaterLazyTensors) {
  Tensor kept;
  for (int64_t n : {5, 300, 2, 4097, 0, 64, 1}) {
    SCOPED_TRACE(n);
    const Tensor x = random({n}, kFloat32, uint64_t(30 + n));
    mark_step();
    Tensor held = x * 3;  // takes the storage of a temporary the last step dropped
    const Tensor y = ((x * 2) + 1).exp() - x;  // three temporaries dropped
    EXPECT_EQ(is_lazy(y), n > 0);  // an empty tensor needs no memory
    mark_step();
    EXPECT_EQ(y.storage()->nbytes(), size_t(n) * 4);
    EXPECT_EQ(held.storage()->nbytes(), size_t(n) * 4);
    expect_same(y, ((x * 2) + 1).exp() - x);
    expect_same(held, x * 3);
    if (!kept.defined()) kept = held;  // the first step's value stays intact
    ASSERT_EQ(kept.numel(), 5);
    expect_same(kept, random({5}, kFloat32, 35) * 3);
  }
}

}  // namespace
}  // namespace nnvm
