#include "nnvm/trace/executor.h"

#include <atomic>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_format.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/block_pool.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/mode_state.h"
#include "nnvm/jit/x86/isa.h"
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

bool is_view(const Trace& t, ValueId v) {
  const int32_t node = t.value(v).node;
  return node >= 0 && t.nodes()[size_t(node)].op->view != nullptr;
}

// Groups in a topological order that keeps memory small. Of the ready groups,
// the earliest-numbered one that frees at least the bytes it allocates runs
// first (a view, a reduction, an optimizer update that is the last reader of
// its gradient); when none does, the earliest-numbered ready group. Freeing
// counts the computed values whose last reader the group is (a view's
// readers read its base). The order of first nodes is not always
// topological: a group may read a value of a group whose first node comes later.
std::vector<int32_t> topological_order(const Trace& t, const FusionPlan& f) {
  const size_t n = f.groups.size(), nv = t.values().size();
  std::vector<ValueId> base(nv);
  for (size_t v = 0; v < nv; ++v)
    base[v] = is_view(t, ValueId(v)) ? base[size_t(t.nodes()[size_t(t.value(ValueId(v)).node)].inputs[0])] : ValueId(v);
  auto bytes = [&](ValueId v) {
    const Value& val = t.value(v);
    return val.node < 0 || is_view(t, v) ? int64_t(0) : numel_of(val.shape) * int64_t(itemsize(val.dtype));
  };
  std::vector<bool> kept(nv, false);  // a trace output's memory outlives the plan
  for (ValueId out : t.outputs()) kept[size_t(base[size_t(out)])] = true;

  std::vector<std::vector<int32_t>> readers(n);
  std::vector<std::vector<ValueId>> reads(n);  // the bases each group reads, each once
  std::vector<int32_t> waiting(n, 0), pending_reads(nv, 0);
  for (size_t g = 0; g < n; ++g) {
    std::vector<int32_t> producers;
    for (ValueId in : f.groups[g].inputs) {
      const ValueId b = base[size_t(in)];
      if (std::find(reads[g].begin(), reads[g].end(), b) == reads[g].end()) {
        reads[g].push_back(b);
        ++pending_reads[size_t(b)];
      }
      const int32_t node = t.value(in).node;
      if (node < 0) continue;
      const int32_t p = f.group_of[size_t(node)];
      if (p != int32_t(g) && std::find(producers.begin(), producers.end(), p) == producers.end())
        producers.push_back(p);
    }
    for (int32_t p : producers) readers[size_t(p)].push_back(int32_t(g));
    waiting[g] = int32_t(producers.size());
  }
  auto shrinks = [&](int32_t g) {
    int64_t net = 0;
    for (ValueId out : f.groups[size_t(g)].outputs) net += bytes(out);
    for (ValueId b : reads[size_t(g)])
      if (pending_reads[size_t(b)] == 1 && !kept[size_t(b)]) net -= bytes(b);
    return net <= 0;
  };
  std::set<int32_t> ready;
  for (size_t g = 0; g < n; ++g)
    if (waiting[g] == 0) ready.insert(int32_t(g));
  std::vector<int32_t> order;
  while (!ready.empty()) {
    auto pick = std::find_if(ready.begin(), ready.end(), shrinks);
    const int32_t g = pick == ready.end() ? *ready.begin() : *pick;
    ready.erase(g);
    order.push_back(g);
    for (ValueId b : reads[size_t(g)]) --pending_reads[size_t(b)];
    for (int32_t r : readers[size_t(g)])
      if (--waiting[size_t(r)] == 0) ready.insert(r);
  }
  NNVM_CHECK(order.size() == n, "FusedPlan", "the fusion groups form a cycle:\n", f.to_string(t), t.to_string());
  return order;
}

bool same_layout(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.storage_offset() == b.storage_offset() && a.dtype() == b.dtype() &&
         a.sizes() == b.sizes() && a.strides() == b.strides();
}

