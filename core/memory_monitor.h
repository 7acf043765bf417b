// The memory monitor (docs/PROFILING.md, "Memory"): while it runs, every CPU
// allocator event (allocate, from the cache or from the OS; free; release to
// the OS) goes into a ring buffer, every live block is known with the op
// that made it, the trace whose plan ran it and the phase of the training
// step (forward, backward, optimizer), and each phase's peak memory is kept.
//
//   nnvm::memory::start_monitoring();
//   train_step();
//   nnvm::memory::Snapshot s = nnvm::memory::snapshot();  // blocks + untracked == in use
//   auto peaks = nnvm::memory::phase_peaks();
//   nnvm::memory::memory_timeline("mem.html");
//   nnvm::memory::stop_monitoring();
//
// Off, the allocator pays one relaxed load per event.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nnvm::memory {

// The phase of a training step a thread is in: backward while autograd runs
// a backward pass, optimizer while an optimizer steps, forward otherwise.
enum class Phase : uint8_t { kForward, kBackward, kOptimizer };
inline constexpr int kNumPhases = 3;
const char* phase_name(Phase phase);  // "forward", "backward", "optimizer"

Phase current_phase();
// Sets the calling thread's phase for its lifetime (nests).
class PhaseGuard {
 public:
  explicit PhaseGuard(Phase phase);
  ~PhaseGuard();
  PhaseGuard(const PhaseGuard&) = delete;
  PhaseGuard& operator=(const PhaseGuard&) = delete;

 private:
  Phase previous_;
};

namespace detail {
extern std::atomic<bool> monitoring;
}
inline bool monitoring() { return detail::monitoring.load(std::memory_order_relaxed); }

// What the calling thread is running, for the blocks it allocates: an op's
// name (static storage: an OpDef's) and the trace whose plan runs it (its
// signature hash, 0 outside a plan). Set only while monitoring.
class OpScope {
 public:
  OpScope(const char* op, uint64_t trace);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  const char* op_;
  uint64_t trace_;
};

enum class EventKind : uint8_t { kAllocate, kFree, kRelease };

struct Event {
  EventKind kind = EventKind::kAllocate;
  bool from_cache = false;  // an allocation served from the cache's free lists
  int64_t bytes = 0;        // the block's (rounded) size; a release: all it returned
  uintptr_t address = 0;
  int64_t time_ns = 0;      // core/profiling.h's clock
  Phase phase = Phase::kForward;  // an allocation's, or the freed block's (its allocation's)
  bool tracked = true;      // a free of a block allocated before monitoring started: false
  const char* op = "";
  uint64_t trace = 0;
  int64_t in_use = 0;       // the allocator's bytes in use after the event
};

struct Block {
  uintptr_t address = 0;
  int64_t bytes = 0;
  const char* op = "";  // "" when no op was running (a tensor made by a factory, a plan's arena)
  uint64_t trace = 0;
  Phase phase = Phase::kForward;
  int64_t time_ns = 0;
};

struct Snapshot {
  std::vector<Block> blocks;    // every live block allocated since monitoring started
  int64_t untracked_bytes = 0;  // live blocks allocated before it started
  int64_t in_use = 0;           // the allocator's bytes in use: blocks' bytes + untracked_bytes
};

// Starts monitoring, with a ring of `events` events (the oldest overwritten);
// starting again restarts (a new ring, no blocks known).
void start_monitoring(size_t events = size_t(1) << 16);
void stop_monitoring();
// The ring's events, oldest first; those overwritten are counted.
std::vector<Event> events();
int64_t events_dropped();
Snapshot snapshot();
// The most bytes in use while each phase ran, since monitoring started (0 for
// a phase that did not run), indexed by Phase.
std::array<int64_t, kNumPhases> phase_peaks();
// A self-contained HTML page: bytes in use over the ring's time, stacked by
// the phase that allocated them (blocks from before monitoring apart), with
// each phase's peak. Throws nnvm::Error when the file cannot be written.
void memory_timeline(const std::string& path);
std::string memory_timeline_html();

namespace detail {
// The allocator's hooks, called with its lock held, only while monitoring.
void on_allocate(void* p, size_t bytes, bool from_cache, int64_t in_use);
void on_free(void* p, size_t bytes, int64_t in_use);
void on_release(size_t bytes, int64_t in_use);
}  // namespace detail

}  // namespace nnvm::memory
