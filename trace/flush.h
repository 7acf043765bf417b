// Running a trace at its flush (docs/DESIGN.md §3.3). The recorder
// (trace/recorder.cpp) records ops and decides when a trace ends and what it
// owes; this runs what it recorded and gives the tensors their values:
//   - look-up: a trace that repeats a compiled entry whole runs the entry's
//     plan without being built, and replays the plan's captured kernel calls
//     when it also has the plan's Scalars and every output is lazy; any other
//     trace is built and looked up in the trace cache;
//   - run: the compiled plan, or the interpreter while the trace is cold;
//   - failure handling: a run that throws is run again node by node, so what
//     does not depend on the failing op keeps its value, as in eager mode;
//     the outputs that do carry the failure, and the first one is thrown;
//   - bind: each output into its lazy storage (taking the result's memory
//     when nothing else holds it) or written into its materialised target.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "nnvm/core/profiling.h"
#include "nnvm/core/storage.h"
#include "nnvm/core/tensor.h"
#include "nnvm/trace/cursor.h"
#include "nnvm/trace/ir.h"
#include "nnvm/trace/plan.h"
#include "nnvm/trace/recorder.h"

namespace nnvm::trace {

// One output of a flushed trace.
struct FlushOutput {
  std::shared_ptr<Storage> storage;  // a lazy storage to fill, or
  Tensor target;                     // a materialised tensor to write
  PendingWork* record;               // what the recorder kept for it
};

// A flush's working buffers, kept by the recorder from one flush to the
// next (emptied after each), so a flush allocates nothing once warm.
struct FlushBuffers {
  std::vector<Tensor> targets, results;
  WrittenFlags written_into;
  std::vector<const Storage*> written;
  void clear() {
    targets.clear();
    results.clear();
    written_into.clear();
    written.clear();
  }
};

// What the recorder hands the flush.
struct Flush {
  TraceCursor& cursor;   // the entry the trace repeats, and the caches' look-ups
  bool unbuilt = false;  // the trace is the cursor's entry so far, not built
  bool repeated = false;  // it repeats the cursor's entry whole
  absl::Span<Tensor> inputs;  // by input position, with their recorded layouts (undefined: gone)
  absl::Span<const FlushOutput> outputs;
  // The trace built (from `entry` while unbuilt), its outputs marked.
  absl::FunctionRef<const Trace&(const Trace* entry)> build;
  // Gives output `out`'s storage a record that carries `failure`.
  absl::FunctionRef<void(const FlushOutput& out, std::shared_ptr<const std::string> failure)> fail;
  const std::function<void(const Trace&)>& observer;  // set_flush_observer's
  RecorderStats& stats;
  profiling::Scope& profile;
};

// Runs the flush `f`. Throws the first failing op's error, after every
// output that does not depend on it has its value.
void run_flush(const Flush& f, FlushBuffers& buffers);

}  // namespace nnvm::trace
