// The JIT path of a pointwise group program (docs/DESIGN.md §3.8). A group is lowered
// to LoopIR once, when its program is built; a run whose operand layouts
// differ from the last run's computes its LoopSpace and takes the kernel for
// (ISA, access pattern) from the KernelCache under
// "x86-<isa>-<accesses>:<group key>": a new batch size reuses the kernel, a
// new layout class of an operand compiles a variant. A run with the last
// run's layouts (a hot plan's) reuses its launch whole (launch_key.h).
// The run splits the space into blocks of rows and columns across the thread
// pool (each thread takes one contiguous range of blocks); each block is one
// call of the kernel. A memory-bound kernel (little arithmetic per element)
// writing at least the last-level cache's size to 64-byte aligned float32
// outputs takes the streaming variant (non-temporal stores: no read for
// ownership, and no cache lines of a result too big to stay cached evicting
// ones that would); a compute-bound one keeps ordinary stores, which measured
// faster there (docs/BENCHMARKS.md).
//
// A group that does not lower, an ISA forced to portable, or a variant the
// kernel declines (too many strided operands, a lane stride past int32) runs
// the portable tile program: every decision is a recorded reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nnvm/jit/jit_path.h"
#include "nnvm/jit/loop_ir.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/trace/kernel_cache.h"

namespace nnvm::jit {

namespace x86 {
class PointwiseKernel;
}

// One compiled variant, the KernelCache's entry: code, or why there is none.
class CompiledPointwise final : public trace::CompiledKernel {
 public:
  // `key`: the kernel cache's key, which names the dump files (jit/kernel_dump.h).
  CompiledPointwise(const LoopIR& ir, const std::string& accesses, Isa isa, const std::string& key,
                    bool stream = false);
  ~CompiledPointwise() override;

  const std::string& declined() const { return declined_; }
  size_t code_bytes() const;
  // Its machine code (jit/kernel_dump.h hex_dump); empty when declined.
  std::string machine_code() const;
  std::string describe() const override;
  const x86::PointwiseKernel& kernel() const { return *kernel_; }

 private:
  Isa isa_;
  std::string accesses_;
  std::string declined_;
  std::unique_ptr<x86::PointwiseKernel> kernel_;
};

// A run's loop space, variant and block geometry, reused by every later run
// with the same key (operand layouts, ISA, stream decision).
struct PointwiseLaunch;

class PointwiseJit final : public JitPath<PointwiseJit, CompiledPointwise, PointwiseLaunch> {
 public:
  // Lowers the group; `key` is its group_key.
  PointwiseJit(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values, std::string key);

  // Why the group never runs JIT code; empty when it lowered.
  const std::string& declined() const { return lowering_.declined; }
  const LoopIR& ir() const { return lowering_.ir; }

  // This group as a GEMM's epilogue applied tile by tile (cpu::GemmEpilogue):
  // the launch of a run over the 2-D `loop` (the GEMM's output, m × n),
  // whose kernel then runs on rectangles of it. Null when the run cannot go
  // tile by tile (no JIT, the group did not lower, streaming stores, another
  // rank); then nothing was decided and run() serves as before.
  struct TileLaunch;
  std::shared_ptr<const TileLaunch> tile_launch(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env,
                                                absl::Span<const Attrs* const> attrs, IntArrayRef loop,
                                                uint64_t layouts = 0) const;
  // Rows [i0, i1) × columns [j0, j1) of t's loop, operand k's first element at base[k].
  static void run_tile(const TileLaunch& t, const char* const* base, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
  // The operands a tile launch reads and writes: the group's inputs, then its outputs.
  size_t operands() const { return size_t(lowering_.ir.inputs) + lowering_.ir.stores.size(); }

  // variant_names(): "<isa>-<accesses>[-nt]" (-nt: streaming stores).
  // The LoopIR, then each variant compiled so far with its machine code
  // (a repro bundle's code, trace/repro.h).
  std::string code() const;

  // Runs the group over env[ids[i]] (inputs set, outputs allocated) when the
  // active ISA and the operands' layouts allow; false: nothing ran (and
  // last_fallback() says why, unless declined() does).
  // `layouts`: a LaunchStamp::layouts promise, or 0.
  bool run(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env,
           absl::Span<const Attrs* const> attrs, IntArrayRef loop, uint64_t layouts = 0) const;

 private:
  friend class JitPath<PointwiseJit, CompiledPointwise, PointwiseLaunch>;
  using Launch = PointwiseLaunch;

  // Every block of launch l with operand k's first element at base[k]
  // (a replay's too).
  void run_launch(const Launch& l, const char* const* base, const ScalarLanes& lanes) const;

  std::shared_ptr<const CompiledPointwise> variant(Isa isa, const std::string& accesses, bool stream) const;
  // The launch for `key`; null when the variant declines or an operand's stride is too large.
  std::shared_ptr<const Launch> plan_launch(LaunchKey key, Isa isa, absl::Span<const trace::ValueId> ids,
                                            const std::vector<Tensor>& env, IntArrayRef loop) const;

  // The streaming decision for a run over `numel` elements (before alignment).
  bool wants_stream(int64_t numel) const;

  Lowering lowering_;
  std::string key_;
  bool memory_bound_;
};

// x86 kernels compiled by this process (a test counts re-JITs with it).
int64_t pointwise_compiles();

// Non-temporal stores: kAuto as above; kAlways streams every run whose
// outputs are aligned; kNever never streams.
enum class StreamStores { kAuto, kAlways, kNever };
void set_stream_stores(StreamStores policy);
StreamStores stream_stores();
// Output bytes from which kAuto streams: the last-level cache's size.
int64_t stream_store_bytes();

}  // namespace nnvm::jit
