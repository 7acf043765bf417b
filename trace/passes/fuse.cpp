#include "nnvm/trace/passes/fuse.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace nnvm::trace {
namespace {

bool is_reduction(const Node& node) {
  return node.inputs.size() == 1 && node.outputs.size() == 1 && trace::is_reduction(*node.op);
}

// While grouping: kClosed takes no consumer (views, opaque ops, reductions);
// kMatmul is a matmul with its epilogue so far.
enum class Building { kPointwise, kReduction, kMatmul, kClosed };

struct Group {
  Building kind;
  DimVector loop;  // the shape every pointwise node of the group computes
  std::vector<int32_t> nodes;
  bool alive = true;
};

class Grouping {
 public:
  explicit Grouping(const Trace& t) : t_(t), group_of_(t.nodes().size(), -1), readers_(t.values().size()) {
    for (size_t n = 0; n < t.nodes().size(); ++n)
      for (ValueId in : t.nodes()[n].inputs) readers_[size_t(in)].push_back(int32_t(n));
    for (ValueId out : t.outputs()) readers_[size_t(out)].push_back(int32_t(t.nodes().size()));
  }

  FusionPlan run() {
    for (int32_t n = 0; n < int32_t(t_.nodes().size()); ++n) place(n);
    return finish();
  }

 private:
  const Node& node(int32_t n) const { return t_.nodes()[size_t(n)]; }
  const DimVector& out_shape(int32_t n) const { return t_.value(node(n).outputs[0]).shape; }

  // The producer nodes of n's inputs, each once, in input order.
  std::vector<int32_t> producers(int32_t n) const {
    std::vector<int32_t> ps;
    for (ValueId in : node(n).inputs) {
      const int32_t p = t_.value(in).node;
      if (p >= 0 && std::find(ps.begin(), ps.end(), p) == ps.end()) ps.push_back(p);
    }
    return ps;
  }

  int32_t new_group(int32_t n, Building kind) {
    groups_.push_back({kind, out_shape(n), {n}});
    group_of_[size_t(n)] = int32_t(groups_.size() - 1);
    return group_of_[size_t(n)];
  }
  void add(int32_t g, int32_t n) {
    groups_[size_t(g)].nodes.push_back(n);
    group_of_[size_t(n)] = g;
  }

  // Whether running the nodes in `members` (up to `last`) as one kernel would
  // need another group to run both after and before it. Groups run as units,
  // so the path may pass through any node of a group: a node-level search
  // misses a group that reads a member at one node and feeds one at another.
  bool creates_cycle(const std::vector<bool>& members, int32_t last) const {
    const int32_t merged = int32_t(groups_.size());
    auto unit = [&](int32_t m) { return members[size_t(m)] ? merged : group_of_[size_t(m)]; };
    std::vector<std::vector<int32_t>> next(groups_.size() + 1);
    for (int32_t m = 0; m <= last; ++m)
      for (int32_t p : producers(m))
        if (unit(p) != unit(m)) next[size_t(unit(p))].push_back(unit(m));
    std::vector<bool> seen(groups_.size() + 1, false);
    std::vector<int32_t> stack(next[size_t(merged)].begin(), next[size_t(merged)].end());
    while (!stack.empty()) {
      const int32_t u = stack.back();
      stack.pop_back();
      if (u == merged) return true;
      if (seen[size_t(u)]) continue;
      seen[size_t(u)] = true;
      stack.insert(stack.end(), next[size_t(u)].begin(), next[size_t(u)].end());
    }
    return false;
  }
  bool creates_cycle(int32_t g, int32_t other_group, int32_t n) const {
    std::vector<bool> members(t_.nodes().size(), false);
    members[size_t(n)] = true;
    for (int32_t gg : {g, other_group})
      if (gg >= 0)
        for (int32_t m : groups_[size_t(gg)].nodes) members[size_t(m)] = true;
    return creates_cycle(members, n);
  }

  std::string closed_reason(int32_t p) const {
    if (node(p).op->view) return "producer is a view";
    if (groups_[size_t(group_of_[size_t(p)])].kind == Building::kReduction) return "producer's group ends in a reduction";
    return absl::StrFormat("producer %s is not fusable", node(p).op->name);
  }

  // Why elementwise node n may not join producer p's group (n is already in
  // group `target` when target >= 0); empty when it may.
  std::string why_not_pointwise(int32_t p, int32_t n, int32_t target) const {
    const int32_t g = group_of_[size_t(p)];
    const Group& group = groups_[size_t(g)];
    if (group.kind == Building::kClosed || group.kind == Building::kReduction) return closed_reason(p);
    if (out_shape(n) != group.loop) return "consumer broadcasts the group's result to a larger shape";
    if (group.kind == Building::kMatmul && group.nodes.size() == 1 && readers_[size_t(node(p).outputs[0])].size() > 1)
      return "matmul output feeds two groups";
    if (target >= 0 && (group.kind != Building::kPointwise || groups_[size_t(target)].kind != Building::kPointwise))
      return "consumer is already fused into a group of another kind";
    if (creates_cycle(g, target, n)) return "fusing would need a node outside the group between its members";
    return "";
  }

  std::string why_not_reduction(int32_t p, int32_t n) const {
    const Group& group = groups_[size_t(group_of_[size_t(p)])];
    if (group.kind == Building::kClosed || group.kind == Building::kReduction) return closed_reason(p);
    if (group.kind == Building::kMatmul) return "a reduction takes no matmul prologue";
    for (int32_t m : group.nodes)
      for (ValueId out : node(m).outputs)
        for (int32_t reader : readers_[size_t(out)])
          if (reader != n && (reader >= int32_t(group_of_.size()) || group_of_[size_t(reader)] != group_of_[size_t(p)]))
            return "producer has users outside the group";
    return "";
  }

