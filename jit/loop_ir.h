// LoopIR (docs/DESIGN.md §3.8): a pointwise fusion group lowered for code generation.
// Two halves, split by when they are known:
//   - LoopIR, built once per group signature: the group's expression DAG over
//     primitives a vector unit has (add, mul, exp, tanh, ...), which operands
//     it loads and stores, and which run-time Scalars (slots) it reads. No
//     sizes, strides or Scalar values: a kernel compiled from it serves every
//     batch size.
//   - LoopSpace, built per run from the actual tensors: the iteration space
//     with dims merged where every operand allows, so the inner loop is as
//     long as possible; per operand, the strides (0 for a broadcast dim). The
//     inner stride of each operand picks how the kernel reads it (Access).
// lower_pointwise maps each op name and its attributes to primitives, or
// declines with a reason; a declined group runs its portable tile program.
// lower_reduction does the same for a reduction group (a pointwise prologue
// closed by a reduction, or a reduction alone): the IR's one store is the
// value reduced, and `reduce` says how; which dims it runs over is the
// reduction axis of the run's ReduceSpace (jit/reduce_jit.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnvm/trace/group_program.h"

namespace nnvm::jit {

// The JIT-able primitives, all on float32 vectors. Semantics follow the
// reference kernels (kernels/cpu/), NaN handling included.
enum class Prim : uint8_t {
  kLoad,   // operand `arg` (a group input)
  kArg,    // run-time Scalar `arg` (LoopIR::args)
  kConst,  // compile-time `value`
  kAdd, kSub, kMul, kDiv,
  kMax, kMin,            // NaN-propagating maximum/minimum (torch.maximum)
  kClampMin, kClampMax,  // a < b ? b : a and a > b ? b : a: NaN stays NaN (clamp)
  kFma,                  // a * b + c, one rounding
  kNeg, kAbs, kRelu, kSqrt, kRecip,
  kExp, kLog, kTanh, kSigmoid,
  kErf, kExpm1, kLog1p,
  kSoftplus,             // softplus(a; beta b, threshold c), the reference's rule
  kPow,                  // std::pow(a, b)
  kExp2,
  kElu, kLeakyRelu,      // elu(a; alpha b), leaky_relu(a; negative_slope b)
  kSign,                 // -1, 0 or 1; 0 for NaN
  kRound, kFloor, kCeil, kTrunc,  // round: half to even
  // IEEE comparisons giving 1.0 or 0.0 (a bool value inside the kernel is
  // 0.0 or 1.0): a NaN operand makes all false but ne, which is true.
  kEq, kNe, kLt, kLe, kGt, kGe,
  kSelect,  // a != 0 ? b : c (NaN counts as nonzero, as bool(NaN) does): where, masked_fill
  kCast,    // to the integer dtype `arg` (int32, uint8, int8): truncated toward zero, wrapped to its width
            // (a NaN or a float past int32's range, undefined behaviour in the reference's cast, gives INT32_MIN first)
  // int64 values (Note [int64 halves]): each lane holds 32 bits of an integer, not a float.
  kBits,      // the compile-time 32-bit pattern `arg`
  kLoadLow,   // operand `arg`'s low 32 bits (int64), or its bits (int32)
  kLoadHigh,  // int64 operand `arg`'s high 32 bits
  kToInt,     // an integral float (|a| < 2^31) to its int32 bits, toward zero
  kSignOf,    // a's sign bit in every bit: the high half of int32 a widened to int64
  kIntEq, kIntGt, kUIntGt,  // a == b, a > b signed, a > b unsigned, on 32-bit lanes: 1.0 or 0.0
  kInt64ToFloat,  // the int64 (high a, low b) to float32, nearest even (as static_cast<float>)
  kPair,      // the int64 (low a, high b): no vector of its own; only a store (an int64 output) reads it
  kTruncInt64,  // float a toward zero as int64 (static_cast<int64_t>): its low (arg 0) or high (arg 1) half
};
// Note [int64 halves]: an int64 value lives in the kernel as two 32-bit
// vectors, its low and its high halves (kPair names the two), so the
// register allocator, spills and tails see ordinary vectors. Comparisons
// compose from 32-bit ones (a < b: high_a < high_b signed, or the highs equal
// and low_a < low_b unsigned) into the usual 1.0/0.0; where and masked_fill
// select each half; a bool, uint8, int8 or int32 widens as (its bits, their
// sign), a float truncates into both (kTruncInt64). Only stores and
// kInt64ToFloat put the halves back together.
const char* prim_name(Prim p);
int prim_arity(Prim p);

struct Expr {
  Prim prim;
  int32_t a = -1, b = -1, c = -1;  // operand expressions (earlier in the DAG)
  int32_t arg = -1;                // kLoad, kLoadLow, kLoadHigh: input index; kArg: Scalar index; kCast: the DType; kBits
  float value = 0;                 // kConst
};

// How a reduction group's stored expression is reduced (kNone: a pointwise IR).
// NaN propagates through max and min, as in the reference kernels.
// kLogSumExp: log(sum(exp(x - m))) + m, m the max (0 when infinite).
// kArgMax, kArgMin: the int64 index of the first max (min) along the
// reduction axis, the first NaN's when there is one.
// kNorm2: the Euclidean norm (norm with p = 2), the squares summed in double
// as the reference's reducer sums them, then the square root.
enum class ReduceOp : uint8_t { kNone, kSum, kMean, kMax, kMin, kProd, kLogSumExp, kArgMax, kArgMin, kNorm2 };
const char* reduce_op_name(ReduceOp op);

// Where a run-time Scalar comes from: attribute `attr` of the group's node
// `step` (as bound for the run).
// kLow, kHigh: the halves of the int64 the reference reads it as (scalar_as<int64_t>).
enum class ScalarPart : uint8_t { kFloat, kLow, kHigh };
struct ScalarArg {
  int32_t step;
  int32_t attr;
  ScalarPart part = ScalarPart::kFloat;
};
// The value a kernel's lanes hold for `a` bound to `s`: float(s), or a half's bits.
float scalar_lane(const ScalarArg& a, const Scalar& s);

struct LoopIR {
  int32_t inputs = 0;              // loaded operands: the group's inputs, in order
  // Per operand (inputs, then outputs): float32, float16 or bfloat16 in
  // memory, converted to float32 on load and rounded to nearest even on
  // store; empty means all float32. Values inside the group stay float32 (the
  // op-by-op reference rounds each to its dtype: results differ within the
  // half type's precision). bool, uint8, int8 and int32 operands are
  // converted exactly on load; on store a value (always integral there: a
  // comparison's 0/1, a kCast, a selected loaded integer) is truncated to
  // int32 and keeps its low bytes. int64 operands load and store as their
  // halves, exactly (Note [int64 halves]).
  std::vector<DType> dtypes;
  std::vector<Expr> exprs;         // topological: operands come first
  std::vector<int32_t> stores;     // per group output: the expression it stores
  std::vector<ScalarArg> args;
  ReduceOp reduce = ReduceOp::kNone;  // else: out0 is stores[0] reduced over the reduction axis

