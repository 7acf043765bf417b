// The recorder's cursor (docs/TRACE.md "What happens to one op"): the cache
// entries of a thread's last few flushes, and which of them the trace being
// recorded repeats so far. While it repeats one node for node, that entry
// says what each op's outputs are (no shape inference), and a flush of a
// trace that repeats it whole has its signature (no hashing, no comparison).
//
// A node repeats the entry's when it has the same op, attributes (Scalars by
// kind and pinned constant), input value ids and, for trace inputs, dtype,
// shape and strides: value ids coincide while the nodes do, so equal ids mean
// equal roles. Taking the entry's outputs needs Scalar values bit for bit
// too (an op's inference may read them).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "nnvm/trace/signature.h"
#include "nnvm/trace/trace_cache.h"

namespace nnvm::trace {

class TraceCursor {
 public:
  static constexpr size_t kRecent = 4;
  // Node `at` of recent entry k when the op has its op, its attributes
  // (Scalars bit for bit) and as many inputs: the node the op repeats if its
  // inputs have the node's value ids (the recorder checks those). Null
  // otherwise, when k holds no entry, or when the cursor has stopped
  // following. At the trace's first node any recent entry is a candidate;
  // after it, only the one followed (`followed()`).
  const Node* node_like(size_t k, size_t at, const OpDef& op, size_t inputs, const Attrs& attrs) const {
    if (!following_ || k >= recent_.size() || !recent_[k].entry) return nullptr;
    const std::vector<Node>& nodes = recent_[k].entry->nodes();
    if (at >= nodes.size()) return nullptr;
    const Node& n = nodes[at];
    if (n.op != &op || n.inputs.size() != inputs || n.attrs.size() != attrs.size()) return nullptr;
    for (size_t a = 0; a < attrs.size(); ++a)
      if (!identical_attr(n.attrs[a], attrs[a])) return nullptr;
    return &n;
  }
  const Trace& recent(size_t k) const { return *recent_[k].entry; }
  // Whether the TensorImpl whose layout_id is `layout` was found to have the
  // layout of recent entry k's trace input `input` (by position), and so
  // has it still: a layout_id names one layout for good.
  bool known_layout(size_t k, int32_t input, uint64_t layout) const {
    NNVM_DCHECK(size_t(input) < recent_[k].input_layouts.size());
    return recent_[k].input_layouts[size_t(input)] == layout;
  }
  void set_known_layout(size_t k, int32_t input, uint64_t layout) {
    recent_[k].input_layouts[size_t(input)] = layout;
  }
  size_t followed() const { return at_; }
  // The size in bytes of value v of the entry followed (an op it gives the
  // outputs of has them at the entry's value ids).
  size_t value_bytes(ValueId v) const { return recent_[at_].value_bytes[size_t(v)]; }
  // The trace's first op repeats recent entry k's first node: the cursor follows k.
  void choose(size_t k) { at_ = k; }
  // After any node is appended to `recording`: whether it still repeats the
  // entry (at the first node, whether it repeats any recent entry).
  void follow(const Trace& recording);
  bool following() const { return following_; }
  // The entry it follows, or null.
  const Trace* entry() const { return at_ < recent_.size() ? recent_[at_].entry.get() : nullptr; }
  // Whether a recording of `nodes` nodes, `values` values and `inputs`
  // inputs, with these outputs, repeats the entry whole (built or not).
  bool repeats(size_t nodes, size_t values, size_t inputs, absl::Span<const ValueId> outputs) const;

  // The cache entry of a flushed trace t (`repeated`: repeats(t) held),
  // through the recent entries: a program that repeats a few traces skips
  // hashing them. Makes it the latest entry.
  CacheLookup look_up(TraceCache& cache, const Trace& t, bool repeated);
  // The compiled plan of the entry a recording repeats whole, and the entry,
  // counted as a cache hit, without the recording's trace: nullopt when the
  // entry is no longer cached or was not compiled when the cursor last looked
  // it up (look_up needs the trace then). Both stay alive until the next
  // lookup.
  struct Compiled {
    const Plan* plan;
    const std::shared_ptr<const Plan>* owner;  // the cursor's handle on `plan`
    const Trace* entry;
    // What the plan runs with: the entry's Scalars, or none when the plan
    // holds them already (Plan::holds_scalars) and binds nothing.
    absl::Span<const Scalar> scalars;
  };
  std::optional<Compiled> look_up_compiled(TraceCache& cache);
  // A new trace starts (after a flush).
  void restart() {
    following_ = true;
    at_ = recent_.size();
  }

 private:
  // Makes recent_[k] the latest entry, now `found`'s.
  void make_latest(size_t k, const CacheLookup& found);
  // Moves recent_[k] to the front, the others after it in their order; the cursor follows it.
  void to_front(size_t k);

  // The same attribute, a Scalar's value included (bit for bit).
  static bool identical_attr(const AttrValue& a, const AttrValue& b) {
    const Scalar* x = std::get_if<Scalar>(&a);
    const Scalar* y = std::get_if<Scalar>(&b);
    return x && y ? identical(*x, *y) : same_attr(a, b);
  }

  struct Recent {
    std::shared_ptr<const Trace> entry;  // a cache entry's trace, kept alive: its address identifies it
    uint64_t hash = 0;
    std::shared_ptr<const Plan> plan;  // its compiled plan, once a lookup found one
    bool holds_entry_scalars = false;  // plan->holds_scalars(entry->scalars())
    // Per trace input of the entry: the layout_id of the last tensor found
    // to have its layout (0: none). Sized with the entry (make_latest).
    std::vector<uint64_t> input_layouts;
    std::vector<size_t> value_bytes;  // per value of the entry (value_bytes())
  };
  std::array<Recent, kRecent> recent_;  // the latest first
  size_t at_ = recent_.size();    // the entry followed (recent_.size(): none chosen yet)
  bool following_ = true;         // the trace being recorded repeats it so far
};

}  // namespace nnvm::trace
