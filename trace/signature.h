// Trace signatures (DESIGN §3.4, STYLE habit 4): the key of the trace cache.
// A canonical text of the ops, their structural attributes, the topology and
// the inputs' dtypes, shapes and strides. Scalar attribute values, data
// addresses and storage offsets are run-time arguments and never part of it,
// so a new learning rate or a view at a new offset replays the same plan.
// Constants (made by constant folding) are the exception: their bytes are
// baked into a plan, so a hash of them is part of the key.
// The hash is FNV-1a over that text: no pointer ever enters it, so the same
// program has the same signature in every process.
#pragma once

#include <cstdint>
#include <string>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

struct Signature {
  uint64_t hash = 0;
  std::string key;  // the canonical text; equal keys mean equal signatures
  bool operator==(const Signature& o) const { return hash == o.hash && key == o.key; }
};

Signature signature(const Trace& t);

// Why two traces have different signatures, for cache-miss reports:
// "new structure", "shape changed at input 0: [2, 3] -> [4, 3]",
// "dtype changed at node 2 (add)", ...; empty when they match.
std::string explain_difference(const Trace& before, const Trace& now);

}  // namespace nnvm::trace
