// Lowerings of ops the JIT's built-in table (jit/loop_ir.cpp) does not know:
// a plugin's pointwise ops (nnvm/plugin.h) registered at run time, so that
// lower_pointwise and lower_reduction fuse them into kernels with their
// neighbours like built-in ones.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nnvm/jit/loop_ir.h"

namespace nnvm::jit {

// Op `op` computes `expr`, a DAG over its node's inputs and Scalar
// attributes. kLoad with arg i reads the node's input i, kArg with arg k its
// Scalar attribute k (a run-time argument where the trace slots it), kConst
// `value`; any other float32 primitive reads earlier entries (a, b, c); the
// last entry is the result. The op lowers under lower_pointwise's rules: its
// float operands and its output computed in float32.
struct OpLowering {
  std::string op;
  std::vector<Expr> expr;
};

// Registers each of `lowerings`, all or none: throws nnvm::Error naming the
// op for a name the JIT lowers already (or given twice) or an expression
// that is not such a DAG, having registered none. Groups lowered before keep
// their programs (the kernel cache holds them).
void register_lowerings(std::vector<OpLowering> lowerings);

// Whether the JIT lowers op `op` (built in or registered).
bool has_lowering(std::string_view op);

}  // namespace nnvm::jit
