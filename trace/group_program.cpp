#include "nnvm/trace/group_program.h"

#include <atomic>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "nnvm/core/block_pool.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/jit/reduce_jit.h"
#include "nnvm/jit/rowwise_jit.h"
#include "nnvm/kernels/cpu/gemm.h"

namespace nnvm::trace {

namespace {

// Elementwise ops whose result depends on the element's position in the whole
// tensor (a draw keyed by its flat index): a tile would draw other numbers.
bool keyed_by_position(const OpDef& op) { return op.name == "bernoulli"; }

// The layout class of a value: rank, its size-1 dims, contiguous or not.
void append_layout(std::string& key, const Value& v) {
  absl::StrAppend(&key, std::string(dtype_name(v.dtype)), "[");
  for (int64_t size : v.shape) key += size == 1 ? '1' : 'n';
  key += is_contiguous_layout(v.shape, v.strides) ? "]c" : "]s";
}

// `shape` and `strides` narrowed to the tile: one index of each dim before
// `split`, [begin, end) of `split`. Returns the element offset it adds.
int64_t narrow_to_tile(DimVector& shape, IntArrayRef strides, IntArrayRef index, int32_t split, int64_t begin,
                       int64_t end) {
  int64_t offset = 0;
  for (int32_t d = 0; d < split; ++d) {
    offset += index[size_t(d)] * strides[size_t(d)];
    shape[size_t(d)] = 1;
  }
  offset += begin * strides[size_t(split)];
  shape[size_t(split)] = end - begin;
  return offset;
}

}  // namespace

GroupValues group_values(const Trace& t, const FusionGroup& g) {
  GroupValues v;
  v.ids = g.inputs;
  v.ids.insert(v.ids.end(), g.outputs.begin(), g.outputs.end());
  v.inputs = int32_t(g.inputs.size());
  v.outputs = int32_t(g.outputs.size());
  for (int32_t n : g.nodes)
    for (ValueId out : t.nodes()[size_t(n)].outputs)
      if (std::find(g.outputs.begin(), g.outputs.end(), out) == g.outputs.end()) v.ids.push_back(out);
  return v;
}

std::string group_key(const Trace& t, const FusionGroup& g, const GroupValues& values) {
  std::string key = absl::StrCat("tile:", values.inputs, " in ", values.outputs, " out;");
  for (ValueId v : values.ids) {
    append_layout(key, t.value(v));
    key += ";";
  }
  auto index_of = [&](ValueId v) { return std::find(values.ids.begin(), values.ids.end(), v) - values.ids.begin(); };
  for (int32_t n : g.nodes) {
    const Node& node = t.nodes()[size_t(n)];
    absl::StrAppend(&key, node.op->name, "(");
    for (ValueId in : node.inputs) absl::StrAppend(&key, index_of(in), ",");
    key += ")->(";
    for (ValueId out : node.outputs) absl::StrAppend(&key, index_of(out), ",");
    key += ")";
    for (size_t i = 0; i < node.attrs.size(); ++i) {
      const bool slotted = std::any_of(node.slots.begin(), node.slots.end(),
                                       [&](const ScalarSlot& s) { return s.attr == int32_t(i); });
      key += i ? "," : "[";
      append_attr(key, node.attrs[i], /*with_scalar_values=*/!slotted);
    }
    key += node.attrs.size() ? "];" : ";";
  }
  return key;
}

GroupProgram::GroupProgram(const Trace& t, const FusionGroup& g, const GroupValues& values)
    : inputs_(values.inputs), outputs_(values.outputs) {
  auto index_of = [&](ValueId v) {
    return int32_t(std::find(values.ids.begin(), values.ids.end(), v) - values.ids.begin());
  };
  for (ValueId v : values.ids) dtypes_.push_back(t.value(v).dtype);
  for (int32_t n : g.nodes) {
    const Node& node = t.nodes()[size_t(n)];
    NNVM_CHECK(node.op->view || node.op->kernels[size_t(kCPU)], node.op->name, "no kernel for device cpu");
    Step step{node.op, {}, {}};
    for (ValueId in : node.inputs) step.inputs.push_back(index_of(in));
    for (ValueId out : node.outputs) step.outputs.push_back(index_of(out));
    steps_.push_back(std::move(step));
  }

  // Whether the group runs tile by tile, and over which loop.
  const Node& last = t.nodes()[size_t(g.nodes.back())];
  const bool reduction = g.kind == GroupKind::kReduction;
  if (g.kind != GroupKind::kPointwise && !reduction) {
    why_untiled_ = g.kind == GroupKind::kMatmulEpilogue ? "a matmul runs whole; its epilogue reads it from memory"
                                                        : "one node: its kernel runs whole";
    if (g.nodes.size() == 1 && jit::RowwiseJit::handles(last.op->name))
      rowwise_ = std::make_unique<jit::RowwiseJit>(t, g, values);
    if (g.nodes.size() == 1 && jit::ReduceJit::handles(last.op->name)) {
      reduce_ = std::make_unique<jit::ReduceJit>(t, g, values, group_key(t, g, values));
      reduce_input_ = index_of(last.inputs[0]);
    }
    if (g.kind == GroupKind::kMatmulEpilogue && g.nodes.size() > 1) build_epilogue(t, g, values);
    if (epilogue_) {
      const std::string& first = steps_[0].op->name;
      gemm_products_ = first == "matmul" ? 1 : first == "matmul_sum" ? 2 : 0;
    }
    return;
  }
  const size_t pointwise = reduction ? g.nodes.size() - 1 : g.nodes.size();
  const ValueId loop = reduction ? last.inputs[0] : t.nodes()[size_t(g.nodes[0])].outputs[0];
  const DimVector& shape = t.value(loop).shape;
  for (size_t k = 0; k < pointwise && why_untiled_.empty(); ++k) {
    const Node& node = t.nodes()[size_t(g.nodes[k])];
    if (!node.op->elementwise) why_untiled_ = absl::StrCat(node.op->name, " is not elementwise");
    else if (keyed_by_position(*node.op)) why_untiled_ = absl::StrCat(node.op->name, " draws by element position");
    for (ValueId out : node.outputs)
      if (why_untiled_.empty() && t.value(out).shape != shape)
        why_untiled_ = absl::StrCat(node.op->name, " does not compute the loop shape ", shape_str(shape));
    for (ValueId in : node.inputs)
      if (why_untiled_.empty() && !broadcasts_to(t.value(in).shape, shape))
        why_untiled_ = absl::StrCat(node.op->name, " reads a value that does not broadcast to the loop");
  }
  max_split_ = int32_t(shape.size()) - 1;
  bool first_dim = false;
  if (why_untiled_.empty() && reduction) {
    const bool dims_attr = last.attrs.size() > 1 && std::holds_alternative<DimVector>(last.attrs[0]);
    if (!is_reduction(*last.op) || !dims_attr || last.inputs.size() != 1 || index_of(loop) < inputs_ + outputs_ ||
        values.outputs != 1 || g.outputs[0] != last.outputs[0]) {
      why_untiled_ = "the reduction does not close a pointwise prologue of its own";
    } else {
      const DimVector reduced = reduction_dims(last.attrs.ints(0), int64_t(shape.size()), last.op->name);
      max_split_ = int32_t(reduced.empty() ? 0 : reduced[0]) - 1;
      first_dim = max_split_ < 0;
      if (first_dim) why_untiled_ = "it reduces the first dim: no rows to tile";
    }
  }
  if (why_untiled_.empty()) loop_value_ = index_of(loop);
  if (why_untiled_.empty() && !reduction) jit_ = std::make_unique<jit::PointwiseJit>(t, g, values, group_key(t, g, values));
  // the reduction kernel also takes the first dim, which has no rows to tile
  if (reduction && (why_untiled_.empty() || first_dim) && jit::ReduceJit::handles(last.op->name)) {
    reduce_ = std::make_unique<jit::ReduceJit>(t, g, values, group_key(t, g, values));
    reduce_input_ = index_of(loop);
  }
}

// The nodes after the matmul as a pointwise group of their own: its inputs
// are what they read from outside them (the matmul's output among them), its
// outputs the group's outputs they compute. Kept only when it lowers.
void GroupProgram::build_epilogue(const Trace& t, const FusionGroup& g, const GroupValues& values) {
  const ValueId product = t.nodes()[size_t(g.nodes[0])].outputs[0];
  const DimVector& loop = t.value(product).shape;
  FusionGroup e;
  e.kind = GroupKind::kPointwise;
  e.nodes.assign(g.nodes.begin() + 1, g.nodes.end());
  auto has = [](const std::vector<ValueId>& v, ValueId x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  std::vector<ValueId> computed;
  for (int32_t n : e.nodes) {
    const Node& node = t.nodes()[size_t(n)];
    if (!node.op->elementwise || keyed_by_position(*node.op)) return;
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
  auto epilogue = std::make_unique<jit::PointwiseJit>(t, e, ev, group_key(t, e, ev));
  if (!epilogue->declined().empty()) return;
  for (ValueId v : ev.ids)
    epilogue_values_.push_back(int32_t(std::find(values.ids.begin(), values.ids.end(), v) - values.ids.begin()));
  epilogue_loop_ = int32_t(std::find(values.ids.begin(), values.ids.end(), product) - values.ids.begin());
  epilogue_ = std::move(epilogue);
}

GroupProgram::~GroupProgram() = default;

Tiling GroupProgram::tiling(const Trace& t, absl::Span<const ValueId> ids) const {
  Tiling tl;
  if (!tiled()) return tl;
  tl.loop = t.value(ids[size_t(loop_value_)]).shape;
  const int64_t numel = numel_of(tl.loop);
  tl.tile_numel = numel;
  if (tl.loop.empty() || numel == 0) return tl;
  int32_t s = max_split_;
  int64_t inner = 1;  // elements of one index of dim s
  for (int32_t d = int32_t(tl.loop.size()) - 1; d > s; --d) inner *= tl.loop[size_t(d)];
  // the shallowest split whose rows fit a tile
  for (int32_t d = 0; d <= max_split_; ++d) {
    int64_t below = 1;
    for (size_t e = size_t(d) + 1; e < tl.loop.size(); ++e) below *= tl.loop[e];
    if (below <= kTileElements) {
      s = d;
      inner = below;
      break;
    }
  }
  tl.split = s;
  tl.rows = std::min(tl.loop[size_t(s)], std::max<int64_t>(1, kTileElements / std::max<int64_t>(inner, 1)));
  int64_t outer = 1;
  for (int32_t d = 0; d < s; ++d) outer *= tl.loop[size_t(d)];
  tl.tiles = outer * ((tl.loop[size_t(s)] + tl.rows - 1) / tl.rows);
  tl.tile_numel = tl.rows * inner;
  return tl;
}

void GroupProgram::run(absl::Span<const ValueId> ids, std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs,
                       const Tiling& tiling, uint64_t layouts) const {
  if (jit_ && jit_->run(ids, env, attrs, tiling.loop, layouts)) return;
  if (epilogue_) {  // the matmul, then its epilogue as one kernel when the ISA and layouts allow
    bool epilogue_ran = false;  // tile by tile, inside the GEMM
    if (!run_gemm(ids, env, attrs, layouts, &epilogue_ran)) run_steps(ids, env, attrs, 0, 1);
    if (epilogue_ran) return;
    absl::InlinedVector<ValueId, 8> operands;
    for (int32_t i : epilogue_values_) operands.push_back(ids[size_t(i)]);
    if (!epilogue_->run(operands, env, attrs.subspan(1), env[size_t(ids[size_t(epilogue_loop_)])].sizes(), layouts))
      run_steps(ids, env, attrs, 1);
    return;
  }
  if (rowwise_ && rowwise_->run(ids, env, *attrs[0])) return;
  // untiled, the reduction's input is allocated: its shape is the loop
  if (reduce_ &&
      reduce_->run(ids, env, attrs, tiled() ? IntArrayRef(tiling.loop) : env[size_t(ids[size_t(reduce_input_)])].sizes(),
                   layouts))
    return;
  if (tiled()) run_tiles(ids, env, attrs, tiling);
  else run_steps(ids, env, attrs);
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
  std::shared_ptr<const jit::PointwiseJit::TileLaunch> tiles;
};

// The epilogue's operands for one run, and its launch: a GemmEpilogue's context.
struct EpilogueTiles {
  const jit::PointwiseJit::TileLaunch* launch;
  const char* const* base;
};

void apply_epilogue(const void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const EpilogueTiles& e = *static_cast<const EpilogueTiles*>(ctx);
  jit::PointwiseJit::run_tile(*e.launch, e.base, i0, i1, j0, j1);
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
      jit::PointwiseJit::run_tile(*g.tiles, ptrs + 2 * g.products + 1, 0, g.m, 0, g.n);
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

int64_t tiled_epilogue_runs() { return tiled_epilogues.load(std::memory_order_relaxed); }

bool GroupProgram::run_gemm(absl::Span<const ValueId> ids, const std::vector<Tensor>& env,
                            absl::Span<const Attrs* const> attrs, uint64_t layouts, bool* epilogue_ran) const {
  if (gemm_products_ == 0) return false;
  const Step& step = steps_[0];
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
  g.alternates = g.products == 2 && cpu::gemm_adds_c_last(g.m, g.n, g.k[0], g.cs[1]) &&
                 cpu::gemm_adds_c_last(g.m, g.n, g.k[1], g.cs[3]);
  // The epilogue tile by tile as the GEMM finishes them, while each is in L1
  // (jit/gemm_jit.h), where the JIT GEMM takes the last product and no
  // output of the epilogue shares memory with a product's operand (the
  // tiles are written while the GEMM still reads them).
  absl::InlinedVector<ValueId, 8> epilogue_ids;
  const int32_t last = g.products - 1;
  if (epilogue_ran && epilogue_ && !g.alternates && g.m * g.n * g.k[last] >= kTiledEpilogueWork &&
      !cpu::gemm_takes_few_rows(g.m, g.n, g.k[last], g.cs[2 * last + 1])) {
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
  if (jit::ReplayCapture* capture = jit::replay_capture()) [[unlikely]] {
    jit::ReplayCall call{&replay_gemm, std::make_shared<const GemmCall>(g), {}};
    for (size_t i = 0; i < operands; ++i) call.operands.push_back({ids[size_t(step.inputs[i])], 0});
    call.operands.push_back({ids[size_t(step.outputs[0])], 0});
    if (g.tiles)
      for (ValueId v : epilogue_ids) call.operands.push_back({v, 0});
    capture->add(std::move(call));
  }
  run_gemm_call(g, ptrs.data());
  return true;
}

void GroupProgram::run_steps(absl::Span<const ValueId> ids, std::vector<Tensor>& env,
                             absl::Span<const Attrs* const> attrs, size_t first, size_t end) const {
  jit::decline_replay("a group runs its reference kernels");
  // A step's operands are moved out of env and back, not copied: a copy of a
  // Tensor is an atomic increment and decrement in a process with threads. A
  // value a step names twice is copied the second time. A step of one input
  // and one output (a reduction, a row-wise op) takes them in place, each a
  // span of one element of env.
  absl::InlinedVector<Tensor, 4> ins, outs;
  absl::InlinedVector<size_t, 8> moved;  // the env slots ins and outs took, in order
  auto take = [&](absl::InlinedVector<Tensor, 4>& into, int32_t i) {
    const size_t slot = size_t(ids[size_t(i)]);
    if (const auto it = std::find(moved.begin(), moved.end(), slot); it != moved.end()) {
      const size_t at = size_t(it - moved.begin());
      into.push_back(at < ins.size() ? ins[at] : outs[at - ins.size()]);
      moved.push_back(SIZE_MAX);  // a copy: nothing to give back
      return;
    }
    into.push_back(std::move(env[slot]));
    moved.push_back(slot);
  };
  // Gives the moved operands back to env, also when a kernel throws.
  struct GiveBack {
    absl::InlinedVector<Tensor, 4>& ins;
    absl::InlinedVector<Tensor, 4>& outs;
    absl::InlinedVector<size_t, 8>& moved;
    std::vector<Tensor>& env;
    ~GiveBack() {
      for (size_t k = 0; k < moved.size(); ++k)
        if (moved[k] != SIZE_MAX) env[moved[k]] = std::move(k < ins.size() ? ins[k] : outs[k - ins.size()]);
      ins.clear();
      outs.clear();
      moved.clear();
    }
  };
  for (size_t k = first; k < std::min(end, steps_.size()); ++k) {
    const Step& step = steps_[k];
    if (step.inputs.size() == 1 && step.outputs.size() == 1 && step.inputs[0] != step.outputs[0] &&
        !step.op->view) {
      step.op->kernels[size_t(kCPU)](absl::MakeConstSpan(&env[size_t(ids[size_t(step.inputs[0])])], 1),
                                     absl::MakeConstSpan(&env[size_t(ids[size_t(step.outputs[0])])], 1), *attrs[k]);
      continue;
    }
    const GiveBack give_back{ins, outs, moved, env};
    for (int32_t i : step.inputs) take(ins, i);
    if (step.op->view) {  // a view of its input's memory: of the arena, an output or a trace input
      ViewSpec v = step.op->view(ins[0], *attrs[k]);
      env[size_t(ids[size_t(step.outputs[0])])] = pooled_tensor(
          ins[0].storage(), std::move(v.shape), std::move(v.strides), v.offset, ins[0].dtype(), ins[0].device(),
          /*is_view=*/true);
      continue;
    }
    for (int32_t i : step.outputs) take(outs, i);
    step.op->kernels[size_t(kCPU)](ins, outs, *attrs[k]);
  }
}

void GroupProgram::run_tiles(absl::Span<const ValueId> ids, const std::vector<Tensor>& env,
                             absl::Span<const Attrs* const> attrs, const Tiling& tiling) const {
  jit::decline_replay("a group runs its tile program");
  const size_t nv = ids.size(), in_memory = size_t(inputs_ + outputs_);
  const int32_t split = tiling.split;
  // The views a tile narrows: inputs broadcast to the loop, outputs as they are
  // (a reduction's output shares the loop's dims up to the split).
  struct Full {
    DimVector shape, strides;
    int64_t offset;
  };
  std::vector<Full> full(in_memory);
  for (size_t i = 0; i < in_memory; ++i) {
    const Tensor& x = env[size_t(ids[i])];
    full[i] = i < size_t(inputs_)
                  ? Full{tiling.loop, broadcast_strides(x.sizes(), x.strides(), tiling.loop), x.storage_offset()}
                  : Full{dims(x.sizes()), dims(x.strides()), x.storage_offset()};
  }
  const int64_t per_outer = split < 0 ? 1 : (tiling.loop[size_t(split)] + tiling.rows - 1) / tiling.rows;

  auto run_range = [&](int64_t begin, int64_t end) {
    // This chunk's tile tensors, re-pointed at each tile; scratch for the values only the group reads.
    std::vector<Tensor> tile(nv);
    for (size_t i = 0; i < nv; ++i) {
      auto impl = std::make_shared<TensorImpl>();
      impl->dtype = dtypes_[i];
      impl->storage = i < in_memory ? env[size_t(ids[i])].storage()
                                    : std::make_shared<Storage>(size_t(tiling.tile_numel) * itemsize(dtypes_[i]),
                                                                Device());
      impl->shape = i < in_memory ? full[i].shape : tiling.loop;
      impl->strides = i < in_memory ? full[i].strides : contiguous_strides(tiling.loop);
      impl->offset = i < in_memory ? full[i].offset : 0;
      tile[i] = Tensor(std::move(impl));
    }
    std::vector<absl::InlinedVector<Tensor, 3>> ins(steps_.size()), outs(steps_.size());
    for (size_t k = 0; k < steps_.size(); ++k) {
      for (int32_t i : steps_[k].inputs) ins[k].push_back(tile[size_t(i)]);
      for (int32_t i : steps_[k].outputs) outs[k].push_back(tile[size_t(i)]);
    }
    DimVector index(size_t(std::max(split, 0)));
    for (int64_t k = begin; k < end; ++k) {
      if (split >= 0) {
        int64_t outer = k / per_outer;
        for (int32_t d = split - 1; d >= 0; --d) {
          index[size_t(d)] = outer % tiling.loop[size_t(d)];
          outer /= tiling.loop[size_t(d)];
        }
        const int64_t first = (k % per_outer) * tiling.rows;
        const int64_t last = std::min(tiling.loop[size_t(split)], first + tiling.rows);
        for (size_t i = 0; i < nv; ++i) {
          TensorImpl& ti = *tile[i].impl();
          if (i < in_memory) {
            ti.shape = full[i].shape;
            ti.offset = full[i].offset + narrow_to_tile(ti.shape, full[i].strides, index, split, first, last);
          } else {
            ti.shape = tiling.loop;
            narrow_to_tile(ti.shape, ti.strides, index, split, first, last);
            ti.strides = contiguous_strides(ti.shape);
          }
        }
      }
      for (size_t s = 0; s < steps_.size(); ++s) steps_[s].op->kernels[size_t(kCPU)](ins[s], outs[s], *attrs[s]);
    }
  };
  if (tiling.tiles <= 1) run_range(0, tiling.tiles);  // one tile: its kernels split their own loops
  else parallel_for(0, tiling.tiles, 1, run_range);
}

}  // namespace nnvm::trace
