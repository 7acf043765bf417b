// A hot plan's kernel calls, captured from one run and replayed with other
// operand addresses (trace/executor.h, FusedPlan::replay). The recorder runs
// a plan with the layouts its signature fixes and, when the trace it
// flushes repeats the plan's own Scalars, with the plan's own attributes:
// every run then computes the same launches, and only where the operands lie
// changes. A replay skips the executor's tensors, the launch lookups and
// the Scalar binding, and calls the kernels straight.
//
// While a ReplayCapture is active on a thread, each kernel the plan's groups
// run adds a ReplayCall (the GEMM, a pointwise or reduction JIT launch), and
// any other way of running a group (a reference kernel, a tile program, a
// launch that depends on more than the layouts) declines the capture.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace nnvm::trace {

// Where one operand of a captured call lies: `offset` bytes past the first
// element of the plan's value `value` (a trace ValueId).
struct ReplayOperand {
  int32_t value = -1;
  int64_t offset = 0;
};

// One captured kernel call: run(state, ptrs) with ptrs[k] the address of
// operands[k] in this run.
struct ReplayCall {
  using Fn = void (*)(const void* state, const char* const* ptrs);
  Fn run = nullptr;
  std::shared_ptr<const void> state;  // the kernel and its call's fixed fields
  absl::InlinedVector<ReplayOperand, 6> operands;
};

// The calls of one run, in order.
class ReplayCapture {
 public:
  void add(ReplayCall call) { calls_.push_back(std::move(call)); }
  // A group ran in a way no call can replay: the run's calls are not all it did.
  void decline(std::string why) {
    if (why_.empty()) why_ = std::move(why);
  }
  bool declined() const { return !why_.empty(); }
  const std::string& why() const { return why_; }
  std::vector<ReplayCall>& calls() { return calls_; }

 private:
  std::vector<ReplayCall> calls_;
  std::string why_;
};

// The capture the calling thread's kernel runs add to; null outside a CaptureScope.
ReplayCapture* replay_capture();

// Makes `capture` the thread's for its lifetime.
class CaptureScope {
 public:
  explicit CaptureScope(ReplayCapture* capture);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  ReplayCapture* previous_;
};

// Declines the thread's capture, if one is active.
inline void decline_replay(const char* why) {
  if (ReplayCapture* c = replay_capture()) [[unlikely]]
    c->decline(why);
}

}  // namespace nnvm::trace
