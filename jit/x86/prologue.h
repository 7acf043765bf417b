// A reduction's pointwise prologue (docs/DESIGN.md §3.8): the expression DAG of a
// reduction LoopIR, whose one store is the reduced value, evaluated one
// vector at a time into registers from a pool, each freed at its value's last
// use. The reduction kernels (ReduceKernel, ArgReduceKernel) own their
// accumulators and loops and evaluate their prologue through this class; it
// emits into their code. Loads address the inputs as the kernels' argument
// block and fixed registers lay them out (reduce_regs.h): input k at
// kOperandRegs[k], vector u from the float32 byte offset kJ, a tail of kN
// lanes, Scalars from ReduceCall::args.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nnvm/jit/loop_ir.h"
#include "nnvm/jit/x86/generator.h"

namespace nnvm::jit::x86 {

class Prologue {
 public:
  // Why `ir`'s expressions cannot be evaluated from `pool` registers (more
  // operands or Scalars than the argument block has, a primitive without code
  // here, more live values than the pool holds); empty when they can.
  // `accesses`: per input, 'c' (contiguous along the vector axis) or 'b' (broadcast).
  static std::string declines(const LoopIR& ir, std::string_view accesses, int pool);
  // The most vector registers one evaluation holds at once.
  static int pressure(const LoopIR& ir);

  // `raw_int32`: a stored int32 load stays int32 (summed exactly by the kernel).
  Prologue(Generator& g, const LoopIR& ir, std::string_view accesses, std::vector<int> pool, bool raw_int32);

  // Evaluates the DAG for vector u (tail: the masked one); returns the
  // register holding the stored value (free it with release()).
  int evaluate(int u, bool tail);
  // Frees every register the last evaluation holds.
  void release();
  int alloc();
  void free_reg(int r);

 private:
  void emit_expr(int32_t e, int u, bool tail);

  Generator& g_;
  const LoopIR& ir_;
  std::string accesses_;
  std::vector<int> pool_;
  bool raw_int32_;
  std::vector<int32_t> last_use_;  // per expression: the last needed expression reading it, or the store
  std::vector<bool> needed_;
  std::vector<int> reg_;           // per expression: its register while live
  std::vector<bool> busy_;         // per entry of pool_
};

}  // namespace nnvm::jit::x86
