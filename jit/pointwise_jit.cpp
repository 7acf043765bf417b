#include "nnvm/jit/pointwise_jit.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/jit/kernel_dump.h"
#include "nnvm/jit/x86/pointwise_kernel.h"

namespace nnvm::jit {

namespace {

std::atomic<int64_t> compiles{0};

// Elements one kernel call covers: a block of rows of a few cache-resident vectors.
constexpr int64_t kBlockElements = 32768;
// Below this many elements a run stays on the calling thread.
constexpr int64_t kParallelElements = 65536;

std::atomic<StreamStores> stream_policy{StreamStores::kAuto};

// The last-level cache's size from sysfs (sysconf reports the host's in
// some VMs); 32 MiB when unknown.
int64_t last_level_cache_bytes() {
  int64_t best = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    const int64_t scale = size.back() == 'K' ? 1024 : size.back() == 'M' ? 1024 * 1024 : 1;
    int64_t value = 0;
    if (!absl::SimpleAtoi(scale == 1 ? size : size.substr(0, size.size() - 1), &value)) continue;
    if (level >= 2) best = std::max(best, value * scale);
  }
  return best > 0 ? best : int64_t(32) << 20;
}

// Vector instructions per output vector a primitive costs, roughly (a
// division is ~5 of them on Zen 4; the injectors' counts for the rest).
int prim_cost(Prim p) {
  switch (p) {
    case Prim::kLoad: case Prim::kArg: case Prim::kConst: return 0;
    case Prim::kDiv: case Prim::kSqrt: case Prim::kRecip: return 5;
    case Prim::kExp: case Prim::kExp2: case Prim::kExpm1: return 12;
    case Prim::kLog: case Prim::kLog1p: case Prim::kElu: return 15;
    case Prim::kTanh: case Prim::kSigmoid: return 18;
    case Prim::kErf: return 20;
    case Prim::kSoftplus: case Prim::kPow: return 30;
    default: return 1;
  }
}

// Whether the kernel waits on memory rather than on arithmetic: its
// estimated work per vector against 8 instructions per float32-sized operand
// stream. Measured on the 2-core Zen 4 (docs/BENCHMARKS.md, JIT section):
// non-temporal stores run a load-compute-store loop at ~46 GB/s against
// ~34 GB/s up to ~15 instructions a vector, and ~6% slower at 20 (the gelu
// chain's ~26), where the stores no longer wait.
bool memory_bound(const LoopIR& ir) {
  int cost = 0;
  for (const Expr& e : ir.exprs) cost += prim_cost(e.prim);
  double streams = 0;
  for (size_t k = 0; k < size_t(ir.inputs) + ir.stores.size(); ++k) streams += double(itemsize(ir.dtype(k))) / 4;
  return cost <= 8 * streams;
}

}  // namespace

int64_t pointwise_compiles() { return compiles.load(); }
void set_stream_stores(StreamStores policy) { stream_policy.store(policy); }
StreamStores stream_stores() { return stream_policy.load(); }
int64_t stream_store_bytes() {
  static const int64_t bytes = last_level_cache_bytes();
  return bytes;
}

CompiledPointwise::CompiledPointwise(const LoopIR& ir, const std::string& accesses, Isa isa, const std::string& key,
                                     bool stream)
    : isa_(isa), accesses_(accesses), declined_(x86::PointwiseKernel::declines(ir, accesses, isa)) {
  if (!declined_.empty()) return;
  try {
    kernel_ = std::make_unique<x86::PointwiseKernel>(ir, accesses, isa, stream);
  } catch (const Xbyak::Error& e) {  // a group too big for the code buffer: the tile program runs it
    declined_ = absl::StrCat("code generation failed: ", e.what());
    return;
  }
  compiles.fetch_add(1);
  publish_kernel("pointwise", key, isa, kernel_->entry(), kernel_->code_bytes(),
                 absl::StrCat("accesses ", accesses, "\n", ir.to_string()));
}

CompiledPointwise::~CompiledPointwise() = default;

size_t CompiledPointwise::code_bytes() const { return kernel_ ? kernel_->code_bytes() : 0; }

std::string CompiledPointwise::machine_code() const {
  return kernel_ ? hex_dump(kernel_->entry(), kernel_->code_bytes()) : std::string();
}

