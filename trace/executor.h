// The portable executor (docs/DESIGN.md §1 "Plan runs", §3.7, §3.10): a hot trace's



// does no analysis:
//   - one arena per run, from the caching allocator, holds every value that
//     crosses a group boundary at the planner's offset (values at the same
//     place share one slice of it); values a fused group only reads itself
//     live in per-tile scratch. A small arena no output can see stays with
//     the thread, with its tensors, for the plan's next run on it (a loop
//     replaying one or two tiny plans allocates none of it again);
//   - trace outputs get fresh contiguous tensors of their own, allocated when
//     their group runs (the recorder adopts their memory), or, through
//     run_into, are computed straight into the tensor they are bound for when
//     every read of that tensor's old contents runs first; views are views of
//     their base;
//   - groups run in an order that keeps the arena small: a ready group that
//     frees at least what it allocates runs before one that grows memory, so
//     an optimizer update runs right after its gradient, which then dies;
//   - every node's attributes are bound to the replayed trace's Scalars, and
//     inputs may come at any strides and storage offsets.
// NNVM_DUMP=DIR writes each plan there when it is built (trace/dump.h).
// Files: plan_build.cpp (from the pipeline's parts), executor.cpp (a run),
// plan_replay.cpp (a run's captured calls, replayed).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "nnvm/trace/reason.h"
#include "nnvm/trace/replay.h"
#include "nnvm/trace/group_program.h"
#include "nnvm/trace/passes/fuse.h"
#include "nnvm/trace/passes/plan_memory.h"
#include "nnvm/trace/pipeline.h"
#include "nnvm/trace/plan.h"

namespace nnvm::trace {

class FusedPlan final : public Plan {
 public:
  // `t` is an optimised trace (the passes have run): the pipeline's stages
  // after the passes make the plan's parts (trace/pipeline.h).
  explicit FusedPlan(Trace t);
  explicit FusedPlan(PlanParts parts);
  // Its groups point at its own trace's attributes.
  FusedPlan(const FusedPlan&) = delete;
  FusedPlan& operator=(const FusedPlan&) = delete;
  ~FusedPlan() override;

  std::vector<Tensor> run(absl::Span<const Tensor> inputs, absl::Span<const Scalar> scalars) const override;
  void run_into(absl::Span<Tensor> inputs, absl::Span<const Scalar> scalars, absl::Span<const Tensor> targets,
                WrittenFlags& written, std::vector<Tensor>& results,
                bool recorded_layouts = false) const override;
  bool replay(absl::Span<const Tensor> inputs, absl::Span<Storage* const> outputs) const override;
  const Trace& trace() const override { return trace_; }
  bool holds_scalars(absl::Span<const Scalar> scalars) const override;
  // The trace, the fusion plan, how each group runs, and the memory plan.
  std::string to_string() const override;

  const FusionPlan& fusion() const { return fusion_; }
  const MemoryPlan& memory() const { return memory_; }
  // The arena one run takes, and what the same values would take each in a
  // buffer of its own.
  int64_t arena_bytes() const { return memory_.arena_bytes; }
  int64_t naive_bytes() const { return memory_.naive_bytes; }
  // The groups in the order they run, as indices into fusion().groups.
  std::vector<int32_t> group_order() const;
  const GroupProgram& program(int32_t group) const { return *groups_[size_t(group)].program; }
  // Why the plan's runs are not replayed from captured calls (trace/replay.h);
  // empty while they are, or before a run tried to capture them.
  std::string replay_declined() const;
  // The optimised trace's signature hash: the name of the plan's dump files.
  uint64_t hash() const { return hash_; }

  // Writes DIR/plan-<hash>.dot and DIR/plan-<hash>.txt (trace/dump.h).
  void dump(const std::string& dir) const;

 private:
  struct Group {
    std::shared_ptr<const GroupProgram> program;
    GroupValues values;
    Tiling tiling;
    std::vector<const Attrs*> attrs;  // its nodes' recorded attributes, in order
    std::vector<int32_t> slotted;     // its steps whose nodes have Scalar slots
    uint8_t phase = 0;                // the latest memory::Phase of its nodes: its blocks' phase
  };