  // A canonical one-line-per-expression listing:
  //   e0 = load in0
  //   e2 = mul e0, e1
  //   out0 = e5                    (a reduction: out0 = sum e5 over the reduction axis)
  // (an operand stored as float16/bfloat16 names its dtype: "load in0 float16")
  std::string to_string() const;
  DType dtype(size_t operand) const { return dtypes.empty() ? kFloat32 : dtypes[operand]; }
};

// Each run-time Scalar of an IR (its args) as a kernel's lanes hold it.
using ScalarLanes = absl::InlinedVector<float, 8>;
// ir's args bound to a run's attributes (attrs[step] for each arg's step).
ScalarLanes scalar_lanes(const LoopIR& ir, absl::Span<const Attrs* const> attrs);

// The result of lowering: `ir` when `declined` is empty.
struct Lowering {
  LoopIR ir;
  std::string declined;
  bool ok() const { return declined.empty(); }
};

// Lowers a pointwise group whose program is tiled (GroupProgram::tiled).
// `values` orders the operands: inputs, then outputs. Values may be float32,
// float16, bfloat16, bool, uint8, int8, int32 or int64 (float64: declined),
// and a node lowers only where the kernel gives the reference's result
// exactly: the reference computes a node in its promoted dtype
// (kernels/cpu/pointwise.h), int64 for integers, so integer arithmetic is
// declined; comparisons, where and casts of integers lower where every
// integer is exact in float32 (bool, uint8, int8; int32 only into float
// arithmetic, a logical op or a cast to a float or bool), or in int64 halves
// (Note [int64 halves]): comparisons computing in int64 (an int64 against an
// integer tensor or an integral Scalar, a bool against an integral Scalar),
// where and masked_fill over int64, casts to int64 (a float truncated
// toward zero, as static_cast<int64_t>), and int64
// read as a truth value or converted to float32 (nearest even, as
// static_cast<float>) where the node computes in float32 (a cast, a
// comparison, float arithmetic). A matmul's epilogue lowers as a group of its
// own (its nodes after the matmul; trace/group_program.h).
Lowering lower_pointwise(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values);

// Lowers a reduction group: kReduction (a pointwise prologue, then sum,
// mean, amax, amin, max, min, prod or logsumexp over dims), or kSingle with one such
// reduction, or argmax/argmin of a float alone. Operands as lower_pointwise's
// (the prologue under its exactness rule); the result float32, float16,
// bfloat16, an int64 sum of integers or bool, or a bool/uint8/int8 extremum:
// each where the reference's result is exact from the kernel's float32
// values and double sums.
Lowering lower_reduction(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values);

// A norm node's attributes (dims, keepdim, p) with p = 2, the norm the JIT
// runs (ReduceOp::kNorm2). p is a run-time Scalar: a plan lowered for p = 2
// checks it again at each run.
bool norm_is_euclidean(const Attrs& attrs);

// How the inner loop reads or writes one operand.
enum class Access : uint8_t {
  kContiguous,  // inner stride 1: vector loads and stores
  kBroadcast,   // inner stride 0: one element for the whole row
  kStrided,     // any other stride: gathers (inputs only)
};
char access_code(Access a);  // 'c', 'b', 's'

// The iteration space of one run. Operands are the group's inputs then its
// outputs; every operand's view is broadcast to the loop shape.
struct LoopSpace {
  DimVector sizes;                   // merged dims; the last is the inner loop (rank >= 1)
  std::vector<DimVector> strides;    // per operand, in elements, 0 where broadcast
  int64_t numel() const;
  Access access(size_t operand) const;
  std::string accesses() const;      // one access_code per operand: the kernel variant's key
  // "[64, 4096] in0 [4096, 1] in1 [0, 1] out0 [4096, 1]"
  std::string to_string(int32_t inputs) const;
};

// The space of `loop` with each operand's (shape, strides) broadcast to it.
// Adjacent dims merge where every operand's strides allow; size-1 dims drop.
LoopSpace loop_space(IntArrayRef loop, absl::Span<const IntArrayRef> shapes, absl::Span<const IntArrayRef> strides);

// The dims of `loop` over operands whose strides per loop dim are full[k]:
// size-1 dims drop, and a dim joins the previous kept one where every
// operand steps over it exactly as over the merged dim. With
// `merged_reduced`, only neighbours of one class (reduced[d], or kept when
// `reduced` is empty) merge, and it gets each merged dim's class. No dims
// left (every size 1) gives an empty space.
LoopSpace merge_loop_dims(IntArrayRef loop, absl::Span<const DimVector> full, const std::vector<bool>& reduced,
                          std::vector<bool>* merged_reduced);

// The (shape, strides) of operands ids[0, count) as env holds them: views
// of env's tensors, valid while env is unchanged.
struct OperandLayouts {
  std::vector<IntArrayRef> shapes, strides;
};
OperandLayouts operand_layouts(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env, size_t count);

}  // namespace nnvm::jit