std::string CompiledPointwise::describe() const {
  if (!kernel_) return absl::StrCat("x86 ", isa_name(isa_), " pointwise[", accesses_, "] declined: ", declined_);
  return absl::StrCat("x86 ", isa_name(isa_), " pointwise[", accesses_, "] ", code_bytes(), " bytes");
}

PointwiseJit::PointwiseJit(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values,
                           std::string key)
    : lowering_(lower_pointwise(t, g, values)), key_(std::move(key)), memory_bound_(memory_bound(lowering_.ir)) {
  // once per group signature, like a compile: why the group runs its portable program
  if (!lowering_.ok() && log_enabled("jit"))
    std::fprintf(stderr, "jit pointwise declined: %s: %.80s\n", lowering_.declined.c_str(), key_.c_str());
}

std::shared_ptr<const CompiledPointwise> PointwiseJit::variant(Isa isa, const std::string& accesses, bool stream) const {
  const std::string name = absl::StrCat(isa_name(isa), "-", accesses, stream ? "-nt" : "");
  const std::string key = absl::StrCat("x86-", name, ":", key_);
  return find_variant(name, key, [&] {
    return std::make_shared<const CompiledPointwise>(lowering_.ir, accesses, isa, key, stream);
  });
}

std::string PointwiseJit::code() const { return variants_code("LoopIR\n" + lowering_.ir.to_string()); }

struct PointwiseLaunch {
  LaunchKey key;
  LoopSpace space;
  std::shared_ptr<const CompiledPointwise> compiled;
  // Blocks: `col_block` elements of the inner dim by `row_block` rows of the
  // next, for every index of the dims before.
  int64_t inner = 0, rows = 0, col_block = 0, row_block = 0, col_blocks = 0, row_blocks = 0, blocks = 0;
  bool parallel = false;
  // per operand: element size, and the call's strides in bytes
  int64_t bytes[x86::kMaxOperands] = {};
  int64_t row_stride[x86::kMaxOperands] = {};
  int64_t vec_step[x86::kMaxOperands] = {};
  int32_t lane_stride[x86::kMaxOperands] = {};
};

std::shared_ptr<const PointwiseLaunch> PointwiseJit::plan_launch(LaunchKey key, Isa isa,
                                                                      absl::Span<const trace::ValueId> ids,
                                                                      const std::vector<Tensor>& env,
                                                                      IntArrayRef loop) const {
  const LoopIR& ir = lowering_.ir;
  const size_t operands = size_t(ir.inputs) + ir.stores.size();
  const OperandLayouts layouts = operand_layouts(ids, env, operands);
  auto launch = std::make_shared<Launch>();
  launch->key = std::move(key);
  launch->space = loop_space(loop, layouts.shapes, layouts.strides);
  const LoopSpace& space = launch->space;
  const int64_t numel = space.numel();
  for (size_t k = 0; k < operands; ++k) {  // gather offsets are int32 bytes
    if (std::abs(space.strides[k].back()) * int64_t(itemsize(ir.dtype(k))) * 16 > INT32_MAX) {
      fall_back(absl::StrCat("operand ", k, "'s stride ", space.strides[k].back(), " is past the kernel's int32 offsets"));
      return nullptr;
    }
  }
  const size_t rank = space.sizes.size();
  launch->inner = space.sizes.back();
  launch->rows = rank >= 2 ? space.sizes[rank - 2] : 1;
  launch->col_block = std::min(launch->inner, kBlockElements);
  // streaming needs every full vector an output stores 64-byte aligned: its
  // base, each block's first column and each row's start
  // (float32 outputs only: another dtype is converted on its way to memory)
  bool stream = wants_stream(numel);
  for (size_t k = size_t(ir.inputs); k < operands && stream; ++k) {
    const auto* base = static_cast<const char*>(env[size_t(ids[k])].data_ptr());
    stream = ir.dtype(k) == kFloat32 && reinterpret_cast<uintptr_t>(base) % 64 == 0 &&
             (launch->col_block == launch->inner || launch->col_block % 16 == 0);
    for (size_t d = 0; d + 1 < rank; ++d) stream = stream && space.strides[k][d] % 16 == 0;
  }
  launch->compiled = variant(isa, space.accesses(), stream);
  if (!launch->compiled->declined().empty()) {
    fall_back(launch->compiled->declined());
    return nullptr;
  }
  launch->row_block = std::max<int64_t>(1, kBlockElements / launch->col_block);
  launch->col_blocks = (launch->inner + launch->col_block - 1) / launch->col_block;
  launch->row_blocks = (launch->rows + launch->row_block - 1) / launch->row_block;
  launch->blocks = numel / (launch->inner * launch->rows) * launch->row_blocks * launch->col_blocks;
  launch->parallel = numel >= kParallelElements;
  const int lanes = isa == Isa::kAvx512 ? 16 : 8;
  for (size_t k = 0; k < operands; ++k) {
    launch->bytes[k] = int64_t(itemsize(ir.dtype(k)));
    const int64_t step = space.strides[k].back() * launch->bytes[k];
    launch->row_stride[k] = rank >= 2 ? space.strides[k][rank - 2] * launch->bytes[k] : 0;
    launch->vec_step[k] = step * lanes;
    launch->lane_stride[k] = int32_t(step);
  }
  return launch;
}