// Each run makes its outputs' storages and tensors, which the recorder
// adopts and drops: their blocks wait on the thread's free lists (core/block_pool.h).
Tensor tensor_on(std::shared_ptr<Storage> storage, const Value& v, const DimVector& strides) {
  return pooled_tensor(std::move(storage), v.shape, strides, 0, v.dtype, Device());
}
Tensor tensor_on(std::shared_ptr<Storage> storage, const Value& v) {
  return tensor_on(std::move(storage), v, contiguous_strides(v.shape));
}

}  // namespace

FusedPlan::FusedPlan(Trace t) : trace_(std::move(t)), fusion_(fuse(trace_)), hash_(signature(trace_).hash) {
  static std::atomic<uint64_t> plans{0};
  id_ = ++plans;
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
  own_values_.resize(order_.size());
  for (size_t v = 0; v < trace_.values().size(); ++v) {
    if (!computed(v)) continue;
    if (memory_.offsets[v] < 0) {
      const Value& val = trace_.value(ValueId(v));
      own_values_[size_t(schedule.step[size_t(val.node)])].push_back({ValueId(v), contiguous_strides(val.shape)});
      continue;
    }
    // Values at the same place (an in-place chain, a reused buffer) share a slice.
    const auto same = std::find_if(arena_values_.begin(), arena_values_.end(), [&](const ArenaValue& a) {
      const size_t u = size_t(a.value);
      return memory_.offsets[u] == memory_.offsets[v] && memory_.bytes[u] == memory_.bytes[v];
    });
    arena_values_.push_back({ValueId(v), same == arena_values_.end() ? int32_t(arena_values_.size()) : same->slice});
  }
  std::vector<bool> in_arena(trace_.values().size(), false);
  for (const ArenaValue& a : arena_values_) in_arena[size_t(a.value)] = true;
  for (size_t v = 0; v < trace_.values().size(); ++v)
    if (!in_arena[v]) transient_.push_back(ValueId(v));
  for (ValueId out : trace_.outputs())
    arena_escapes_ = arena_escapes_ || memory_.offsets[size_t(memory_.base[size_t(out)])] >= 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::vector<int32_t>& nodes = fusion_.groups[g].nodes;
    for (size_t k = 0; k < nodes.size(); ++k) {
      const Node& node = trace_.nodes()[size_t(nodes[k])];
      groups_[g].attrs.push_back(&node.attrs);
      if (!node.slots.empty()) groups_[g].slotted.push_back(int32_t(k));
    }
  }
  for (ValueId in : trace_.inputs()) input_last_step_.push_back(memory_.live[size_t(in)].last);
  for (size_t i = 0; i < trace_.outputs().size(); ++i) {
    const ValueId v = trace_.outputs()[i];
    const bool last = std::find(trace_.outputs().begin() + ptrdiff_t(i) + 1, trace_.outputs().end(), v) ==
                      trace_.outputs().end();
    output_moves_.push_back(last && !trace_.value(v).is_input() && !in_arena[size_t(v)]);
  }
  plan_direct_writes();
  if (!knobs().dump_dir.empty()) dump(knobs().dump_dir);
}

