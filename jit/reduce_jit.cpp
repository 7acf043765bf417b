#include "nnvm/jit/reduce_jit.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/jit/kernel_dump.h"
#include "nnvm/kernels/cpu/loops.h"
#include "nnvm/kernels/cpu/reduce.h"

namespace nnvm::jit {

namespace {

std::atomic<int64_t> compiles{0};

// Elements one call covers at most: rows (or inner columns) of a few cache-resident vectors.
constexpr int64_t kTaskElements = 32768;


// Columns per task of a column reduction: the kernel's block, narrowed (in
// whole vectors) until every thread has a unit when the outer dims and the
// blocks of reduced rows give too few ([200, 1024].sum(0) is one unit of 1024
// columns otherwise). Columns are independent, so the split leaves every
// sum's order as it was.
int64_t column_block(int64_t units, int64_t across) {
  const int64_t threads = get_num_threads();
  if (units >= threads) return std::min(across, x86::kInnerBlock);
  const int64_t per_task = (across + (threads + units - 1) / units - 1) / ((threads + units - 1) / units);
  return std::min(across, std::clamp<int64_t>((per_task + 15) / 16 * 16, 16, x86::kInnerBlock));
}

// Doubles on whole cache lines: a kernel's vectors of sums never straddle two.
struct AlignedFree {
  void operator()(double* p) const { ::operator delete[](p, std::align_val_t(64)); }
};
std::unique_ptr<double[], AlignedFree> aligned_doubles(size_t n) {
  if (n == 0) return nullptr;
  return std::unique_ptr<double[], AlignedFree>(static_cast<double*>(::operator new[](n * 8, std::align_val_t(64))));
}

bool in_double(ReduceOp op) {
  return op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kProd || op == ReduceOp::kNorm2;
}

// A double result as the reference's reducer finishes it (cpu::MeanReducer, cpu::NormReducer).
double finished(ReduceOp op, double acc, int64_t reduced) {
  if (op == ReduceOp::kMean) return acc / double(reduced);
  if (op == ReduceOp::kNorm2) return std::sqrt(acc);
  return acc;
}

bool is_arg(ReduceOp op) { return op == ReduceOp::kArgMax || op == ReduceOp::kArgMin; }

// Per output, the (value, index) each block of kColumnBlock reduced rows left
// (`block` floats, then `block` int32 indices, per block), merged in order as
// the reference merges them (cpu::ArgReducer): the first NaN, else the
// extreme value, else the lower index.
template <bool kMax>
void merge_arg_blocks(const double* blocks, int64_t block, int64_t row_blocks, int64_t n, int64_t* out) {
  const cpu::ArgReducer<float, kMax> red;
  for (int64_t i = 0; i < n; ++i) {
    auto acc = red.init();
    for (int64_t b = 0; b < row_blocks; ++b) {
      const char* p = reinterpret_cast<const char*>(blocks + b * block);
      const uint32_t j = reinterpret_cast<const uint32_t*>(p + 4 * block)[i];
      if (j == x86::kArgNone) continue;  // nothing in the block beat the identity
      acc = red.merge(acc, {reinterpret_cast<const float*>(p)[i], b * cpu::kColumnBlock + int64_t(j)});
    }
    out[i] = std::max<int64_t>(acc.i, 0);
  }
}

// Extents an arg kernel's int32 lane indices cover.
constexpr int64_t kMaxArgExtent = int64_t(1) << 30;
// Extents whose int32 sums every double partial sum holds exactly (|x| <= 2^31).
constexpr int64_t kMaxInt32SumExtent = int64_t(1) << 22;

}  // namespace

int64_t reduce_compiles() { return compiles.load(); }
int64_t reduce_runs() { return ReduceJit::runs(); }

CompiledReduce::CompiledReduce(const LoopIR& ir, const std::string& accesses, x86::ReduceAxis axis, Isa isa)
    : isa_(isa),
      variant_(absl::StrCat(axis == x86::ReduceAxis::kRows ? "rows" : "cols", "[", accesses, "]")),
      declined_(is_arg(ir.reduce) ? x86::ArgReduceKernel::declines(ir, accesses, isa)
                                  : x86::ReduceKernel::declines(ir, accesses, isa)) {
  if (!declined_.empty()) return;
  try {
    if (is_arg(ir.reduce)) arg_kernel_ = std::make_unique<x86::ArgReduceKernel>(ir, accesses, axis, isa);
    else kernel_ = std::make_unique<x86::ReduceKernel>(ir, accesses, axis, isa);
  } catch (const Xbyak::Error& e) {  // a prologue too big for the code buffer: the reference kernels run it
    declined_ = absl::StrCat("code generation failed: ", e.what());
    return;
  }
  compiles.fetch_add(1);
}

CompiledReduce::~CompiledReduce() = default;

std::string CompiledReduce::describe() const {
  if (!kernel_ && !arg_kernel_) return absl::StrCat("x86 ", isa_name(isa_), " reduce ", variant_, " declined: ", declined_);
  const size_t bytes = kernel_ ? kernel_->code_bytes() : arg_kernel_->code_bytes();
  return absl::StrCat("x86 ", isa_name(isa_), " reduce ", variant_, " ", bytes, " bytes");
}

std::string CompiledReduce::machine_code() const {
  if (kernel_) return hex_dump(kernel_->entry(), kernel_->code_bytes());
  return arg_kernel_ ? hex_dump(arg_kernel_->entry(), arg_kernel_->code_bytes()) : std::string();
}

std::string ReduceJit::code() const { return variants_code("LoopIR\n" + lowering_.ir.to_string()); }

std::string ReduceSpace::to_string() const {
  std::string s = "[";
  for (size_t d = 0; d < sizes.size(); ++d) absl::StrAppend(&s, d ? ", " : "", sizes[d], reduced[d] ? " r" : "");
  s += "]";
  for (size_t k = 0; k < strides.size(); ++k)
    absl::StrAppend(&s, k + 1 < strides.size() ? " in" : " out", k + 1 < strides.size() ? k : 0, " ",
                    shape_str(strides[k]));
  return s;
}

ReduceSpace reduce_space(IntArrayRef loop, IntArrayRef dims, bool keepdim, absl::Span<const IntArrayRef> shapes,
                         absl::Span<const IntArrayRef> strides) {
  const size_t n = shapes.size();
  std::vector<bool> reduced(loop.size());
  for (size_t d = 0; d < loop.size(); ++d) reduced[d] = std::binary_search(dims.begin(), dims.end(), int64_t(d));
  std::vector<DimVector> full(n);
  for (size_t k = 0; k + 1 < n; ++k) full[k] = broadcast_strides(shapes[k], strides[k], loop);
  size_t od = 0;  // the output's dim for loop dim d
  for (size_t d = 0; d < loop.size(); ++d) {
    if (reduced[d]) {
      full[n - 1].push_back(0);
      od += keepdim;
    } else {
      full[n - 1].push_back(strides[n - 1][od++]);
    }
  }
  ReduceSpace s;
  LoopSpace merged = merge_loop_dims(loop, full, reduced, &s.reduced);
  s.sizes = std::move(merged.sizes);
  s.strides = std::move(merged.strides);
  if (std::count(s.reduced.begin(), s.reduced.end(), true) == 1)
    s.axis = int32_t(std::find(s.reduced.begin(), s.reduced.end(), true) - s.reduced.begin());
  return s;
}

bool ReduceJit::handles(const std::string& op) {
  return op == "sum" || op == "mean" || op == "amax" || op == "amin" || op == "max" || op == "min" || op == "prod" ||
         op == "logsumexp" || op == "argmax" || op == "argmin" || op == "norm";
}

ReduceJit::ReduceJit(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values,
                     std::string key)
    : lowering_(lower_reduction(t, g, values)), key_(std::move(key)) {}

std::shared_ptr<const CompiledReduce> ReduceJit::variant(Isa isa, x86::ReduceAxis axis,
                                                         const std::string& accesses) const {
  const std::string name =
      absl::StrCat(isa_name(isa), "-reduce-", axis == x86::ReduceAxis::kRows ? "rows" : "cols", "-", accesses);
  return find_variant(name, absl::StrCat("x86-", name, ":", key_),
                      [&] { return std::make_shared<const CompiledReduce>(lowering_.ir, accesses, axis, isa); });
}

struct ReduceLaunch {
  LaunchKey key;
  ReduceSpace space;
  std::shared_ptr<const CompiledReduce> compiled;
  size_t rank = 0, axis = 0;
  bool rows = false;
  int64_t reduced = 0;
  // dims [0, outer_dims) are walked here; the kernel takes rows (kRows: the
  // dim before the axis, `split`) or the inner dim (kColumns) in blocks.
  size_t split = 0, outer_dims = 0;
  bool has_rows = false;
  int64_t across = 0, block = 0, blocks = 0, tasks = 0;
  // units per task, each a block of the reference's: a long row's (kRows
  // sums), or reduced rows' (kColumns sums); their double results merge in order
  int64_t row_blocks = 1;
  bool parallel = false;
  int64_t bytes[x86::kMaxReduceOperands] = {};  // per operand: its element size
  // What every call of a run shares (the extent, its count, the operands'
  // strides); with single_call, also the rows and tail of the run's one call.
  x86::ReduceCall call;
  // One call of the kernel does the whole run, finished in the kernel (a few
  // rows, each at most a block of the reference's, float32 out).
  bool single_call = false;
};

namespace {

// A call from the launch's: every member after the Scalars' lanes (a
// kilobyte, bound per run by bind_args) copied.
void start_call(x86::ReduceCall& call, const x86::ReduceCall& launch) {
  static_assert(offsetof(x86::ReduceCall, args) == 0 && offsetof(x86::ReduceCall, ptr) == sizeof(launch.args));
  std::memcpy(static_cast<void*>(&call.ptr), &launch.ptr, sizeof(call) - offsetof(x86::ReduceCall, ptr));
}

// Each run-time Scalar of the IR (`lanes`) in every lane of `call`.
void bind_args(x86::ReduceCall& call, absl::Span<const float> lanes) {
  for (size_t a = 0; a < lanes.size(); ++a) std::fill_n(call.args[a], 16, lanes[a]);
}

}  // namespace

std::shared_ptr<const ReduceLaunch> ReduceJit::plan_launch(LaunchKey key, Isa isa,
                                                                absl::Span<const trace::ValueId> ids,
                                                                const std::vector<Tensor>& env, IntArrayRef loop,
                                                                IntArrayRef dims, bool keepdim) const {
  const LoopIR& ir = lowering_.ir;
  const size_t operands = size_t(ir.inputs) + 1;
  const OperandLayouts layouts = operand_layouts(ids, env, operands);
  auto launch = std::make_shared<Launch>();
  launch->key = std::move(key);
  launch->space = reduce_space(loop, dims, keepdim, layouts.shapes, layouts.strides);
  const ReduceSpace& space = launch->space;
  if (space.axis < 0) {
    fall_back(absl::StrCat("the reduced dims are not one block: ", space.to_string()));
    return nullptr;
  }
  const size_t rank = space.sizes.size(), axis = size_t(space.axis);
  const bool rows = axis == rank - 1;
  if (!rows && axis != rank - 2) {
    fall_back(absl::StrCat("kept dims inside the reduced one do not merge: ", space.to_string()));
    return nullptr;
  }
  const size_t vec_dim = rows ? axis : rank - 1;  // the dim vectors run along
  std::string accesses;
  for (int32_t k = 0; k < ir.inputs; ++k) {
    const int64_t s = space.strides[size_t(k)][vec_dim];
    if (s != 0 && s != 1) {
      fall_back(absl::StrCat("input ", k, " is strided along the vector axis: ", space.to_string()));
      return nullptr;
    }
    accesses += s == 1 ? 'c' : 'b';
  }
  if (!rows && space.strides[operands - 1][vec_dim] != 1) {
    fall_back(absl::StrCat("the output is not unit-stride: ", space.to_string()));
    return nullptr;
  }
  launch->compiled = variant(isa, rows ? x86::ReduceAxis::kRows : x86::ReduceAxis::kColumns, accesses);
  if (!launch->compiled->declined().empty()) {
    fall_back(launch->compiled->declined());
    return nullptr;
  }
  const int64_t reduced = space.sizes[axis];
  if (is_arg(ir.reduce) && reduced > kMaxArgExtent) {
    fall_back(absl::StrCat(reduced, " elements per output: the arg kernel's indices cover ", kMaxArgExtent));
    return nullptr;
  }
  if (x86::sums_int32(ir) && reduced > kMaxInt32SumExtent) {
    fall_back(absl::StrCat(reduced, " int32 elements per output: double sums are exact up to ", kMaxInt32SumExtent));
    return nullptr;
  }
  Launch& l = *launch;
  for (size_t k = 0; k < operands; ++k) l.bytes[k] = int64_t(itemsize(ir.dtype(k)));
  l.rank = rank;
  l.axis = axis;
  l.rows = rows;
  l.reduced = reduced;
  l.split = rows ? (axis > 0 ? axis - 1 : 0) : rank - 1;
  l.has_rows = rows && axis > 0;
  l.outer_dims = rows ? l.split : axis;
  int64_t outer = 1;
  for (size_t d = 0; d < l.outer_dims; ++d) outer *= space.sizes[d];
  l.across = rows ? (l.has_rows ? space.sizes[l.split] : 1) : space.sizes[rank - 1];
  if (in_double(ir.reduce) || (!rows && is_arg(ir.reduce))) {
    const int64_t per = rows ? cpu::kRowBlock : cpu::kColumnBlock;
    if (!rows || reduced > per) l.row_blocks = (reduced + per - 1) / per;
  }
  l.block = rows ? std::max<int64_t>(1, kTaskElements / reduced) : column_block(outer * l.row_blocks, l.across);
  l.blocks = (l.across + l.block - 1) / l.block;
  l.tasks = outer * l.blocks;
  l.parallel = outer * l.across * reduced >= 2 * kTaskElements;
  x86::ReduceCall& call = l.call;
  call.reduced = reduced;
  call.count = double(reduced);
  for (size_t k = 0; k < operands; ++k) {
    call.row_stride[k] = l.has_rows ? space.strides[k][l.split] * l.bytes[k] : 0;
    call.red_stride[k] = space.strides[k][axis] * l.bytes[k];
  }
  // As run's loop makes its one call when nothing is staged, merged or finished after the kernel.
  l.single_call = rows && l.tasks == 1 && l.row_blocks == 1 && ir.dtype(operands - 1) == kFloat32 &&
                  ir.reduce != ReduceOp::kLogSumExp;
  if (l.single_call) {
    call.rows = std::min(l.block, l.across);
    call.tail = reduced;
  }
  return launch;
}

bool ReduceJit::run(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env,
                    absl::Span<const Attrs* const> attrs, IntArrayRef loop, uint64_t layouts) const {
  const Isa isa = active_isa();
  if (!lowering_.ok()) return false;
  if (isa == Isa::kPortable) return fall_back("the ISA is portable");
  const LoopIR& ir = lowering_.ir;
  if (numel_of(loop) == 0 || loop.empty()) return fall_back("an empty or rank-0 reduction");
  const Attrs& red = *attrs.back();
  // p is a run-time Scalar: a replay may bind another than the p = 2 the kernel computes
  if (ir.reduce == ReduceOp::kNorm2 && !norm_is_euclidean(red)) return fall_back("norm with p other than 2 at this run");
  const size_t operands = size_t(ir.inputs) + 1;
  // sized by the group: a kernel declines more operands than it has registers for
  absl::InlinedVector<const char*, x86::kMaxReduceOperands> base(operands);
  for (size_t k = 0; k < operands; ++k) base[k] = static_cast<const char*>(env[size_t(ids[k])].data_ptr());
  auto describe = [&](auto& key) {
    key.value(int64_t(isa));
    key.value(int64_t(get_num_threads()));  // column_block splits columns by it
    key_ints(key, loop);
    key_ints(key, red.ints(0));
    key.value(red.b(1));
    for (size_t k = 0; k < operands; ++k) key_layout(key, env[size_t(ids[k])]);
  };
  // the reduced dims and keepdim are structure: a layout promise covers them
  const LaunchStamp stamp{layouts, int64_t(isa) << 32 | get_num_threads()};
  trace::ReplayCapture* capture = trace::replay_capture();
  std::shared_ptr<const Launch> kept;
  const Launch* launch = find_launch(
      describe,
      [&] {
        const DimVector dims = reduction_dims(red.ints(0), int64_t(loop.size()), "reduce");
        return plan_launch(key_of(describe), isa, ids, env, loop, dims, red.b(1));
      },
      stamp, capture ? &kept : nullptr);
  if (!launch) return false;
  const Launch& l = *launch;
  const CompiledReduce& kernel = *l.compiled;
  const ScalarLanes lanes = scalar_lanes(ir, attrs);
  if (l.single_call) {  // a small reduction: the launch's call with this run's operands
    if (capture) [[unlikely]]
      capture_launch(*capture, kept, lanes, ids.first(operands));
    run_launch(l, base.data(), lanes);  // counts the run
    return true;
  }
  if (capture) [[unlikely]]
    capture->decline("a reduction of more than one kernel call");
  const ReduceSpace& space = l.space;
  const size_t rank = l.rank, axis = l.axis, split = l.split, outer_dims = l.outer_dims;
  const bool rows = l.rows, has_rows = l.has_rows;
  const int64_t reduced = l.reduced, across = l.across, block = l.block, blocks = l.blocks, row_blocks = l.row_blocks;

  auto bytes = [&](size_t k) { return l.bytes[k]; };
  // An output that is not float32 (an arg reduction's int64 indices aside):
  // the kernel writes floats to a staging buffer (an int64 sum: doubles to
  // `partial`), converted to the output's dtype as the reference's store does.
  const DType out_dtype = ir.dtype(operands - 1);
  const bool staged = out_dtype != kFloat32 && !is_arg(ir.reduce);
  const bool to_int64 = staged && out_dtype == kInt64;
  auto store_floats = [&](const float* from, char* to, int64_t stride, int64_t n) {
    cpu::scatter<float>(from, to, stride, n, out_dtype);
  };
  auto store_doubles = [&](const double* from, char* to, int64_t stride, int64_t n) {
    cpu::scatter<double>(from, to, stride, n, out_dtype);
  };

  // A row longer than the reference's block (then one row a task): its
  // blocks are units of their own, run in parallel, each block's double
  // result in `parts`; then per row the blocks merged in order (cpu::reduce)
  // and finished.
  const bool long_rows = rows && row_blocks > 1;
  // Column sums: a unit is a block of the task's reduced rows, its outputs'
  // double sums left in `partial`; one block finishes there, more go to
  // `parts` (per task, per block, `block` outputs), merged in order after.
  // Arg reductions over columns the same, each output's best value and index
  // in the block (8 bytes) for the merge; one block's indices are final.
  const bool column_sums = !rows && in_double(ir.reduce);
  const bool arg_columns = !rows && is_arg(ir.reduce);
  const bool merged_columns = (column_sums || arg_columns) && row_blocks > 1;
  const int64_t per_block = long_rows ? 1 : merged_columns ? block : 0;  // doubles in `parts` per block
  const auto parts = aligned_doubles(size_t(l.tasks * row_blocks * per_block));  // none for most runs
  std::vector<char*> task_out(long_rows || merged_columns ? size_t(l.tasks) : 0);
  auto merge = [&](double* acc, const double* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = ir.reduce == ReduceOp::kProd ? acc[i] * p[i] : acc[i] + p[i];
  };
  auto finish_long_rows = [&] {
    for (int64_t task = 0; task < l.tasks; ++task) {
      const double* p = &parts[size_t(task * row_blocks)];
      double acc = p[0];
      for (int64_t b = 1; b < row_blocks; ++b) merge(&acc, &p[b], 1);
      acc = finished(ir.reduce, acc, reduced);
      char* out = task_out[size_t(task)];
      if (to_int64) store_doubles(&acc, out, 0, 1);
      else if (staged) store_floats(std::array<float, 1>{float(acc)}.data(), out, 0, 1);
      else *reinterpret_cast<float*>(out) = float(acc);
    }
  };
  // n column totals finished into contiguous outputs from `out`, as the reference's store
  auto finish_columns = [&](double* totals, char* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) totals[i] = finished(ir.reduce, totals[i], reduced);
    if (to_int64) {
      store_doubles(totals, out, bytes(operands - 1), n);
      return;
    }
    std::vector<float> staging(staged ? size_t(n) : 0);
    float* to = staged ? staging.data() : reinterpret_cast<float*>(out);
    for (int64_t i = 0; i < n; ++i) to[i] = float(totals[i]);
    if (staged) store_floats(to, out, bytes(operands - 1), n);
  };
  auto merge_arg = [&](const double* blocks_of_task, int64_t* out, int64_t n) {
    if (ir.reduce == ReduceOp::kArgMax) merge_arg_blocks<true>(blocks_of_task, block, row_blocks, n, out);
    else merge_arg_blocks<false>(blocks_of_task, block, row_blocks, n, out);
  };
  auto merge_columns = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      double* totals = &parts[size_t(task * row_blocks * block)];
      const int64_t count = std::min(block, across - task % blocks * block);
      if (arg_columns) {
        merge_arg(totals, reinterpret_cast<int64_t*>(task_out[size_t(task)]), count);
        continue;
      }
      for (int64_t b = 1; b < row_blocks; ++b) merge(totals, totals + b * block, count);
      finish_columns(totals, task_out[size_t(task)], count);
    }
  };
  // logsumexp: the kernel stores each output's shift and leaves its double
  // sum in `partial`; the finish is the reference's, log in double.
  const bool lse = ir.reduce == ReduceOp::kLogSumExp;
  auto finish_lse = [&](const x86::ReduceCall& call, int64_t outputs, int64_t out_stride) {
    char* out = const_cast<char*>(call.ptr[operands - 1]);
    for (int64_t i = 0; i < outputs; ++i) {
      float* o = reinterpret_cast<float*>(out + i * out_stride);
      *o = float(std::log(call.partial[i]) + double(*o));
    }
  };
  auto run_tasks = [&](int64_t begin, int64_t end) {
    x86::ReduceCall call;
    start_call(call, l.call);
    const size_t per_call = size_t(std::max(block, x86::kInnerBlock));
    const auto partial = aligned_doubles(column_sums || lse || to_int64 || arg_columns ? per_call : 0);
    std::vector<float> staging(staged && !to_int64 && !column_sums ? per_call : 0);
    call.partial = partial.get();
    bind_args(call, lanes);
    // the output's stride between the call's outputs (rows: row_stride; columns: unit)
    const int64_t out_stride = rows ? call.row_stride[operands - 1] : bytes(operands - 1);
    for (int64_t unit = begin; unit < end; ++unit) {
      // Block rb of a task: a long row's blocks one after another; column
      // sums' tiles side by side (as the reference's), so that consecutive
      // units stream whole rows.
      const int64_t task = long_rows ? unit / row_blocks : unit / (row_blocks * blocks) * blocks + unit % blocks;
      const int64_t rb = long_rows ? unit % row_blocks : unit / blocks % row_blocks;
      // task 0 starts every operand at its base: a small reduction's only call computes no offsets
      const int64_t b = task % blocks, first = b * block, count = std::min(block, across - first);
      for (size_t k = 0; k < operands; ++k) {
        int64_t offset = 0;
        if (task != 0) {
          for (int64_t d = int64_t(outer_dims) - 1, rest = task / blocks; d >= 0; --d) {
            offset += (rest % space.sizes[size_t(d)]) * space.strides[k][size_t(d)];
            rest /= space.sizes[size_t(d)];
          }
          if (has_rows || !rows) offset += first * space.strides[k][rows ? split : rank - 1];
        }
        call.ptr[k] = base[k] + offset * bytes(k);
      }
      if (long_rows) {  // block rb of the task's one row
        if (rb == 0) task_out[size_t(task)] = const_cast<char*>(call.ptr[operands - 1]);
        for (size_t k = 0; k + 1 < operands; ++k) call.ptr[k] += rb * cpu::kRowBlock * space.strides[k][axis] * bytes(k);
        call.rows = 1;
        call.reduced = call.tail = std::min(cpu::kRowBlock, reduced - rb * cpu::kRowBlock);
        call.partial = &parts[size_t(task * row_blocks + rb)];
        kernel(&call);
        continue;
      }
      if (column_sums || arg_columns) {  // reduced rows [r0, r0 + kColumnBlock) of the task's columns
        const int64_t r0 = rb * cpu::kColumnBlock;
        for (size_t k = 0; k + 1 < operands; ++k) call.ptr[k] += r0 * call.red_stride[k];
        call.reduced = std::min(cpu::kColumnBlock, reduced - r0);
        call.inner = call.tail = count;
        kernel(&call);
        char* out = const_cast<char*>(call.ptr[operands - 1]);
        if (row_blocks == 1) {
          if (column_sums) finish_columns(partial.get(), out, count);
          continue;
        }
        if (rb == 0) task_out[size_t(task)] = out;
        double* to = &parts[size_t((task * row_blocks + rb) * block)];
        if (column_sums) {
          std::copy_n(partial.get(), count, to);
        } else {  // the values, then the indices, `block` of each
          const char* state = reinterpret_cast<const char*>(partial.get());
          std::memcpy(to, state, size_t(count) * 4);
          std::memcpy(reinterpret_cast<char*>(to) + 4 * block, state + x86::kArgStateIndex, size_t(count) * 4);
        }
        continue;
      }
      if (rows) {
        call.rows = count;
        call.tail = reduced;
      } else {
        call.inner = count;
        call.tail = count;
      }
      char* out = const_cast<char*>(call.ptr[operands - 1]);
      if (!staging.empty()) {  // contiguous floats in place of the output
        call.ptr[operands - 1] = reinterpret_cast<const char*>(staging.data());
        call.row_stride[operands - 1] = 4;
      }
      kernel(&call);
      if (lse) finish_lse(call, count, out_stride);
      else if (to_int64) store_doubles(partial.get(), out, out_stride, count);
      else if (staged) store_floats(staging.data(), out, out_stride, count);
      call.row_stride[operands - 1] = has_rows ? space.strides[operands - 1][split] * bytes(operands - 1) : 0;
    }
  };
  if (l.parallel) parallel_for(0, l.tasks * row_blocks, 1, run_tasks);
  else run_tasks(0, l.tasks * row_blocks);
  if (long_rows) finish_long_rows();
  if (merged_columns) {
    if (l.parallel) parallel_for(0, l.tasks, 1, merge_columns);
    else merge_columns(0, l.tasks);
  }
  return ran();
}

void ReduceJit::run_launch(const Launch& l, const char* const* base, const ScalarLanes& lanes) const {
  x86::ReduceCall call;
  start_call(call, l.call);
  bind_args(call, lanes);
  std::copy_n(base, size_t(lowering_.ir.inputs) + 1, call.ptr);
  (*l.compiled)(&call);
  ran();
}

}  // namespace nnvm::jit
