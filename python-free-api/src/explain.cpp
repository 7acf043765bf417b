#include "nnvm/explain.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/error.h"
#include "nnvm/trace/passes/fuse.h"
#include "nnvm/trace/pipeline.h"
#include "nnvm/trace/recorder.h"
#include "nnvm/trace/signature.h"

namespace nnvm {

namespace {

std::shared_ptr<const trace::Trace> cached_trace(uint64_t signature, const char* op) {
  std::shared_ptr<const trace::Trace> t = trace::global_trace_cache().entry_trace(signature);
  NNVM_CHECK(t != nullptr, op, "the trace cache holds no signature ", absl::StrFormat("%016x", signature),
             " (expected a hash the cache statistics name, still cached)");
  return t;
}

}  // namespace

std::string TraceExplanation::text() const {
  if (differences.empty()) return "same signature\n";
  std::string s;
  for (const TraceDifference& d : differences) absl::StrAppend(&s, d.where, ": ", d.before, " -> ", d.after, "\n");
  return s;
}

TraceExplanation explain(const trace::Trace& a, const trace::Trace& b) {
  TraceExplanation e;
  for (trace::SignatureDifference& d : trace::signature_differences(a, b))
    e.differences.push_back({std::move(d.where), std::move(d.before), std::move(d.after)});
  return e;
}

TraceExplanation explain(uint64_t signature_a, uint64_t signature_b) {
  return explain(*cached_trace(signature_a, "explain"), *cached_trace(signature_b, "explain"));
}

std::string FusionReport::text() const {
  std::string s = absl::StrCat(nodes, " nodes in ", groups, " groups\n");
  for (const FusionRefusal& r : refused)
    absl::StrAppend(&s, "#", r.producer, " ", r.producer_op, " -> #", r.consumer, " ", r.consumer_op, ": ", r.reason,
                    "\n");
  return s;
}

FusionReport why_not_fused(const trace::Trace& t) {
  const trace::Trace optimised = trace::optimise(t);
  const trace::FusionPlan fusion = trace::fuse(optimised);
  FusionReport r;
  r.nodes = int64_t(optimised.nodes().size());
  r.groups = int64_t(fusion.groups.size());
  for (const trace::NotFused& n : fusion.not_fused)
    r.refused.push_back({n.producer, n.consumer, optimised.nodes()[size_t(n.producer)].op->name,
                         optimised.nodes()[size_t(n.consumer)].op->name, n.reason});
  return r;
}

FusionReport why_not_fused(uint64_t signature) { return why_not_fused(*cached_trace(signature, "why_not_fused")); }

}  // namespace nnvm
