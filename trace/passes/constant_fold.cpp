#include "nnvm/trace/passes/constant_fold.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "nnvm/core/autograd.h"

namespace nnvm::trace {

namespace {

// Ops whose result is a fresh draw each run.
bool is_random(const OpDef& op) {
  static const absl::flat_hash_set<std::string> names = {"uniform", "normal", "randint", "bernoulli", "dropout"};
  return names.contains(op.name);
}

int64_t numel_of_value(const Value& v) { return numel_of(v.shape); }

}  // namespace

std::string FoldReport::to_string() const {
  std::string s;
  for (const FoldDecision& d : decisions)
    absl::StrAppend(&s, "node ", d.node, " (", d.op, "): ", d.folded ? "folded" : "kept: " + d.reason, "\n");
  return s;
}

int constant_fold(Trace& t, FoldReport* report) {
  // Rebuilt in order: constants stay tensors here until a kept node (or an
  // output) needs them, so a folded chain leaves only its last value behind.
  Trace out;
  out.copy_scalars_from(t);
  std::vector<std::optional<Tensor>> known(t.values().size());
  std::vector<ValueId> mapped(t.values().size(), -1);
  for (ValueId v : t.inputs()) {
    const Value& in = t.value(v);
    mapped[size_t(v)] = out.add_input(in.dtype, in.shape, in.strides);
  }
  for (ValueId v : t.constants()) known[size_t(v)] = t.constant_value(v);
  auto use = [&](ValueId v) {
    if (mapped[size_t(v)] < 0) mapped[size_t(v)] = out.add_constant(*known[size_t(v)]);
    return mapped[size_t(v)];
  };
  NoGradGuard no_grad;
  int folded = 0;
  for (size_t n = 0; n < t.nodes().size(); ++n) {
    const Node& node = t.nodes()[n];
    bool all_constant = true;
    for (ValueId in : node.inputs) all_constant = all_constant && known[size_t(in)].has_value();
    std::string why_not;
    if (all_constant) {
      int64_t elements = 0;
      for (ValueId v : node.outputs) elements += numel_of_value(t.value(v));
      if (is_random(*node.op))
        why_not = "random: each run draws anew";
      else if (std::any_of(node.slots.begin(), node.slots.end(),
                           [&](const ScalarSlot& s) { return !scalar_is_known(node, size_t(s.attr)); }))
        why_not = "reads a run-time Scalar: a folded value would be stale at the next replay";
      else if (!node.op->view && elements > kMaxFoldedElements)
        why_not = absl::StrCat(elements, " elements is over the limit of ", kMaxFoldedElements);
    }
    if (all_constant && report) report->decisions.push_back({n, node.op->name, why_not.empty(), why_not});
    if (all_constant && why_not.empty()) {
      std::vector<Tensor> args;
      for (ValueId in : node.inputs) args.push_back(*known[size_t(in)]);
      std::vector<Tensor> results = call(*node.op, args, node.attrs);
      for (size_t k = 0; k < node.outputs.size(); ++k) known[size_t(node.outputs[k])] = std::move(results[k]);
      ++folded;
      continue;
    }
    std::vector<ValueId> inputs;
    for (ValueId in : node.inputs) inputs.push_back(use(in));
    const std::vector<ValueId> outs = out.copy_node(node, inputs);
    for (size_t k = 0; k < outs.size(); ++k) mapped[size_t(node.outputs[k])] = outs[k];
  }
  for (ValueId v : t.outputs()) out.mark_output(use(v));
  if (folded) t = std::move(out);
  return folded;
}

}  // namespace nnvm::trace
