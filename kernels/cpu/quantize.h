// A quantized tensor's integers as a plain int8, uint8 or int32 view: what the
// kernels read and write (core/quantize.h).
#pragma once

#include "nnvm/core/block_pool.h"
#include "nnvm/core/tensor.h"

namespace nnvm::cpu {

// The same storage and layout with the underlying integer dtype; any other tensor itself.
inline Tensor int_view(const Tensor& t) {
  const TensorImpl& i = *t.impl();
  if (!is_quantized(i.dtype)) return t;
  return pooled_tensor(i.storage, i.shape, i.strides, i.offset, underlying(i.dtype), i.device, /*is_view=*/true);
}

}  // namespace nnvm::cpu
