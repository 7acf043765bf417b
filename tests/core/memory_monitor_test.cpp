// The memory monitor (core/memory_monitor.h): the snapshot accounts for every
// byte the allocator reports in use, blocks name their op, trace and phase,
// the ring keeps the newest events, phases have peaks, the timeline draws.
#include "nnvm/core/memory_monitor.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nnvm/nnvm.h"

namespace nnvm {
namespace {

using memory::Phase;

int64_t sum_of(const memory::Snapshot& s) {
  int64_t bytes = 0;
  for (const memory::Block& b : s.blocks) bytes += b.bytes;
  return bytes;
}

// Stops monitoring when a test ends, however it ends.
struct Monitoring {
  explicit Monitoring(size_t events = size_t(1) << 16) { memory::start_monitoring(events); }
  ~Monitoring() { memory::stop_monitoring(); }
};

TEST(MemoryMonitor, TheSnapshotAccountsForEveryByteInUse) {
  EagerGuard eager;
  Tensor before = randn({300, 7});  // allocated before monitoring: untracked
  Monitoring on;
  const memory::Snapshot start = memory::snapshot();
  EXPECT_EQ(sum_of(start) + start.untracked_bytes, start.in_use);
  Tensor x = randn({257, 33});
  Tensor y = x.exp();
  {
    const memory::Snapshot s = memory::snapshot();
    EXPECT_EQ(sum_of(s) + s.untracked_bytes, s.in_use);
    EXPECT_EQ(s.in_use, cpu_memory_stats().bytes_in_use);
    bool exp_block = false;
    for (const memory::Block& b : s.blocks)
      if (std::string(b.op) == "exp") {
        exp_block = true;
        EXPECT_GE(b.bytes, 257 * 33 * 4);
        EXPECT_EQ(b.phase, Phase::kForward);
      }
    EXPECT_TRUE(exp_block);
  }
  // Freeing a block from before monitoring leaves the sums right.
  const int64_t untracked = memory::snapshot().untracked_bytes;
  before = Tensor();
  y = Tensor();
  const memory::Snapshot s = memory::snapshot();
  EXPECT_LT(s.untracked_bytes, untracked);
  EXPECT_EQ(sum_of(s) + s.untracked_bytes, s.in_use);
}

TEST(MemoryMonitor, BlocksNameTheirPhaseAndPhasesHavePeaks) {
  EagerGuard eager;
  const Tensor w = randn({64, 48}).requires_grad_();
  const Tensor x = randn({128, 64});
  optim::SGD opt({w}, optim::SGDOptions(0.1).momentum(0.9));
  Monitoring on;
  const Tensor loss = matmul(x, w).tanh().sum();
  loss.backward();
  bool backward_block = false;
  for (const memory::Block& b : memory::snapshot().blocks) backward_block |= b.phase == Phase::kBackward;
  EXPECT_TRUE(backward_block);  // w's gradient
  opt.step();  // the momentum buffer
  bool optimizer_block = false;
  for (const memory::Block& b : memory::snapshot().blocks) optimizer_block |= b.phase == Phase::kOptimizer;
  EXPECT_TRUE(optimizer_block);
  const auto peaks = memory::phase_peaks();
  for (Phase p : {Phase::kForward, Phase::kBackward, Phase::kOptimizer})
    EXPECT_GT(peaks[size_t(p)], 0) << memory::phase_name(p);
  EXPECT_EQ(memory::current_phase(), Phase::kForward);
}

TEST(MemoryMonitor, TheRingKeepsTheNewestEventsInOrder) {
  EagerGuard eager;
  Monitoring on(8);
  for (int i = 0; i < 20; ++i) {
    Tensor t = empty({1000 + 64 * i});
    (void)t.data_ptr();
  }
  const std::vector<memory::Event> e = memory::events();
  ASSERT_EQ(e.size(), 8u);
  EXPECT_GT(memory::events_dropped(), 0);
  for (size_t k = 1; k < e.size(); ++k) EXPECT_LE(e[k - 1].time_ns, e[k].time_ns);
  bool allocate = false, free = false;
  for (const memory::Event& ev : e) {
    allocate |= ev.kind == memory::EventKind::kAllocate;
    free |= ev.kind == memory::EventKind::kFree;
  }
  EXPECT_TRUE(allocate && free);
}

TEST(MemoryMonitor, APlanNamesItsGroupsBlocks) {
  const Mode previous = mode();
  set_mode(Mode::Traced);
  const Tensor a = randn({61, 29}), b = randn({29, 17});
  mark_step();
  Monitoring on;
  for (int i = 0; i < 4; ++i) {
    Tensor y = (matmul(a, b) + 1.0).relu();
    mark_step();
  }
  bool from_plan = false;
  for (const memory::Event& e : memory::events())
    from_plan |= e.kind == memory::EventKind::kAllocate && e.trace != 0 && std::string(e.op).size() > 0;
  EXPECT_TRUE(from_plan);
  set_mode(previous);
}

// In traced mode a step's ops run when the optimizer's step flushes them,
// compiled once hot; each node keeps the phase it was recorded in, and a
// plan's groups (and the interpreter's nodes before it is hot) name their
// blocks by it: the arena (the first group's phase: forward) and the
// gradients (backward) come from the plan, and each phase has its peak.
TEST(MemoryMonitor, ACompiledTrainingStepKeepsItsPhases) {
  const Mode previous = mode();
  set_mode(Mode::Traced);
  // an arena over the 64 KiB a thread keeps between runs: each run takes a new one
  Tensor w = randn({96, 128}).requires_grad_(), v = randn({128, 8}).requires_grad_();
  optim::SGD opt({w, v}, optim::SGDOptions(0.01).momentum(0.9));
  auto step = [&] {
    opt.zero_grad();
    matmul(matmul(randn({256, 96}), w).tanh(), v).square().mean().backward();
    opt.step();
  };
  for (int i = 0; i < 3; ++i) step();  // hot and compiled
  Monitoring on;
  for (int i = 0; i < 3; ++i) step();
  std::array<bool, memory::kNumPhases> from_plan{};
  bool arena = false;
  for (const memory::Event& e : memory::events()) {
    if (e.kind != memory::EventKind::kAllocate || e.trace == 0) continue;
    from_plan[size_t(e.phase)] = true;
    arena |= std::string(e.op) == "arena" && e.phase == Phase::kForward;
  }
  EXPECT_TRUE(arena);
  EXPECT_TRUE(from_plan[size_t(Phase::kForward)]);
  EXPECT_TRUE(from_plan[size_t(Phase::kBackward)]);
  const std::array<int64_t, memory::kNumPhases> peaks = memory::phase_peaks();
  for (int p = 0; p < memory::kNumPhases; ++p) EXPECT_GT(peaks[size_t(p)], 0) << memory::phase_name(Phase(p));
  set_mode(previous);
}

TEST(MemoryMonitor, TheTimelineIsAPageWithAnAreaPerCategory) {
  EagerGuard eager;
  const Tensor w = randn({32, 16}).requires_grad_();
  optim::Adam opt({w});
  Monitoring on;
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    matmul(randn({40, 32}), w).square().mean().backward();
    opt.step();
  }
  const std::string html = memory::memory_timeline_html();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  for (const char* category : {"before the ring", "forward", "backward", "optimizer"})
    EXPECT_NE(html.find(std::string("data-category=\"") + category + "\""), std::string::npos) << category;
  // Each area has as many points as there are events (two steps each, up and back).
  const size_t points = html.find("points=\"");
  ASSERT_NE(points, std::string::npos);
  const std::string area = html.substr(points, html.find("\"/>", points) - points);
  EXPECT_EQ(size_t(std::count(area.begin(), area.end(), ',')), 4 * memory::events().size());
  EXPECT_NE(html.find("peak"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/nnvm_memory.html";
  memory::memory_timeline(path);
  std::ifstream file(path);
  std::stringstream read;
  read << file.rdbuf();
  std::remove(path.c_str());
  EXPECT_EQ(read.str().rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THROW(memory::memory_timeline("/nonexistent-dir/mem.html"), Error);
}

}  // namespace
}  // namespace nnvm
