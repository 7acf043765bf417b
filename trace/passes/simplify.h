// Algebraic simplification (docs/DESIGN.md §1, hot passes): rewrites that give
// bit-identical results under IEEE 754, and nothing else.
//   x * 1, x / 1        -> x      (when the op keeps x's dtype)
//   x + s, s == -0.0    -> x      (x - 0.0 is x + (-0.0); integers: any zero)
//   neg(neg(x))         -> x
//   x / c               -> x * (1/c) when c is a power of two whose reciprocal
//                          is exact in the compute type: then both sides are
//                          the same real number rounded once. For other c,
//                          1/c is already rounded and x * (1/c) can differ
//                          from x / c in the last place (x = 3, c = 3).
//   transpose(transpose(x, a, b), a, b)           -> x
//   view/squeeze/unsqueeze chains                 -> one view of the source
//   copy(copy(x, M), D), x -> M lossless          -> copy(x, D), or x when D is
//                                                    x's dtype and layout
//   copy(x, dtype of x), x already contiguous     -> x
// Kept on purpose (and reported): x + 0.0 (maps -0.0 to +0.0), x - x
// (inf - inf is NaN), x * 0 (NaN, inf and -x give NaN or -0.0), x / c for
// other c. A value is replaced by another only when their shape, dtype and
// strides agree, so consumers and outputs see the same layout.
// Nodes made dead by a rewrite are left for dce. Rewrites exact only up to
// reassociation (a written-out softmax to the op) belong to recognise.h.
#pragma once

#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

struct SimplifyDecision {
  size_t node = 0;   // in the trace as it was before the pass
  std::string op;
  std::string rule;  // "neg(neg(x)) -> x", ...
  bool applied = false;
  std::string reason;  // why not, when not applied
};

struct SimplifyReport {
  std::vector<SimplifyDecision> decisions;
  int applied() const;
  std::string to_string() const;
};

// Returns the number of rewrites applied.
int simplify(Trace& t, SimplifyReport* report = nullptr);

// Whether every value of dtype `from` converts to `to` exactly.
bool is_lossless_cast(DType from, DType to);

}  // namespace nnvm::trace
