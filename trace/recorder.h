// The recorder (docs/DESIGN.md §1, §3.2, §3.3): in traced mode every computing op
// lands here instead of running. Each thread records its own Trace; the
// outputs are lazy tensors whose storages have no memory until the trace
// flushes. A flush looks the trace up in the process-wide TraceCache: cold
// traces run in the interpreter (the unfused path), hot ones replay their
// compiled Plan with this trace's inputs and Scalars as arguments.
//
// Storages and what a trace owes them:
// - a lazy storage (an op's output) holds one value of the trace: its whole
//   contents. Views of it are ordinary views; reading one records
//   as_strided(value), and an in-place op through one records
//   strided_update(value, result), after which every view sees the update
//   (functionalisation).
// - a materialised storage the trace reads becomes a trace input, once per
//   tensor. Its data pointer and storage offset are run-time arguments.
// - an in-place op on a materialised tensor (an optimizer updating a
//   parameter) records the new value and a pending write of it into that
//   tensor, done after every node of the trace has run. Touching another
//   layout of a storage with a pending write flushes first.
// While a trace owes a storage anything, the first access to its data (a
// kernel, item(), printing, data_ptr()) flushes the trace.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nnvm/trace/pass_manager.h"
#include "nnvm/trace/pipeline.h"  // global_passes(), compile_plan()
#include "nnvm/trace/plan.h"
#include "nnvm/trace/trace_cache.h"

namespace nnvm::trace {

// The cache every thread's flushes go through.
TraceCache& global_trace_cache();

// The calling thread's recording, for tests and tools.
struct RecorderStats {
  int64_t nodes = 0;        // in the trace being recorded now
  int64_t flushes = 0;      // of this thread's traces so far
  int64_t nodes_flushed = 0;
  int64_t nodes_repeated = 0;    // recorded from the cursor, without shape inference
  int64_t flushes_repeated = 0;  // of traces that repeated the last one whole: no signature comparison
  int64_t flushes_unbuilt = 0;   // of those, the ones whose compiled plan ran without building the trace
  int64_t flushes_replayed = 0;  // of those, the ones that replayed the plan's captured kernel calls
  int64_t flushes_interpreted = 0;  // of every flush, those the interpreter ran: no compiled plan
};
RecorderStats recorder_stats();

// Runs `f` on every trace this thread flushes, before it runs (tests).
void set_flush_observer(std::function<void(const Trace&)> f);

// ---- a region's flushes, captured (nnvm::Model's calls: docs/MODELS.md,
// "Calls that record nothing").

// One flush of a captured region: the plan it ran and what it ran with.
struct CapturedFlush {
  std::shared_ptr<const Plan> plan;  // null: the interpreter ran it (the trace was cold)
  std::vector<Scalar> scalars;       // what the plan ran with (empty where it holds them)
  std::vector<Tensor> inputs;        // by trace input position, as the plan read them
  // Each output's lazy storage, which now holds its value whole (from offset
  // 0, contiguous); null where the output was written into a materialised tensor.
  std::vector<std::shared_ptr<Storage>> outputs;
};

// While a FlushCapture lives, the calling thread's flushes are appended to
// `flushes`, and `host_reads` counts what the program read on the host in
// the meantime: a lazy value (its flush then runs mid-region) or the first
// access to a watched storage's data (a model's input, whose values may
// steer what the region records). One at a time per thread.
class FlushCapture {
 public:
  FlushCapture();
  ~FlushCapture();
  FlushCapture(const FlushCapture&) = delete;
  FlushCapture& operator=(const FlushCapture&) = delete;
  // The calling thread's, or null. Constructing one while another is active throws.
  static FlushCapture* active();
  // Counts the host's first access to s's data from now on. A storage the
  // recording trace owes anything (a lazy value) is not watched: reading it
  // counts anyway.
  void watch(const std::shared_ptr<Storage>& s);

  std::vector<CapturedFlush> flushes;
  int64_t host_reads = 0;

 private:
  std::vector<std::shared_ptr<Storage>> watched_;
};

}  // namespace nnvm::trace
