// Trace signatures (docs/DESIGN.md §3.4, STYLE habit 4): the key of the trace cache.
// A canonical text of the ops, their structural attributes, the topology and
// the inputs' dtypes, shapes and strides. Scalar attribute values, data
// addresses and storage offsets are run-time arguments and never part of it,
// so a new learning rate or a view at a new offset replays the same plan.
// Constants (made by constant folding) are the exception: their bytes are
// baked into a plan, so a hash of them is part of the key.
//
// Every flush looks a signature up, so the hot path never builds the text:
// signature_hash() hashes the same fields word by word (ops by their names,
// never a pointer, so the same program has the same hash in every process),
// and same_signature() compares two traces field by field, the exact check
// behind a hash match. The text is for dumps, tests and explanations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

struct Signature {
  uint64_t hash = 0;  // signature_hash()
  std::string key;    // the canonical text; equal keys mean equal signatures
  bool operator==(const Signature& o) const { return hash == o.hash && key == o.key; }
};

Signature signature(const Trace& t);

// The hash of signature(t), without the text.
uint64_t signature_hash(const Trace& t);

// Whether a and b have the same signature, field by field, without the text.
// Exact: never true where the keys differ.
bool same_signature(const Trace& a, const Trace& b);

// Whether two attributes are the same in a signature: Scalars by kind and
// pinned constant (trace/ir.h), everything else by value.
bool same_attr(const AttrValue& a, const AttrValue& b);
// Every attribute of x and y the same in a signature.
bool same_attrs(const Node& x, const Node& y);

// The ops and topology without shapes, dtypes or attributes: traces that
// share it differ in something explain_difference can name (the trace cache
// explains a miss against the last trace of the same structure).
uint64_t structure_hash(const Trace& t);

// The signature with sizes abstracted (docs/TRACE.md "Shape classes"): every
// input dim and stride, and every integer of an attribute (a view's sizes,
// a draw's shape), counts only as 0, 1, or "two or more" (negative integers,
// like dim -1, as themselves); ops, topology, dtypes, ranks, the other
// attributes and constants are as in signature_hash. Traces that differ only
// in sizes share it: the trace cache's shape class of a signature.
uint64_t shape_class_hash(const Trace& t);

// One field where two traces' signatures differ: `where` ("input 0 shape",
// "node 3 (add) attribute 1", "node 5 op", "outputs", "nodes"), its value in
// each ("[4, 3]", "[6, 3]"), and the line a cache miss would give for it.
struct SignatureDifference {
  std::string where;
  std::string before;
  std::string after;
  std::string summary;
};

// Every field where two traces' signatures differ, in trace order (counts
// first); empty when they have the same signature. Nodes are compared by
// position up to the shorter trace.
std::vector<SignatureDifference> signature_differences(const Trace& before, const Trace& now);

// Why two traces have different signatures, for cache-miss reports:
// "new structure", "shape changed at input 0: [2, 3] -> [4, 3]",
// "dtype changed at node 2 (add)", ...; empty when they match.
std::string explain_difference(const Trace& before, const Trace& now);

}  // namespace nnvm::trace
