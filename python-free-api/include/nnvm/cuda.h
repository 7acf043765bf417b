// nnvm::cuda, libtorch's torch::cuda queries: nnvm runs on the CPU only, so no
// CUDA device is ever available. Lets the tutorials' device choice
// (`if (torch::cuda::is_available()) device = kCUDA;`) port by rote.
#pragma once

#include <cstddef>

namespace nnvm::cuda {

inline bool is_available() { return false; }
inline size_t device_count() { return 0; }

}  // namespace nnvm::cuda
