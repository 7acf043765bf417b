// The pointwise kernel kind (docs/DESIGN.md §3.8): one class generating the machine
// code of a LoopIR for one ISA and one access pattern (how each operand's
// inner dim is read: contiguous, broadcast, or gathered at a stride).
//
// The code runs `rows` rows of `cols` elements. Per row it walks the inner
// dim a vector at a time and finishes with one masked vector (AVX-512 opmask
// or AVX2 vmaskmovps/masked gathers), so it never touches memory past a row's
// last element. Operand pointers live in GPRs; the DAG is evaluated into
// vector registers allocated over the expressions' live ranges, spilling the
// value used furthest ahead to the stack when they run out (32 zmm / 16 ymm).
// Transcendentals come from the injectors in vector_math.h. Sizes, strides,
// pointers and Scalar values are run-time arguments (PointwiseCall).
//
// Operands stored as float16 or bfloat16 are widened on load (vcvtph2ps;
// bfloat16: zero-extend and shift left by 16) and rounded to nearest even on
// store (vcvtps2ph; bfloat16: add 0x7fff plus the kept lsb, keep the top
// half, NaN kept quiet as in core/dtype.h). AVX-512 masks the tails of those
// too; AVX2 has no 16-bit masked load or store, so its tail goes through a
// stack slot element by element. A strided 8- or 16-bit input is read element
// by element into that slot (no gather instruction reads those).
// Integer operands: int32 loads convert with vcvtdq2ps (exact below 2^24,
// rounded to nearest even above, as static_cast<float>), bool/uint8 widen
// with vpmovzxbd and int8 with vpmovsxbd first; stores truncate toward zero
// (vcvttps2dq) and keep the low bytes (vpmovdb; AVX2: vpshufb and a lane
// merge). Their AVX2 tails go through the staging slot byte by byte too.
// Comparisons give 1.0/0.0 (an opmask or a
// vector mask blended over zero); select blends under `a != 0`.
// int64 operands are two vectors, their low and high halves (loop_ir.h, Note
// [int64 halves]): a load splits a row's qwords into the two (AVX-512:
// vpermi2d over two vectors of qwords; AVX2: vshufps and vpermpd; gathers
// read each half at its byte offset), a store interleaves them back, and the
// tails of both move qwords under masks (AVX-512 opmasks, AVX2 vpmaskmovq),
// so nothing past the row is touched. int64 -> float32 is vcvtqq2ps
// (AVX-512DQ); AVX2 rounds high * 2^32 + low to odd in double, then to
// float32, which is as exact. float32 -> int64 truncates with vcvttps2qq
// (AVX-512DQ), or splits the truncated double into its halves (AVX2).
//
// Speed: expressions of Scalars and constants alone (alpha * other of an
// add.Scalar) are loop-invariant: computed once per call into stack slots
// and read from there like a Scalar. The inner loop runs kUnroll vectors per
// iteration (independent copies of the body, which the out-of-order core
// overlaps), then single vectors, then the masked tail. A streaming kernel
// writes full vectors with non-temporal stores (vmovntps: no read for
// ownership, no cache pollution; outputs must be vector-aligned) and fences
// them (sfence) before it returns.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nnvm/jit/loop_ir.h"
#include "nnvm/jit/x86/generator.h"

namespace nnvm::jit::x86 {

inline constexpr int kMaxOperands = 11;  // one GPR each
inline constexpr int kMaxArgs = 32;   // a backward group easily holds 20 Scalars
inline constexpr int kMaxExprs = 256;
inline constexpr int kMaxStrided = 4;    // one vector register of lane offsets each
inline constexpr int kUnroll = 4;        // vectors per iteration of the main loop

// The kernel's argument block; the code reads it by offsetof and advances
// `ptr` row by row (it is the call's scratch).
struct alignas(64) PointwiseCall {
  float args[kMaxArgs][16];              // each run-time Scalar in every lane
  const char* ptr[kMaxOperands];         // operands: the group's inputs, then its outputs
  int64_t row_stride[kMaxOperands];      // bytes from one row to the next
  int64_t vec_step[kMaxOperands];        // bytes from one vector of a row to the next
  int32_t lane_stride[kMaxOperands];     // bytes between the lanes of a gathered operand
  int64_t cols = 0;                      // elements per row, > 0
  int64_t rows = 0;                      // > 0
};

class PointwiseKernel final : public Generator {
 public:
  // Why the kernel cannot be built for this IR, access pattern and ISA; empty when it can.
  static std::string declines(const LoopIR& ir, std::string_view accesses, Isa isa);

  // `stream`: non-temporal stores; every output pointer of a call must be 64-byte aligned.
  PointwiseKernel(const LoopIR& ir, std::string_view accesses, Isa isa, bool stream = false);

  void operator()(PointwiseCall* call) const { run_code(call); }

 private:
  struct Location {
    int reg = -1;   // vector register holding the value, or -1
    int slot = -1;  // stack slot holding it, or -1
  };

