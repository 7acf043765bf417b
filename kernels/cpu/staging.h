// Staging copies for kernels that compute in fewer dtypes than they accept
// (matmul, convolution, pooling): an operand is converted into a new
// contiguous tensor of the compute dtype, and a result is written back into
// the output's dtype. Kernels use these, never ops, so that a kernel stays one
// node when the tracer records it.
#pragma once

#include "nnvm/core/functions.h"
#include "nnvm/kernels/cpu/loops.h"

namespace nnvm::cpu {

// Writes src's values into dst (same shape, any layouts and dtypes).
inline void convert_into(const Tensor& dst, const Tensor& src) {
  with_compute_type(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    pointwise<T, 1>(dst, {&src}, [](T x) { return x; });
  });
}

// src as a contiguous tensor of `dtype`; src itself when it already is one.
inline Tensor staged(const Tensor& src, DType dtype) {
  if (src.dtype() == dtype && src.is_contiguous()) return src;
  Tensor dst = empty(src.sizes(), dtype);
  convert_into(dst, src);
  return dst;
}

}  // namespace nnvm::cpu
