// What the trace cache and the kernel cache count (trace/trace_cache.h,
// trace/kernel_cache.h), in a header of its own: the public API returns them
// (nnvm/cache.h, nnvm::cache_stats()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace nnvm::trace {

// How many misses each cache's statistics keep, with their reasons.
inline constexpr size_t kRecentMisses = 64;

// A lookup that found no entry, and why: "new structure", "shape changed at
// input 0: [4, 3] -> [5, 3]", "evicted after 3 sightings", "new kernel".
struct CacheMiss {
  uint64_t hash = 0;
  std::string reason;
};

// A shape class: the signatures that differ only in sizes.
struct ShapeClassStats {
  uint64_t hash = 0;       // shape_class_hash
  int64_t entries = 0;     // its signatures in the cache now
  int64_t signatures = 0;  // its signatures ever seen (an evicted one seen again counts again)
  int64_t sightings = 0;
  int64_t first_sight_compiles = 0;
  // Each dim whose size has changed, and when: "input 0 dim 0 symbolic after
  // sizes 64, 40", "node 0 (normal) attribute 0[0] symbolic after sizes 5, 7"
  // (the first TraceCache::kSymbolicPlaces).
  std::vector<std::string> symbolic;
};

struct TraceCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t compiles = 0;
  int64_t first_sight_compiles = 0;  // of those, signatures compiled at first sight (CacheLookup::first_sight)
  int64_t evictions = 0;
  int64_t entries = 0;
  double compile_seconds = 0;
  std::deque<CacheMiss> recent_misses;  // the last kRecentMisses, oldest first
  std::vector<ShapeClassStats> classes;  // the most recently seen first (at most the cache's capacity)
};

// The kernel cache's counts; a miss's hash is its key's (std::hash).
struct KernelCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t compiles = 0;  // compiles that finished (a failed one is retried by the next lookup)
  int64_t evictions = 0;
  int64_t entries = 0;
  double compile_seconds = 0;
  std::deque<CacheMiss> recent_misses;  // the last kRecentMisses, oldest first
};

}  // namespace nnvm::trace
