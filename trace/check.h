// The checking mode and repro bundles at run time (docs/PROFILING.md
// "Checking and repro bundles").
//
//   NNVM_CHECK=1     each fused group (a backend's kernel, or the tile
//                    program) also runs unfused, its steps' reference
//                    kernels node by node on copies of its inputs, and the
//                    outputs are compared (trace/repro.h compare_results).
//                    A disagreement is counted, reported on stderr once per
//                    group of a plan, and the run goes on with the
//                    reference's values.
//   NNVM_REPRO=DIR   a bundle (trace/repro.h) is written to DIR for each
//                    disagreement the check finds, for a trace that fails
//                    to compile, and for a fatal signal (SIGSEGV, SIGBUS,
//                    SIGILL, SIGFPE) while a fused group's kernel runs:
//                    each group's bundle is made before its kernel runs, so
//                    the handler only writes prepared bytes (it costs a copy
//                    of every fused group's inputs per run).
// While either is on, plans do not replay captured calls, so every group
// goes through the check.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "nnvm/trace/group_program.h"

namespace nnvm::trace {

// Whether NNVM_CHECK or NNVM_REPRO is on: one relaxed load.
bool checking();
void set_check(bool on);
bool check_enabled();
// "" turns bundles off. The directory is made when the first bundle is written.
void set_repro_dir(std::string dir);
std::string repro_dir();

struct CheckStats {
  int64_t groups_checked = 0;  // fused group runs compared with their reference
  int64_t mismatches = 0;      // of them, those that disagreed
  int64_t bundles = 0;         // bundles written
  std::vector<std::string> bundle_paths;  // the last few
};
CheckStats check_stats();
void reset_check_stats();

// A fused group's run under the checking mode: what FusedPlan's run does
// for group `g` of `t` when checking() (trace/executor.cpp), inside the
// run's eager scope (the ops it calls run at once).
void run_group_checked(const Trace& t, const FusionGroup& g, const GroupProgram& program, const GroupValues& values,
                       std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs, const Tiling& tiling,
                       uint64_t layouts, uint64_t plan_hash);

// A trace that failed to compile: its bundle, when NNVM_REPRO is set
// (trace/pipeline.cpp compile_plan); `what` is the error.
void compile_failed(const Trace& t, const std::string& what);

}  // namespace nnvm::trace
