// Declaration helpers for pointwise ops: one call declares an op's inputs,
// broadcasting and dtype rule. The CPU kernels live in kernels/cpu/pointwise.cpp.
#pragma once

#include "nnvm/core/op.h"

namespace nnvm {

// How a pointwise op's result dtype follows from its inputs' promoted dtype.
enum class ResultType {
  Same,      // the promoted dtype (add, neg, maximum)
  Floating,  // the promoted dtype, or float32 when that is integral or bool (exp, div)
  Bool,      // always bool (eq, isnan, logical_and)
};

DType result_dtype(DType promoted, ResultType rule);

// Declares a pointwise op over `num_tensor_inputs` broadcast tensors plus
// `num_scalars` leading Scalar attributes that take part in type promotion
// (the 2 in x + 2). Further attributes are the op's own (alpha, slope).
OpDef& declare_pointwise(std::string_view name, int num_tensor_inputs, int num_scalars, ResultType rule);

// The dtype a pointwise op computes in: the inputs' promoted dtype with its
// promoting scalars folded in, lifted to float32 when the op is Floating.
DType pointwise_common_dtype(absl::Span<const Tensor> inputs, const Attrs& attrs, int num_scalars,
                             ResultType rule);

}  // namespace nnvm
