// The reduction kernel kind (docs/DESIGN.md §3.8): one class generating the code of a
// reduction LoopIR (a pointwise prologue DAG whose one store is reduced by
// sum, mean, max, min, prod or logsumexp) for one ISA, one reduction axis and one access
// pattern (per input: contiguous or broadcast along the vector axis). Inputs
// of any loadable dtype are widened to float32 exactly (load_as_float); a
// loaded int32 summed into int64 widens straight to double.
//
// Sums, means and products accumulate in double in exactly the reference's
// order (kernels/cpu/reduce.h), so a hot trace's JIT result is bit-identical
// to the cold trace's interpreted one (given the prologue's primitives are):
//   - kRows (the reduced dim is innermost): sixteen double lanes, element j
//     into lane j % 16, then the lanes added in order 0..15. A row longer
//     than the reference's block comes in blocks whose double results
//     (`partial`) the caller adds in order.
//   - kColumns (a kept dim lies inside the reduced one): a call is one block
//     of the reference's (cpu::kColumnBlock reduced rows), its outputs' sums
//     of the block's elements in order left in `partial`; the caller merges
//     the blocks in order and finishes. Four rows at a time across the call's
//     outputs (streaming rows), or every row in registers when the outputs
//     fit them.
// max and min are exact in any order: float, four vectors per step into four
// accumulators ((a0 op a1) op (a2 op a3)) and a lane butterfly for kRows,
// four vectors of the inner dim at a time for kColumns; NaN wins. Lanes past
// the data hold the identity. logsumexp is a max pass, then the exps of the
// prologue minus the max (finite: 0 when infinite) added in double as a sum
// (kRows: the sixteen lanes, never in blocks; kColumns: one run per column,
// two vectors of the inner dim at a time), with emit_exp, the reference
// kernel's exp bit for bit; the kernel stores the max as the output and the
// double sum in `partial`, and the caller finishes log(sum) + max in double as
// the reference does. An output's order of operations depends on the
// sizes only, never on the thread that runs it. The prologue is evaluated per
// vector (prologue.h) into registers freed at each value's last use; a DAG
// that needs more registers than the ISA has is declined (the portable program
// runs it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nnvm/jit/loop_ir.h"
#include "nnvm/jit/x86/generator.h"
#include "nnvm/jit/x86/prologue.h"

namespace nnvm::jit::x86 {

inline constexpr int kMaxReduceOperands = 8;  // the inputs, then the output; one GPR each
inline constexpr int kMaxReduceArgs = 16;
// kColumns: outputs along the inner dim per call at most, a multiple of every ISA's lanes.
inline constexpr int64_t kInnerBlock = 1024;

enum class ReduceAxis : uint8_t { kRows, kColumns };

// The kernel's argument block, read by offsetof.
struct alignas(64) ReduceCall {
  float args[kMaxReduceArgs][16];              // each run-time Scalar in every lane
  const char* ptr[kMaxReduceOperands] = {};    // first element of the call's block, per operand
  int64_t row_stride[kMaxReduceOperands] = {}; // kRows: bytes from one row to the next
  int64_t red_stride[kMaxReduceOperands] = {}; // kColumns: bytes from one reduced index to the next
  int64_t rows = 0;                            // kRows: rows, > 0
  int64_t reduced = 0;                         // elements reduced per output, > 0
  int64_t inner = 0;                           // kColumns: outputs along the inner dim, > 0
  int64_t tail = 0;                            // the vector axis's length: reduced (kRows) or inner
  double count = 0;                            // the mean's divisor
  double* partial = nullptr;                   // kRows, sum/mean/prod: per row, the unfinished double instead;
                                               // logsumexp: per output, its sum of exps (always);
                                               // kColumns sum/mean/prod: kInnerBlock doubles, per
                                               // output its sum over the call's reduced rows
};

// Whether `ir` sums loaded int32 values into int64: the kernel converts them
// to double exactly (float32 would round past 2^24), exact below 2^22 elements.
bool sums_int32(const LoopIR& ir);

// Loads vector `u` of a contiguous operand of dtype `t` at `p` (its elements
// from j / 4 + u * lanes(): `j` counts float32 bytes) into `dst` as float32,
// exactly (int32: rounded to nearest even, as static_cast<float>; `raw`: kept
// as int32). A tail loads the lanes below `count` - u * lanes() (`count` a
// register) and zeroes the others; 4-byte AVX2 tails are masked by ymm15.
void load_as_float(Generator& g, const Xbyak::Xmm& dst, DType t, const Xbyak::Reg64& p, const Xbyak::Reg64& j, int u,
                   bool tail, const Xbyak::Reg64& count, bool raw = false);
// Every lane of `dst` = the element at `p`, of dtype `t`, as float32 (int32 kept when `raw`).
void broadcast_as_float(Generator& g, const Xbyak::Xmm& dst, DType t, const Xbyak::Reg64& p, bool raw = false);

class ReduceKernel final : public Generator {
 public:
  // Why the kernel cannot be built; empty when it can.
  static std::string declines(const LoopIR& ir, std::string_view accesses, Isa isa);

