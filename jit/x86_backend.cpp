#include "nnvm/jit/x86_backend.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/trace/replay.h"

namespace nnvm::jit {

using trace::FusionGroup;
using trace::GroupKind;
using trace::GroupValues;
using trace::Node;
using trace::Trace;
using trace::ValueId;

X86GroupKernel::X86GroupKernel(const trace::GroupSource& source, std::string* why_not) {
  const Trace& t = source.trace;
  const FusionGroup& g = source.group;
  const GroupValues& values = source.values;
  const trace::GroupProgram& program = source.program;
  auto index_of = [&](ValueId v) {
    return int32_t(std::find(values.ids.begin(), values.ids.end(), v) - values.ids.begin());
  };
  const trace::Node& last = t.nodes()[size_t(g.nodes.back())];
  const bool reduction = g.kind == GroupKind::kReduction;
  if (g.kind != GroupKind::kPointwise && !reduction) {
    if (g.nodes.size() == 1 && RowwiseJit::handles(last.op->name))
      rowwise_ = std::make_unique<RowwiseJit>(t, g, values);
    if (g.nodes.size() == 1 && ReduceJit::handles(last.op->name)) {
      reduce_ = std::make_unique<ReduceJit>(t, g, values, trace::group_key(t, g, values));
      reduce_input_ = index_of(last.inputs[0]);
    }
    if (g.kind == GroupKind::kMatmulEpilogue && g.nodes.size() > 1) build_epilogue(t, g, values);
    if (epilogue_) {
      const std::string& first = program.steps()[0].op->name;
      gemm_products_ = first == "matmul" ? 1 : first == "matmul_sum" ? 2 : 0;
    }
    if (empty())
      *why_not = g.kind == GroupKind::kMatmulEpilogue
                     ? (g.nodes.size() > 1 ? "the matmul's epilogue does not lower to one pointwise kernel"
                                           : "a lone matmul runs its reference kernel (the JIT GEMM)")
                     : absl::StrCat(last.op->name, " has no x86 kernel");
    return;
  }
  if (program.tiled() && !reduction)
    pointwise_ = std::make_unique<PointwiseJit>(t, g, values, trace::group_key(t, g, values));
  // the reduction kernel also takes the first dim, which has no rows to tile
  if (reduction && (program.tiled() || program.reduces_first_dim()) && ReduceJit::handles(last.op->name)) {
    reduce_ = std::make_unique<ReduceJit>(t, g, values, trace::group_key(t, g, values));
    reduce_input_ = index_of(last.inputs[0]);
  }
  if (empty())
    *why_not = !program.tiled() && !program.reduces_first_dim()
                   ? absl::StrCat("untiled: ", program.why_untiled())
                   : absl::StrCat(last.op->name, " has no x86 reduction kernel");
}

X86GroupKernel::~X86GroupKernel() = default;

bool X86GroupKernel::run(const trace::GroupProgram& program, const trace::GroupRun& r) const {
  if (pointwise_) return pointwise_->run(r.ids, r.env, r.attrs, r.tiling.loop, r.layouts);
  if (epilogue_) {  // the matmul, then its epilogue as one kernel when the ISA and layouts allow
    bool epilogue_ran = false;  // tile by tile, inside the GEMM
    if (!run_gemm(program, r.ids, r.env, r.attrs, r.layouts, &epilogue_ran))
      program.run_steps(r.ids, r.env, r.attrs, 0, 1);
    if (epilogue_ran) return true;
    absl::InlinedVector<ValueId, 8> operands;
    for (int32_t i : epilogue_values_) operands.push_back(r.ids[size_t(i)]);
    if (!epilogue_->run(operands, r.env, r.attrs.subspan(1), r.env[size_t(r.ids[size_t(epilogue_loop_)])].sizes(),
                        r.layouts))
      program.run_steps(r.ids, r.env, r.attrs, 1);
    return true;
  }
  if (rowwise_) return rowwise_->run(r.ids, r.env, *r.attrs[0]);
  // untiled, the reduction's input is allocated: its shape is the loop
  if (reduce_)
    return reduce_->run(r.ids, r.env, r.attrs,
                        program.tiled() ? IntArrayRef(r.tiling.loop) : r.env[size_t(r.ids[size_t(reduce_input_)])].sizes(),
                        r.layouts);
  return false;
}

std::string X86GroupKernel::describe() const {
  if (pointwise_) return "x86 pointwise kernel";
  if (epilogue_) return "the matmul, then its epilogue as one JIT kernel";
  if (rowwise_) return "x86 row-wise kernel";
  return "x86 reduction kernel";
}

std::string X86GroupKernel::code() const {
  std::string out;
  if (pointwise_) absl::StrAppend(&out, "pointwise kernel\n", pointwise_->code());
  if (epilogue_) absl::StrAppend(&out, "the matmul through the JIT GEMM, then its epilogue kernel\n", epilogue_->code());
  if (reduce_) absl::StrAppend(&out, "reduction kernel\n", reduce_->code());
  if (rowwise_) absl::StrAppend(&out, "row-wise kernel\n", rowwise_->code());
  return out;
}

// The nodes after the matmul as a pointwise group of their own: its inputs
// are what they read from outside them (the matmul's output among them), its
// outputs the group's outputs they compute. Kept only when it lowers.
void X86GroupKernel::build_epilogue(const Trace& t, const FusionGroup& g, const GroupValues& values) {
  const ValueId product = t.nodes()[size_t(g.nodes[0])].outputs[0];
  const DimVector& loop = t.value(product).shape;
  FusionGroup e;
  e.kind = GroupKind::kPointwise;
  e.nodes.assign(g.nodes.begin() + 1, g.nodes.end());
  auto has = [](const std::vector<ValueId>& v, ValueId x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  std::vector<ValueId> computed;
  for (int32_t n : e.nodes) {
    const Node& node = t.nodes()[size_t(n)];
    if (!node.op->elementwise || trace::draws_by_position(*node.op)) return;
    for (ValueId in : node.inputs) {
      if (!broadcasts_to(t.value(in).shape, loop)) return;
      if (!has(computed, in) && !has(e.inputs, in)) e.inputs.push_back(in);
    }
    for (ValueId out : node.outputs) {
      if (t.value(out).shape != loop) return;
      computed.push_back(out);
      if (has(g.outputs, out)) e.outputs.push_back(out);
    }
  }
  if (e.outputs.empty()) return;
  const GroupValues ev = group_values(t, e);
  auto epilogue = std::make_unique<PointwiseJit>(t, e, ev, group_key(t, e, ev));
  if (!epilogue->declined().empty()) return;
  for (ValueId v : ev.ids)
    epilogue_values_.push_back(int32_t(std::find(values.ids.begin(), values.ids.end(), v) - values.ids.begin()));
  epilogue_loop_ = int32_t(std::find(values.ids.begin(), values.ids.end(), product) - values.ids.begin());
  epilogue_ = std::move(epilogue);
}

namespace {

// An epilogue group's GEMMs, c = a b (+ c' d'): every operand's layout but
// its address. The operands' addresses come as a, b (, c', d'), then c.
struct GemmCall {
  int64_t m = 0, n = 0;
  int32_t products = 0;
  bool alternates = false;  // the products' order alternates from run to run
  int64_t k[2] = {};
  int64_t rs[4] = {}, cs[4] = {};  // per operand
  std::atomic<bool>* reverse = nullptr;  // the program's order on its last run
  // The epilogue applied tile by tile as the last product finishes them:
  // its operands' addresses follow c's in the call's pointers.
  std::shared_ptr<const PointwiseJit::TileLaunch> tiles;
};

// The epilogue's operands for one run, and its launch: a GemmEpilogue's context.
struct EpilogueTiles {
  const PointwiseJit::TileLaunch* launch;
  const char* const* base;
};

void apply_epilogue(const void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const EpilogueTiles& e = *static_cast<const EpilogueTiles*>(ctx);
  PointwiseJit::run_tile(*e.launch, e.base, i0, i1, j0, j1);
}

void run_gemm_call(const GemmCall& g, const char* const* ptrs) {
  // A loop that runs the group again and again (an RNN step) reads both B
  // operands each run, with its other data in between; together they may
  // not fit the L1 cache. In the same order every run, each B evicts the
  // other's lines before they are read again (an LRU cache's cyclic miss);
  // every other run reversing it, each run starts with the B read last and
  // misses only the lines the data in between took. Where the GEMM adds C
  // last, the order changes no bit of the result (but a NaN's payload).
  bool reverse = false;
  if (g.alternates) {
    reverse = !g.reverse->load(std::memory_order_relaxed);
    g.reverse->store(reverse, std::memory_order_relaxed);  // a race only changes the order
  }
  float* out = reinterpret_cast<float*>(const_cast<char*>(ptrs[2 * g.products]));
  auto matrix = [&](int32_t i) {
    return cpu::MatrixRef<float>{reinterpret_cast<const float*>(ptrs[i]), g.rs[i], g.cs[i]};
  };
  // As the reference kernel: c = a b, then c += c' d' (GEMM beta 1), or the other way round.
  for (int32_t q = 0; q < g.products; ++q) {
    const int32_t p = reverse ? g.products - 1 - q : q;
    const float beta = q == 0 ? 0.f : 1.f;
    if (g.tiles && q == g.products - 1) {
      const EpilogueTiles tiles{g.tiles.get(), ptrs + 2 * g.products + 1};
      if (cpu::gemm_with_epilogue(g.m, g.n, g.k[p], matrix(2 * p), matrix(2 * p + 1), beta, out, g.n,
                                  cpu::GemmEpilogue{&apply_epilogue, &tiles}))
        continue;
      // (the JIT took every product of this size, so it takes this one: not reached)
      cpu::gemm(g.m, g.n, g.k[p], matrix(2 * p), matrix(2 * p + 1), beta, out, g.n);
      PointwiseJit::run_tile(*g.tiles, ptrs + 2 * g.products + 1, 0, g.m, 0, g.n);
      continue;
    }
    cpu::gemm(g.m, g.n, g.k[p], matrix(2 * p), matrix(2 * p + 1), beta, out, g.n);
  }
}

void replay_gemm(const void* state, const char* const* ptrs) {
  run_gemm_call(*static_cast<const GemmCall*>(state), ptrs);
}

}  // namespace

namespace {

// Whether two tensors' storages share any byte.
bool share_memory(const TensorImpl& x, const TensorImpl& y) {
  const char* a = static_cast<const char*>(x.storage->data());
  const char* b = static_cast<const char*>(y.storage->data());
  return a < b + y.storage->nbytes() && b < a + x.storage->nbytes();
}

// Below this many multiply-adds the epilogue runs after the GEMM, in one
// call over the whole output: a tile's call costs more than it saves there.
constexpr int64_t kTiledEpilogueWork = int64_t(1) << 20;

std::atomic<int64_t> tiled_epilogues{0};

}  // namespace

bool X86GroupKernel::run_gemm(const trace::GroupProgram& program, absl::Span<const ValueId> ids,
                              const std::vector<Tensor>& env,
                              absl::Span<const Attrs* const> attrs, uint64_t layouts, bool* epilogue_ran) const {
  if (gemm_products_ == 0) return false;
  const trace::GroupProgram::Step& step = program.steps()[0];
  const TensorImpl* out_impl = env[size_t(ids[size_t(step.outputs[0])])].impl();
  if (!out_impl) return false;
  const TensorImpl& c = *out_impl;
  if (c.dtype != kFloat32 || c.shape.size() != 2 || !c.storage->has_memory()) return false;
  GemmCall g;
  g.m = c.shape[0];
  g.n = c.shape[1];
  g.products = gemm_products_;
  g.reverse = &reverse_products_;
  if (c.strides[1] != 1 && g.n > 1) return false;
  if (c.strides[0] != g.n && g.m > 1) return false;
  absl::InlinedVector<const char*, 16> ptrs;
  const size_t operands = step.inputs.size();
  for (size_t i = 0; i < operands; ++i) {
    const TensorImpl* x = env[size_t(ids[size_t(step.inputs[i])])].impl();
    if (!x || x->dtype != kFloat32 || x->shape.size() != 2) return false;
    ptrs.push_back(static_cast<const char*>(x->storage->data()) + x->offset * int64_t(sizeof(float)));
    g.rs[i] = x->strides[0];
    g.cs[i] = x->strides[1];
    if (i % 2 == 0) g.k[i / 2] = x->shape[1];
  }
  ptrs.push_back(static_cast<const char*>(c.storage->data()) + c.offset * int64_t(sizeof(float)));
  g.alternates = g.products == 2 && cpu::gemm_adds_c_last(g.m, g.n, g.k[0], g.cs[0], g.rs[1], g.cs[1]) &&
                 cpu::gemm_adds_c_last(g.m, g.n, g.k[1], g.cs[2], g.rs[3], g.cs[3]);
  // The epilogue tile by tile as the GEMM finishes them, while each is in L1
  // (jit/gemm_jit.h), where the JIT GEMM takes the last product and no
  // output of the epilogue shares memory with a product's operand (the
  // tiles are written while the GEMM still reads them).
  absl::InlinedVector<ValueId, 8> epilogue_ids;
  const int32_t last = g.products - 1;
  if (epilogue_ran && epilogue_ && !g.alternates && g.m * g.n * g.k[last] >= kTiledEpilogueWork &&
      !cpu::gemm_takes_few_rows(g.m, g.n, g.k[last], g.cs[2 * last], g.rs[2 * last + 1], g.cs[2 * last + 1])) {
    for (int32_t i : epilogue_values_) epilogue_ids.push_back(ids[size_t(i)]);
    g.tiles = epilogue_->tile_launch(epilogue_ids, env, attrs.subspan(1), c.shape, layouts);
    const size_t first_output = epilogue_ids.size() - epilogue_->ir().stores.size();
    for (size_t k = first_output; k < epilogue_ids.size() && g.tiles; ++k)
      for (size_t i = 0; i < operands && g.tiles; ++i)
        if (share_memory(*env[size_t(epilogue_ids[k])].impl(), *env[size_t(ids[size_t(step.inputs[i])])].impl()))
          g.tiles = nullptr;
    if (g.tiles) {
      for (ValueId v : epilogue_ids) ptrs.push_back(static_cast<const char*>(env[size_t(v)].data_ptr()));
      *epilogue_ran = true;
      tiled_epilogues.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (trace::ReplayCapture* capture = trace::replay_capture()) [[unlikely]] {
    trace::ReplayCall call{&replay_gemm, std::make_shared<const GemmCall>(g), {}};
    for (size_t i = 0; i < operands; ++i) call.operands.push_back({ids[size_t(step.inputs[i])], 0});
    call.operands.push_back({ids[size_t(step.outputs[0])], 0});
    if (g.tiles)
      for (ValueId v : epilogue_ids) call.operands.push_back({v, 0});
    capture->add(std::move(call));
  }
  run_gemm_call(g, ptrs.data());
  return true;
}

namespace {

class X86Backend final : public trace::Backend {
 public:
  std::string_view name() const override { return "x86"; }
  std::unique_ptr<const trace::GroupKernel> compile(const trace::GroupSource& source,
                                                    std::string* why_not) const override {
    auto kernel = std::make_unique<X86GroupKernel>(source, why_not);
    if (kernel->empty()) return nullptr;
    return kernel;
  }
  uint64_t variant() const override { return uint64_t(active_isa()); }
};

[[maybe_unused]] const bool registered = [] {
  trace::register_backend(std::make_shared<X86Backend>());
  return true;
}();

}  // namespace

int64_t tiled_epilogue_runs() { return tiled_epilogues.load(std::memory_order_relaxed); }

const X86GroupKernel* x86_kernel(const trace::GroupProgram& program) {
  return dynamic_cast<const X86GroupKernel*>(program.kernel());
}
namespace {
// One of the x86 kernel's paths, or null when the group has no x86 kernel.
template <class Path>
const Path* path_of(const trace::GroupProgram& program, const Path* (X86GroupKernel::*path)() const) {
  const X86GroupKernel* k = x86_kernel(program);
  return k ? (k->*path)() : nullptr;
}
}  // namespace

const PointwiseJit* pointwise_jit(const trace::GroupProgram& p) { return path_of(p, &X86GroupKernel::pointwise); }
const RowwiseJit* rowwise_jit(const trace::GroupProgram& p) { return path_of(p, &X86GroupKernel::rowwise); }
const ReduceJit* reduce_jit(const trace::GroupProgram& p) { return path_of(p, &X86GroupKernel::reduce); }
const PointwiseJit* epilogue_jit(const trace::GroupProgram& p) { return path_of(p, &X86GroupKernel::epilogue); }

}  // namespace nnvm::jit
