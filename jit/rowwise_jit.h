// The JIT path of a single-op group whose op works row by row along the last
// dim (docs/DESIGN.md §3.8): softmax, log_softmax, layer_norm, layer_norm_backward,
// cross_entropy, cross_entropy_backward, rms_norm and rms_norm_backward in
// float32. The row kernel (jit/x86/rowwise_kernel.h) comes from the KernelCache under
// "x86-<isa>-rowwise-<op+flags>", one per (ISA, op, flags) for the process:
// a new batch size, row length or eps reuses it. The run splits the rows in
// fixed blocks over the thread pool; per-row scalar work (a loss from its
// row's log-sum-exp, a target's one-hot term, the in-order sums of
// dweight/dbias and of the loss) stays in C++ here.
//
// What does not run JIT code, each a recorded reason: another dtype (float64
// stays portable), a dim other than the last, a class dim followed by spatial
// dims, rows that are not one uniform stride apart or not unit-stride inside,
// weighted label smoothing, an empty row, a bad target (the reference kernel
// then raises the error), or the ISA forced to portable.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "nnvm/jit/jit_path.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/jit/x86/rowwise_kernel.h"
#include "nnvm/trace/group_program.h"

namespace nnvm::jit {

// One compiled row kernel, the KernelCache's entry.
class CompiledRowwise final : public trace::CompiledKernel {
 public:
  CompiledRowwise(const x86::RowwiseSpec& spec, Isa isa);
  std::string describe() const override;
  // A row kernel is always generated (JitPath's variants ask).
  const std::string& declined() const;
  // Its machine code (jit/kernel_dump.h hex_dump).
  std::string machine_code() const;
  const x86::RowwiseKernel& kernel() const { return kernel_; }

 private:
  x86::RowwiseSpec spec_;
  Isa isa_;
  x86::RowwiseKernel kernel_;
};

// A row launch: the kernel, its call (every field but the pointers) and the rows.
struct RowwiseLaunch;

class RowwiseJit final : public JitPath<RowwiseJit, CompiledRowwise, RowwiseLaunch> {
 public:
  // Whether `op` is one this path knows (others never build a RowwiseJit).
  static bool handles(const std::string& op);

  RowwiseJit(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values);

  // Why the group never runs JIT code; empty when it may.
  const std::string& declined() const { return declined_; }
  const x86::RowwiseSpec& spec() const { return spec_; }
  // Each kernel compiled so far with its machine code (a repro bundle's code).
  std::string code() const;

  // Runs the node over env[ids[i]] (inputs set, outputs allocated) when the
  // ISA, the layouts and the values allow; false: nothing was written.
  bool run(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env, const Attrs& attrs) const;

 private:
  friend class JitPath<RowwiseJit, CompiledRowwise, RowwiseLaunch>;
  using Launch = RowwiseLaunch;
  // The node's operands, in env.
  using Operands = absl::InlinedVector<const Tensor*, 4>;

  const x86::RowwiseKernel& kernel(Isa isa) const;
  bool run_rows(absl::Span<const trace::ValueId> ids, const Tensor& x, const Tensor& y, const Attrs& attrs,
                const Tensor* weight, const Tensor* bias) const;
  // `rows` rows from `base`'s, split over the thread pool.
  static void run_rows(const x86::RowwiseKernel& kernel, const x86::RowwiseCall& base, int64_t rows);
  // A captured launch: operands x, y, then the weight and bias it has.
  void run_launch(const Launch& l, const char* const* ptrs, const ScalarLanes& lanes) const;
  bool run_norm_backward(const Operands& in, const Operands& out, const Attrs& a) const;
  bool run_cross_entropy(const Operands& in, const Tensor& out, const Attrs& a) const;
  bool run_cross_entropy_backward(const Operands& in, const Tensor& out, const Attrs& a) const;

  std::string op_;
  x86::RowwiseSpec spec_;
  std::string declined_;
  std::vector<int32_t> inputs_, outputs_;  // the node's operands as indices into the group's values
  // per Isa, its kernel once a run took it from the variants (which keep it): no lock per run
  mutable std::array<std::atomic<const x86::RowwiseKernel*>, 3> ready_{};
};

// Row kernels compiled in this process, and runs that used one on the calling thread (tests count both).
int64_t rowwise_compiles();
int64_t rowwise_runs();

}  // namespace nnvm::jit
