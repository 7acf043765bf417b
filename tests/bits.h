// Bit-for-bit equality of tensors, for the tests that promise it (a fused
// run against the reference, a resumed run against an uninterrupted one).
#pragma once

#include <cstring>
#include <vector>

#include "nnvm/core/tensor.h"

namespace nnvm::testing {

// Same shape, dtype and bytes (NaN equal only to the same NaN).
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

inline bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

}  // namespace nnvm::testing