  ReduceKernel(const LoopIR& ir, std::string_view accesses, ReduceAxis axis, Isa isa);

  void operator()(ReduceCall* call) const { run_code(call); }

 private:
  void generate_rows();
  void generate_rows_double();
  void generate_columns();
  void generate_columns_double();
  // Every lane of vreg(0) = the row reduced by pass_op_ (kRows, one float pass).
  void float_row_pass(const Xbyak::Xmm& temp);
  // logsumexp: m = 0 where infinite, copied into shift().
  void finite_shift(const Xbyak::Xmm& m, const Xbyak::Xmm& temp);
  void generate_columns_lse();
  // kColumns sums: prefetches into L2 the lines of `vectors` vectors from kJ four
  // reduced rows on (the next sweep's), of each contiguous float32 or int32 input:
  // rows far apart each start a stream the hardware prefetcher has not seen (into
  // L1, the prefetches slow a sum from memory). Never faults.
  void prefetch_ahead(int vectors);
  // v = exp(v - shift) as the reference kernel's exp.
  void shifted_exp(const Xbyak::Xmm& v, const Xbyak::Operand& shift);
  Xbyak::Xmm shift() const;
  // acc_lo, acc_hi (doubles) op= the float lanes of v.
  void accumulate_double(const Xbyak::Xmm& lo, const Xbyak::Xmm& hi, const Xbyak::Xmm& v, const Xbyak::Xmm& temp);
  void fill_identity(const Xbyak::Xmm& v, const Xbyak::Xmm& temp);
  bool in_double() const { return ir_.reduce != ReduceOp::kMax && ir_.reduce != ReduceOp::kMin; }
  // The prologue's register holding vector u's reduced value (tail: the masked one); free it with release().
  int evaluate(int u, bool tail) { return prologue_.evaluate(u, tail); }
  void release() { prologue_.release(); }
  int alloc() { return prologue_.alloc(); }
  void free_reg(int r) { prologue_.free_reg(r); }
  // acc = acc op v; in a tail the lanes past the data take the identity first.
  void accumulate(const Xbyak::Xmm& acc, const Xbyak::Xmm& v, bool tail, const Xbyak::Xmm& temp);
  void combine(const Xbyak::Xmm& acc, const Xbyak::Xmm& v, const Xbyak::Xmm& temp);  // acc = acc op v
  void extremum(const Xbyak::Xmm& acc, const Xbyak::Xmm& v, const Xbyak::Xmm& temp);
  // xmm0's double: the mean's division, then to float in xmm0, stored at `out`.
  void finish_double_scalar(const Xbyak::Address& out);
  float identity() const;

  const LoopIR& ir_;
  bool raw_int32_;                 // sums_int32: the stored load stays int32 until accumulated
  std::string accesses_;
  ReduceAxis axis_;
  ReduceOp pass_op_;  // the reduction the pass being emitted applies (logsumexp: max, then the sum)
  Prologue prologue_;
};

}  // namespace nnvm::jit::x86
