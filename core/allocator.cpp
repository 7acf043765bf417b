#include "nnvm/core/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <mutex>

#include <sys/mman.h>

#include "absl/strings/str_cat.h"
#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"

// Under AddressSanitizer a cached block is poisoned while it sits in a free
// list, and the slack between the requested and the rounded size is poisoned
// while it is in use, so ASan still sees kernels that overrun a tensor or use
// a freed one, although the memory never goes back to malloc.
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define NNVM_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define NNVM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define NNVM_POISON(p, n) ((void)(p), (void)(n))
#define NNVM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace nnvm {

namespace {
constexpr size_t kAlign = 64;
constexpr size_t kPageAlignFrom = 64 << 10;
constexpr size_t kPage = 4096;
}  // namespace

CpuCachingAllocator& CpuCachingAllocator::instance() {
  // Leaked on purpose: tensors in static storage may be freed after main returns.
  static auto* a = new CpuCachingAllocator();
  return *a;
}

CpuCachingAllocator::CpuCachingAllocator() : guard_(knobs().alloc_guard), cache_limit_(knobs().cpu_cache_limit) {}
CpuCachingAllocator::~CpuCachingAllocator() { empty_cache(); }

size_t CpuCachingAllocator::round_size(size_t n) {
  if (n <= 1024) return std::max<size_t>(kAlign, (n + kAlign - 1) / kAlign * kAlign);
  const size_t top = std::bit_floor(n);      // n in [top, 2*top)
  const size_t step = top / 4;               // four classes per power of two
  return (n + step - 1) / step * step;
}

void* CpuCachingAllocator::allocate_guarded_locked(size_t nbytes) {
  const size_t pages = (nbytes + kPage - 1) / kPage;
  const size_t bytes = (pages + 1) * kPage;
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    throw Error(absl::StrCat("allocate: out of memory asking for ", nbytes, " guarded bytes (", bytes, " mapped)"));
  char* guard = static_cast<char*>(map) + pages * kPage;
  NNVM_CHECK(mprotect(guard, kPage, PROT_NONE) == 0, "allocate", "cannot protect the guard page of a ", nbytes,
             "-byte block");
  void* p = guard - nbytes;
  guarded_[p] = {map, bytes};
  return p;
}

std::vector<void*>& CpuCachingAllocator::free_list(size_t size) {
  if (size <= small_lists_.size() * kAlign) return small_lists_[size / kAlign - 1];
  return free_lists_[size];
}

void* CpuCachingAllocator::allocate(size_t nbytes) {
  const size_t size = round_size(nbytes);
  std::lock_guard<SpinLock> lock(mu_);
  void* p = nullptr;
  if (guard_) {
    p = allocate_guarded_locked(nbytes);
    ++stats_.cache_misses;
    stats_.bytes_reserved += size;
    ++stats_.allocations;
    stats_.bytes_in_use += size;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    return p;
  }
  std::vector<void*>& list = free_list(size);
  if (!list.empty()) {
    p = list.back();
    list.pop_back();
    ++stats_.cache_hits;
  } else {
    if (stats_.bytes_reserved + int64_t(size) > cache_limit_) release_cached_locked();
    p = std::aligned_alloc(size >= kPageAlignFrom ? kPage : kAlign, size);
    if (!p) {
      release_cached_locked();
      p = std::aligned_alloc(size >= kPageAlignFrom ? kPage : kAlign, size);
    }
    if (!p)
      throw Error(absl::StrCat("allocate: out of memory asking for ", size, " bytes (", stats_.bytes_in_use,
                               " bytes in use, ", stats_.bytes_reserved, " reserved)"));
    ++stats_.cache_misses;
    stats_.bytes_reserved += size;
  }
  NNVM_UNPOISON(p, nbytes);
  NNVM_POISON(static_cast<char*>(p) + nbytes, size - nbytes);
  ++stats_.allocations;
  stats_.bytes_in_use += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void CpuCachingAllocator::free(void* ptr, size_t nbytes) {
  if (!ptr) return;
  const size_t size = round_size(nbytes);
  std::lock_guard<SpinLock> lock(mu_);
  ++stats_.frees;
  stats_.bytes_in_use -= size;
  if (auto it = guarded_.empty() ? guarded_.end() : guarded_.find(ptr); it != guarded_.end()) {
    munmap(it->second.first, it->second.second);
    guarded_.erase(it);
    stats_.bytes_reserved -= size;
    return;
  }
  NNVM_POISON(ptr, size);
  free_list(size).push_back(ptr);
}

void CpuCachingAllocator::set_guard(bool on) {
  std::lock_guard<SpinLock> lock(mu_);
  guard_ = on;
}

bool CpuCachingAllocator::guard() const {
  std::lock_guard<SpinLock> lock(mu_);
  return guard_;
}

void CpuCachingAllocator::release_cached_locked() {
  auto release = [&](size_t size, std::vector<void*>& blocks) {
    for (void* p : blocks) {
      NNVM_UNPOISON(p, size);
      std::free(p);
    }
    stats_.bytes_reserved -= int64_t(size * blocks.size());
    blocks.clear();
  };
  for (size_t k = 0; k < small_lists_.size(); ++k) release((k + 1) * kAlign, small_lists_[k]);
  for (auto& [size, blocks] : free_lists_) release(size, blocks);
}

AllocatorStats CpuCachingAllocator::stats() const {
  std::lock_guard<SpinLock> lock(mu_);
  return stats_;
}

void CpuCachingAllocator::reset_peak() {
  std::lock_guard<SpinLock> lock(mu_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void CpuCachingAllocator::empty_cache() {
  std::lock_guard<SpinLock> lock(mu_);
  release_cached_locked();
}

AllocatorStats cpu_memory_stats() { return CpuCachingAllocator::instance().stats(); }
void empty_cache() { CpuCachingAllocator::instance().empty_cache(); }
void set_alloc_guard(bool on) { CpuCachingAllocator::instance().set_guard(on); }

}  // namespace nnvm
