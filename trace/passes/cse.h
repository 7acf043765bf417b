// Common-subexpression elimination: a node with the same op, the same
// attributes (Scalar values included: equal values give equal results) and
// the same inputs as an earlier node is replaced by that node's outputs.
// Random ops carry their generator counters as attributes, so two draws are
// merged only when they would draw the same numbers.
#pragma once

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

// Returns the number of nodes removed.
int cse(Trace& t);

}  // namespace nnvm::trace
