#include "nnvm/trace/cursor.h"

#include <algorithm>

#include "nnvm/trace/signature.h"

namespace nnvm::trace {

namespace {

// Node `at` of `a` and of `b` (traces alike before it, value ids and roles
// included) are the same in a signature.
bool same_node(const Trace& a, const Trace& b, size_t at) {
  const Node &x = a.nodes()[at], &y = b.nodes()[at];
  if (x.op != y.op || x.inputs != y.inputs || x.outputs != y.outputs || !same_attrs(x, y)) return false;
  for (ValueId v : x.inputs) {
    const Value &p = a.value(v), &q = b.value(v);
    if (p.is_input() && !(q.is_input() && p.dtype == q.dtype && p.shape == q.shape && p.strides == q.strides))
      return false;
  }
  return true;
}

}  // namespace

void TraceCursor::follow(const Trace& recording) {
  if (!following_) return;
  const size_t at = recording.nodes().size() - 1;
  auto repeats = [&](const Trace* e) { return e && at < e->nodes().size() && same_node(recording, *e, at); };
  if (at > 0) {
    following_ = repeats(entry());
    return;
  }
  at_ = 0;
  while (at_ < recent_.size() && !repeats(recent_[at_].entry.get())) ++at_;
  following_ = at_ < recent_.size();
}

bool TraceCursor::repeats(size_t nodes, size_t values, size_t inputs, absl::Span<const ValueId> outputs) const {
  const Trace* e = entry();
  return following_ && e && nodes == e->nodes().size() && values == e->values().size() &&
         inputs == e->inputs().size() && e->constants().empty() && outputs == absl::MakeConstSpan(e->outputs());
}

CacheLookup TraceCursor::look_up(TraceCache& cache, const Trace& t, bool repeated) {
  size_t k = repeated ? at_ : 0;
  if (!repeated)
    while (k < recent_.size() && !(recent_[k].entry && same_signature(*recent_[k].entry, t))) ++k;
  CacheLookup found =
      k < recent_.size() ? cache.lookup(t, {recent_[k].entry.get(), recent_[k].hash}) : cache.lookup(t);
  make_latest(std::min(k, recent_.size() - 1), found);
  return found;
}

std::optional<TraceCursor::Compiled> TraceCursor::look_up_compiled(TraceCache& cache) {
  const Recent& r = recent_[at_];
  if (!r.plan || !cache.hit_compiled({r.entry.get(), r.hash})) return std::nullopt;
  to_front(at_);
  const Recent& front = recent_[0];
  return Compiled{front.plan.get(), &front.plan, front.entry.get(),
                  front.holds_entry_scalars ? absl::Span<const Scalar>() : front.entry->scalars()};
}

void TraceCursor::make_latest(size_t k, const CacheLookup& found) {
  to_front(k);
  recent_[0] = {found.entry, found.hash, found.plan,
                found.plan && found.entry && found.plan->holds_scalars(found.entry->scalars()),
                std::vector<uint64_t>(found.entry ? found.entry->inputs().size() : 0, 0), {}};
  if (found.entry)
    for (const Value& v : found.entry->values())
      recent_[0].value_bytes.push_back(size_t(numel_of(v.shape)) * itemsize(v.dtype));
}

void TraceCursor::to_front(size_t k) {
  std::rotate(recent_.begin(), recent_.begin() + ptrdiff_t(k), recent_.begin() + ptrdiff_t(k) + 1);
  at_ = 0;
}

}  // namespace nnvm::trace
