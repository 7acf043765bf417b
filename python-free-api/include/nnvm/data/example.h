// One sample or one batch: an input and its target (libtorch's
// torch::data::Example<>). Binds to structured bindings:
//   for (const auto& [data, target] : loader)
#pragma once

#include "nnvm/core/tensor.h"

namespace nnvm::data {

struct Example {
  Tensor data;
  Tensor target;
};

}  // namespace nnvm::data
