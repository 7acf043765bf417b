// NNVM_DUMP=DIR (docs/DESIGN.md §3.13): every compiled plan writes what it is to DIR,
// named by the optimised trace's signature hash:
//   plan-<hash>.dot  Graphviz: inputs, nodes, one `subgraph cluster_N` per
//                    fusion group, and on each edge that crosses groups the
//                    value's arena offset and bytes (or that it is a view, a
//                    trace input or memory of its own);
//   plan-<hash>.txt  the optimised trace, the fusion plan, how each group
//                    runs, and the memory plan.
#pragma once

#include <string>

namespace nnvm::trace {

class FusedPlan;

std::string plan_dot(const FusedPlan& plan);

// Throws nnvm::Error when DIR cannot be created or written.
void dump_plan(const std::string& dir, const FusedPlan& plan);

}  // namespace nnvm::trace
