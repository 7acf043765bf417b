// The hot-trace pipeline (docs/DESIGN.md §1): an ordered list of named passes over
// one Trace. Users add their own passes beside the built-in ones. After each
// pass the IR is verified (always in debug builds, and wherever
// `verify_each_pass` is set, as tests do), so a broken pass is named at once
// rather than surfacing as a wrong result three passes later.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

// Throws nnvm::Error (op "verify") unless: every node's inputs are trace
// inputs, constants or outputs of earlier nodes; every value's metadata is
// what its op infers (a constant's is its tensor's); the outputs exist.
void verify(const Trace& t);

// A pass returns how many nodes it rewrote or removed (0: unchanged).
using PassFn = std::function<int(Trace&)>;

struct PassStats {
  std::string name;
  int changes = 0;            // what the pass returned
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  double seconds = 0;
};

class PassManager {
 public:
#ifdef NDEBUG
  bool verify_each_pass = false;
#else
  bool verify_each_pass = true;
#endif

  PassManager& add(std::string name, PassFn pass);
  // Runs every pass in order; returns this run's statistics, one per pass
  // (also appended to stats()). Throws nnvm::Error naming the pass after
  // which the IR failed verification.
  std::vector<PassStats> run(Trace& t);

  const std::vector<PassStats>& stats() const { return stats_; }
  std::string stats_to_string() const;

 private:
  std::vector<std::pair<std::string, PassFn>> passes_;
  std::vector<PassStats> stats_;
};

}  // namespace nnvm::trace
