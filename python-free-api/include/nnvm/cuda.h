// libtorch's torch::cuda queries, answered for an engine whose one device is
// the CPU, so that a program choosing its device as libtorch's tutorials do,
// `Device device(cuda::is_available() ? kCUDA : kCPU)`, ports unchanged and
// runs on the CPU (docs/API.md).
#pragma once

#include <cstddef>

namespace nnvm::cuda {

inline bool is_available() { return false; }
inline size_t device_count() { return 0; }
inline bool cudnn_is_available() { return false; }

}  // namespace nnvm::cuda
