// The portable program of one fusion group (docs/DESIGN.md §1, §3.7): the group's
// nodes run with their own reference kernels, so every op is fusable with no
// per-op code. A fused group runs as one loop over tiles of its iteration
// space: each tile runs every node on tile-sized views, and the values only
// the group reads live in per-tile scratch that never reaches the arena.
//   - pointwise: tiles of the loop (the group's output shape); inputs are
//     broadcast to the loop and narrowed to the tile.
//   - a reduction with a pointwise prologue: tiles of whole rows (indices of
//     the dims before the first reduced one), so the prologue's values stay
//     in scratch and each tile reduces its own rows.
//   - anything else (a matmul and its epilogue, a single node, a reduction
//     over the first dim, a draw keyed by element position) runs node by
//     node, every value in memory; why is recorded.
// What a backend compiled for the group (trace/backend.h) runs instead
// when it takes the run: the x86 JIT's kernels for a tiled pointwise group,
// a reduction, a single row-wise op or a matmul's epilogue. The tiles and
// the reference kernels are the fallback.
// A program depends on the group's structure only: it is built once per
// group signature and kept in the KernelCache (trace/kernel_cache.h). Sizes
// (the tiling), memory and Scalar values come from the plan at run time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nnvm/trace/backend.h"
#include "nnvm/trace/ir.h"
#include "nnvm/trace/kernel_cache.h"
#include "nnvm/trace/passes/fuse.h"

namespace nnvm::trace {

// A group's values in the order its program names them: the group's inputs,
// its outputs, then the values only the group reads.
struct GroupValues {
  std::vector<ValueId> ids;
  int32_t inputs = 0;
  int32_t outputs = 0;
};
GroupValues group_values(const Trace& t, const FusionGroup& g);

// The group's canonical text, the kernel cache key: its ops, structural
// attributes (and compile-time Scalars), topology, and every value's dtype
// and layout class (rank, which dims have size 1, contiguous or not). Sizes
// and run-time Scalars are not in it: a new batch size reuses the program.
std::string group_key(const Trace& t, const FusionGroup& g, const GroupValues& values);

// An elementwise op whose result depends on the element's position in the
// whole tensor (a draw keyed by its flat index): a tile, or a kernel's block,
// would draw other numbers.
bool draws_by_position(const OpDef& op);

// How a tiled group's loop splits. A tile is one index of each dim before
// `split` and `rows` indices of `split` (fewer at its end) with every dim after.
struct Tiling {
  DimVector loop;
  int32_t split = -1;  // -1: one tile, the whole loop
  int64_t rows = 0;
  int64_t tiles = 1;
  int64_t tile_numel = 0;  // of the largest tile
};

// Elements per tile: the values of a few nodes stay in L1/L2 while a tile runs.
inline constexpr int64_t kTileElements = 4096;

class GroupProgram final : public CompiledKernel {
 public:
  struct Step {
    const OpDef* op;
    absl::InlinedVector<int32_t, 3> inputs;  // indices into the group's values
    absl::InlinedVector<int32_t, 2> outputs;
  };

  GroupProgram(const Trace& t, const FusionGroup& g, const GroupValues& values);
  ~GroupProgram() override;

  bool tiled() const { return why_untiled_.empty(); }
  // Why the group runs node by node; empty when it is tiled.
  const std::string& why_untiled() const { return why_untiled_; }
  // A reduction group that reduces its first dim (untiled: no rows to tile).
  bool reduces_first_dim() const { return first_dim_; }
  const std::vector<Step>& steps() const { return steps_; }
  // What a backend compiled for the group, or null; the backend's name, and
  // each backend that declined it with its reason ("x86: ...").
  const GroupKernel* kernel() const { return kernel_.get(); }
  const std::string& backend() const { return backend_; }
  const std::vector<std::string>& declined() const { return declined_; }
  // How the group runs: the kernel's description, tiled, or node by node and why.
  std::string describe() const override;

  // The tiling of a group of this program with `ids`'s sizes in `t`.
  Tiling tiling(const Trace& t, absl::Span<const ValueId> ids) const;

  // Runs the group over env[ids[i]] (the plan's tensors by value): inputs
  // set, outputs allocated (untiled: every computed value but views, which
  // the program sets). attrs[k] are step k's attributes with Scalars bound.
  // `layouts` (jit::LaunchStamp): nonzero names the caller's place whose
  // every run has the same operand sizes and strides, so a JIT kernel's
  // launch is not looked up again; 0 promises nothing.
  void run(absl::Span<const ValueId> ids, std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs,
           const Tiling& tiling, uint64_t layouts = 0) const;

  // The group's portable program: its tiles, or its steps node by node.
  void run_portable(absl::Span<const ValueId> ids, std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs,
                    const Tiling& tiling) const;
  // Steps [first, end) with their reference kernels, every value in memory:
  // the untiled fallback, and the part of a group a backend's kernel leaves.
  void run_steps(absl::Span<const ValueId> ids, std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs,
                 size_t first = 0, size_t end = SIZE_MAX) const;

 private:
  // Offers the group to the registered backends (trace/backend.h).
  void compile(const Trace& t, const FusionGroup& g, const GroupValues& values);
  void run_tiles(absl::Span<const ValueId> ids, const std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs,
                 const Tiling& tiling) const;

  std::vector<Step> steps_;
  std::vector<DType> dtypes_;  // per group value
  int32_t inputs_ = 0, outputs_ = 0;
  int32_t loop_value_ = -1;    // tiled: the group value whose shape is the loop
  int32_t max_split_ = -1;     // tiled: the deepest dim a tile may split
  std::string why_untiled_;
  bool first_dim_ = false;
  std::unique_ptr<const GroupKernel> kernel_;
  std::string backend_;
  std::vector<std::string> declined_;
};

}  // namespace nnvm::trace
