// The CPU caching allocator.
//
// Note [CPU caching policy]
// Every block is 64-byte aligned (page-aligned from 64 KiB up). A request is
// rounded up to its size class (64-byte steps below 1 KiB, then four classes per
// power of two, so at most 25% is wasted). A freed block goes onto its class's
// free list instead of back to the OS, and the next request of that class takes
// it: a training loop reaches a steady state with no calls into the OS and no
// fresh-page faults on big tensors. When a miss would push the reserved bytes
// past the cache limit (NNVM_CPU_CACHE_LIMIT bytes, default 8 GiB), the cached
// blocks are released first. empty_cache() releases them on demand. One lock
// (core/spin_lock.h) guards the lists; uncontended it is two plain atomic
// instructions, far below an op.
//
// Note [Guard mode]
// For tests of code the sanitizers cannot see (JIT kernels): with
// NNVM_ALLOC_GUARD=1 or set_alloc_guard(true), every allocation is a fresh
// mapping whose last page is PROT_NONE, and the block ENDS exactly where that
// page starts (ptr + nbytes == guard), so reading or writing even one byte
// past any buffer faults, whatever its size. The price is alignment: a block
// is aligned to the largest power of two dividing nbytes (at most a page), so
// to at least its element size, not to 64 bytes; nothing in nnvm relies on
// more. Underruns are not caught. A guarded block is unmapped when freed
// (never cached), so a use after free faults too. Blocks remember how they
// were allocated: the mode may change while blocks of either kind are live.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "nnvm/core/spin_lock.h"

namespace nnvm {

struct AllocatorStats {
  int64_t bytes_in_use = 0;       // held by live blocks (rounded sizes)
  int64_t bytes_reserved = 0;     // in use plus cached
  int64_t peak_bytes_in_use = 0;
  int64_t allocations = 0;        // allocate() calls that returned a block
  int64_t frees = 0;
  int64_t cache_hits = 0;         // served from a free list
  int64_t cache_misses = 0;       // went to the OS
  int64_t bytes_allocated = 0;    // every block handed out, in all
  int64_t bytes_freed = 0;        // every block given back, in all
  int64_t peak_bytes_reserved = 0;
  int64_t bytes_released = 0;     // returned to the OS, in all (a cache release, empty_cache, a guarded block)
  int64_t blocks_released = 0;
  int64_t peak_live_allocations = 0;  // most blocks live at once (allocations - frees)
};

class CpuCachingAllocator {
 public:
  static CpuCachingAllocator& instance();

  void* allocate(size_t nbytes);  // never returns null; throws nnvm::Error when the OS refuses
  // `nbytes` is the size given to allocate: it names the block's size class,
  // so the allocator keeps no per-block table.
  void free(void* ptr, size_t nbytes);
  AllocatorStats stats() const;
  void reset_peak();
  void empty_cache();  // returns every cached block to the OS

  static size_t round_size(size_t nbytes);

  // Note [Guard mode]; the default is the NNVM_ALLOC_GUARD knob.
  void set_guard(bool on);
  bool guard() const;

 private:
  CpuCachingAllocator();
  ~CpuCachingAllocator();
  void release_cached_locked();
  // The counts of a block handed out or given back, and of reserved bytes
  // taken from or returned to the OS (under mu_).
  void count_allocate(size_t size);
  void count_free(size_t size);
  void count_reserve(size_t size);
  void count_release(size_t size, size_t blocks);
  void* allocate_guarded_locked(size_t nbytes);


  // The free list of a size class (under mu_).
  std::vector<void*>& free_list(size_t size);

  mutable SpinLock mu_;
  // size class -> blocks: the classes up to 1 KiB (64-byte steps) by index,
  // so a tiny tensor's allocation hashes nothing; larger ones in the map
  std::array<std::vector<void*>, 16> small_lists_;
  absl::flat_hash_map<size_t, std::vector<void*>> free_lists_;
  absl::flat_hash_map<void*, std::pair<void*, size_t>> guarded_;  // block -> its mapping (start, bytes)
  bool guard_;
  AllocatorStats stats_;
  int64_t cache_limit_;
};

// libtorch-style free functions.
AllocatorStats cpu_memory_stats();
// The CPU caching allocator's statistics as a table, laid out like PyTorch's
// torch.cuda.memory_summary(): allocated, reserved and cached memory and the
// allocation counts, each current, at its peak (since the start or
// reset_peak) and in all, then the cache's hits and what went to the OS.
std::string memory_summary();
void empty_cache();
void set_alloc_guard(bool on);  // Note [Guard mode]

}  // namespace nnvm
