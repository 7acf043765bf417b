#include "nnvm/trace/passes/plan_memory.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_format.h"

namespace nnvm::trace {
namespace {

int64_t aligned_bytes(const Value& v) {
  const int64_t raw = numel_of(v.shape) * int64_t(itemsize(v.dtype));
  return (raw + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool is_view_output(const Trace& t, ValueId v) {
  const Value& val = t.value(v);
  return val.node >= 0 && t.nodes()[size_t(val.node)].op->view != nullptr;
}

// Defined before every node and owned by the caller or the trace.
bool is_external(const Value& v) { return v.is_input() || v.is_constant(); }

// The steps of a trace and the order of reads within them.
struct Steps {
  std::vector<int32_t> of_node;
  std::vector<std::vector<int32_t>> nodes;  // per step, in trace order
  int32_t count = 0;
};

Steps steps_of(const Trace& t, const Schedule* schedule) {
  Steps s;
  s.of_node.resize(t.nodes().size());
  for (size_t n = 0; n < t.nodes().size(); ++n) {
    s.of_node[n] = schedule ? schedule->step[n] : int32_t(n);
    s.count = std::max(s.count, s.of_node[n] + 1);
  }
  s.nodes.resize(size_t(s.count));
  for (size_t n = 0; n < t.nodes().size(); ++n) s.nodes[size_t(s.of_node[n])].push_back(int32_t(n));
  return s;
}

// Why node `n` may not write output `out` over input `in`; empty when it may.
// `last_node[b]` is the last node (in its step) reading buffer b or a view of it.
std::string why_not_in_place(const Trace& t, const MemoryPlan& p, const Steps& steps,
                             const std::vector<int32_t>& last_node, int32_t n, ValueId in, ValueId out) {
  if (t.value(in).is_input()) return absl::StrFormat("%%%d is a trace input", in);
  if (t.value(in).is_constant()) return absl::StrFormat("%%%d is a constant", in);
  if (p.base[size_t(in)] != in) return absl::StrFormat("%%%d is a view", in);
  if (p.bytes[size_t(in)] == 0) return absl::StrFormat("%%%d has no bytes in the arena", in);
  const int32_t step = steps.of_node[size_t(n)];
  if (p.live[size_t(in)].last != step || last_node[size_t(in)] != n) return absl::StrFormat("%%%d is read later", in);
  if (p.bytes[size_t(in)] != p.bytes[size_t(out)] || t.value(in).shape != t.value(out).shape)
    return absl::StrFormat("%%%d has another size", in);
  // element i written over a narrower input would clobber elements not yet read
  if (itemsize(t.value(in).dtype) != itemsize(t.value(out).dtype))
    return absl::StrFormat("%%%d has another element size", in);
  // a view of `in` read in the step would see overwritten elements
  for (int32_t m : steps.nodes[size_t(step)])
    for (ValueId other : t.nodes()[size_t(m)].inputs)
      if (other != in && p.base[size_t(other)] == in) return absl::StrFormat("%%%d is also read through a view", in);
  return "";
}

}  // namespace

MemoryPlan plan_memory(const Trace& t, const Schedule* schedule) {
  const size_t nv = t.values().size();
  const Steps steps = steps_of(t, schedule);
  const int32_t end = steps.count;
  MemoryPlan p;
  p.offsets.assign(nv, -1);
  p.bytes.assign(nv, 0);
  p.base.resize(nv);
  p.live.resize(nv);

  // Liveness; nodes are in topological order, so a view's base is known before the view.
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = t.value(ValueId(v));
    p.base[v] = ValueId(v);
    const int32_t defined = is_external(val) ? -1 : steps.of_node[size_t(val.node)];
    p.live[v] = {defined, defined};
    if (is_view_output(t, ValueId(v))) p.base[v] = p.base[size_t(t.nodes()[size_t(val.node)].inputs[0])];
    else if (!is_external(val) && (!schedule || schedule->in_arena[v])) p.bytes[v] = aligned_bytes(val);
  }
  std::vector<int32_t> last_node(nv, -1);  // of the last step reading the buffer
  auto read_at = [&](ValueId v, int32_t step, int32_t n) {
    const ValueId b = p.base[size_t(v)];
    LiveRange& r = p.live[size_t(b)];
    if (step > r.last) last_node[size_t(b)] = -1;
    if (step >= r.last) last_node[size_t(b)] = std::max(last_node[size_t(b)], n);
    r.last = std::max(r.last, step);
  };
  for (int32_t n = 0; n < int32_t(t.nodes().size()); ++n)
    for (ValueId in : t.nodes()[size_t(n)].inputs) read_at(in, steps.of_node[size_t(n)], n);
  for (ValueId out : t.outputs()) read_at(out, end, int32_t(t.nodes().size()));
  for (size_t v = 0; v < nv; ++v) p.live[v] = p.live[size_t(p.base[v])];

  // In-place pairs merge two values into one buffer (union-find over values).
  std::vector<ValueId> buffer(nv);
  std::iota(buffer.begin(), buffer.end(), 0);
  auto find = [&](ValueId v) {
    while (buffer[size_t(v)] != v) v = buffer[size_t(v)];
    return v;
  };
  std::vector<bool> claimed(nv, false);  // an input already taken by another output of its node
  for (int32_t n = 0; n < int32_t(t.nodes().size()); ++n) {
    const Node& node = t.nodes()[size_t(n)];
    if (!node.op->elementwise) continue;
    for (ValueId out : node.outputs) {
      if (p.bytes[size_t(out)] == 0) continue;
      std::string reason = "no inputs";
      for (ValueId in : node.inputs) {
        reason = claimed[size_t(in)] ? absl::StrFormat("%%%d is taken by another output", in)
                                     : why_not_in_place(t, p, steps, last_node, n, in, out);
        if (!reason.empty()) continue;
        claimed[size_t(in)] = true;
        buffer[size_t(out)] = find(in);
        p.in_place.push_back({n, in, out});
        break;
      }
      if (!reason.empty()) p.not_in_place.push_back({out, reason});
    }
  }

  // A buffer's life is the union of its values' lives.
  std::vector<LiveRange> buffer_live(nv);
  std::vector<ValueId> buffers;
  auto placed_value = [&](size_t v) { return p.base[v] == ValueId(v) && p.bytes[v] > 0; };
  for (size_t v = 0; v < nv; ++v) {
    if (!placed_value(v)) continue;
    p.naive_bytes += p.bytes[v];
    const ValueId b = find(ValueId(v));
    if (b == ValueId(v)) {
      buffer_live[v] = p.live[v];
      buffers.push_back(b);
    }
  }
  for (size_t v = 0; v < nv; ++v) {
    if (!placed_value(v)) continue;
    LiveRange& r = buffer_live[size_t(find(ValueId(v)))];
    r.first = std::min(r.first, p.live[v].first);
    r.last = std::max(r.last, p.live[v].last);
  }

  // Greedy by size, best fit. Ties go to the earlier definition so the plan is canonical.
  std::stable_sort(buffers.begin(), buffers.end(), [&](ValueId a, ValueId b) {
    return p.bytes[size_t(a)] > p.bytes[size_t(b)];
  });
  std::vector<ValueId> placed;
  std::vector<int64_t> buffer_offset(nv, -1);
  for (ValueId b : buffers) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of buffers live at the same time
    for (ValueId o : placed)
      if (buffer_live[size_t(o)].overlaps(buffer_live[size_t(b)]))
        busy.push_back({buffer_offset[size_t(o)], buffer_offset[size_t(o)] + p.bytes[size_t(o)]});
    std::sort(busy.begin(), busy.end());
    const int64_t size = p.bytes[size_t(b)];
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const auto& [begin, stop] : busy) {
      const int64_t gap = begin - cursor;
      if (gap >= size && gap < best_gap) best = cursor, best_gap = gap;
      cursor = std::max(cursor, stop);
    }
    buffer_offset[size_t(b)] = best >= 0 ? best : cursor;
    p.arena_bytes = std::max(p.arena_bytes, buffer_offset[size_t(b)] + size);
    placed.push_back(b);
  }
  for (size_t v = 0; v < nv; ++v)
    if (placed_value(v)) p.offsets[v] = buffer_offset[size_t(find(ValueId(v)))];

