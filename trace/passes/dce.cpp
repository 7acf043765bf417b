#include "nnvm/trace/passes/dce.h"

namespace nnvm::trace {

int dce(Trace& t) {
  std::vector<bool> live_value(t.values().size(), false), keep(t.nodes().size(), false);
  for (ValueId v : t.outputs()) live_value[size_t(v)] = true;
  for (size_t n = t.nodes().size(); n-- > 0;) {  // consumers come after producers
    const Node& node = t.nodes()[n];
    keep[n] = checks_values(t, node);  // its error must surface even when its result is unused
    for (ValueId out : node.outputs) keep[n] = keep[n] || live_value[size_t(out)];
    if (keep[n])
      for (ValueId in : node.inputs) live_value[size_t(in)] = true;
  }
  int removed = 0;
  for (bool k : keep) removed += !k;
  if (removed) {
    std::vector<ValueId> identity(t.values().size());
    for (size_t v = 0; v < identity.size(); ++v) identity[v] = ValueId(v);
    t.rewrite(keep, identity);
  }
  return removed;
}

}  // namespace nnvm::trace
