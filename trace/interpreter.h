// Runs a trace node by node with the reference kernels: the unfused path a
// cold trace takes (docs/DESIGN.md §3.6), and the reference every optimised plan is
// tested against.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

// `inputs` must match the trace's inputs in dtype and shape (their strides and
// storage offsets may differ: they are run-time arguments). `scalars`, when
// given, replaces the values of the trace's Scalar slots (a plan replayed for
// another trace with the same signature). Returns the trace's outputs.
std::vector<Tensor> interpret(const Trace& t, absl::Span<const Tensor> inputs,
                              absl::Span<const Scalar> scalars = {});

// Runs like interpret(), but a node that throws does not end the run: its
// outputs and every value computed from them stay undefined, with the first
// error that reached them. What a failing trace still computes correctly is
// kept, as eager mode would have kept it.
struct PartialRun {
  std::vector<Tensor> outputs;                              // undefined where failed
  std::vector<std::shared_ptr<const std::string>> failure;  // per output: why, or null
  std::shared_ptr<const std::string> first_failure;         // the first node's error, or null
};
PartialRun interpret_partial(const Trace& t, absl::Span<const Tensor> inputs);

}  // namespace nnvm::trace
