// Building a FusedPlan (trace/executor.h) from the compile pipeline's parts
// (trace/pipeline.h): which values live in the arena or in memory of their
// own, which outputs may be computed straight into their target, and the
// plan's text. Running it: executor.cpp; replaying it: plan_replay.cpp.
#include <atomic>

#include "absl/strings/str_format.h"
#include "nnvm/core/knobs.h"
#include "nnvm/trace/backend.h"
#include "nnvm/trace/dump.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/signature.h"

namespace nnvm::trace {

FusedPlan::FusedPlan(Trace t) : FusedPlan(plan_stages(std::move(t))) {}

FusedPlan::FusedPlan(PlanParts parts)
    : trace_(std::move(parts.trace)),
      fusion_(std::move(parts.fusion)),
      memory_(std::move(parts.memory)),
      order_(std::move(parts.order)),
      hash_(signature_hash(trace_)) {
  static std::atomic<uint64_t> plans{0};
  id_ = ++plans;
  for (LoweredGroup& g : parts.groups) {
    Group group;
    group.program = std::move(g.program);
    group.values = std::move(g.values);
    group.tiling = std::move(g.tiling);
    groups_.push_back(std::move(group));
  }
  const Schedule& schedule = parts.schedule;
  const std::vector<bool>& computed = parts.computed;
  own_values_.resize(order_.size());
  for (size_t v = 0; v < trace_.values().size(); ++v) {
    if (!computed[v]) continue;
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
      groups_[g].phase = std::max(groups_[g].phase, node.phase);
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
    if (n < 0 || computed_by_view(t, out) || step_of_group[size_t(fusion_.group_of[size_t(n)])] <= last_check) {
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

std::vector<int32_t> FusedPlan::group_order() const { return order_; }

std::string FusedPlan::to_string() const {
  std::string s = "# trace\n" + trace_.to_string() + "# fusion\n" + fusion_.to_string(trace_);
  for (int32_t g : order_) {
    const Group& group = groups_[size_t(g)];
    if (const GroupKernel* kernel = group.program->kernel(); kernel && !group.program->tiled()) {
      absl::StrAppendFormat(&s, "run group %d: %s\n", g, kernel->describe());
      continue;
    }
    if (!group.program->tiled()) {
      absl::StrAppendFormat(&s, "run group %d node by node: %s\n", g, group.program->why_untiled());
      continue;
    }
    const Tiling& tl = group.tiling;
    absl::StrAppendFormat(&s, "run group %d tiled: loop %s, %d tiles of %d elements", g, shape_str(tl.loop),
                          tl.tiles, tl.tile_numel);
    if (tl.split >= 0) absl::StrAppendFormat(&s, " (%d rows of dim %d)", tl.rows, tl.split);
    if (const GroupKernel* kernel = group.program->kernel()) absl::StrAppend(&s, "; ", kernel->describe());
    s += "\n";
  }
  return s + "# memory\n" + memory_.to_string(trace_);
}

void FusedPlan::dump(const std::string& dir) const { dump_plan(dir, *this); }

}  // namespace nnvm::trace
