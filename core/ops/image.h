// Shared by the image ops (conv, pool, interpolate): libtorch accepts an
// unbatched CHW input wherever it accepts NCHW.
#pragma once

#include <string_view>

#include "nnvm/core/tensor.h"

namespace nnvm {

// Runs a 2-D op on a batched view of an unbatched (rank 3) input.
template <class F> Tensor with_batch(const Tensor& x, std::string_view op, F run) {
  NNVM_CHECK(x.defined(), op, "the input is an undefined tensor");
  NNVM_CHECK(x.dim() == 3 || x.dim() == 4, op, "expected a 3-D (CHW) or 4-D (NCHW) input, got ",
             shape_str(x.sizes()));
  if (x.dim() == 4) return run(x);
  return run(x.unsqueeze(0)).squeeze(0);
}

}  // namespace nnvm
