#include "nnvm/core/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <iterator>
#include <mutex>

#include <sys/mman.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/memory_monitor.h"
#include "nnvm/core/profiling.h"
#include "nnvm/core/text_file.h"

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

// The allocator's memory as a "memory" counter event for a profiler session.
[[gnu::noinline]] static void profile_memory(const AllocatorStats& s) {
  profiling::Event e;
  e.name = "CPU memory";
  e.category = "memory";
  e.phase = profiling::Phase::kCounter;
  e.start_ns = profiling::now_ns();
  e.args = absl::StrCat("\"in use\": ", s.bytes_in_use, ", \"reserved\": ", s.bytes_reserved);
  profiling::record(std::move(e));
}

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
    count_reserve(size);
    count_allocate(size);
    if (memory::monitoring()) [[unlikely]] memory::detail::on_allocate(p, size, false, stats_.bytes_in_use);
    return p;
  }
  std::vector<void*>& list = free_list(size);
  const bool from_cache = !list.empty();
  if (from_cache) {
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
    count_reserve(size);
  }
  NNVM_UNPOISON(p, nbytes);
  NNVM_POISON(static_cast<char*>(p) + nbytes, size - nbytes);
  count_allocate(size);
  if (memory::monitoring()) [[unlikely]] memory::detail::on_allocate(p, size, from_cache, stats_.bytes_in_use);
  return p;
}

void CpuCachingAllocator::count_allocate(size_t size) {
  ++stats_.allocations;
  stats_.bytes_in_use += int64_t(size);
  stats_.bytes_allocated += int64_t(size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.peak_live_allocations = std::max(stats_.peak_live_allocations, stats_.allocations - stats_.frees);
  if (profiling::on()) [[unlikely]] profile_memory(stats_);
}

void CpuCachingAllocator::count_free(size_t size) {
  ++stats_.frees;
  stats_.bytes_in_use -= int64_t(size);
  stats_.bytes_freed += int64_t(size);
  if (profiling::on()) [[unlikely]] profile_memory(stats_);
}

void CpuCachingAllocator::count_reserve(size_t size) {
  ++stats_.cache_misses;
  stats_.bytes_reserved += int64_t(size);
  stats_.peak_bytes_reserved = std::max(stats_.peak_bytes_reserved, stats_.bytes_reserved);
}

void CpuCachingAllocator::count_release(size_t size, size_t blocks) {
  stats_.bytes_reserved -= int64_t(size * blocks);
  stats_.bytes_released += int64_t(size * blocks);
  stats_.blocks_released += int64_t(blocks);
  if (profiling::on()) [[unlikely]] profile_memory(stats_);
  if (memory::monitoring()) [[unlikely]] memory::detail::on_release(size * blocks, stats_.bytes_in_use);
}

void CpuCachingAllocator::free(void* ptr, size_t nbytes) {
  if (!ptr) return;
  const size_t size = round_size(nbytes);
  std::lock_guard<SpinLock> lock(mu_);
  count_free(size);
  if (memory::monitoring()) [[unlikely]] memory::detail::on_free(ptr, size, stats_.bytes_in_use);
  if (auto it = guarded_.empty() ? guarded_.end() : guarded_.find(ptr); it != guarded_.end()) {
    munmap(it->second.first, it->second.second);
    guarded_.erase(it);
    count_release(size, 1);
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
    count_release(size, blocks.size());
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
  stats_.peak_bytes_reserved = stats_.bytes_reserved;
  stats_.peak_live_allocations = stats_.allocations - stats_.frees;
}

void CpuCachingAllocator::empty_cache() {
  std::lock_guard<SpinLock> lock(mu_);
  release_cached_locked();
}

AllocatorStats cpu_memory_stats() { return CpuCachingAllocator::instance().stats(); }
void empty_cache() { CpuCachingAllocator::instance().empty_cache(); }
void set_alloc_guard(bool on) { CpuCachingAllocator::instance().set_guard(on); }

namespace {

// "| name                  | cur        | peak       | total      | freed      |"
std::string summary_row(std::string_view name, const std::string& cur, const std::string& peak,
                        const std::string& total, const std::string& freed) {
  return absl::StrFormat("| %-21s | %-10s | %-10s | %-10s | %-10s |\n", name, cur, peak, total, freed);
}

}  // namespace

std::string memory_summary() {
  const AllocatorStats s = cpu_memory_stats();
  const std::string rule = absl::StrCat("|", std::string(75, '-'), "|\n");
  const std::string bold = absl::StrCat("|", std::string(75, '='), "|\n");
  auto count = [](int64_t n) { return absl::StrFormat("%10d", n); };
  auto centred = [](const std::string& text) {
    const size_t pad = text.size() < 75 ? 75 - text.size() : 0;
    return absl::StrFormat("|%*s%s%*s|\n", int(pad / 2), "", text, int(pad - pad / 2), "");
  };
  std::string out = absl::StrCat(bold, centred("nnvm CPU memory summary (the caching allocator)"), rule);
  out += centred(absl::StrFormat("cache limit %s (NNVM_CPU_CACHE_LIMIT), guard mode %s",
                                 format_bytes(knobs().cpu_cache_limit), CpuCachingAllocator::instance().guard() ? "on" : "off"));
  absl::StrAppend(&out, bold, summary_row("Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"), rule);
  out += summary_row("Allocated memory", format_bytes(s.bytes_in_use), format_bytes(s.peak_bytes_in_use),
                     format_bytes(s.bytes_allocated), format_bytes(s.bytes_freed));
  out += rule;
  out += summary_row("Reserved memory", format_bytes(s.bytes_reserved), format_bytes(s.peak_bytes_reserved),
                     format_bytes(s.bytes_reserved + s.bytes_released), format_bytes(s.bytes_released));
  out += rule;
  out += summary_row("Cached memory", format_bytes(s.bytes_reserved - s.bytes_in_use), "", "", "");
  out += rule;
  out += summary_row("Allocations", count(s.allocations - s.frees), count(s.peak_live_allocations), count(s.allocations),
                     count(s.frees));
  out += rule;
  out += summary_row("Blocks from the cache", "", "", count(s.cache_hits), "");
  out += summary_row("Blocks from the OS", "", "", count(s.cache_misses), count(s.blocks_released));
  out += bold;
  return out;
}

}  // namespace nnvm
