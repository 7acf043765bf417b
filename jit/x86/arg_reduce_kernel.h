// The arg-reduction kernel (docs/DESIGN.md §3.8): argmax or argmin, along the
// reduction axis of a ReduceSpace, of a reduction LoopIR's stored value (a
// pointwise prologue over inputs of any loadable dtype, prologue.h, or one
// float32, float16 or bfloat16 load), int64 indices out, for one ISA, one axis
// and one access pattern; the argument block is ReduceCall (reduce_kernel.h;
// the output's strides are in int64 bytes).
//
// The result is the reference's (kernels/cpu/reduce.cpp ArgReducer), which
// does not depend on the order elements are visited: the first NaN's index
// when there is one, else the first index of the max (min). Each lane keeps
// its best value and index, replaced only by a strictly better element or by
// the lane's first NaN, so a lane holds its first best; then the lanes whose
// value is the best (a NaN, when any) give the smallest index.
//   - kRows: one row at a time, vectors along it (a masked tail whose lanes
//     past the row hold -inf for argmax, +inf for argmin: never better).
//   - kColumns: a row at a time across the call's outputs (each output's
//     best and index kept in ReduceCall::partial, at least kInnerBlock * 8
//     bytes), up to four vectors a step (one on AVX2 when the prologue needs
//     the registers).
// A lane that saw no element better than the identity (a row of -inf for
// argmax) answers 0, the reference's first index. Indices are int32 inside
// the kernel: the caller declines extents above 2^30.
#pragma once

#include <string>
#include <string_view>

#include "nnvm/jit/x86/generator.h"
#include "nnvm/jit/x86/prologue.h"
#include "nnvm/jit/x86/reduce_kernel.h"

namespace nnvm::jit::x86 {

// kColumns: what a call leaves in ReduceCall::partial, per output of the
// call: its best value (floats from byte 0) and that value's index from the
// call's first reduced row (int32 from byte kArgStateIndex; kArgNone when no
// element beat the identity), for a caller that merges blocks of rows.
inline constexpr int32_t kArgStateIndex = int32_t(kInnerBlock) * 4;
inline constexpr uint32_t kArgNone = 0x7fffffffu;

class ArgReduceKernel final : public Generator {
 public:
  // Why the kernel cannot be built; empty when it can.
  static std::string declines(const LoopIR& ir, std::string_view accesses, Isa isa);

  ArgReduceKernel(const LoopIR& ir, std::string_view accesses, ReduceAxis axis, Isa isa);

  void operator()(ReduceCall* call) const { run_code(call); }

 private:
  void generate_rows();
  void generate_columns();
  // Lanes where x is better than vector u's best: best, index = x, at.
  void update(int u, const Xbyak::Xmm& x, const Xbyak::Xmm& at);
  // The first best lane's index into eax (0 when none saw an element better than the identity).
  void horizontal_index();
  // Vector u's indices as int64 at out + 2 * kJ; a tail writes only its lanes.
  void store_indices(int u, bool tail);

  bool max_;
  int inputs_;
  int unroll_;  // kColumns: vectors of outputs a step
  Prologue prologue_;
};

}  // namespace nnvm::jit::x86