void FusedPlan::plan_direct_writes() {
  const Trace& t = trace_;
  std::vector<int32_t> step_of_group(order_.size());
  for (size_t k = 0; k < order_.size(); ++k) step_of_group[size_t(order_[k])] = int32_t(k);
  // A kernel that checks its input values may throw, and the recorder then
  // reruns the trace from its inputs: none of them may have been overwritten.
  int32_t last_check = -1;
  for (size_t n = 0; n < t.nodes().size(); ++n)
    if (checks_values(t, t.nodes()[n]))
      last_check = std::max(last_check, step_of_group[size_t(fusion_.group_of[n])]);
  for (ValueId out : t.outputs()) {
    DirectWrite d;
    d.strides = contiguous_strides(t.value(out).shape);
    const int32_t n = t.value(out).node;
    if (n < 0 || is_view(t, out) || step_of_group[size_t(fusion_.group_of[size_t(n)])] <= last_check) {
      direct_.push_back(std::move(d));
      continue;
    }
    const int32_t group = fusion_.group_of[size_t(n)];
    d.step = step_of_group[size_t(group)];
    const Node& node = t.nodes()[size_t(n)];
    static const OpDef& as_strided = find_op("as_strided");
    static const OpDef& strided_update = find_op("strided_update");
    d.offsets_from_start = node.op == &strided_update;
    for (const Node& reader : t.nodes())
      d.offsets_from_start = d.offsets_from_start || (reader.op == &as_strided && reader.inputs[0] == out);
    for (ValueId in : node.inputs) {
      const Value& v = t.value(in);
      if (!node.op->elementwise || !v.is_input() || v.shape != t.value(out).shape || v.dtype != t.value(out).dtype)
        continue;
      // Elementwise at the same elements: each is read before it is written,
      // provided no other read of the input (or a view of it) shares the step.
      bool alone = true;
      for (int32_t m : fusion_.groups[size_t(group)].nodes)
        for (ValueId x : t.nodes()[size_t(m)].inputs)
          alone = alone && (memory_.base[size_t(x)] != in || (m == n && x == in));
      if (alone) d.same_step_inputs.push_back(v.index);
    }
    direct_.push_back(std::move(d));
  }
}

bool FusedPlan::can_write_into(size_t output, absl::Span<const Tensor> inputs,
                               absl::Span<const Tensor> targets) const {
  const DirectWrite& d = direct_[output];
  const Tensor& target = targets[output];
  if (d.step < 0 || !target.defined()) return false;
  const TensorImpl& impl = *target.impl();
  const Value& v = trace_.value(trace_.outputs()[output]);
  if (impl.dtype != v.dtype || !same_dims(impl.shape, v.shape) || impl.device != Device() ||
      !impl.storage->has_memory() || !is_contiguous_layout(impl.shape, impl.strides) ||
      (d.offsets_from_start && impl.offset != 0))
    return false;
  // Every operand is defined here (run_into checked the inputs): no Tensor accessor's check per pair.
  const Storage& mine = *impl.storage;
  const char* begin = static_cast<const char*>(mine.data());
  const char* end = begin + mine.nbytes();
  auto shares = [&](const Tensor& x) {
    const Storage& s = *x.impl()->storage;
    const char* data = static_cast<const char*>(s.data());
    return &s == &mine || (begin && data && data < end && begin < data + s.nbytes());
  };
  for (size_t k = 0; k < targets.size(); ++k)
    if (k != output && targets[k].defined() && shares(targets[k])) return false;
  for (size_t j = 0; j < inputs.size(); ++j) {
    if (!shares(inputs[j]) || input_last_step_[j] < d.step) continue;
    const bool in_place = input_last_step_[j] == d.step && same_layout(inputs[j], target) &&
                          std::find(d.same_step_inputs.begin(), d.same_step_inputs.end(), int32_t(j)) !=
                              d.same_step_inputs.end();
    if (!in_place) return false;
  }
  return true;
}

std::vector<int32_t> FusedPlan::group_order() const { return order_; }

