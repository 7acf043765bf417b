// What nnvm's two caches have done in this process (docs/TRACE.md "Shape
// classes", "The trace cache"): the trace cache (a trace signature -> its
// compiled plan) and the kernel cache (a fusion group's structure -> its
// compiled code).
//
//   nnvm::CacheStats s = nnvm::cache_stats();
//   s.trace.hits, s.trace.compiles, s.trace.first_sight_compiles
//   for (const auto& m : s.trace.recent_misses) std::cout << m.reason << "\n";
//   for (const auto& c : s.trace.classes) for (const auto& d : c.symbolic) std::cout << d << "\n";
//   s.kernels.compiles, s.kernels.compile_seconds
//
// Every field counts from the start of the process; take two and subtract
// to see one part of a program.
#pragma once

#include "nnvm/trace/cache_stats.h"

namespace nnvm {

using CacheMiss = trace::CacheMiss;
using ShapeClassStats = trace::ShapeClassStats;
using TraceCacheStats = trace::TraceCacheStats;
using KernelCacheStats = trace::KernelCacheStats;

struct CacheStats {
  TraceCacheStats trace;
  KernelCacheStats kernels;
};

CacheStats cache_stats();

}  // namespace nnvm
