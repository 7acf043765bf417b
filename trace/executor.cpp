// Running a FusedPlan (trace/executor.h): the thread's kept arenas, binding
// a run's values, each group's program in order, writes straight into
// targets. Building it: plan_build.cpp; replaying it: plan_replay.cpp.
#include "nnvm/trace/executor.h"

#include <atomic>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/block_pool.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/memory_monitor.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/mode_state.h"
#include "nnvm/core/profiling.h"
#include "nnvm/trace/check.h"

namespace nnvm::trace {

namespace {

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

// A group's run as a "kernel" event for a profiler session: its ops, the
// unit that ran it, the bytes of its values and the flops of its products.
[[gnu::noinline]] void profile_group(const GroupProgram& program, absl::Span<const ValueId> ids,
                                     const std::vector<Tensor>& env, int64_t start_ns) {
  profiling::Event e;
  e.category = "kernel";
  e.start_ns = start_ns;
  e.duration_ns = profiling::now_ns() - start_ns;
  const auto& steps = program.steps();
  for (size_t k = 0; k < steps.size() && k < 6; ++k) absl::StrAppend(&e.name, k ? "+" : "", steps[k].op->name);
  if (steps.size() > 6) absl::StrAppend(&e.name, "+", steps.size() - 6, " more");
  auto value = [&](int32_t i) -> const Tensor& { return env[size_t(ids[size_t(i)])]; };
  for (ValueId id : ids)
    if (env[size_t(id)].defined()) e.bytes += double(env[size_t(id)].nbytes());
  for (const GroupProgram::Step& step : steps) {
    if (step.outputs.empty() || step.inputs.size() < 2 || !value(step.outputs[0]).defined()) continue;
    const Tensor &out = value(step.outputs[0]), &a = value(step.inputs[0]), &b = value(step.inputs[1]);
    if (!a.defined() || !b.defined()) continue;
    if (step.op->name == "matmul" && a.dim() > 0)
      e.flops += 2.0 * double(out.numel()) * double(a.sizes().back());
    else if (step.op->name == "conv2d" && b.dim() == 4 && b.sizes()[0] > 0)
      e.flops += 2.0 * double(out.numel()) * double(b.numel() / b.sizes()[0]);
  }
  e.args = absl::StrCat("\"unit\": \"", program.kernel() ? program.backend() : "portable", "\", \"how\": \"",
                        profiling::json_escape(program.describe()), "\"");
  profiling::record(std::move(e));
}

}  // namespace

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

FusedPlan::ArenaTensors FusedPlan::take_for_run() const {
  if (!memory::monitoring() || order_.empty()) [[likely]]
    return take_arena();
  // the memory monitor names a new arena "arena", this plan, and the phase of the first group to run
  memory::OpScope scope("arena", hash_);
  memory::PhaseGuard phase(memory::Phase(groups_[size_t(order_[0])].phase));
  return take_arena();
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
  ArenaTensors arena = take_for_run();
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
                         !replay_declined_.is_set() && !checking() &&
                         !replay_.load(std::memory_order_relaxed);
  ReplayCapture capture;
  std::optional<CaptureScope> capture_scope;
  if (capturing) [[unlikely]]
    capture_scope.emplace(&capture);
  for (size_t k = 0; k < order_.size(); ++k) {
    const int32_t g = order_[k];
    // The group's blocks name its first op, this plan, and the phase its nodes were recorded in.
    std::optional<memory::OpScope> memory_scope;
    std::optional<memory::PhaseGuard> memory_phase;
    if (memory::monitoring()) [[unlikely]] {
      const auto& steps = groups_[size_t(g)].program->steps();
      memory_scope.emplace(steps.empty() ? "" : steps[0].op->name.c_str(), hash_);
      memory_phase.emplace(memory::Phase(groups_[size_t(g)].phase));
    }
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
    const int64_t profile_start = profiling::on() ? profiling::now_ns() : -1;
    const uint64_t layouts = recorded_strides ? id_ << 20 | uint64_t(g + 1) : 0;
    if (checking()) [[unlikely]]  // NNVM_CHECK, NNVM_REPRO (trace/check.h)
      run_group_checked(t, fusion_.groups[size_t(g)], *group.program, group.values, env, attrs, group.tiling, layouts,
                        hash_);
    else
      group.program->run(group.values.ids, env, attrs, group.tiling, layouts);
    if (profile_start >= 0) [[unlikely]]
      profile_group(*group.program, group.values.ids, env, profile_start);
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

bool FusedPlan::holds_scalars(absl::Span<const Scalar> scalars) const {
  if (scalars.size() != trace_.scalars().size()) return false;
  for (const Node& node : trace_.nodes())
    if (!trace::holds_scalars(node, scalars)) return false;
  return true;
}

}  // namespace nnvm::trace