struct FusedPlan::ThreadRuns {
  struct Free {
    void operator()(char* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::array<ArenaTensors, 2> kept;  // kept_arenas()
  // The tensors-by-value buffer of the thread's last run of a plan with no
  // arena: such plans share it and take none of the kept slots.
  std::vector<Tensor> spare_env;
  std::unique_ptr<char[], Free> replay_arena;
  int64_t replay_arena_bytes = 0;
};

std::array<FusedPlan::ArenaTensors, 2>& FusedPlan::kept_arenas() { return thread_state<ThreadRuns>().kept; }

std::vector<Tensor>& FusedPlan::spare_env() { return thread_state<ThreadRuns>().spare_env; }

char* FusedPlan::replay_arena(int64_t bytes) {
  ThreadRuns& runs = thread_state<ThreadRuns>();
  if (runs.replay_arena_bytes < bytes) {
    runs.replay_arena.reset(static_cast<char*>(::operator new[](size_t(bytes), std::align_val_t(64))));
    runs.replay_arena_bytes = bytes;
  }
  return runs.replay_arena.get();
}

void FusedPlan::keep_arena(ArenaTensors arena) const {
  for (ValueId v : transient_) arena.env[size_t(v)] = Tensor();
  if (arena_values_.empty()) {
    spare_env() = std::move(arena.env);
    return;
  }
  if (arena_escapes_ || memory_.arena_bytes > kKeptArenaBytes) return;
  std::array<ArenaTensors, 2>& kept = kept_arenas();
  if (kept[0].plan != 0 && kept[0].plan != id_) kept[1] = std::move(kept[0]);
  kept[0] = std::move(arena);
}

FusedPlan::ArenaTensors FusedPlan::take_arena() const {
  ArenaTensors a;
  a.plan = id_;
  if (arena_values_.empty()) {
    a.env = std::move(spare_env());
    a.env.resize(trace_.values().size());
    return a;
  }
  for (ArenaTensors& kept : kept_arenas())
    if (kept.plan == id_) return std::exchange(kept, ArenaTensors());
  a.env.resize(trace_.values().size());
  a.storage = std::make_shared<Storage>(size_t(memory_.arena_bytes), Device());
  char* base = static_cast<char*>(a.storage->data());
  for (size_t k = 0; k < arena_values_.size(); ++k) {
    const ArenaValue& av = arena_values_[k];
    const size_t v = size_t(av.value), first = size_t(av.slice);
    const Value &val = trace_.value(av.value), &first_val = trace_.value(arena_values_[first].value);
    const Tensor& first_tensor = a.env[size_t(arena_values_[first].value)];
    if (first != k && val.dtype == first_val.dtype && val.shape == first_val.shape) {
      a.env[v] = first_tensor;  // the same memory seen the same way
      continue;
    }
    const std::shared_ptr<Storage>& arena = a.storage;
    std::shared_ptr<Storage> slice =
        first != k      ? first_tensor.storage()
        : arena_escapes_ ? std::make_shared<Storage>(base + memory_.offsets[v], size_t(memory_.bytes[v]), Device(),
                                                     [arena](void*) {})
                         : std::make_shared<Storage>(base + memory_.offsets[v], size_t(memory_.bytes[v]), Device(),
                                                     nullptr);  // as_strided offsets count from a value's start
    a.env[v] = tensor_on(std::move(slice), val);
  }
  return a;
}

std::vector<Tensor> FusedPlan::run(absl::Span<const Tensor> inputs, absl::Span<const Scalar> scalars) const {
  std::vector<Tensor> own(inputs.begin(), inputs.end());
  WrittenFlags written;
  std::vector<Tensor> results;
  run_into(absl::MakeSpan(own), scalars, {}, written, results);
  return results;
}

void FusedPlan::run_into(absl::Span<Tensor> inputs, absl::Span<const Scalar> scalars,
                         absl::Span<const Tensor> targets, WrittenFlags& written,
                         std::vector<Tensor>& results, bool recorded_layouts) const {
  const Trace& t = trace_;
  NNVM_CHECK(scalars.empty() || scalars.size() == t.scalars().size(), "FusedPlan", "the trace has ",
             t.scalars().size(), " Scalar slots but got ", scalars.size(), " values");
  NNVM_CHECK(inputs.size() == t.inputs().size(), "FusedPlan", "the trace takes ", t.inputs().size(),
             " inputs but got ", inputs.size());
  // With the strides its trace recorded (a replay through the trace cache,
  // whose signature fixes them), every operand of every group has the
  // plan's own layout on each run: the groups' JIT kernels skip their
  // launch-key compare (jit::LaunchStamp).
  bool recorded_strides = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    NNVM_CHECK(inputs[i].defined(), "FusedPlan", "input ", i, " is an undefined tensor");
    if (recorded_layouts) continue;
    const Value& v = t.value(t.inputs()[i]);
    const TensorImpl& in = *inputs[i].impl();
    NNVM_CHECK(in.dtype == v.dtype && same_dims(in.shape, v.shape), "FusedPlan", "input ", i, " is ",
               dtype_name(in.dtype), shape_str(in.shape), "; the plan expects ", dtype_name(v.dtype),
               shape_str(v.shape));
    recorded_strides = recorded_strides && same_dims(in.strides, v.strides);
  }
  NNVM_CHECK(targets.empty() || targets.size() == t.outputs().size(), "FusedPlan", "the trace has ",
             t.outputs().size(), " outputs but got ", targets.size(), " targets");
  // The run's tensors by value with the arena's bound (a nested run finds
  // the thread's kept arena taken and makes its own). The run holds the
  // arena and its values' tensors until it returns.
  ArenaTensors arena = take_arena();
  std::vector<Tensor>& env = arena.env;
  written.assign(targets.size(), 0);
  for (size_t i = 0; i < targets.size(); ++i) {
    Tensor& slot = env[size_t(t.outputs()[i])];
    if (slot.defined() || !can_write_into(i, inputs, targets)) continue;  // a value bound for two targets: the first
    slot = targets[i];
    written[i] = 1;
    // contiguous may still differ in a unit dim's stride from the plan's own output
    recorded_strides = recorded_strides && same_dims(slot.impl()->strides, direct_[i].strides);
  }
  // The inputs are borrowed: moved into env, and back before the run returns
  // or throws (a copy of each would be two atomic operations in a process
  // with threads).
  struct Borrowed {
    absl::Span<Tensor> inputs;
    const std::vector<ValueId>& ids;
    std::vector<Tensor>* env;  // null once given back
    void give_back() {
      for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = std::move((*env)[size_t(ids[i])]);
      env = nullptr;
    }
    ~Borrowed() {
      if (env) give_back();
    }
  };
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(t.inputs()[i])] = std::move(inputs[i]);
  Borrowed borrowed{inputs, t.inputs(), &env};
  for (ValueId c : t.constants()) env[size_t(c)] = t.constant_value(c);
  detail::RunEagerly eager;  // a kernel that calls an op runs it now
  NoGradGuard no_grad;

