// What a JIT program's per-run launch depends on, flattened so a repeat run
// compares it with the last launch's instead of rebuilding the loop space,
// the variant name and the block geometry (a hot plan replays the same
// layouts run after run). A program describes its key once, as a generic
// lambda over a Key: KeyBuilder writes it (a new launch), KeyMatch compares
// it in place (a repeat run: nothing written, nothing allocated).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "absl/container/inlined_vector.h"
#include "nnvm/core/hot_tls.h"
#include "nnvm/core/spin_lock.h"
#include "nnvm/core/tensor.h"

namespace nnvm::jit {

using LaunchKey = absl::InlinedVector<int64_t, 48>;

class KeyBuilder {
 public:
  explicit KeyBuilder(LaunchKey& key) : key_(key) {}
  void value(int64_t v) { key_.push_back(v); }
  void raw(IntArrayRef v) { key_.insert(key_.end(), v.begin(), v.end()); }

 private:
  LaunchKey& key_;
};

// Compares without a branch per value: the differences are or-ed together
// and read once, at the end (a repeat run's key almost always matches).
class KeyMatch {
 public:
  explicit KeyMatch(const LaunchKey& key) : key_(key.data()), size_(key.size()) {}
  void value(int64_t v) {
    diff_ |= n_ < size_ ? uint64_t(key_[n_] ^ v) : 1;
    ++n_;
  }
  void raw(IntArrayRef v) {
    if (n_ + v.size() > size_) {
      diff_ = 1;
    } else {
      // a loop, not std::equal: that calls memcmp, which costs more than a few dims' compare
      for (size_t i = 0; i < v.size(); ++i) diff_ |= uint64_t(key_[n_ + i] ^ v[i]);
    }
    n_ += v.size();
  }
  bool matched() const { return diff_ == 0 && n_ == size_; }

 private:
  const int64_t* key_;
  size_t size_;
  size_t n_ = 0;      // values described so far
  uint64_t diff_ = 0;  // nonzero once one differs
};

// A list with its length: two lists never read as one.
template <class Key>
void key_ints(Key& key, IntArrayRef v) {
  key.value(int64_t(v.size()));
  key.raw(v);
}

// An operand's sizes and strides: its data pointer is not part of the key.
template <class Key>
void key_layout(Key& key, const Tensor& x) {
  key_ints(key, x.sizes());
  key.raw(x.strides());
}

// Whether `describe` (a generic lambda over a Key) gives `key`.
template <class Describe>
bool key_matches(const LaunchKey& key, const Describe& describe) {
  KeyMatch match(key);
  describe(match);
  return match.matched();
}

template <class Describe>
LaunchKey key_of(const Describe& describe) {
  LaunchKey key;
  KeyBuilder builder(key);
  describe(builder);
  return key;
}

// How often the calling thread compared a run with its copy of a program's
// last launch (find_launch), for tests: a run whose stamp matched it before
// compares nothing.
int64_t launch_key_compares();
namespace detail {
void count_launch_key_compare();
}  // namespace detail

// A JIT program's id among every program of the process (never reused).
inline uint64_t next_program_id() {
  static std::atomic<uint64_t> ids{0};
  return ++ids;
}

// A program's last launch, shared by the threads that run the program: a
// shared_ptr behind a SpinLock (uncontended, one exchange and one plain
// store). Only a run that missed its thread's own copy comes here.
//
// Not std::atomic<std::shared_ptr>: libstdc++ 12 guards that pointer with a
// lock bit in the control block's address and, in load(), drops the bit with
// a relaxed decrement, so nothing orders a reader's copy of the pointer
// before the next store's overwrite of it. x86 keeps them in order (a locked
// instruction is a full barrier), but ThreadSanitizer cannot see the bit as a
// lock and reported that pair as a data race in most runs of the thread
// tests. The SpinLock's acquire and release are orderings it models.
template <class Launch>
class LastLaunch {
 public:
  std::shared_ptr<const Launch> load() const {
    std::lock_guard<SpinLock> hold(lock_);
    return launch_;
  }
  // The launch it replaces is released after the lock is.
  void store(std::shared_ptr<const Launch> launch) {
    std::lock_guard<SpinLock> hold(lock_);
    launch_.swap(launch);
  }

 private:
  mutable SpinLock lock_;
  std::shared_ptr<const Launch> launch_;
};

// A caller's promise about a run's operand layouts. `layouts` names a place
// that runs a program with the same operand sizes and strides every time (a
// hot plan's group, whose inputs have the strides its signature fixes); 0:
// no promise. `context` is whatever else the key reads that may change
// between runs (the ISA, the thread count). A run with a stamp that matched
// the thread's last launch of the program before skips the key compare.
struct LaunchStamp {
  uint64_t layouts = 0;
  int64_t context = 0;
  bool operator==(const LaunchStamp&) const = default;
};

// The launch a run of program `program` uses: the calling thread's copy of
// the program's last launch when a run with the same stamp matched it before
// or `describe` matches its key (no atomic operation: a tiny kernel's run
// notices the lock and the reference count of reading `last`), else the
// program's shared `last` when it matches, else plan() (a new launch, or
// null: nothing runs). The thread keeps a few programs' launches, by id; its
// copy lives until it runs another program in that place, so the launch
// outlives the run. Each copy remembers the last two stamps that matched it:
// a loop whose first step's plan differs from the others' (an RNN's first
// hidden state is a constant) alternates between two plans of one program.
// `keep`, when given, takes a reference to the launch (a replay's capture).
template <class Launch, class Describe, class Plan>
const Launch* find_launch(uint64_t program, LastLaunch<Launch>& last,
                          const Describe& describe, const Plan& plan, LaunchStamp stamp = {},
                          std::shared_ptr<const Launch>* keep = nullptr) {
  struct Slot {
    uint64_t program = 0;
    std::shared_ptr<const Launch> launch;
    std::array<LaunchStamp, 2> stamps;  // of runs that matched the launch, the latest first
    void remember(LaunchStamp s) {
      if (s.layouts != 0 && !(stamps[0] == s)) stamps = {s, stamps[0]};
    }
  };
  std::array<Slot, 8>& slots = thread_state<std::array<Slot, 8>>();
  Slot& slot = slots[program % slots.size()];
  if (slot.program == program) {
    if (stamp.layouts != 0 && (slot.stamps[0] == stamp || slot.stamps[1] == stamp)) {
      if (keep) *keep = slot.launch;
      return slot.launch.get();
    }
    detail::count_launch_key_compare();
    if (key_matches(slot.launch->key, describe)) {
      slot.remember(stamp);
      if (keep) *keep = slot.launch;
      return slot.launch.get();
    }
  }
  std::shared_ptr<const Launch> launch = last.load();
  if (!launch || !key_matches(launch->key, describe)) {
    launch = plan();
    if (!launch) return nullptr;
    last.store(launch);
  }
  slot.program = program;
  slot.launch = std::move(launch);
  slot.stamps = {};
  slot.remember(stamp);
  if (keep) *keep = slot.launch;
  return slot.launch.get();
}

}  // namespace nnvm::jit
