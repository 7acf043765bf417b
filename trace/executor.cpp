#include "nnvm/trace/executor.h"

#include <queue>

#include "absl/strings/str_format.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/mode.h"
#include "nnvm/trace/dump.h"
#include "nnvm/trace/signature.h"

namespace nnvm::trace {

namespace {

std::shared_ptr<const GroupProgram> cached_program(const Trace& t, const FusionGroup& g, const GroupValues& values) {
  std::shared_ptr<const jit::CompiledKernel> kernel = jit::global_kernel_cache().get(
      group_key(t, g, values), [&] { return std::make_shared<const GroupProgram>(t, g, values); });
  auto program = std::dynamic_pointer_cast<const GroupProgram>(kernel);
  NNVM_CHECK(program != nullptr, "FusedPlan", "the kernel cache holds another kind of kernel under a tile key");
  return program;
}

// Groups in a topological order, the earliest-numbered ready group first. The
// order of first nodes is not always one: a group may read a value of a
// group whose first node comes later.
std::vector<int32_t> topological_order(const Trace& t, const FusionPlan& f) {
  const size_t n = f.groups.size();
  std::vector<std::vector<int32_t>> readers(n);
  std::vector<int32_t> waiting(n, 0);
  for (size_t g = 0; g < n; ++g) {
    std::vector<int32_t> producers;
    for (ValueId in : f.groups[g].inputs) {
      const int32_t node = t.value(in).node;
      if (node < 0) continue;
      const int32_t p = f.group_of[size_t(node)];
      if (p != int32_t(g) && std::find(producers.begin(), producers.end(), p) == producers.end())
        producers.push_back(p);
    }
    for (int32_t p : producers) readers[size_t(p)].push_back(int32_t(g));
    waiting[g] = int32_t(producers.size());
  }
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
  for (size_t g = 0; g < n; ++g)
    if (waiting[g] == 0) ready.push(int32_t(g));
  std::vector<int32_t> order;
  while (!ready.empty()) {
    const int32_t g = ready.top();
    ready.pop();
    order.push_back(g);
    for (int32_t r : readers[size_t(g)])
      if (--waiting[size_t(r)] == 0) ready.push(r);
  }
  NNVM_CHECK(order.size() == n, "FusedPlan", "the fusion groups form a cycle:\n", f.to_string(t), t.to_string());
  return order;
}

Tensor tensor_on(std::shared_ptr<Storage> storage, const Value& v) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = v.shape;
  impl->strides = contiguous_strides(v.shape);
  impl->dtype = v.dtype;
  return Tensor(std::move(impl));
}

}  // namespace

FusedPlan::FusedPlan(Trace t) : trace_(std::move(t)), fusion_(fuse(trace_)), hash_(signature(trace_).hash) {
  for (const FusionGroup& g : fusion_.groups) {
    Group group;
    group.values = group_values(trace_, g);
    group.program = cached_program(trace_, g, group.values);
    group.tiling = group.program->tiling(trace_, group.values.ids);
    groups_.push_back(std::move(group));
  }
  order_ = topological_order(trace_, fusion_);

  Schedule schedule;
  schedule.step.resize(trace_.nodes().size());
  for (size_t k = 0; k < order_.size(); ++k)
    for (int32_t n : fusion_.groups[size_t(order_[k])].nodes) schedule.step[size_t(n)] = int32_t(k);
  std::vector<bool> is_output(trace_.values().size(), false), scratch(trace_.values().size(), false);
  for (ValueId v : trace_.outputs()) is_output[size_t(v)] = true;
  for (const Group& g : groups_)
    if (g.program->tiled())
      for (size_t i = size_t(g.values.inputs + g.values.outputs); i < g.values.ids.size(); ++i)
        scratch[size_t(g.values.ids[i])] = true;
  auto computed = [&](size_t v) {
    const Value& val = trace_.value(ValueId(v));
    return val.node >= 0 && trace_.nodes()[size_t(val.node)].op->view == nullptr && !scratch[v];
  };
  schedule.in_arena.resize(trace_.values().size());
  for (size_t v = 0; v < trace_.values().size(); ++v) schedule.in_arena[v] = computed(v) && !is_output[v];
  memory_ = plan_memory(trace_, &schedule);
  for (size_t v = 0; v < trace_.values().size(); ++v) {
    if (!computed(v)) continue;
    if (memory_.offsets[v] >= 0) arena_values_.push_back(ValueId(v));
    else own_values_.push_back(ValueId(v));  // a trace output, or a value of no bytes
  }
  if (!knobs().dump_dir.empty()) dump(knobs().dump_dir);
}

