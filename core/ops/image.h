// Shared by the image ops (conv, pool, interpolate): libtorch accepts an
// unbatched CHW input wherever it accepts NCHW; the nearest-neighbour
// interpolations' source index, for the 2-D kernel and the other ranks.
#pragma once

#include <algorithm>
#include <cmath>
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

// The input index nearest-neighbour interpolation reads for output index
// `o` of a dim resized from `in` to `out`, as libtorch's nearest_idx and
// nearest_exact_idx (aten/src/ATen/native/UpSample.h): the scale is the
// user's scale factor inverted, or in / out, and computed in float whatever
// the dtype, so edge pixels agree with libtorch's; `exact` reads the pixel
// whose centre is nearest ("nearest-exact"), otherwise the one at or left of
// o · scale ("nearest"), which is o itself for an unchanged size and o / 2
// for a doubled one.
inline int64_t nearest_source(int64_t o, int64_t in, int64_t out, double user_scale, bool exact) {
  const float scale = user_scale > 0 ? float(1.0 / user_scale) : float(in) / float(out);
  if (exact) return std::min(int64_t(std::floor(float((double(o) + 0.5) * double(scale)))), in - 1);
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  return std::min(int64_t(std::floor(float(o) * scale)), in - 1);
}

}  // namespace nnvm
