// Memory planning (DESIGN §1 "plan memory", §3.10): a compiled plan takes one
// arena and places every intermediate in it by liveness, so a trace of N ops
// needs the memory of its widest point, not of N tensors.
//
// Liveness is counted in node indices. A value is live from the node that
// defines it through the last node that reads it, inclusive (a node reads its
// inputs while it writes its outputs). Trace outputs live to the end
// (index nodes().size()). A view aliases its base's memory, so every read of
// a view is a read of the base: the base lives as long as any view of it.
//
// Placement is greedy by size with best fit (TFLite's offline planner;
// ggml-alloc and tinygrad's memory.py do the same online): the largest buffer
// is placed first, each next one in the smallest gap left between buffers
// whose lives overlap its own. An elementwise node may write its output over
// an input that dies there (ggml-alloc's in-place rule); the two then form one
// buffer.
#pragma once

#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

inline constexpr int64_t kArenaAlignment = 64;

struct LiveRange {
  int32_t first = 0;  // the defining node
  int32_t last = 0;   // the last node that reads it (or a view of it); nodes().size() for outputs
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
  int64_t naive_bytes = 0;          // every intermediate in its own buffer (aligned sizes)
  std::vector<int64_t> offsets;     // per value; -1 for trace inputs and views
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

MemoryPlan plan_memory(const Trace& t);

}  // namespace nnvm::trace