  // How trace output i may be computed straight into a caller's tensor.
  struct DirectWrite {
    // Of the group computing it; -1 when it may not be written early: no node
    // of its own computes it (an input, a view), or a value-checking kernel
    // that may throw runs at or after that step.
    int32_t step = -1;
    // Input positions its node reads elementwise at the output's own elements,
    // read by nothing else in that step: the target may be one of them.
    std::vector<int32_t> same_step_inputs;
    DimVector strides;  // the output's contiguous strides (a plan's own output has them)
    // as_strided reads it or strided_update computes it: both count offsets
    // from the value's start, so a target must start its storage.
    bool offsets_from_start = false;
  };
  void plan_direct_writes();

  // An arena and a run's tensors by value with its values' set (the others
  // empty), for the plan `plan` (an id_): a kept arena's next run binds only
  // the other values.
  struct ArenaTensors {
    uint64_t plan = 0;
    std::shared_ptr<Storage> storage;
    std::vector<Tensor> env;
  };
  static constexpr int64_t kKeptArenaBytes = int64_t(1) << 16;
  // The calling thread's, from its runs of the last two plans it ran (a loop
  // may alternate between two traces), the latest first.
  static std::array<ArenaTensors, 2>& kept_arenas();
  static std::vector<Tensor>& spare_env();
  // The calling thread's arena for replays (they do not nest, and keep
  // nothing in it), at least `bytes` long.
  static char* replay_arena(int64_t bytes);
  // What a thread keeps between runs: one thread-local (core/hot_tls.h).
  struct ThreadRuns;
  // Gives a run's arena back: kept for the plan's next run on the thread
  // when it is small and no output sees it.
  void keep_arena(ArenaTensors arena) const;
  // The thread's kept arena of this plan, when it has one (left empty: a
  // nested run would make its own), else a new one; keep_arena gives it back.
  ArenaTensors take_arena() const;
  // take_arena, its blocks named for the memory monitor when it watches.
  ArenaTensors take_for_run() const;
  bool can_write_into(size_t output, absl::Span<const Tensor> inputs, absl::Span<const Tensor> targets) const;

  // The kernel calls of a run, captured for replay(); see executor.cpp.
  struct Replay;
  // Keeps a run's captured calls as the plan's replay, or the reason they cannot be.
  void keep_replay(ReplayCapture& capture) const;
  void decline_replay(std::string why) const;

  Trace trace_;
  FusionPlan fusion_;
  MemoryPlan memory_;
  std::vector<Group> groups_;   // as in fusion_.groups
  std::vector<int32_t> order_;  // groups in a topological order
  struct ArenaValue {
    ValueId value;
    int32_t slice;  // the index of the first arena value at the same offset and size
  };
  std::vector<ArenaValue> arena_values_;  // computed values placed in the arena
  std::vector<ValueId> transient_;        // the values a run binds and drops: all but the arena's
  bool arena_escapes_ = false;            // a trace output is a view of an arena value
  struct OwnValue {
    ValueId value;
    DimVector strides;  // contiguous: a run does not compute them
  };
  std::vector<std::vector<OwnValue>> own_values_;  // per step: values it computes into memory of their own
                                                  // (trace outputs, empty values)
  std::vector<DirectWrite> direct_;      // per trace output
  std::vector<int32_t> input_last_step_;  // per trace input: the last step reading it (the step count for outputs)
  // Per trace output: the run moves its tensor into the results (its last
  // place among the outputs, not an input, not an arena value a kept arena
  // binds again), else copies it.
  std::vector<uint8_t> output_moves_;  // per output: its tensor moves out of the run's env
  uint64_t hash_ = 0;
  uint64_t id_ = 0;  // this plan among every plan of the process
  // Set once, by the first run that captured every call (owned); read by replays on any thread.
  mutable std::atomic<const Replay*> replay_{nullptr};
  mutable Reason replay_declined_;  // set for good
};

}  // namespace nnvm::trace
