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
  return !val.is_input() && t.nodes()[size_t(val.node)].op->view != nullptr;
}

// Why node `n` may not write output `out` over input `in`; empty when it may.
std::string why_not_in_place(const Trace& t, const MemoryPlan& p, int32_t n, ValueId in, ValueId out) {
  const Node& node = t.nodes()[size_t(n)];
  if (t.value(in).is_input()) return absl::StrFormat("%%%d is a trace input", in);
  if (p.base[size_t(in)] != in) return absl::StrFormat("%%%d is a view", in);
  if (p.live[size_t(in)].last != n) return absl::StrFormat("%%%d is read later", in);
  if (p.bytes[size_t(in)] != p.bytes[size_t(out)] || t.value(in).shape != t.value(out).shape)
    return absl::StrFormat("%%%d has another size", in);
  for (ValueId other : node.inputs)  // a view of `in` read at other positions would see overwritten elements
    if (other != in && p.base[size_t(other)] == in) return absl::StrFormat("%%%d is also read through a view", in);
  return "";
}

}  // namespace

MemoryPlan plan_memory(const Trace& t) {
  const size_t nv = t.values().size();
  const int32_t end = int32_t(t.nodes().size());
  MemoryPlan p;
  p.offsets.assign(nv, -1);
  p.bytes.assign(nv, 0);
  p.base.resize(nv);
  p.live.resize(nv);

  // Liveness; nodes are in topological order, so a view's base is known before the view.
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = t.value(ValueId(v));
    p.base[v] = ValueId(v);
    p.live[v] = {val.node, val.node};
    if (is_view_output(t, ValueId(v))) p.base[v] = p.base[size_t(t.nodes()[size_t(val.node)].inputs[0])];
    else if (!val.is_input()) p.bytes[v] = aligned_bytes(val);
  }
  auto read_at = [&](ValueId v, int32_t n) {
    LiveRange& r = p.live[size_t(p.base[size_t(v)])];
    r.last = std::max(r.last, n);
  };
  for (int32_t n = 0; n < end; ++n)
    for (ValueId in : t.nodes()[size_t(n)].inputs) read_at(in, n);
  for (ValueId out : t.outputs()) read_at(out, end);
  for (size_t v = 0; v < nv; ++v) p.live[v] = p.live[size_t(p.base[v])];

  // In-place pairs merge two values into one buffer (union-find over values).
  std::vector<ValueId> buffer(nv);
  std::iota(buffer.begin(), buffer.end(), 0);
  auto find = [&](ValueId v) {
    while (buffer[size_t(v)] != v) v = buffer[size_t(v)];
    return v;
  };
  std::vector<bool> claimed(nv, false);  // an input already taken by another output of its node
  for (int32_t n = 0; n < end; ++n) {
    const Node& node = t.nodes()[size_t(n)];
    if (!node.op->elementwise) continue;
    for (ValueId out : node.outputs) {
      std::string reason = "no inputs";
      for (ValueId in : node.inputs) {
        reason = claimed[size_t(in)] ? absl::StrFormat("%%%d is taken by another output", in)
                                     : why_not_in_place(t, p, n, in, out);
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
  for (size_t v = 0; v < nv; ++v) {
    if (p.base[v] != ValueId(v) || t.value(ValueId(v)).is_input()) continue;
    p.naive_bytes += p.bytes[v];
    const ValueId b = find(ValueId(v));
    if (b == ValueId(v)) {
      buffer_live[v] = p.live[v];
      buffers.push_back(b);
    }
  }
  for (size_t v = 0; v < nv; ++v) {
    if (p.base[v] != ValueId(v) || t.value(ValueId(v)).is_input()) continue;
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
    if (p.base[v] == ValueId(v) && !t.value(ValueId(v)).is_input()) p.offsets[v] = buffer_offset[size_t(find(ValueId(v)))];

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
    if (val.is_input()) continue;
    const std::string op = t.nodes()[size_t(val.node)].op->name;
    if (base[v] != ValueId(v)) {
      absl::StrAppendFormat(&s, "  %%%d %s  view of %%%d\n", int(v), op, base[v]);
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
