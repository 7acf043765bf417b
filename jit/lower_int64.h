// The int64 side of lower_pointwise (loop_ir.h, Note [int64 halves]);
// internal to the lowering.
#pragma once

#include <string>

#include "absl/container/inlined_vector.h"
#include "nnvm/jit/loop_builder.h"

namespace nnvm::jit::lowering {

// What group input `input` of dtype d loads as: an int64's is the kPair of its halves.
int32_t load_input(Builder& b, int32_t input, DType d);

// Node n (the group's node `step`), its input expressions `in` (an int64
// value's is its kPair). Lowers n when it compares in int64 or writes int64
// (`out`: its expression); else rewrites in's int64 inputs for the float32
// lowering: to float32 where n computes in float32 (as the reference reads
// them), to x != 0 where n reads only that (logic, a cast to bool). An
// input left int64 afterwards is the caller's to decline. Returns why n does
// not lower, or empty.
std::string lower_int64(Builder& b, const trace::Node& n, int32_t step, absl::InlinedVector<int32_t, 3>& in,
                        int32_t& out);

}  // namespace nnvm::jit::lowering
