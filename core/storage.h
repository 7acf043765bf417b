// A Storage is one block of device memory shared by every view of it. It owns
// the version counter that in-place ops bump (autograd refuses saved tensors
// whose version moved, docs/DESIGN.md §3.3).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "nnvm/core/device.h"

namespace nnvm {

// What a recording trace owes a storage (trace/recorder.cpp defines it): its
// contents, a pending write, or that the trace reads it. While one is set,
// the first access to the data flushes the trace.
struct PendingWork {
  virtual ~PendingWork() = default;
};

class Storage {
 public:
  // Memory from the device's caching allocator.
  Storage(size_t nbytes, Device device);
  // Memory owned by the caller (from_blob); `deleter` (may be empty) runs when the storage dies.
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  // A storage a trace will fill: no memory until then (see PendingWork).
  struct Lazy {};
  Storage(size_t nbytes, Device device, Lazy);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  // Bytes a flush writes behind the version: a recorded in-place result
  // moves the version when it is recorded and reaches the memory when the
  // trace runs, whose kernels may read the old bytes first. rewrites()
  // counts the flushes that have finished writing the storage, rewriting()
  // says whether one is writing it now. What is kept from the bytes between
  // calls (the GEMM's packed weights, kernels/cpu/gemm_prepack.h) is keyed
  // on the version and rewrites() and never taken while rewriting().
  void begin_rewrite() { rewriting_.fetch_add(1, std::memory_order_acq_rel); }
  void end_rewrite() {
    rewrites_.fetch_add(1, std::memory_order_acq_rel);
    rewriting_.fetch_sub(1, std::memory_order_acq_rel);
  }
  bool rewriting() const { return rewriting_.load(std::memory_order_acquire) != 0; }
  uint64_t rewrites() const { return rewrites_.load(std::memory_order_acquire); }

  PendingWork* pending() const { return pending_; }
  // Work the recorder owns: it clears it here before the work dies (no
  // reference count to keep per lazy storage).
  void set_pending(PendingWork* p) {
    pending_ = p;
    owned_pending_.reset();
  }
  // Work the storage owns from now on (a failed trace's record stays with
  // the trace's tensors).
  void set_pending(std::unique_ptr<PendingWork> p) {
    pending_ = p.get();
    owned_pending_ = std::move(p);
  }
  bool has_memory() const { return data_ != nullptr || nbytes_ == 0; }
  // Memory the caller owns (from_blob): the program may read it behind our back.
  bool is_external() const { return !from_allocator_ && data_ != nullptr; }
  // Gives a lazy storage its memory: takes `other`'s (of the same size;
  // `other` is left without memory), or fresh memory from the allocator.
  void take_memory(Storage& other);
  void allocate();
  // A lazy storage nothing refers to any more, made a new lazy storage of
  // `nbytes` (the recorder's own spares: no allocation per lazy tensor).
  void reuse_lazy(size_t nbytes, Device device);

 private:
  // data_ptr() reads the first two: one cache line for a storage nothing
  // has touched since the last step.
  void* data_;
  PendingWork* pending_ = nullptr;
  size_t nbytes_;
  Device device_;
  bool from_allocator_;
  std::function<void(void*)> deleter_;
  std::atomic<uint64_t> version_{0};
  std::atomic<uint32_t> rewriting_{0};
  std::atomic<uint64_t> rewrites_{0};
  std::unique_ptr<PendingWork> owned_pending_;
};

}  // namespace nnvm
