#include "nnvm/core/storage.h"

#include "nnvm/core/allocator.h"
#include "nnvm/core/error.h"

namespace nnvm {

Storage::Storage(size_t nbytes, Device device)
    : data_(nullptr), nbytes_(nbytes), device_(device), from_allocator_(true) {
  NNVM_CHECK(device.is_cpu(), "empty", "device ", device, " has no allocator in this build");
  data_ = CpuCachingAllocator::instance().allocate(nbytes);
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), from_allocator_(false), deleter_(std::move(deleter)) {}

Storage::Storage(size_t nbytes, Device device, Lazy)
    : data_(nullptr), nbytes_(nbytes), device_(device), from_allocator_(false) {}

void Storage::reuse_lazy(size_t nbytes, Device device) {
  NNVM_DCHECK(data_ == nullptr && pending_ == nullptr && !from_allocator_ && !deleter_ && !owned_pending_);
  nbytes_ = nbytes;
  device_ = device;
}

void Storage::take_memory(Storage& other) {
  NNVM_DCHECK(!has_memory() && other.nbytes_ == nbytes_ && other.device_ == device_);
  std::swap(data_, other.data_);
  std::swap(from_allocator_, other.from_allocator_);
  std::swap(deleter_, other.deleter_);
}

void Storage::allocate() {
  NNVM_DCHECK(!has_memory());
  NNVM_CHECK(device_.is_cpu(), "empty", "device ", device_, " has no allocator in this build");
  data_ = CpuCachingAllocator::instance().allocate(nbytes_);
  from_allocator_ = true;
}

Storage::~Storage() {
  if (from_allocator_ && data_) CpuCachingAllocator::instance().free(data_, nbytes_);
  else if (deleter_) deleter_(data_);
}

}  // namespace nnvm
