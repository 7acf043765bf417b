// The trace cache (docs/DESIGN.md §3.5, §3.6): trace signature -> entry. Every flush
// looks its trace up here. A signature seen fewer than `hot` times is cold:
// the caller interprets the trace as it is. On its `hot`-th sighting the
// entry is compiled once into a Plan by the caller-supplied pipeline (the
// recorder's compile_plan: the graph passes, then a FusedPlan), and every later
// sighting replays that plan. Scalars are not in signatures, so a new
// learning rate hits the same entry.
//
// Bounded (LRU) and observable: hits, misses, compiles, compile time,
// evictions, and why each miss missed: "evicted after 3 sightings" when the
// signature was cached before, otherwise explained against the most recent
// entry with the same structure (the ops and topology without shapes or
// dtypes): "new structure", "shape changed at input 0: [4, 3] -> [5, 3]".
// NNVM_LOG=cache prints one line per event as it happens.
//
// Shape classes (docs/TRACE.md "Shape classes"): signatures that differ only
// in sizes (shape_class_hash) share a class. Once a class has been seen
// `hot` times in all, a signature new to it is compiled at its first
// sighting instead of running the interpreter `hot` times: a batch size or
// sequence length that changes every step runs compiled from its first
// sight. The class says which input dims have changed ("input 0 dim 0
// symbolic after sizes 64, 40") and how many entries it holds. Each new size
// is its own compile (the passes, fusion and memory plan for its sizes); its
// kernels come from the kernel cache, compiled once for every size.
//
// Thread-safe: one lock (core/spin_lock.h) guards the tables; a compile runs outside it, once
// per entry, while lookups of other signatures proceed.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nnvm/core/knobs.h"
#include "nnvm/core/spin_lock.h"
#include "nnvm/trace/bounded_cache.h"
#include "nnvm/trace/cache_stats.h"
#include "nnvm/trace/ir.h"
#include "nnvm/trace/plan.h"
#include "nnvm/trace/signature.h"

namespace nnvm::trace {

struct CacheLookup {
  bool hit = false;          // the signature had an entry
  bool hot = false;          // seen `hot` times or more: `plan` is set
  std::string miss_reason;   // empty on a hit
  bool first_sight = false;  // a new signature compiled at once: its shape class is hot
  uint64_t hash = 0;         // the signature's hash
  int64_t count = 0;         // sightings of the signature, this one included
  std::shared_ptr<const Plan> plan;
  double compile_seconds = 0;  // what compiling `plan` took
  // The entry's own trace: a caller that finds its next trace has the same
  // signature (same_signature) passes it back as a LookupHint.
  std::shared_ptr<const Trace> entry;
};

// What the caller knows of a trace before looking it up: same_signature(*entry, t)
// holds for an entry trace some lookup returned, whose hash was `hash`.
struct LookupHint {
  const Trace* entry = nullptr;
  uint64_t hash = 0;
};

class TraceCache {
 public:
  // Turns a hot trace into its plan (a pass pipeline, then an executor).
  using Compile = std::function<std::shared_ptr<const Plan>(const Trace&)>;
  using LogSink = std::function<void(const std::string& line)>;
  static constexpr size_t kDefaultCapacity = 256;
  static constexpr size_t kSymbolicPlaces = 32;  // a class names at most this many

  explicit TraceCache(Compile compile, size_t capacity = kDefaultCapacity, int hot = knobs().hot);

  // Counts a sighting of `t`; compiles its entry when it turns hot. An
  // exception from `compile` propagates and the next sighting retries.
  CacheLookup lookup(const Trace& t);
  // The same, without hashing t, and without the exact check while the
  // hinted entry is still cached (a repeating program's every flush).
  CacheLookup lookup(const Trace& t, const LookupHint& hint);
  // Counts a hit on the hinted entry, as lookup counts it, when it is still
  // cached and compiled; false, counting nothing, otherwise. Needs no trace
  // and copies nothing out: the recorder's way for a trace that repeats the
  // entry whole, whose plan its cursor keeps.
  bool hit_compiled(const LookupHint& hint);

  TraceCacheStats stats() const;

  // The trace of the entry under a signature hash (the first trace seen with
  // that signature), or null when the cache holds none; counts nothing and
  // leaves the LRU order as it is. For explanations (nnvm/explain.h).
  std::shared_ptr<const Trace> entry_trace(uint64_t hash) const;

  // Where the event lines go; by default stderr when NNVM_LOG names "cache",
  // nowhere otherwise. An empty sink silences the cache.
  void set_log(LogSink sink);

 private:
  struct Slot {  // the compiled plan, filled once
    std::once_flag once;
    std::atomic<bool> ready{false};  // plan and seconds are set
    std::shared_ptr<const Plan> plan;
    double seconds = 0;
  };
  struct ShapeClass {
    ShapeClassStats stats;
    std::shared_ptr<const Trace> first;  // its first trace: symbolic dims are dims that differ from it
    std::vector<std::string> places;     // "input 0 dim 0", of each line of stats.symbolic
  };
  struct Entry {
    uint64_t hash = 0;
    uint64_t structure = 0;  // structure_hash(*trace)
    std::shared_ptr<ShapeClass> shape_class;
    int64_t count = 0;
    // The first trace seen: the exact check behind a hash match, and what
    // explains others' misses.
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<Slot> slot;
  };

  CacheLookup lookup_hashed(const Trace& t, uint64_t hash, const Trace* known);
  // The entry for `hash` (under mutex_); `again`: it is last_, the entry the
  // last lookup found, and `known` is its trace.
  Entry* find(uint64_t hash, const Trace* known, bool& again);
  // Counts a sighting of `entry` (a hit or not) and returns its sightings
  // so far (under mutex_).
  int64_t count(Entry& entry, bool hit, bool again, uint64_t hash);
  // The same, into `result` (under mutex_).
  void count_sighting(Entry& entry, CacheLookup& result, bool again);
  std::string explain_miss(uint64_t hash, uint64_t structure, const Trace& t);
  // The class of a trace missing its signature, which joins it (under mutex_).
  std::shared_ptr<ShapeClass> join_class(const Trace& t);
  // An entry leaves the cache (under mutex_).
  void drop(const Entry& entry);
  void log(const std::string& line);

  const Compile compile_;
  const int hot_;
  mutable SpinLock mutex_;
  // signature hash -> entry. Two signatures with one hash (never seen yet)
  // take turns: each sighting of the other replaces the entry.
  BoundedCache<uint64_t, Entry> entries_;
  // structure hash -> the trace of the entry last seen with that structure
  BoundedCache<uint64_t, std::shared_ptr<const Trace>> structures_;
  BoundedCache<uint64_t, int64_t> evicted_;  // signature hash -> sightings before eviction
  BoundedCache<uint64_t, std::shared_ptr<ShapeClass>> classes_;  // shape_class_hash -> class
  // The entry the last lookup found (the most recently used), or null. An
  // entry's node in entries_ only moves until it is evicted, and an eviction
  // comes with a lookup that finds another entry.
  Entry* last_ = nullptr;
  TraceCacheStats stats_;
  LogSink log_;
};

}  // namespace nnvm::trace
