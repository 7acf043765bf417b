// The launch skeleton every JIT path of a fusion group shares (docs/DESIGN.md
// §3.8): the pointwise, reduction and row-wise drivers (pointwise_jit.h,
// reduce_jit.h, rowwise_jit.h) each derive from JitPath and write only what
// is theirs: lowering, planning a launch, running one.
//
//   - Variants: the compiled kernels a path has run, each taken once from the
//     process's KernelCache (trace/kernel_cache.h) under its key and kept by
//     name, so a later run finds it without the cache's lock.
//   - The last launch: a run whose launch key (launch_key.h) matches the last
//     run's reuses its launch whole (find_launch).
//   - The decline reason: why the last run that could have used JIT code did
//     not (fall_back sets it, ran clears it), and the runs of the path's kind
//     on the calling thread (tests count them).
//   - The replay hook: a launch captured into a hot plan's calls
//     (trace/replay.h); a replay calls the path's run_launch with the
//     operands' addresses of that run.
//
// Derived is the driver (CRTP): it declares `friend class JitPath<...>` and
// defines run_launch(const Launch&, const char* const* ptrs, const
// ScalarLanes&) const, which runs a launch (a replay's too).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "nnvm/core/error.h"
#include "nnvm/jit/kernel_dump.h"
#include "nnvm/jit/launch_key.h"
#include "nnvm/jit/loop_ir.h"
#include "nnvm/trace/kernel_cache.h"
#include "nnvm/trace/reason.h"
#include "nnvm/trace/replay.h"

namespace nnvm::jit {

template <class Derived, class Compiled, class Launch>
class JitPath {
 public:
  // Why the last run that could have used JIT code did not; empty if it did.
  std::string last_fallback() const { return fallback_.get(); }

  // The variants this path has run, by name.
  std::vector<std::string> variant_names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> names;
    for (const auto& [name, v] : variants_) names.push_back(name);
    return names;
  }
  // "<name>: <why>" for each variant whose code could not be generated.
  std::vector<std::string> declined_variants() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> declined;
    for (const auto& [name, v] : variants_)
      if (!v->declined().empty()) declined.push_back(name + ": " + v->declined());
    return declined;
  }

  // Runs of this kind of path that used JIT code on the calling thread: a
  // count shared by every thread would be an atomic read-modify-write per run.
  static int64_t runs() { return thread_runs_; }

 protected:
  JitPath() = default;
  ~JitPath() = default;

  // The variant `name`: kept here, or taken from the kernel cache under
  // `cache_key` (compiled by make(), a shared_ptr<const Compiled>, when the
  // cache has none) and kept.
  template <class Make>
  std::shared_ptr<const Compiled> find_variant(const std::string& name, const std::string& cache_key,
                                          const Make& make) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [n, v] : variants_)
        if (n == name) return v;
    }
    auto kernel = std::dynamic_pointer_cast<const Compiled>(trace::global_kernel_cache().get(
        cache_key, [&]() -> std::shared_ptr<const trace::CompiledKernel> { return make(); }));
    NNVM_CHECK(kernel != nullptr, "JIT", "the kernel cache holds another kind of kernel under ", cache_key);
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [n, v] : variants_)  // another thread's run may have kept it meanwhile
      if (n == name) return v;
    variants_.emplace_back(name, kernel);
    return kernel;
  }

  // `head` (what the path compiles from), then each variant compiled so far
  // with its machine code (a repro bundle's code, trace/repro.h).
  std::string variants_code(std::string head) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return jit_code(std::move(head), variants_);
  }

  // Records why this run does not use JIT code; false (nothing ran).
  bool fall_back(std::string why) const {
    fallback_.set(std::move(why));
    return false;
  }
  // Counts a run that used JIT code and clears the last reason; true.
  bool ran() const {
    ++thread_runs_;
    fallback_.clear();
    return true;
  }

  // The launch this run uses: the last one when `describe` gives its key,
  // else plan() (launch_key.h find_launch). `keep` takes a reference to it.
  template <class Describe, class Plan>
  const Launch* find_launch(const Describe& describe, const Plan& plan, LaunchStamp stamp,
                            std::shared_ptr<const Launch>* keep) const {
    return jit::find_launch(id_, last_, describe, plan, stamp, keep);
  }

  // Adds to `capture` a call that replays `launch` with `lanes` over the
  // operands `ids` (in the order run_launch reads their addresses).
  void capture_launch(trace::ReplayCapture& capture, std::shared_ptr<const Launch> launch, ScalarLanes lanes,
                      absl::Span<const trace::ValueId> ids) const {
    auto state = std::make_shared<const Replayed>(
        Replayed{static_cast<const Derived*>(this), std::move(launch), std::move(lanes)});
    trace::ReplayCall call{&JitPath::replay, std::move(state), {}};
    for (trace::ValueId v : ids) call.operands.push_back({v, 0});
    capture.add(std::move(call));
  }

 private:
  struct Replayed {
    const Derived* path;
    std::shared_ptr<const Launch> launch;
    ScalarLanes lanes;
  };
  static void replay(const void* state, const char* const* ptrs) {
    const Replayed& r = *static_cast<const Replayed*>(state);
    r.path->run_launch(*r.launch, ptrs, r.lanes);
  }

  static inline thread_local int64_t thread_runs_ = 0;

  mutable std::mutex mutex_;
  mutable std::vector<std::pair<std::string, std::shared_ptr<const Compiled>>> variants_;
  mutable trace::Reason fallback_;  // a run that used JIT code clears it
  // The last launch: plans replay on several threads at once.
  mutable LastLaunch<Launch> last_;
  const uint64_t id_ = next_program_id();  // names its launches in a thread's find_launch slots
};

}  // namespace nnvm::jit
