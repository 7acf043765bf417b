// Eager or traced (DESIGN §1). In traced mode (the default) each computing op
// appends a node to the calling thread's trace and returns a lazy tensor;
// the trace runs (flushes) when a value is needed: data access, item(),
// printing, mark_step(), an optimizer step, or the trace size cap. In eager
// mode each op runs its kernel at once. The same program gives the same
// results either way, within floating-point reassociation, so the switch is
// the fused-against-unfused benchmark.
//
// core/ knows nothing of tracing beyond this hook: trace/recorder.cpp
// installs the functions below at start-up.
#pragma once

#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "nnvm/core/tensor.h"

namespace nnvm {

enum class Mode { Eager, Traced };

// Process-wide; the initial mode comes from NNVM_MODE (default traced).
// Leaving traced mode flushes the calling thread's trace.
void set_mode(Mode mode);
Mode mode();

// Runs the calling thread eagerly for its lifetime (nests). Entering it
// flushes the thread's trace.
class EagerGuard {
 public:
  EagerGuard();
  ~EagerGuard();
  EagerGuard(const EagerGuard&) = delete;
  EagerGuard& operator=(const EagerGuard&) = delete;
};

// Flushes the calling thread's trace: every pending value is computed.
// Optimizers call it at the end of step(); a training loop that never reads
// a value may call it once per iteration.
void mark_step();

// Whether ops on this thread are being recorded now.
bool is_recording();

// The most nodes a trace holds before it flushes (NNVM_TRACE_CAP).
void set_trace_cap(int64_t nodes);
int64_t trace_cap();

struct OpDef;
class Attrs;
struct OutputSpec;

namespace detail {

using LazyOutputs = absl::InlinedVector<Tensor, 2>;

// What the recorder provides (trace/recorder.cpp).
struct TraceHooks {
  // Records a computing op (inferring its outputs, unless the recorder knows
  // them from an identical op it recorded before); appends the lazy outputs to `outs`.
  void (*record)(const OpDef& op, TensorRefs inputs, const Attrs& attrs, LazyOutputs& outs);
  // Records an op whose result (of type `result`) is written into `out`.
  void (*record_into)(const OpDef& op, TensorRefs inputs, const Attrs& attrs, const OutputSpec& result,
                      const Tensor& out);
  // Computes what the recorder owes `storage` (its trace flushes).
  void (*materialize)(Storage& storage);
  void (*flush)();
  // Called before `impl` is pointed at other memory (Tensor::set_data): a
  // trace that reads impl's storage keeps it alive until it runs.
  void (*repoint)(const TensorImpl& impl);
};

void install_trace_hooks(const TraceHooks* hooks);
const TraceHooks* trace_hooks();

}  // namespace detail

}  // namespace nnvm
