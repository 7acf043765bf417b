// The arg-reduction kernel (DESIGN §3.8): argmax or argmin of a float32,
// float16 or bfloat16 input along the reduction axis of a ReduceSpace, int64 indices out, for one
// ISA and one axis; the argument block is ReduceCall (reduce_kernel.h; the
// output's strides are in int64 bytes).
//
// The result is the reference's (kernels/cpu/reduce.cpp ArgReducer), which
// does not depend on the order elements are visited: the first NaN's index
// when there is one, else the first index of the max (min). Each lane keeps
// its best value and index, replaced only by a strictly better element or by
// the lane's first NaN, so a lane holds its first best; then the lanes whose
// value is the best (a NaN, when any) give the smallest index.
//   - kRows: one row at a time, vectors along it (a masked tail whose lanes
//     past the row hold -inf for argmax, +inf for argmin: never better).
//   - kColumns: up to four vectors of the inner dim's outputs at a time, over
//     every reduced index in order.
// A lane that saw no element better than the identity (a row of -inf for
// argmax) answers 0, the reference's first index. Indices are int32 inside
// the kernel: the caller declines extents above 2^30.
#pragma once

#include "nnvm/jit/x86/generator.h"
#include "nnvm/jit/x86/reduce_kernel.h"

namespace nnvm::jit::x86 {

class ArgReduceKernel final : public Generator {
 public:
  // `in`: float32, float16 or bfloat16 (widened exactly on load)
  ArgReduceKernel(bool max, ReduceAxis axis, Isa isa, DType in = kFloat32);

  void operator()(ReduceCall* call) const { reinterpret_cast<void (*)(ReduceCall*)>(entry())(call); }

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
  DType in_;
};

}  // namespace nnvm::jit::x86
