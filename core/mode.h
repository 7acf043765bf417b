// Eager or traced (docs/DESIGN.md §1). In traced mode (the default) each computing op
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
#include <utility>
#include <vector>

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

// An op's outputs as the dispatcher collects them: two in place (nearly
// every op has one or two), contiguous (a Span sees them), more on the heap.
// absl::InlinedVector's growth check and out-of-line destructor cost a
// traced op about a twentieth of what recording it costs.
class OpOutputs {
 public:
  OpOutputs() = default;
  OpOutputs(const OpOutputs&) = delete;
  OpOutputs& operator=(const OpOutputs&) = delete;

  void push_back(Tensor t) {
    if (size_ < kInline && more_.empty()) [[likely]] {
      inline_[size_++] = std::move(t);
      return;
    }
    spill(std::move(t));
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Tensor* data() { return more_.empty() ? inline_ : more_.data(); }
  const Tensor* data() const { return more_.empty() ? inline_ : more_.data(); }
  Tensor& operator[](size_t i) { return data()[i]; }
  const Tensor& operator[](size_t i) const { return data()[i]; }
  Tensor* begin() { return data(); }
  Tensor* end() { return data() + size_; }
  const Tensor* begin() const { return data(); }
  const Tensor* end() const { return data() + size_; }

 private:
  static constexpr size_t kInline = 2;
  // A third output: every output moves to the heap, in order.
  void spill(Tensor t) {
    if (more_.empty())
      for (size_t k = 0; k < size_; ++k) more_.push_back(std::move(inline_[k]));
    more_.push_back(std::move(t));
    ++size_;
  }
  Tensor inline_[kInline];
  std::vector<Tensor> more_;
  size_t size_ = 0;
};
using LazyOutputs = OpOutputs;

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