  absl::InlinedVector<const Attrs*, 8> group_attrs;
  absl::InlinedVector<Attrs, 4> bound;  // a group's attributes with Scalars bound; only for nodes with slots
  // The recorder's run of a trace with the plan's layouts and Scalars, every
  // output in memory of its own: what replay() repeats. Its calls are captured
  // once (or found not to be capturable, for good).
  const bool capturing = recorded_layouts && recorded_strides && scalars.empty() &&
                         std::find(written.begin(), written.end(), 1) == written.end() &&
                         !replay_declined_.is_set() &&
                         !replay_.load(std::memory_order_relaxed);
  jit::ReplayCapture capture;
  std::optional<jit::CaptureScope> capture_scope;
  if (capturing) [[unlikely]]
    capture_scope.emplace(&capture);
  for (size_t k = 0; k < order_.size(); ++k) {
    const int32_t g = order_[k];
    for (const OwnValue& own : own_values_[k]) {  // allocated when computed, not for the whole run
      const Value& val = t.value(own.value);
      Tensor& slot = env[size_t(own.value)];
      if (!slot.defined())
        slot = tensor_on(
            std::allocate_shared<Storage>(BlockPool<Storage>(), numel_of(val.shape) * itemsize(val.dtype), Device()),
            val, own.strides);
    }
    const Group& group = groups_[size_t(g)];
    absl::Span<const Attrs* const> attrs = group.attrs;
    if (!scalars.empty() && !group.slotted.empty()) {  // the recorded attributes, unless the replayed Scalars differ
      const std::vector<int32_t>& nodes = fusion_.groups[size_t(g)].nodes;
      bound.clear();
      bound.reserve(group.slotted.size());  // the pointers into it stay valid
      for (int32_t step : group.slotted) {
        const Node& node = t.nodes()[size_t(nodes[size_t(step)])];
        if (trace::holds_scalars(node, scalars)) continue;
        if (group_attrs.empty()) group_attrs.assign(group.attrs.begin(), group.attrs.end());
        bound.push_back(bind_scalars(node, scalars));
        group_attrs[size_t(step)] = &bound.back();
      }
      if (!group_attrs.empty()) attrs = group_attrs;
    }
    group.program->run(group.values.ids, env, attrs, group.tiling,
                       recorded_strides ? id_ << 20 | uint64_t(g + 1) : 0);
    group_attrs.clear();
  }
  if (capturing) [[unlikely]] {
    capture_scope.reset();
    keep_replay(capture);
  }
  results.clear();
  for (size_t i = 0; i < t.outputs().size(); ++i) {
    Tensor& out = env[size_t(t.outputs()[i])];
    results.push_back(output_moves_[i] ? std::move(out) : out);
  }
  borrowed.give_back();  // before keep_arena takes env
  keep_arena(std::move(arena));
}

