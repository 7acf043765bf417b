// What a JIT program's per-run launch depends on, flattened so a repeat run
// compares it with the last launch's instead of rebuilding the loop space,
// the variant name and the block geometry (a hot plan replays the same
// layouts run after run). Inline: a run builds it without allocating.
#pragma once

#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "nnvm/core/tensor.h"

namespace nnvm::jit {

using LaunchKey = absl::InlinedVector<int64_t, 48>;

inline void append_ints(LaunchKey& key, IntArrayRef v) {
  key.push_back(int64_t(v.size()));
  key.insert(key.end(), v.begin(), v.end());
}

// An operand's sizes and strides: its data pointer is not part of the key.
inline void append_layout(LaunchKey& key, const Tensor& x) {
  append_ints(key, x.sizes());
  key.insert(key.end(), x.strides().begin(), x.strides().end());
}

}  // namespace nnvm::jit
