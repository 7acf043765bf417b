// A float32 tensor whose last element ends the last readable page, an
// inaccessible page right after it: JIT code (which AddressSanitizer does not
// see) reading or writing one element past the data faults the test.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "reference.h"

namespace nnvm::testing {

class GuardedTensor {
 public:
  // `source` (float32, contiguous) copied to the end of the readable pages.
  explicit GuardedTensor(const Tensor& source) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t bytes = size_t(source.numel()) * sizeof(float);
    readable_ = (bytes + page - 1) / page * page;
    base_ = static_cast<char*>(mmap(nullptr, readable_ + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(base_ + readable_, page, PROT_NONE), 0);
    char* at = base_ + readable_ - bytes;
    std::memcpy(at, source.data_ptr(), bytes);
    tensor_ = from_blob(at, source.sizes(), [](void*) {});
  }
  ~GuardedTensor() { munmap(base_, readable_ + size_t(sysconf(_SC_PAGESIZE))); }
  GuardedTensor(const GuardedTensor&) = delete;
  GuardedTensor& operator=(const GuardedTensor&) = delete;

  const Tensor& tensor() const { return tensor_; }

 private:
  char* base_ = nullptr;
  size_t readable_ = 0;
  Tensor tensor_;
};

}  // namespace nnvm::testing