// A run's calls with each operand named by where its address comes from:
// bases[base] + offset, the bases being the run's inputs' first elements, the
// thread's arena, the outputs' memory, then the trace's constants.
struct FusedPlan::Replay {
  jit::Isa isa = jit::Isa::kPortable;  // the calls' code is this ISA's
  int64_t arena_bytes = 0;
  std::vector<int64_t> output_bytes;
  std::vector<const char*> constants;
  struct Operand {
    int32_t base;
    int64_t offset;
  };
  struct Call {
    jit::ReplayCall::Fn run;
    std::shared_ptr<const void> state;
    std::vector<Operand> operands;
  };
  std::vector<Call> calls;
};

namespace {
constexpr size_t kMaxReplayOperands = 16;
}  // namespace

FusedPlan::~FusedPlan() { delete replay_.load(); }

std::string FusedPlan::replay_declined() const { return replay_declined_.get(); }

void FusedPlan::decline_replay(std::string why) const { replay_declined_.set(std::move(why)); }

void FusedPlan::keep_replay(jit::ReplayCapture& capture) const {
  if (capture.declined()) return decline_replay(capture.why());
  if (arena_escapes_) return decline_replay("an output is a view of the arena");
  if (memory_.arena_bytes > kKeptArenaBytes) return decline_replay("the arena is larger than a thread keeps");
  const Trace& t = trace_;
  const size_t inputs = t.inputs().size(), outputs = t.outputs().size();
  auto r = std::make_unique<Replay>();
  // Where each value's first element lies: base index and offset (-1: not known to a replay).
  std::vector<Replay::Operand> at(t.values().size(), {-1, 0});
  for (size_t i = 0; i < inputs; ++i) at[size_t(t.inputs()[i])] = {int32_t(i), 0};
  for (const ArenaValue& a : arena_values_) at[size_t(a.value)] = {int32_t(inputs), memory_.offsets[size_t(a.value)]};
  // Each output a value a group computes into memory of its own, and each such value an output.
  std::vector<bool> own(t.values().size(), false);
  for (const std::vector<OwnValue>& step : own_values_)
    for (const OwnValue& o : step) own[size_t(o.value)] = true;
  for (size_t i = 0; i < outputs; ++i) {
    const ValueId v = t.outputs()[i];
    const Value& val = t.value(v);
    if (!own[size_t(v)] || at[size_t(v)].base >= 0)
      return decline_replay("an output is not a value of its own (an input, a constant, a view, another output's)");
    const int64_t bytes = numel_of(val.shape) * int64_t(itemsize(val.dtype));
    if (bytes == 0) return decline_replay("an output is empty");
    at[size_t(v)] = {int32_t(inputs + 1 + i), 0};
    r->output_bytes.push_back(bytes);
  }
  for (size_t v = 0; v < own.size(); ++v)
    if (own[v] && at[v].base < int32_t(inputs + 1)) return decline_replay("a value of its own is not an output");
  for (ValueId c : t.constants()) {
    const Tensor& value = t.constant_value(c);
    at[size_t(c)] = {int32_t(inputs + 1 + outputs + r->constants.size()), 0};
    r->constants.push_back(static_cast<const char*>(value.storage()->data()) +
                           value.storage_offset() * int64_t(itemsize(value.dtype())));
  }
  for (jit::ReplayCall& call : capture.calls()) {
    if (call.operands.size() > kMaxReplayOperands) return decline_replay("a call has too many operands");
    Replay::Call c{call.run, std::move(call.state), {}};
    for (const jit::ReplayOperand& o : call.operands) {
      const Replay::Operand where = at[size_t(o.value)];
      if (where.base < 0) return decline_replay("a call reads a value no replay has");
      c.operands.push_back({where.base, where.offset + o.offset});
    }
    r->calls.push_back(std::move(c));
  }
  r->isa = jit::active_isa();
  r->arena_bytes = memory_.arena_bytes;
  const Replay* none = nullptr;
  if (replay_.compare_exchange_strong(none, r.get())) r.release();  // else another thread's run kept its own
}

