// The kernel cache (docs/DESIGN.md §3.5): a fusion group's signature -> its compiled
// code, shared by every trace and thread of the process. Traces that differ
// outside a group (dynamic control flow, another batch size) share the
// group's kernel, so each kernel compiles once. The key is the group's own
// canonical text (trace/group_program.h): its ops, structural attributes,
// topology, and its inputs' dtypes and layout classes, never sizes, Scalar
// values, addresses or offsets, which are the kernel's run-time arguments.
//
// What is cached is a CompiledKernel: the portable tile program of
// trace/group_program.h, or an x86 kernel (jit/pointwise_jit.h) under keys
// of its own prefix.
//
// Bounded (LRU) and observable: hits, misses, compiles, evictions, compile
// time. Thread-safe: a compile runs outside the lock, once per key, while
// lookups of other keys proceed. NNVM_LOG=jit prints one line per compile.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "nnvm/trace/bounded_cache.h"
#include "nnvm/trace/cache_stats.h"

namespace nnvm::trace {

class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  // One line on what was compiled (NNVM_LOG=jit); empty: the key says it.
  virtual std::string describe() const { return {}; }
};

class KernelCache {
 public:
  using Compile = std::function<std::shared_ptr<const CompiledKernel>()>;
  static constexpr size_t kDefaultCapacity = 1024;

  explicit KernelCache(size_t capacity = kDefaultCapacity);

  // The kernel under `key`, compiled by `compile` if the cache has none. An
  // exception from `compile` propagates and the next lookup retries.
  std::shared_ptr<const CompiledKernel> get(const std::string& key, const Compile& compile);

  KernelCacheStats stats() const;

 private:
  struct Slot {
    std::once_flag once;
    std::shared_ptr<const CompiledKernel> kernel;
    uint64_t hash = 0;  // std::hash of its key
    int64_t uses = 0;   // lookups that found it, the first included
  };

  mutable std::mutex mutex_;
  BoundedCache<std::string, std::shared_ptr<Slot>> entries_;
  BoundedCache<uint64_t, int64_t> evicted_;  // key hash -> uses before eviction
  KernelCacheStats stats_;
};

// The cache every compiled plan takes its kernels from.
KernelCache& global_kernel_cache();

}  // namespace nnvm::trace
