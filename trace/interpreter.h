// Runs a trace node by node with the reference kernels: the unfused path a
// cold trace takes (DESIGN §3.6), and the reference every optimised plan is
// tested against.
#pragma once

#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

// `inputs` must match the trace's inputs in dtype and shape (their strides and
// storage offsets may differ: they are run-time arguments). `scalars`, when
// given, replaces the values of the trace's Scalar slots (a plan replayed for
// another trace with the same signature). Returns the trace's outputs.
std::vector<Tensor> interpret(const Trace& t, absl::Span<const Tensor> inputs,
                              absl::Span<const Scalar> scalars = {});

}  // namespace nnvm::trace
