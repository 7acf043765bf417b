// A Storage is one block of device memory shared by every view of it. It owns
// the version counter that in-place ops bump (autograd refuses saved tensors
// whose version moved, DESIGN §3.3).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "nnvm/core/device.h"

namespace nnvm {

class Storage {
 public:
  // Memory from the device's caching allocator.
  Storage(size_t nbytes, Device device);
  // Memory owned by the caller (from_blob); `deleter` (may be empty) runs when the storage dies.
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  bool from_allocator_;
  std::function<void(void*)> deleter_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace nnvm