  void place(int32_t n) {
    const Node& nd = node(n);
    const std::vector<int32_t> ps = producers(n);
    if (nd.op->elementwise && !nd.outputs.empty()) {
      int32_t target = -1;
      for (int32_t p : ps) {
        const int32_t g = group_of_[size_t(p)];
        if (g == target) continue;
        const std::string reason = why_not_pointwise(p, n, target);
        if (!reason.empty()) {
          not_fused_.push_back({p, n, reason});
        } else if (target < 0) {
          add(g, n);
          target = g;
        } else {
          for (int32_t m : groups_[size_t(g)].nodes) add(target, m);
          groups_[size_t(g)].alive = false;
          groups_[size_t(g)].nodes.clear();
        }
      }
      if (target < 0) new_group(n, Building::kPointwise);
      return;
    }
    if (is_reduction(nd)) {
      std::string reason = ps.empty() ? "" : why_not_reduction(ps[0], n);
      if (!ps.empty() && reason.empty()) {
        const int32_t g = group_of_[size_t(ps[0])];
        add(g, n);
        groups_[size_t(g)].kind = Building::kReduction;
        return;
      }
      if (!ps.empty()) not_fused_.push_back({ps[0], n, reason});
      new_group(n, Building::kReduction);
      return;
    }
    const bool matmul = nd.op->name == "matmul" || nd.op->name == "matmul_sum";
    for (int32_t p : ps)
      not_fused_.push_back({p, n, nd.op->view ? "consumer is a view"
                                  : matmul     ? "matmul takes no prologue"
                                               : absl::StrFormat("consumer %s is not fusable", nd.op->name)});
    new_group(n, matmul ? Building::kMatmul : Building::kClosed);
  }

  FusionPlan finish() const {
    FusionPlan plan;
    plan.group_of.assign(t_.nodes().size(), -1);
    for (int32_t n = 0; n < int32_t(t_.nodes().size()); ++n) {
      const int32_t g = group_of_[size_t(n)];
      if (plan.group_of[size_t(n)] >= 0) continue;
      FusionGroup fg;
      fg.nodes = groups_[size_t(g)].nodes;
      std::sort(fg.nodes.begin(), fg.nodes.end());
      const Building kind = groups_[size_t(g)].kind;
      fg.kind = fg.nodes.size() == 1        ? GroupKind::kSingle
                : kind == Building::kMatmul  ? GroupKind::kMatmulEpilogue
                : kind == Building::kReduction ? GroupKind::kReduction
                                               : GroupKind::kPointwise;
      for (int32_t m : fg.nodes) plan.group_of[size_t(m)] = int32_t(plan.groups.size());
      plan.groups.push_back(std::move(fg));
    }
    for (FusionGroup& fg : plan.groups) {
      const int32_t self = plan.group_of[size_t(fg.nodes[0])];
      for (int32_t m : fg.nodes) {
        for (ValueId in : node(m).inputs) {
          const int32_t p = t_.value(in).node;
          const bool inside = p >= 0 && plan.group_of[size_t(p)] == self;
          if (!inside && std::find(fg.inputs.begin(), fg.inputs.end(), in) == fg.inputs.end()) fg.inputs.push_back(in);
        }
        for (ValueId out : node(m).outputs)
          for (int32_t reader : readers_[size_t(out)])
            if ((reader >= int32_t(t_.nodes().size()) || plan.group_of[size_t(reader)] != self) &&
                std::find(fg.outputs.begin(), fg.outputs.end(), out) == fg.outputs.end())
              fg.outputs.push_back(out);
      }
    }
    for (const NotFused& nf : not_fused_) {
      const bool apart = plan.group_of[size_t(nf.producer)] != plan.group_of[size_t(nf.consumer)];
      const bool seen = std::any_of(plan.not_fused.begin(), plan.not_fused.end(), [&](const NotFused& o) {
        return o.producer == nf.producer && o.consumer == nf.consumer;
      });
      if (apart && !seen) plan.not_fused.push_back(nf);
    }
    return plan;
  }

  const Trace& t_;
  std::vector<int32_t> group_of_;
  std::vector<std::vector<int32_t>> readers_;  // per value; nodes().size() stands for "trace output"
  std::vector<Group> groups_;
  std::vector<NotFused> not_fused_;
};

}  // namespace

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::kPointwise: return "pointwise";
    case GroupKind::kReduction: return "reduction";
    case GroupKind::kMatmulEpilogue: return "matmul_epilogue";
    case GroupKind::kSingle: return "single";
  }
  return "?";
}

FusionPlan fuse(const Trace& t) { return Grouping(t).run(); }

std::string FusionPlan::to_string(const Trace& t) const {
  std::string s;
  for (size_t g = 0; g < groups.size(); ++g) {
    absl::StrAppendFormat(&s, "group %d %s:", int(g), group_kind_name(groups[g].kind));
    for (size_t k = 0; k < groups[g].nodes.size(); ++k)
      absl::StrAppendFormat(&s, "%s #%d %s", k ? "," : "", groups[g].nodes[k],
                            t.nodes()[size_t(groups[g].nodes[k])].op->name);
    s += "  in";
    for (ValueId v : groups[g].inputs) absl::StrAppendFormat(&s, " %%%d", v);
    s += "  out";
    for (ValueId v : groups[g].outputs) absl::StrAppendFormat(&s, " %%%d", v);
    s += "\n";
  }
  for (const NotFused& nf : not_fused)
    absl::StrAppendFormat(&s, "not fused #%d %s -> #%d %s: %s\n", nf.producer, t.nodes()[size_t(nf.producer)].op->name,
                          nf.consumer, t.nodes()[size_t(nf.consumer)].op->name, nf.reason);
  return s;
}

}  // namespace nnvm::trace
