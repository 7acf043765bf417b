// Constant folding (docs/DESIGN.md §1, hot passes): a node whose inputs are all
// constants (creation ops such as full/arange/eye have none) is run once with
// its reference kernel and replaced by a constant the trace owns.
//
// Never folded: random ops (their draws must differ between runs), and
// computed results over kMaxFoldedElements (a constant lives in the plan for
// its whole life; recomputing a big fill is cheaper than holding it).
// A folded trace is specialised on the Scalar attributes it baked in (a fill
// value, a step): its signature carries the constants' bytes, so it is keyed
// on them.
#pragma once

#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

inline constexpr int64_t kMaxFoldedElements = int64_t(1) << 16;

// One decision about one node of the trace as it was before the pass.
struct FoldDecision {
  size_t node = 0;
  std::string op;
  bool folded = false;
  std::string reason;  // why not, when not folded
};

struct FoldReport {
  std::vector<FoldDecision> decisions;  // folded nodes, and all-constant nodes that were not
  std::string to_string() const;
};

// Returns the number of nodes folded; `report`, when given, receives every
// decision.
int constant_fold(Trace& t, FoldReport* report = nullptr);

}  // namespace nnvm::trace