bool FusedPlan::replay(absl::Span<const Tensor> inputs, absl::Span<Storage* const> outputs) const {
  const Replay* r = replay_.load(std::memory_order_acquire);
  if (!r || r->isa != jit::active_isa() || inputs.size() != trace_.inputs().size() ||
      outputs.size() != r->output_bytes.size())
    return false;
  const size_t first_output = inputs.size() + 1, first_constant = first_output + outputs.size();
  absl::InlinedVector<const char*, 16> bases(first_constant + r->constants.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) return false;
    const TensorImpl& x = *inputs[i].impl();
    if (!x.storage->has_memory() || !x.storage->device().is_cpu()) return false;
    bases[i] = static_cast<const char*>(x.storage->data()) + x.offset * int64_t(itemsize(x.dtype));
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i]->has_memory() || int64_t(outputs[i]->nbytes()) != r->output_bytes[i] ||
        !outputs[i]->device().is_cpu())
      return false;
  std::copy(r->constants.begin(), r->constants.end(), bases.begin() + ptrdiff_t(first_constant));
  bases[inputs.size()] = r->arena_bytes > 0 ? replay_arena(r->arena_bytes) : nullptr;
  for (size_t i = 0; i < outputs.size(); ++i) {
    try {
      outputs[i]->allocate();
    } catch (...) {  // gives back what it took: nothing ran
      for (size_t j = 0; j < i; ++j) {
        Storage none(outputs[j]->nbytes(), outputs[j]->device(), Storage::Lazy{});
        none.take_memory(*outputs[j]);
      }
      throw;
    }
    bases[first_output + i] = static_cast<const char*>(outputs[i]->data());
  }
  const char* ptrs[kMaxReplayOperands];
  for (const Replay::Call& call : r->calls) {
    for (size_t k = 0; k < call.operands.size(); ++k)
      ptrs[k] = bases[size_t(call.operands[k].base)] + call.operands[k].offset;
    call.run(call.state.get(), ptrs);
  }
  return true;
}

bool FusedPlan::holds_scalars(absl::Span<const Scalar> scalars) const {
  if (scalars.size() != trace_.scalars().size()) return false;
  for (const Node& node : trace_.nodes())
    if (!trace::holds_scalars(node, scalars)) return false;
  return true;
}

std::string FusedPlan::to_string() const {
  std::string s = "# trace\n" + trace_.to_string() + "# fusion\n" + fusion_.to_string(trace_);
  for (int32_t g : order_) {
    const Group& group = groups_[size_t(g)];
    if (!group.program->tiled()) {
      if (group.program->epilogue())
        absl::StrAppendFormat(&s, "run group %d: the matmul, then its epilogue as one JIT kernel\n", g);
      else
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
