#include "nnvm/trace/kernel_cache.h"

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"

namespace nnvm::trace {

KernelCache::KernelCache(size_t capacity) : entries_(capacity), evicted_(capacity) {}

std::shared_ptr<const CompiledKernel> KernelCache::get(const std::string& key, const Compile& compile) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::shared_ptr<Slot>* found = entries_.find(key)) {
      ++stats_.hits;
      slot = *found;
    } else {
      ++stats_.misses;
      slot = std::make_shared<Slot>();
      slot->hash = std::hash<std::string>()(key);
      const int64_t* before = evicted_.find(slot->hash);
      stats_.recent_misses.push_back(
          {slot->hash, before ? absl::StrCat("evicted after ", *before, " uses") : "new kernel"});
      if (stats_.recent_misses.size() > kRecentMisses) stats_.recent_misses.pop_front();
      if (auto evicted = entries_.put(key, slot)) {
        ++stats_.evictions;
        evicted_.put(evicted->second->hash, evicted->second->uses);
      }
      stats_.entries = int64_t(entries_.size());
    }
    ++slot->uses;
  }
  std::call_once(slot->once, [&] {
    const auto start = std::chrono::steady_clock::now();
    std::shared_ptr<const CompiledKernel> kernel = compile();
    NNVM_CHECK(kernel != nullptr, "KernelCache", "the compiler returned no kernel");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (log_enabled("jit")) {
      const std::string what = kernel->describe();
      std::fprintf(stderr, "jit compile %.0f us %s%s%.80s\n", seconds * 1e6, what.c_str(), what.empty() ? "" : ": ",
                   key.c_str());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.compiles;
    stats_.compile_seconds += seconds;
    slot->kernel = std::move(kernel);
  });
  return slot->kernel;
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

KernelCache& global_kernel_cache() {
  static KernelCache* cache = new KernelCache();  // leaked: plans may run during static destruction
  return *cache;
}

}  // namespace nnvm::trace