  void generate();
  void emit_invariants();
  void reset_allocation();
  // One vector (at `vector` vectors past the operand pointers) or the masked tail.
  void emit_body(bool tail, int vector = 0);
  void emit_expr(int32_t e, bool tail);
  void emit_load(int32_t e, const Xbyak::Xmm& dst, bool tail);
  void emit_store(int32_t output, int32_t e, bool tail);
  void advance_strided();  // gathered operands' pointers to the next vector
  int elem_bytes(int operand) const { return int(itemsize(ir_.dtype(size_t(operand)))); }
  void emit_load_half(int k, const Xbyak::Xmm& dst, bool tail);
  void emit_store_half(int k, const Xbyak::Xmm& v, bool tail);
  void emit_load_byte(int k, const Xbyak::Xmm& dst, bool tail);
  void emit_widen_narrow(int k, const Xbyak::Xmm& dst, bool tail);  // a 16- or 8-bit operand's vector
  void emit_stage_strided(int k, bool tail);
  // What a vector (or the tail) of operand k's 8- or 16-bit lanes loads from:
  // the operand, or the staging slot once its lanes are copied there.
  Xbyak::Address narrow_source(int k, bool tail);
  // The staging slot past the spill and hoisted slots: 8- and 16-bit lanes that
  // no vector load or store may touch directly (strided, or an AVX2 tail).
  Xbyak::RegExp staging() const;
  // One element of `bytes` (1 or 2) bytes from src to dst, through eax.
  void emit_copy_element(const Xbyak::RegExp& dst, const Xbyak::RegExp& src, int bytes);
  // The tail's cols (< lanes) elements, one by one: AVX2 has no masked 8- or 16-bit move.
  void emit_copy_tail(const Xbyak::RegExp& dst, const Xbyak::RegExp& src, int bytes);
  void emit_store_integer(int k, const Xbyak::Xmm& v, bool tail);  // int32, or a byte type
  void emit_load_int64(int k, bool high, const Xbyak::Xmm& dst, bool tail);
  void emit_gather(int k, int offset, const Xbyak::Xmm& dst, bool tail);
  void emit_store_int64(int k, int32_t pair, bool tail);
  // AVX-512: dst = the qwords (low, high) of lanes 8 * half .. 8 * half + 7.
  void emit_interleave(const Xbyak::Xmm& dst, const Xbyak::Xmm& low, const Xbyak::Xmm& high, int half);
  // AVX-512: dst = the low (high) dwords of the qwords of lanes 0-7 (`first`) and 8-15 (`second`).
  void emit_deinterleave(const Xbyak::Xmm& dst, const Xbyak::Xmm& first, const Xbyak::Operand& second, bool high);
  void emit_trunc_int64(int32_t i);
  void emit_int_compare(int32_t i);
  void emit_int64_to_float(int32_t i);
  void emit_compare(int32_t i, int pred);
  void emit_select(int32_t i);
  void emit_cast(int32_t i);

  // Register allocation (over one body: registers start free each time).
  int alloc();
  void evict(int32_t e);
  Xbyak::Xmm reg_of(int32_t e);            // the value in a register (loaded, reloaded or materialised)
  // A source operand: a register, or memory (Xbyak's Address must not be sliced to an Operand).
  struct Source {
    Xbyak::Xmm reg;
    std::optional<Xbyak::Address> mem;
    const Xbyak::Operand& op() const {
      if (mem) return *mem;
      return reg;
    }
  };
  // `broadcast`: a constant one lane wide, for a ps or dword instruction's last source.
  Source operand_of(int32_t e, bool broadcast = true);
  Xbyak::Xmm dest_for(int32_t e, int32_t reuse);  // e's register, taking over `reuse`'s if it dies here
  Xbyak::Xmm temp();
  void free_reg(int r);
  bool live_after(int32_t e, int32_t pos) const { return last_use_[size_t(e)] > pos; }
  // A Scalar argument, a constant, a hoisted or a spilled value; `broadcast`:
  // a constant as an arithmetic source (Generator::vconst_b).
  Xbyak::Address memory_of(int32_t e, bool broadcast);
  bool in_own_memory(int32_t e) const;    // a Scalar, a constant or a hoisted value: never spilled

  const LoopIR& ir_;
  std::string accesses_;
  bool stream_;
  std::vector<bool> invariant_;            // per expression: depends on no load
  int vector_ = 0;                         // the body being emitted: vectors past the operand pointers
  std::vector<int32_t> last_use_;          // per expression: the last expression reading it
  std::vector<std::vector<int32_t>> stored_by_;  // per expression: the outputs it is stored to
  std::vector<int32_t> gather_reg_;        // per operand: lane-offset register, or -1
  int tail_mask_reg_ = -1;                 // AVX2: the vector of tail lanes
  // allocation state
  std::vector<Location> loc_;
  std::vector<int32_t> holder_;            // per vector register: expression, kFree, kTemp or kReserved
  std::vector<bool> pinned_;
  std::vector<int> free_slots_;
  int32_t pos_ = 0;
};

}  // namespace nnvm::jit::x86
