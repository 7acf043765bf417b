// The compile pipeline (docs/DESIGN.md §1): every stage a hot trace goes
// through, in order, by name.
//   passes       global_passes() on a copy of the trace: dce, cse,
//                constant_fold, simplify, recognise, dce_after, then the
//                passes users add (trace/pass_manager.h)
//   fuse         the nodes into fusion groups (trace/passes/fuse.h)
//   lower        each group's program from the kernel cache; a new one is
//                offered to the registered backends by priority (the x86 JIT
//                first, trace/backend.h), and runs portably where they decline
//   schedule     the groups in a topological order that keeps memory small
//   plan_memory  arena offsets for the values that cross groups
//                (trace/passes/plan_memory.h)
//   plan         the FusedPlan (trace/executor.h) over what they made
// The trace cache (trace/trace_cache.h) calls compile_plan for a trace that
// turns hot. NNVM_LOG=pipeline prints each stage of each compile with its time
// and what it changed.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nnvm/trace/group_program.h"
#include "nnvm/trace/ir.h"
#include "nnvm/trace/pass_manager.h"
#include "nnvm/trace/passes/fuse.h"
#include "nnvm/trace/passes/plan_memory.h"
#include "nnvm/trace/plan.h"

namespace nnvm::trace {

// The graph passes every hot trace runs, in order; users add theirs here
// (before the first trace turns hot).
PassManager& global_passes();

// Whether a view op computes v (its memory is its base's).
bool computed_by_view(const Trace& t, ValueId v);

// One fusion group as lowered: its program, its values, its tiling.
struct LoweredGroup {
  std::shared_ptr<const GroupProgram> program;
  GroupValues values;
  Tiling tiling;
};

// What the stages after the passes make of an optimised trace.
struct PlanParts {
  Trace trace;
  FusionPlan fusion;
  std::vector<LoweredGroup> groups;  // as fusion.groups
  std::vector<int32_t> order;        // groups in the order they run
  Schedule schedule;                 // each node's step in `order`; which values the arena holds
  std::vector<bool> computed;        // per value: a node computes it into memory (not a view, not
                                     // per-tile scratch): in the arena, or an output's own
  MemoryPlan memory;
};

// fuse, lower, schedule and plan_memory on `optimised` (the passes have run).
// `name`: the signature hash the pipeline log names the compile by (0: the
// optimised trace's own).
PlanParts plan_stages(Trace optimised, uint64_t name = 0);

// The passes stage alone: global_passes() on a copy of `t`.
Trace optimise(const Trace& t);

// Every stage: the passes on a copy of `t`, then plan_stages and the plan.
std::shared_ptr<const Plan> compile_plan(const Trace& t);

// Sends each stage's line ("pipeline <trace hash> <stage> <ms> ms  <what it
// changed>") to `sink`; null turns the log off. NNVM_LOG=pipeline starts it
// writing to stderr.
void set_pipeline_log(std::function<void(const std::string&)> sink);

}  // namespace nnvm::trace