bool PointwiseJit::wants_stream(int64_t numel) const {
  switch (stream_stores()) {
    case StreamStores::kNever: return false;
    case StreamStores::kAlways: return true;
    case StreamStores::kAuto: break;
  }
  return memory_bound_ && numel * 4 * int64_t(lowering_.ir.stores.size()) >= stream_store_bytes();
}

bool PointwiseJit::run(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env,
                       absl::Span<const Attrs* const> attrs, IntArrayRef loop, uint64_t layouts) const {
  const Isa isa = active_isa();
  if (!lowering_.ok()) return false;
  if (isa == Isa::kPortable) return fall_back("the ISA is portable");
  const LoopIR& ir = lowering_.ir;
  const size_t operands = size_t(ir.inputs) + ir.stores.size();
  if (numel_of(loop) == 0) return ran();
  // sized by the group: a kernel declines more operands than it has registers for
  absl::InlinedVector<const char*, x86::kMaxOperands> base(operands);
  for (size_t k = 0; k < operands; ++k) base[k] = static_cast<const char*>(env[size_t(ids[k])].data_ptr());
  // the stream decision also reads the knob and the outputs' alignment
  const bool may_stream = wants_stream(numel_of(loop));
  auto describe = [&](auto& key) {
    key.value(int64_t(isa));
    key_ints(key, loop);
    for (size_t k = 0; k < operands; ++k) key_layout(key, env[size_t(ids[k])]);
    key.value(may_stream);
    for (size_t k = size_t(ir.inputs); k < operands && may_stream; ++k)
      key.value(reinterpret_cast<uintptr_t>(base[k]) % 64 == 0);
  };
  // a stream decision also reads the outputs' alignment, which no layout promise covers
  const LaunchStamp stamp{may_stream ? 0 : layouts, int64_t(isa)};
  trace::ReplayCapture* capture = trace::replay_capture();
  std::shared_ptr<const Launch> kept;
  const Launch* launch = find_launch(
      describe, [&] { return plan_launch(key_of(describe), isa, ids, env, loop); }, stamp, capture ? &kept : nullptr);
  if (!launch) return false;  // plan_launch said why
  const ScalarLanes lanes = scalar_lanes(ir, attrs);
  if (capture) [[unlikely]] {
    if (may_stream) capture->decline("a pointwise kernel's streaming stores depend on the outputs' alignment");
    else capture_launch(*capture, kept, lanes, ids.first(operands));
  }
  run_launch(*launch, base.data(), lanes);
  return ran();
}

struct PointwiseJit::TileLaunch {
  std::shared_ptr<const Launch> launch;
  ScalarLanes lanes;
  int64_t cols = 0;  // the loop's inner extent: a merged (1-D) space's row length
};

std::shared_ptr<const PointwiseJit::TileLaunch> PointwiseJit::tile_launch(absl::Span<const trace::ValueId> ids,
                                                                          const std::vector<Tensor>& env,
                                                                          absl::Span<const Attrs* const> attrs,
                                                                          IntArrayRef loop, uint64_t layouts) const {
  const Isa isa = active_isa();
  if (!lowering_.ok() || isa == Isa::kPortable || loop.size() != 2 || numel_of(loop) == 0) return nullptr;
  // Streaming stores would race the GEMM's tiles for the same lines; and a
  // run that might stream keys its launch on the outputs' alignment.
  if (wants_stream(numel_of(loop))) return nullptr;
  const size_t count = operands();
  auto describe = [&](auto& key) {
    key.value(int64_t(isa));
    key_ints(key, loop);
    for (size_t k = 0; k < count; ++k) key_layout(key, env[size_t(ids[k])]);
    key.value(false);
  };
  std::shared_ptr<const Launch> kept;
  const Launch* launch = find_launch(
      describe, [&] { return plan_launch(key_of(describe), isa, ids, env, loop); }, LaunchStamp{layouts, int64_t(isa)},
      &kept);
  if (!launch || launch->space.sizes.size() > 2) return nullptr;
  // a 2-D space is the loop itself (no dim merged away); a 1-D one is rows of `cols`
  if (launch->space.sizes.size() == 2 && (launch->space.sizes[0] != loop[0] || launch->space.sizes[1] != loop[1]))
    return nullptr;
  auto t = std::make_shared<TileLaunch>();
  t->launch = kept ? kept : nullptr;
  if (!t->launch) return nullptr;
  t->lanes = scalar_lanes(lowering_.ir, attrs);
  t->cols = loop[1];
  return t;
}

