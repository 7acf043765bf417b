#include "nnvm/trace/passes/cse.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nnvm::trace {

int cse(Trace& t) {
  std::vector<ValueId> replace(t.values().size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = ValueId(v);
  std::vector<bool> keep(t.nodes().size(), true);
  absl::flat_hash_map<std::string, size_t> seen;  // canonical node text -> first node
  int removed = 0;
  for (size_t n = 0; n < t.nodes().size(); ++n) {
    const Node& node = t.nodes()[n];
    std::string key = node.op->name + "(";
    for (ValueId in : node.inputs) absl::StrAppend(&key, replace[size_t(in)], ",");
    key += ")";
    // A run-time Scalar is compared by its slot: two slots equal now may
    // differ at the next replay.
    for (size_t i = 0; i < node.attrs.size(); ++i) {
      key += ";";
      bool slotted = false;
      for (const ScalarSlot& s : node.slots)
        if (s.attr == int32_t(i) && pinned_constant(node.attrs.s(i)) < 0) {
          absl::StrAppend(&key, "$", s.slot);
          slotted = true;
        }
      if (!slotted) append_attr(key, node.attrs[i], /*with_scalar_values=*/true);
    }
    auto [it, inserted] = seen.emplace(std::move(key), n);
    if (inserted) continue;
    const Node& first = t.nodes()[it->second];
    for (size_t k = 0; k < node.outputs.size(); ++k) replace[size_t(node.outputs[k])] = first.outputs[k];
    keep[n] = false;
    ++removed;
  }
  if (removed) t.rewrite(keep, replace);
  return removed;
}

}  // namespace nnvm::trace
