// Memory planning (docs/DESIGN.md §1 "plan memory", §3.10): a compiled plan takes one
// arena and places every intermediate in it by liveness, so a trace of N ops
// needs the memory of its widest point, not of N tensors.
//
// Liveness is counted in steps: by default each node is a step of its own;
// a Schedule (the executor's) makes the nodes of one fusion group one step,
// since a fused kernel reads all its inputs while it writes all its outputs,
// tile by tile. A value is live from the step that defines it through the
// last step that reads it, inclusive. Trace outputs live to the end (the
// number of steps). A view aliases its base's memory, so every read of a view
// is a read of the base: the base lives as long as any view of it. Trace
// inputs and constants are not placed: the caller and the trace own them.
//
// Placement is greedy by size with best fit (TFLite's offline planner;
// ggml-alloc and tinygrad's memory.py do the same online): the largest buffer
// is placed first, each next one in the smallest gap left between buffers
// whose lives overlap its own. An elementwise node may write its output over
// an input that dies there (ggml-alloc's in-place rule); the two then form one
// buffer. Within a fused step that is safe only when nothing after the node in
// the step reads the input and nothing in the step reads it through a view:
// each tile then reads an element before the same tile overwrites it.
#pragma once

#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

inline constexpr int64_t kArenaAlignment = 64;

struct LiveRange {
  int32_t first = 0;  // the defining step
  int32_t last = 0;   // the last step that reads it (or a view of it); the number of steps for outputs
  bool overlaps(const LiveRange& o) const { return first <= o.last && o.first <= last; }
};

struct MemoryPlan {
  // An elementwise node that writes `output` over `input` (same bytes, same
  // shape, `input` dies at `node`).
  struct InPlace {
    int32_t node;
    ValueId input;
    ValueId output;
  };
  // Why a value occupies bytes no other value ever uses, or why an
  // elementwise node did not write in place.
  struct Decline {
    ValueId value;
    std::string reason;
  };

  int64_t arena_bytes = 0;
  int64_t naive_bytes = 0;          // every placed value in its own buffer (aligned sizes)
  std::vector<int64_t> offsets;     // per value; -1 for trace inputs, constants, views and unplaced values
  std::vector<int64_t> bytes;       // per value: its aligned size in the arena; 0 where offset is -1
  std::vector<ValueId> base;        // per value: the value whose memory it is (itself unless a view)
  std::vector<LiveRange> live;      // per value, of its memory (a view has its base's range)
  std::vector<InPlace> in_place;
  std::vector<Decline> not_reused;  // values that share their bytes with no other value
  std::vector<Decline> not_in_place;  // outputs of elementwise nodes that got their own buffer

  // The arena layout and the declines, one line each:
  //   %3 exp  @0 +4096 live [1, 2]  in place of %2
  std::string to_string(const Trace& t) const;
};

// How a plan runs the trace (trace/executor.h).
struct Schedule {
  std::vector<int32_t> step;   // per node; steps run in increasing order, a step's nodes as one kernel
  std::vector<bool> in_arena;  // per value: false for what a kernel keeps in per-tile scratch and for
                               // what the plan allocates on its own (trace outputs)
};

// Without a schedule every node is its own step and every value computed by a
// node is placed.
MemoryPlan plan_memory(const Trace& t, const Schedule* schedule = nullptr);

}  // namespace nnvm::trace
