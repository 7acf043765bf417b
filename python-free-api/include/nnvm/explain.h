// Why a trace missed the cache, and why nodes did not fuse (docs/TRACE.md
// "Explanations"): as data and as text.
//
//   for (const nnvm::CacheMiss& m : nnvm::cache_stats().trace.recent_misses)
//     std::cout << nnvm::explain(previous, m.hash).text();   // every field that differs
//   std::cout << nnvm::why_not_fused(hash).text();            // every edge left between groups
//
// A signature is named by its hash, as the cache statistics give it
// (nnvm/cache.h: recent misses, shape classes); the cache must still hold it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnvm {

namespace trace {
class Trace;
}

// One field where two traces' signatures differ.
struct TraceDifference {
  std::string where;   // "input 0 shape", "node 3 (add) attribute 1", "node 5 op", "outputs", "nodes"
  std::string before;  // "[4, 3]"
  std::string after;   // "[6, 3]"
};

struct TraceExplanation {
  std::vector<TraceDifference> differences;  // in trace order, counts first; empty: one signature
  // One line per difference, "input 0 shape: [4, 3] -> [6, 3]"; "same signature" when none.
  std::string text() const;
};

// Every field where the signatures differ. Throws nnvm::Error naming a hash
// the trace cache does not hold (never seen, or evicted).
TraceExplanation explain(uint64_t signature_a, uint64_t signature_b);
TraceExplanation explain(const trace::Trace& a, const trace::Trace& b);

// An edge from a producer to a consumer that fusion left between two groups.
struct FusionRefusal {
  int32_t producer = 0;  // node indices in the optimised trace (after the graph passes)
  int32_t consumer = 0;
  std::string producer_op;
  std::string consumer_op;
  std::string reason;  // "consumer is a view", "the reduction closes its group", ...
};

struct FusionReport {
  int64_t nodes = 0;   // of the optimised trace
  int64_t groups = 0;  // fusion groups
  std::vector<FusionRefusal> refused;
  // "N nodes in G groups", then "#2 gelu -> #3 transpose: consumer is a view" per refusal.
  std::string text() const;
};

// The graph passes and fusion on a copy of the trace of `signature` (as a
// compile would run them), and every edge left unfused with its reason.
// Throws nnvm::Error naming a hash the trace cache does not hold.
FusionReport why_not_fused(uint64_t signature);
FusionReport why_not_fused(const trace::Trace& t);

}  // namespace nnvm
