// The x86 JIT as a backend of trace/ (trace/backend.h): for each fusion
// group it compiles the JIT path the group's kind has, if any:
//   - a tiled pointwise group: one pointwise kernel (jit/pointwise_jit.h);
//   - a reduction, alone or closing a pointwise prologue (tiled, or reducing
//     its first dim): a reduction kernel (jit/reduce_jit.h);
//   - a single row-wise op (softmax, layer_norm, cross_entropy, RMS norm and
//     their backward passes): a row kernel (jit/rowwise_jit.h);
//   - a matmul (or matmul_sum) with a pointwise epilogue: the product through
//     the JIT GEMM (jit/gemm_jit.h) straight from the operands, and the
//     epilogue as one pointwise kernel, inside the GEMM tile by tile for large
//     products (kernels/cpu/gemm.h GemmEpilogue), else after it.
// Anything else it declines, with the reason. A compiled group still falls
// back to its portable program at run time when the ISA in force is
// portable or its operands' layouts are ones the kernel does not take.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/jit/reduce_jit.h"
#include "nnvm/jit/rowwise_jit.h"
#include "nnvm/trace/backend.h"
#include "nnvm/trace/group_program.h"

namespace nnvm::jit {

// What the x86 backend compiled for one group: one of its JIT paths.
class X86GroupKernel final : public trace::GroupKernel {
 public:
  X86GroupKernel(const trace::GroupSource& source, std::string* why_not);
  ~X86GroupKernel() override;

  // Whether the constructor found a JIT path for the group.
  bool empty() const { return !pointwise_ && !rowwise_ && !reduce_ && !epilogue_; }
  bool run(const trace::GroupProgram& program, const trace::GroupRun& run) const override;
  std::string describe() const override;
  // Each JIT path's LoopIR and the machine code of its variants compiled so far.
  std::string code() const override;

  const PointwiseJit* pointwise() const { return pointwise_.get(); }
  const RowwiseJit* rowwise() const { return rowwise_.get(); }
  const ReduceJit* reduce() const { return reduce_.get(); }
  // A matmul epilogue's kernel (its nodes after the matmul).
  const PointwiseJit* epilogue() const { return epilogue_.get(); }

 private:
  void build_epilogue(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values);
  // An epilogue group's matmul (or matmul_sum) straight through the GEMM
  // when its operands are 2-D float32 and its output contiguous; false when
  // they are not (the reference kernel runs it). With `epilogue_ran`, the
  // epilogue may run inside the GEMM, on each tile it finishes; then
  // *epilogue_ran is set.
  bool run_gemm(const trace::GroupProgram& program, absl::Span<const trace::ValueId> ids,
                const std::vector<Tensor>& env,
                absl::Span<const Attrs* const> attrs, uint64_t layouts, bool* epilogue_ran) const;

  std::unique_ptr<PointwiseJit> pointwise_;
  std::unique_ptr<RowwiseJit> rowwise_;
  std::unique_ptr<ReduceJit> reduce_;
  int32_t reduce_input_ = -1;  // with reduce_: the group value the reduction reads
  std::unique_ptr<PointwiseJit> epilogue_;
  std::vector<int32_t> epilogue_values_;  // per epilogue operand: its index in the group's values
  int32_t epilogue_loop_ = -1;            // the matmul's output: the epilogue's loop shape
  int32_t gemm_products_ = 0;             // an epilogue group's first step: 1 matmul, 2 matmul_sum
  // run_gemm's order for matmul_sum's two products on the last run: every
  // other run reverses it. Relaxed loads and stores, no read-modify-write:
  // runs on several threads at once may repeat an order, which only costs time.
  mutable std::atomic<bool> reverse_products_{false};
};

// The x86 backend's kernel of a group's program, or null (another backend's,
// or none); and each of its paths, or null (tests, tools).
const X86GroupKernel* x86_kernel(const trace::GroupProgram& program);
const PointwiseJit* pointwise_jit(const trace::GroupProgram& program);
const RowwiseJit* rowwise_jit(const trace::GroupProgram& program);
const ReduceJit* reduce_jit(const trace::GroupProgram& program);
const PointwiseJit* epilogue_jit(const trace::GroupProgram& program);

// Epilogue groups run so far with their epilogue inside the GEMM, tile by
// tile (tests; replays through a hot plan's captured calls not counted).
int64_t tiled_epilogue_runs();

}  // namespace nnvm::jit