void PointwiseJit::run_tile(const TileLaunch& t, const char* const* base, int64_t i0, int64_t i1, int64_t j0,
                            int64_t j1) {
  const Launch& l = *t.launch;
  const LoopSpace& space = l.space;
  const size_t operands = space.strides.size();
  x86::PointwiseCall call;
  for (size_t a = 0; a < t.lanes.size(); ++a) std::fill_n(call.args[a], 16, t.lanes[a]);
  std::copy_n(l.row_stride, operands, call.row_stride);
  std::copy_n(l.vec_step, operands, call.vec_step);
  std::copy_n(l.lane_stride, operands, call.lane_stride);
  const x86::PointwiseKernel& kernel = l.compiled->kernel();
  call.cols = j1 - j0;
  call.rows = i1 - i0;
  if (space.sizes.size() == 2) {
    for (size_t k = 0; k < operands; ++k)
      call.ptr[k] = base[k] + (i0 * space.strides[k][0] + j0 * space.strides[k][1]) * l.bytes[k];
  } else {  // a merged space: the loop's rows are t.cols flat elements apart
    for (size_t k = 0; k < operands; ++k) {
      call.ptr[k] = base[k] + (i0 * t.cols + j0) * space.strides[k][0] * l.bytes[k];
      call.row_stride[k] = t.cols * space.strides[k][0] * l.bytes[k];
    }
  }
  kernel(&call);
}

void PointwiseJit::run_launch(const Launch& l, const char* const* base, const ScalarLanes& lanes) const {
  const size_t operands = size_t(lowering_.ir.inputs) + lowering_.ir.stores.size();
  const LoopSpace& space = l.space;
  const size_t rank = space.sizes.size();
  const x86::PointwiseKernel& kernel = l.compiled->kernel();

  auto run_blocks = [&](int64_t begin, int64_t end) {
    x86::PointwiseCall call;
    for (size_t a = 0; a < lanes.size(); ++a) std::fill_n(call.args[a], 16, lanes[a]);
    std::copy_n(l.row_stride, operands, call.row_stride);
    std::copy_n(l.vec_step, operands, call.vec_step);
    std::copy_n(l.lane_stride, operands, call.lane_stride);
    for (int64_t b = begin; b < end; ++b) {
      // block 0 starts every operand at its base: a small loop's only call
      // computes no offsets (and no divisions)
      int64_t c = 0, r = 0, o = 0;
      if (b != 0) {
        c = b % l.col_blocks;
        r = (b / l.col_blocks) % l.row_blocks;
        o = b / (l.col_blocks * l.row_blocks);
      }
      for (size_t k = 0; k < operands; ++k) {
        int64_t offset = 0;
        if (b != 0) {
          offset = c * l.col_block * space.strides[k].back();
          if (rank >= 2) offset += r * l.row_block * space.strides[k][rank - 2];
          for (int64_t d = int64_t(rank) - 3, rest = o; d >= 0; --d) {
            offset += (rest % space.sizes[size_t(d)]) * space.strides[k][size_t(d)];
            rest /= space.sizes[size_t(d)];
          }
        }
        call.ptr[k] = base[k] + offset * l.bytes[k];
      }
      call.cols = std::min(l.col_block, l.inner - c * l.col_block);
      call.rows = std::min(l.row_block, l.rows - r * l.row_block);
      kernel(&call);
    }
  };
  if (l.parallel) parallel_for(0, l.blocks, 1, run_blocks);
  else run_blocks(0, l.blocks);
}

}  // namespace nnvm::jit
