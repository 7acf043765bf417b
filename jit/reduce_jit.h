// The JIT path of a reduction group (docs/DESIGN.md §3.8): a pointwise prologue closed
// by sum, mean, amax/max, amin/min, prod or logsumexp, or one such reduction
// alone, computed in float32 and double (lower_reduction says which dtypes);
// or argmax/argmin, alone or after a prologue (int64 indices out). A result that is not float32
// is written by the kernel to a staging buffer (floats; an int64 sum's
// doubles) and stored in its dtype as the reference stores it. The
// group is lowered to LoopIR once (lower_reduction); each run computes its
// ReduceSpace (the loop with merged dims, the reduced block and the dims
// around it) and takes the kernel for (ISA, axis, accesses) from the
// KernelCache under "x86-<isa>-reduce-<rows|cols>-<accesses>:<group key>": a
// new batch size reuses it; a run with the last run's operand layouts reuses
// that run's space and kernel without recomputing them (launch_key.h). Rows
// (kept dims) split over the thread pool in blocks, and a row longer than the
// reference's block (a sum of a whole large tensor) in its blocks; columns
// (sums, means, products, arg reductions) in blocks of the reference's 256
// reduced rows by tiles of columns, each block's sums (or best values and
// indices) merged in order after; each output's order of operations is fixed
// by the sizes, so results do not depend on the thread count.
//
// What runs the portable program or the reference kernel instead, each a
// recorded reason: another dtype (float64 stays portable), an int32 sum over
// more than 2^22 elements per output, reduced dims that
// are not one block in memory after merging, an input strided along the
// vector axis, an output that is not unit-stride, an empty reduction, an arg
// reduction over more than 2^30 elements or after 16-bit values computed in
// its prologue, a prologue
// too large for the register file, or the ISA forced to portable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nnvm/jit/jit_path.h"
#include "nnvm/jit/loop_ir.h"
#include "nnvm/jit/x86/arg_reduce_kernel.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/jit/x86/reduce_kernel.h"

namespace nnvm::jit {

// One compiled variant, the KernelCache's entry: code, or why there is none.
class CompiledReduce final : public trace::CompiledKernel {
 public:
  CompiledReduce(const LoopIR& ir, const std::string& accesses, x86::ReduceAxis axis, Isa isa);
  ~CompiledReduce() override;
  const std::string& declined() const { return declined_; }
  std::string describe() const override;
  // Its machine code (jit/kernel_dump.h hex_dump); empty when declined.
  std::string machine_code() const;
  void operator()(x86::ReduceCall* call) const {
    if (kernel_) (*kernel_)(call);
    else (*arg_kernel_)(call);
  }

 private:
  Isa isa_;
  std::string variant_;
  std::string declined_;
  std::unique_ptr<x86::ReduceKernel> kernel_;
  std::unique_ptr<x86::ArgReduceKernel> arg_kernel_;  // argmax, argmin
};

// A run's iteration space for a reduction: the loop's dims with size-1 dims
// dropped and neighbours of one class (kept or reduced) merged where every
// operand allows; the reduced dims must merge into one.
struct ReduceSpace {
  DimVector sizes;
  std::vector<bool> reduced;         // per dim
  std::vector<DimVector> strides;    // per operand (the inputs, then the output), in elements
  int32_t axis = -1;                 // the reduced dim, or -1 when it is not one block
  std::string to_string() const;     // "[64, 4096 r] in0 [4096, 1] out0 [1, 0]"
};
// `loop` is the reduction's input shape, `dims` the reduced dims (wrapped,
// sorted); operand k has (shapes[k], strides[k]) broadcast to the loop, the
// last operand is the output (keepdim or not).
ReduceSpace reduce_space(IntArrayRef loop, IntArrayRef dims, bool keepdim, absl::Span<const IntArrayRef> shapes,
                         absl::Span<const IntArrayRef> strides);

// A run's reduce space, variant and task geometry, reused by every later run
// with the same key (operand layouts, reduced dims, ISA).
struct ReduceLaunch;

class ReduceJit final : public JitPath<ReduceJit, CompiledReduce, ReduceLaunch> {
 public:
  // Whether a single node of `op` is a reduction this path may run.
  static bool handles(const std::string& op);

  ReduceJit(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values, std::string key);

  const std::string& declined() const { return lowering_.declined; }
  const LoopIR& ir() const { return lowering_.ir; }
  // The LoopIR, then each variant compiled so far with its machine code.
  std::string code() const;

  // Runs the group over env[ids[i]] (inputs set, the output allocated) with
  // `loop` the reduction's input shape; false: nothing was written.
  // `layouts`: a LaunchStamp::layouts promise, or 0.
  bool run(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env,
           absl::Span<const Attrs* const> attrs, IntArrayRef loop, uint64_t layouts = 0) const;

 private:
  friend class JitPath<ReduceJit, CompiledReduce, ReduceLaunch>;
  using Launch = ReduceLaunch;
  // A single-call launch's one call, with operand k's first element at base[k] (a replay's too).
  void run_launch(const Launch& l, const char* const* base, const ScalarLanes& lanes) const;

  std::shared_ptr<const CompiledReduce> variant(Isa isa, x86::ReduceAxis axis, const std::string& accesses) const;
  // The launch for `key`; null (the reason recorded) when the reference kernel runs instead.
  std::shared_ptr<const Launch> plan_launch(LaunchKey key, Isa isa, absl::Span<const trace::ValueId> ids,
                                            const std::vector<Tensor>& env, IntArrayRef loop, IntArrayRef dims,
                                            bool keepdim) const;

  Lowering lowering_;
  std::string key_;
};

// Reduction kernels compiled in this process, and runs that used one on the calling thread.
int64_t reduce_compiles();
int64_t reduce_runs();

}  // namespace nnvm::jit
