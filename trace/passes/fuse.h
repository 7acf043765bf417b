// Fusion grouping (docs/DESIGN.md §1 "fuse", §3.7): decides which nodes of a trace
// run as one kernel. Decisions only: jit/ turns each group into code, and
// plan_memory places only what crosses a group boundary.
//
// The rules, applied walking the nodes in order (a consumer joins its
// producer's group):
// - Elementwise ops with broadcasting form one pointwise group, provided the
//   consumer's output has the group's loop shape (a consumer that broadcasts
//   the group's result up would recompute it for every copy).
// - A reduction (sum, mean, amax, ...) takes a pointwise group as its
//   prologue when nothing else reads the group's values: a reduction kernel
//   writes only reduced outputs. The reduction closes the group.
// - Matmul takes a pointwise epilogue (bias, activation, residual) of its
//   own output shape when the matmul's output has no other reader.
// - Views stay out of groups: they compute nothing and each is its own group.
// - No recompute: a node is in exactly one group; a value read outside its
//   group is a group output, written to memory once. (Recomputing is only
//   ever worth it for a cheap one-input elementwise op; this pass does not.)
// - Merging two groups through a shared consumer must not create a cycle
//   (a node outside both that reads one and feeds the other).
// Every producer->consumer edge left between two groups carries a reason.
#pragma once

#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

enum class GroupKind { kPointwise, kReduction, kMatmulEpilogue, kSingle };
const char* group_kind_name(GroupKind k);

struct FusionGroup {
  GroupKind kind = GroupKind::kSingle;
  std::vector<int32_t> nodes;    // in trace order
  std::vector<ValueId> inputs;   // read by the group, produced outside it
  std::vector<ValueId> outputs;  // produced by the group, read outside it or trace outputs
};

struct NotFused {
  int32_t producer;
  int32_t consumer;
  std::string reason;
};

struct FusionPlan {
  std::vector<FusionGroup> groups;  // in the order of their first node
  std::vector<int32_t> group_of;    // per node
  std::vector<NotFused> not_fused;  // one per adjacent (producer, consumer) pair in different groups

  // One line per group, then one per edge not fused:
  //   group 0 pointwise: #0 mul, #1 add, #2 gelu  in %0 %1 %2  out %5
  //   not fused #2 gelu -> #3 transpose: consumer is a view
  std::string to_string(const Trace& t) const;
};

FusionPlan fuse(const Trace& t);

}  // namespace nnvm::trace
