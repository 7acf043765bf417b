// nn::Upsample (nn/upsampling.h): F::interpolate behind a module.
#include "nnvm/nn/upsampling.h"

#include "nnvm/nn/functional.h"

namespace nnvm::nn {

Tensor UpsampleImpl::forward(const Tensor& x) {
  return functional::interpolate(x, functional::InterpolateFuncOptions()
                                        .size(options.size())
                                        .scale_factor(options.scale_factor())
                                        .mode(options.mode())
                                        .align_corners(options.align_corners()));
}

}  // namespace nnvm::nn