std::vector<int32_t> FusedPlan::group_order() const { return order_; }

std::vector<Tensor> FusedPlan::run(absl::Span<const Tensor> inputs, absl::Span<const Scalar> scalars) const {
  const Trace& t = trace_;
  NNVM_CHECK(scalars.empty() || scalars.size() == t.scalars().size(), "FusedPlan", "the trace has ",
             t.scalars().size(), " Scalar slots but got ", scalars.size(), " values");
  NNVM_CHECK(inputs.size() == t.inputs().size(), "FusedPlan", "the trace takes ", t.inputs().size(),
             " inputs but got ", inputs.size());
  std::vector<Tensor> env(t.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = t.value(t.inputs()[i]);
    NNVM_CHECK(inputs[i].dtype() == v.dtype && inputs[i].sizes() == IntArrayRef(v.shape), "FusedPlan", "input ",
               i, " is ", dtype_name(inputs[i].dtype()), shape_str(inputs[i].sizes()), "; the plan expects ",
               dtype_name(v.dtype), shape_str(v.shape));
    env[size_t(t.inputs()[i])] = inputs[i];
  }
  for (ValueId c : t.constants()) env[size_t(c)] = t.constant_value(c);
  EagerGuard eager;  // a kernel that calls an op runs it now
  NoGradGuard no_grad;

  if (memory_.arena_bytes > 0) {
    auto arena = std::make_shared<Storage>(size_t(memory_.arena_bytes), Device());
    char* base = static_cast<char*>(arena->data());
    for (ValueId v : arena_values_) {
      const size_t at = size_t(memory_.offsets[size_t(v)]);
      auto slice = std::make_shared<Storage>(base + at, size_t(memory_.bytes[size_t(v)]), Device(),
                                             [arena](void*) {});  // as_strided offsets count from a value's start
      env[size_t(v)] = tensor_on(std::move(slice), t.value(v));
    }
  }
  for (ValueId v : own_values_) {
    const Value& val = t.value(v);
    env[size_t(v)] = tensor_on(std::make_shared<Storage>(numel_of(val.shape) * itemsize(val.dtype), Device()), val);
  }

  std::vector<Attrs> bound(t.nodes().size());
  std::vector<const Attrs*> attrs(t.nodes().size());
  for (size_t n = 0; n < t.nodes().size(); ++n) {
    const Node& node = t.nodes()[n];
    if (scalars.empty() || node.slots.empty()) {
      attrs[n] = &node.attrs;
    } else {
      bound[n] = bind_scalars(node, scalars);
      attrs[n] = &bound[n];
    }
  }
  absl::InlinedVector<const Attrs*, 8> group_attrs;
  for (int32_t g : order_) {
    group_attrs.clear();
    for (int32_t n : fusion_.groups[size_t(g)].nodes) group_attrs.push_back(attrs[size_t(n)]);
    const Group& group = groups_[size_t(g)];
    group.program->run(group.values.ids, env, group_attrs, group.tiling);
  }
  std::vector<Tensor> results;
  for (ValueId v : t.outputs()) results.push_back(env[size_t(v)]);
  return results;
}

std::string FusedPlan::to_string() const {
  std::string s = "# trace\n" + trace_.to_string() + "# fusion\n" + fusion_.to_string(trace_);
  for (int32_t g : order_) {
    const Group& group = groups_[size_t(g)];
    if (!group.program->tiled()) {
      absl::StrAppendFormat(&s, "run group %d node by node: %s\n", g, group.program->why_untiled());
      continue;
    }
    const Tiling& tl = group.tiling;
    absl::StrAppendFormat(&s, "run group %d tiled: loop %s, %d tiles of %d elements", g, shape_str(tl.loop),
                          tl.tiles, tl.tile_numel);
    if (tl.split >= 0) absl::StrAppendFormat(&s, " (%d rows of dim %d)", tl.rows, tl.split);
    s += "\n";
  }
  return s + "# memory\n" + memory_.to_string(trace_);
}

void FusedPlan::dump(const std::string& dir) const { dump_plan(dir, *this); }

}  // namespace nnvm::trace
