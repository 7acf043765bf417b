// Dead-code elimination: drops every node none of whose outputs reaches a
// trace output. Traces are functional (in-place ops are functionalised when
// recorded), so an unused node has no effect, except the error of an op that
// checks its input values (trace::checks_values), which DCE keeps.
#pragma once

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

// Returns the number of nodes removed.
int dce(Trace& t);

}  // namespace nnvm::trace