  // Buffers whose bytes no other buffer reuses, and why.
  for (ValueId b : buffers) {
    if (p.bytes[size_t(b)] == 0) continue;
    const int64_t begin = buffer_offset[size_t(b)], stop = begin + p.bytes[size_t(b)];
    bool shares = false, any_dead = false;
    int64_t largest_dead = 0;
    for (ValueId o : buffers) {
      if (o == b || buffer_live[size_t(o)].overlaps(buffer_live[size_t(b)])) continue;
      any_dead = true;
      largest_dead = std::max(largest_dead, p.bytes[size_t(o)]);
      const int64_t ob = buffer_offset[size_t(o)];
      shares = shares || (ob < stop && begin < ob + p.bytes[size_t(o)]);
    }
    if (shares) continue;
    std::string reason;
    if (!any_dead) reason = "live while every other intermediate is";
    else if (largest_dead < p.bytes[size_t(b)])
      reason = absl::StrFormat("needs %d bytes; the largest value dead during its life has %d", p.bytes[size_t(b)],
                               largest_dead);
    else reason = "the space of values dead during its life is held by values placed first (larger ones)";
    p.not_reused.push_back({b, reason});
  }
  return p;
}

std::string MemoryPlan::to_string(const Trace& t) const {
  std::string s = absl::StrFormat("arena %d bytes (naive %d bytes, %d in place)\n", arena_bytes, naive_bytes,
                                  int(in_place.size()));
  for (size_t v = 0; v < offsets.size(); ++v) {
    const Value& val = t.value(ValueId(v));
    if (is_external(val)) continue;
    const std::string op = t.nodes()[size_t(val.node)].op->name;
    if (base[v] != ValueId(v)) {
      absl::StrAppendFormat(&s, "  %%%d %s  view of %%%d\n", int(v), op, base[v]);
      continue;
    }
    if (offsets[v] < 0) {
      absl::StrAppendFormat(&s, "  %%%d %s  not in the arena\n", int(v), op);
      continue;
    }
    absl::StrAppendFormat(&s, "  %%%d %s  @%d +%d live [%d, %d]", int(v), op, offsets[v], bytes[v], live[v].first,
                          live[v].last);
    for (const InPlace& ip : in_place)
      if (ip.output == ValueId(v)) absl::StrAppendFormat(&s, "  in place of %%%d", ip.input);
    s += "\n";
  }
  for (const Decline& d : not_in_place) absl::StrAppendFormat(&s, "  not in place %%%d: %s\n", d.value, d.reason);
  for (const Decline& d : not_reused) absl::StrAppendFormat(&s, "  not reused %%%d: %s\n", d.value, d.reason);
  return s;
}

}  // namespace nnvm::trace
