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
// A tiled pointwise group runs JIT code instead when it lowers and the ISA
// allows (jit/pointwise_jit.h); the tiles are its fallback. A single row-wise
// op (softmax, layer_norm, cross_entropy and their backward passes) runs a
// JIT row kernel (jit/rowwise_jit.h) when it is float32 along the last dim;
// its reference kernel is the fallback. A reduction (tiled with its
// prologue, or a single one) runs a JIT reduction kernel (jit/reduce_jit.h)
// when it is float32 and its reduced dims are one block in memory. A
// matmul's epilogue runs as one pointwise JIT kernel over the matmul's
// output when it lowers (the matmul itself runs whole first); else node by
// node.
// A program depends on the group's structure only: it is built once per
// group signature and kept in the KernelCache (jit/kernel_cache.h). Sizes
// (the tiling), memory and Scalar values come from the plan at run time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nnvm/jit/kernel_cache.h"
#include "nnvm/trace/ir.h"
#include "nnvm/trace/passes/fuse.h"

namespace nnvm::jit {
class PointwiseJit;
class ReduceJit;
class RowwiseJit;
}

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

// Epilogue groups run so far with their epilogue inside the GEMM, tile by
// tile (tests; replays through a hot plan's captured calls not counted).
int64_t tiled_epilogue_runs();

class GroupProgram final : public jit::CompiledKernel {
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
  const std::vector<Step>& steps() const { return steps_; }
  // A tiled pointwise group's machine-code path (jit/pointwise_jit.h), or null.
  const jit::PointwiseJit* jit() const { return jit_.get(); }
  // A single row-wise op's machine-code path (jit/rowwise_jit.h), or null.
  const jit::RowwiseJit* rowwise() const { return rowwise_.get(); }
  // A reduction's machine-code path (jit/reduce_jit.h), or null.
  const jit::ReduceJit* reduce() const { return reduce_.get(); }
  // A matmul epilogue's machine-code path (its nodes after the matmul), or null.
  const jit::PointwiseJit* epilogue() const { return epilogue_.get(); }

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

 private:
  void run_steps(absl::Span<const ValueId> ids, std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs,
                 size_t first = 0, size_t end = SIZE_MAX) const;
  void build_epilogue(const Trace& t, const FusionGroup& g, const GroupValues& values);
  // An epilogue group's matmul (or matmul_sum) straight through the GEMM
  // when its operands are 2-D float32 and its output contiguous; false when
  // they are not (the reference kernel runs it). With `epilogue_ran`, the
  // epilogue may run inside the GEMM, on each tile it finishes; then
  // *epilogue_ran is set.
  bool run_gemm(absl::Span<const ValueId> ids, const std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs,
                uint64_t layouts, bool* epilogue_ran) const;
  void run_tiles(absl::Span<const ValueId> ids, const std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs,
                 const Tiling& tiling) const;

  std::vector<Step> steps_;
  std::vector<DType> dtypes_;  // per group value
  int32_t inputs_ = 0, outputs_ = 0;
  int32_t loop_value_ = -1;    // tiled: the group value whose shape is the loop
  int32_t max_split_ = -1;     // tiled: the deepest dim a tile may split
  int32_t reduce_input_ = -1;  // with reduce_: the group value the reduction reads
  std::string why_untiled_;
  std::unique_ptr<jit::PointwiseJit> jit_;
  std::unique_ptr<jit::RowwiseJit> rowwise_;
  std::unique_ptr<jit::ReduceJit> reduce_;
  std::unique_ptr<jit::PointwiseJit> epilogue_;
  std::vector<int32_t> epilogue_values_;  // per epilogue operand: its index in the group's values
  int32_t epilogue_loop_ = -1;            // the matmul's output: the epilogue's loop shape
  int32_t gemm_products_ = 0;             // an epilogue group's first step: 1 matmul, 2 matmul_sum
  // run_gemm's order for matmul_sum's two products on the last run: every
  // other run reverses it. Relaxed loads and stores, no read-modify-write:
  // runs on several threads at once may repeat an order, which only costs time.
  mutable std::atomic<bool> reverse_products_{false};
};

}  // namespace nnvm::trace
