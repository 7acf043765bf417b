// Input checks shared by the nn, rms_norm and loss ops (core/ops/nn.cpp,
// core/ops/rms_norm.cpp, core/ops/loss.cpp).
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

// A weight, bias or running statistic: floating, of exactly `expected` shape.
inline void check_param(const Tensor& p, IntArrayRef expected, std::string_view op, std::string_view what,
                        const Tensor& x) {
  check_floating(p, op, what);
  NNVM_CHECK(p.sizes() == expected, op, what, " of shape ", shape_str(p.sizes()), " does not fit input of shape ",
             shape_str(x.sizes()), " (expected shape ", shape_str(expected), ")");
}

// A norm over x's trailing dims: a floating x whose trailing dims are `norm`, not empty.
inline void check_normalized_shape(const Tensor& x, IntArrayRef norm, std::string_view op) {
  check_floating(x, op, "input");
  NNVM_CHECK(!norm.empty(), op, "normalized_shape must have at least one dim (input of shape ", shape_str(x.sizes()),
             ")");
  const int64_t lead = x.dim() - int64_t(norm.size());
  NNVM_CHECK(lead >= 0 && x.sizes().subspan(size_t(lead)) == norm, op, "normalized_shape ", shape_str(norm),
             " does not match the trailing dims of input of shape ", shape_str(x.sizes()),
             " (expected input of shape [*, ", shape_str(norm).substr(1), ")");
}

inline void push_if_defined(std::vector<Tensor>& inputs, const Tensor& t) {
  if (t.defined()) inputs.push_back(t);
}

}  // namespace nnvm
