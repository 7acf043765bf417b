// The row-wise kernel kind (docs/DESIGN.md §3.8): the single ops that normalise or
// reduce each row of their input's last dim and that the recognise pass makes
// (softmax, log_softmax, layer_norm, rms_norm) or autograd records (layer_norm_backward,
// cross_entropy and its backward), as one class generating the code for one
// op, its structural flags (weight, bias) and one ISA.
//
// The code runs `rows` rows of `cols` float32 elements, each row unit-stride,
// rows `*_stride` bytes apart. Per row it makes a few passes over the row
// (max, then exp-sum, then the normalisation; or mean, then variance, then
// the affine map; or the mean square, then the scaling), so main memory sees the row read once and written once
// while the row stays in L1/L2. (An online max/sum pass would save a pass
// over cached data at the price of a second exp per element: slower for the
// rows these ops see.) The max walks the row four vectors at a time into four
// accumulators, then one vector at a time into the first, then one masked
// vector (AVX-512 opmask, AVX2 vmaskmovps) that never touches memory past the
// row, and combines them (a max is exact in any order). Every sum (of exps,
// of logits, of a norm's d and d², of its gradient's terms) is the reference
// kernels' instead, on every ISA (kernels/cpu/row_sums.h): sixteen float
// lanes, element j into lane j % 16, folded as a tree, and a norm's
// statistics finished in double and rounded to float once; with the
// reference's exp, log and fused multiply-adds, a fused and an unfused run
// give the same bits, and a row's result is the same whichever thread runs it.
//
// Sizes, pointers and Scalar values (eps) are run-time arguments (RowwiseCall):
// one compiled kernel serves every batch size and row length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnvm/jit/x86/generator.h"

namespace nnvm::jit::x86 {

enum class RowOp : uint8_t {
  kSoftmax,               // y = exp(x - max) / sum(exp(x - max))
  kLogSoftmax,            // y = (x - max) - log(sum(exp(x - max)))
  kLayerNorm,             // y = (x - mean) / sqrt(var + eps) [* weight] [+ bias]
  kLayerNormBackward,     // y = dx; dweight += g * xhat, dbias += g per column
  kRowLogSumExp,          // row_out[3r..] = (max, sum(exp(x - max)), sum(x)), the sums rounded to float
  kCrossEntropyBackward,  // y = row_a[r] * exp(x - lse) - row_b[r] [* weight]
  kRmsNorm,               // y = x / sqrt(mean(x^2) + eps) [* weight]
  kRmsNormBackward,       // y = dx; dweight += g * xhat per column
};
const char* row_op_name(RowOp op);

struct RowwiseSpec {
  RowOp op = RowOp::kSoftmax;
  bool weight = false;  // a per-column weight input
  bool bias = false;    // layer_norm: a bias input; layer_norm_backward: a dbias output
                        // (rms_norm has none)
  // The key of the compiled code: "layer_norm+w+b".
  std::string name() const;
};

// The kernel's argument block, read by offsetof.
struct alignas(64) RowwiseCall {
  const char* x = nullptr;     // rows of the input (logits)
  const char* g = nullptr;     // layer_norm_backward: rows of the upstream gradient
  const float* weight = nullptr;
  const float* bias = nullptr;
  char* y = nullptr;           // rows of the output
  float* dweight = nullptr;    // layer_norm_backward: per-column sums, added to
  float* dbias = nullptr;
  const float* row_a = nullptr;  // cross_entropy_backward: per-row coefficients
  const float* row_b = nullptr;
  float* row_out = nullptr;      // row_log_sum_exp: three floats per row
  int64_t rows = 0;            // > 0
  int64_t cols = 0;            // > 0
  int64_t x_stride = 0, g_stride = 0, y_stride = 0;  // bytes between rows
  float cols_f = 0;            // cols as float (mean = sum / cols)
  float eps = 0;
};

class RowwiseKernel final : public Generator {
 public:
  RowwiseKernel(const RowwiseSpec& spec, Isa isa);

  void operator()(RowwiseCall* call) const { run_code(call); }

 private:
  void generate();
  // One pass over the current row; body(u, tail) handles vector u of the
  // unrolled step at byte offset kJ + u * vector bytes.
  template <class Body> void pass(Body body);
  // Loads 4-byte lanes at base + kJ + u vectors; a tail load fills the lanes
  // past the row with `fill` (0 unless given).
  void load(const Xbyak::Xmm& v, const Xbyak::Reg64& base, int u, bool tail);
  void load_filled(const Xbyak::Xmm& v, const Xbyak::Reg64& base, int u, bool tail, float fill,
                   const Xbyak::Xmm& temp);
  void store(const Xbyak::Reg64& base, int u, bool tail, const Xbyak::Xmm& v);
  // Sets the four accumulators from `first` to `value`.
  void init_accumulators(int first, float value);
  // Combines the maxima in accumulators first..first+3 into every lane of `first`.
  void combine_max(int first);

  // Passes shared by the ops.
  void emit_max(int dst);                        // v[dst] = the row's max
  // One or two sums over the row, each in sixteen float lanes folded as a
  // tree (cpu::row_fold, kernels/cpu/row_sums.h): value(u, tail) leaves
  // vector u from kJ (u < 32 / lanes) in the registers it returns, {a, b} per sum
  // (lanes past the row are zeroed here); a sum adds a, or a * b with one
  // rounding. Sum s ends in xmm(4 s)'s low float. Clobbers vectors 0-7.
  enum class Sum { kValues, kProducts };
  template <class Value> void lane_sums(const std::vector<Sum>& sums, Value value);
  // Rounds xmm x's low double to float into every lane of dst (x's low float clobbered).
  void double_to_lanes(const Xbyak::Xmm& dst, const Xbyak::Xmm& x);
  // dst = sum / cols (sum: xmm's low float) in double, rounded to float in every lane.
  void mean_of_sum(const Xbyak::Xmm& dst, const Xbyak::Xmm& sum, const Xbyak::Xmm& temp);
  // xmm0 = sum exp(x - v[shift]) as lane_sums; the exps stored as y when store_exp.
  void emit_exp_sum(int shift, bool store_exp);
  // v[dst] = log of xmm0's low float, in every lane.
  void emit_log_of_sum(int dst);
  void emit_moments();                           // v8 = mean, v9 = 1 / sqrt(var + eps)
  void emit_rms();                               // v9 = 1 / sqrt(mean(x^2) + eps)
  void emit_rstd(const Xbyak::Xmm& v);           // v9 = 1 / sqrt(v + eps), v a double
  // The norms' backward: xhat = (x [- v8]) * v9 and d = g [* weight] for vector u.
  void load_xhat_and_d(int u, bool tail, bool centred, const Xbyak::Xmm& xhat, const Xbyak::Xmm& g,
                       const Xbyak::Xmm& d);
  void emit_log(int v);

  RowwiseSpec spec_;
};

}  // namespace nnvm::jit::x86
