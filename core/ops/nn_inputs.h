// Input checks shared by the nn and loss ops (core/ops/nn.cpp, core/ops/loss.cpp).
// Their optional tensors (weight, bias, running stats) travel as inputs only
// when defined, with bool attributes saying which are present.
#pragma once

#include <vector>

#include "nnvm/core/op.h"

namespace nnvm {

inline void check_floating(const Tensor& t, std::string_view op, std::string_view what) {
  NNVM_CHECK(t.is_floating_point(), op, "expected a floating-point ", what, " but got ", t.dtype(), " (shape ",
             shape_str(t.sizes()), ")");
}

inline void check_input_count(absl::Span<const Tensor> in, size_t expected, std::string_view op) {
  NNVM_CHECK(in.size() == expected, op, "expected ", expected, " inputs for the given attributes but got ",
             in.size());
}

inline void push_if_defined(std::vector<Tensor>& inputs, const Tensor& t) {
  if (t.defined()) inputs.push_back(t);
}

}  // namespace nnvm
