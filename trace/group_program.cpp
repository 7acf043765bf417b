#include "nnvm/trace/group_program.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "nnvm/core/block_pool.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/trace/replay.h"

namespace nnvm::trace {

namespace {

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

bool draws_by_position(const OpDef& op) { return op.name == "bernoulli"; }

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
      // A view is a group of its own (fusion never takes one), its view
      // function called with the plan's attributes at run time: its sizes,
      // strides and dims are not the program's, so another batch size shares
      // it. How many there are stays in the key.
      const bool lone_view = node.op->view && g.nodes.size() == 1;
      if (lone_view && std::holds_alternative<DimVector>(node.attrs[i]))
        absl::StrAppend(&key, "dims", std::get<DimVector>(node.attrs[i]).size());
      else if (lone_view && std::holds_alternative<int64_t>(node.attrs[i]))
        key += "int";
      else append_attr(key, node.attrs[i], /*with_scalar_values=*/!slotted);
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
    compile(t, g, values);
    return;
  }
  const size_t pointwise = reduction ? g.nodes.size() - 1 : g.nodes.size();
  const ValueId loop = reduction ? last.inputs[0] : t.nodes()[size_t(g.nodes[0])].outputs[0];
  const DimVector& shape = t.value(loop).shape;
  for (size_t k = 0; k < pointwise && why_untiled_.empty(); ++k) {
    const Node& node = t.nodes()[size_t(g.nodes[k])];
    if (!node.op->elementwise) why_untiled_ = absl::StrCat(node.op->name, " is not elementwise");
    else if (draws_by_position(*node.op)) why_untiled_ = absl::StrCat(node.op->name, " draws by element position");
    for (ValueId out : node.outputs)
      if (why_untiled_.empty() && t.value(out).shape != shape)
        why_untiled_ = absl::StrCat(node.op->name, " does not compute the loop shape ", shape_str(shape));
    for (ValueId in : node.inputs)
      if (why_untiled_.empty() && !broadcasts_to(t.value(in).shape, shape))
        why_untiled_ = absl::StrCat(node.op->name, " reads a value that does not broadcast to the loop");
  }
  max_split_ = int32_t(shape.size()) - 1;
  if (why_untiled_.empty() && reduction) {
    const bool dims_attr = last.attrs.size() > 1 && std::holds_alternative<DimVector>(last.attrs[0]);
    if (!is_reduction(*last.op) || !dims_attr || last.inputs.size() != 1 || index_of(loop) < inputs_ + outputs_ ||
        values.outputs != 1 || g.outputs[0] != last.outputs[0]) {
      why_untiled_ = "the reduction does not close a pointwise prologue of its own";
    } else {
      const DimVector reduced = reduction_dims(last.attrs.ints(0), int64_t(shape.size()), last.op->name);
      max_split_ = int32_t(reduced.empty() ? 0 : reduced[0]) - 1;
      first_dim_ = max_split_ < 0;
      if (first_dim_) why_untiled_ = "it reduces the first dim: no rows to tile";
    }
  }
  if (why_untiled_.empty()) loop_value_ = index_of(loop);
  compile(t, g, values);
}

void GroupProgram::compile(const Trace& t, const FusionGroup& g, const GroupValues& values) {
  const GroupSource source{t, g, values, *this};
  for (const std::shared_ptr<const Backend>& backend : backends()) {
    std::string why_not;
    kernel_ = backend->compile(source, &why_not);
    if (kernel_) {
      backend_ = std::string(backend->name());
      return;
    }
    declined_.push_back(absl::StrCat(std::string(backend->name()), ": ", why_not.empty() ? "declined" : why_not));
  }
}

std::string GroupProgram::describe() const {
  if (kernel_) return kernel_->describe();
  return tiled() ? "tiled" : absl::StrCat("node by node: ", why_untiled_);
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
  if (kernel_ && kernel_->run(*this, GroupRun{ids, env, attrs, tiling, layouts})) return;
  run_portable(ids, env, attrs, tiling);
}

void GroupProgram::run_portable(absl::Span<const ValueId> ids, std::vector<Tensor>& env,
                                absl::Span<const Attrs* const> attrs, const Tiling& tiling) const {
  if (tiled()) run_tiles(ids, env, attrs, tiling);
  else run_steps(ids, env, attrs);
}

void GroupProgram::run_steps(absl::Span<const ValueId> ids, std::vector<Tensor>& env,
                             absl::Span<const Attrs* const> attrs, size_t first, size_t end) const {
  decline_replay("a group runs its reference kernels");
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
  decline_replay("a group runs its tile program");
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
