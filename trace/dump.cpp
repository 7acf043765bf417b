#include "nnvm/trace/dump.h"

#include <filesystem>

#include "absl/strings/str_format.h"
#include "nnvm/core/text_file.h"
#include "nnvm/trace/executor.h"

namespace nnvm::trace {

namespace {

std::string type_of(const Value& v) { return std::string(dtype_name(v.dtype)) + shape_str(v.shape); }

// Where value v lives, for an edge that carries it out of its group.
std::string placement(const FusedPlan& plan, ValueId v) {
  const Trace& t = plan.trace();
  const MemoryPlan& m = plan.memory();
  const Value& val = t.value(v);
  if (val.is_input()) return absl::StrFormat("%%%d input", v);
  if (val.is_constant()) return absl::StrFormat("%%%d constant", v);
  if (m.base[size_t(v)] != v) return absl::StrFormat("%%%d view of %%%d", v, m.base[size_t(v)]);
  if (m.offsets[size_t(v)] >= 0)
    return absl::StrFormat("%%%d @%d +%d", v, m.offsets[size_t(v)], m.bytes[size_t(v)]);
  return absl::StrFormat("%%%d own memory", v);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  write_text_file(path.string(), text, "NNVM_DUMP");
}

}  // namespace

std::string plan_dot(const FusedPlan& plan) {
  const Trace& t = plan.trace();
  const FusionPlan& f = plan.fusion();
  std::string s = absl::StrFormat("digraph \"plan-%016x\" {\n  node [shape=box, fontname=\"monospace\"];\n",
                                  plan.hash());
  for (const std::vector<ValueId>* external : {&t.inputs(), &t.constants()})
    for (ValueId v : *external)
      absl::StrAppendFormat(&s, "  v%d [shape=ellipse, label=\"%%%d %s %s\"];\n", v, v,
                            t.value(v).is_input() ? "input" : "constant", type_of(t.value(v)));
  for (size_t g = 0; g < f.groups.size(); ++g) {
    const GroupProgram& program = plan.program(int32_t(g));
    absl::StrAppendFormat(&s, "  subgraph cluster_%d {\n    label=\"group %d %s, %s\";\n", int(g), int(g),
                          group_kind_name(f.groups[g].kind), program.tiled() ? std::string("tiled") : program.kernel() ? program.kernel()->describe() : std::string("node by node"));
    for (int32_t n : f.groups[g].nodes) {
      const Node& node = t.nodes()[size_t(n)];
      absl::StrAppendFormat(&s, "    n%d [label=\"#%d %s\\n%s\"];\n", n, n, node.op->name,
                            type_of(t.value(node.outputs[0])));
    }
    s += "  }\n";
  }
  for (size_t n = 0; n < t.nodes().size(); ++n) {
    for (ValueId in : t.nodes()[n].inputs) {
      const int32_t p = t.value(in).node;
      const bool crosses = p < 0 || f.group_of[size_t(p)] != f.group_of[n];
      absl::StrAppendFormat(&s, "  %s%d -> n%d [label=\"%s\"];\n", p < 0 ? "v" : "n", p < 0 ? in : p, int(n),
                            crosses ? placement(plan, in) : absl::StrFormat("%%%d", in));
    }
  }
  for (size_t k = 0; k < t.outputs().size(); ++k) {
    const ValueId v = t.outputs()[k];
    const int32_t p = t.value(v).node;
    absl::StrAppendFormat(&s, "  out%d [shape=ellipse, label=\"output %d\"];\n", int(k), int(k));
    absl::StrAppendFormat(&s, "  %s%d -> out%d [label=\"%s\"];\n", p < 0 ? "v" : "n", p < 0 ? v : p, int(k),
                          placement(plan, v));
  }
  return s + "}\n";
}

void dump_plan(const std::string& dir, const FusedPlan& plan) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  NNVM_CHECK(!error, "NNVM_DUMP", "cannot create the directory ", dir, ": ", error.message());
  const std::string name = absl::StrFormat("plan-%016x", plan.hash());
  write_file(std::filesystem::path(dir) / (name + ".dot"), plan_dot(plan));
  write_file(std::filesystem::path(dir) / (name + ".txt"), plan.to_string());
}

}  // namespace nnvm::trace
