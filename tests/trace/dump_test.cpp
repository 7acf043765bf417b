// NNVM_DUMP: a plan writes a Graphviz file with one cluster per fusion group
// and arena placements on the edges between groups, and a text file.
#include "nnvm/trace/dump.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_format.h"
#include "nnvm/trace/executor.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

const OpDef& op(const char* name) { return find_op(name); }

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// exp(x) feeds two reductions (so it crosses groups through the arena), a
// view, and a softmax-like chain.
Trace program() {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {16, 32}, {32, 1});
  const ValueId e = t.add_node1(op("exp"), {x});
  const ValueId s = t.add_node1(op("sum"), {e}, {DimVector{1}, true, kFloat32});
  const ValueId m = t.add_node1(op("amax"), {e}, {DimVector{1}, true});
  const ValueId y = t.add_node1(op("div"), {t.add_node1(op("add"), {e, m}, {Scalar(-1)}), s});
  t.mark_output(t.add_node1(op("transpose"), {y}, {int64_t(0), int64_t(1)}));
  return t;
}

TEST(Dump, WritesAParseableGraphAndTheTextOfThePlan) {
  const FusedPlan plan(program());
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "nnvm_dump_test";
  std::filesystem::remove_all(dir);
  plan.dump(dir.string());
  const std::string name = absl::StrFormat("plan-%016x", plan.hash());
  const std::string dot = read(dir / (name + ".dot")), text = read(dir / (name + ".txt"));
  ASSERT_FALSE(dot.empty());

  EXPECT_EQ(dot.rfind("digraph \"" + name + "\" {", 0), 0u) << dot;
  EXPECT_EQ(std::count(dot.begin(), dot.end(), '{'), std::count(dot.begin(), dot.end(), '}')) << dot;
  std::smatch m;
  size_t clusters = 0;
  for (auto it = dot.cbegin(); std::regex_search(it, dot.cend(), m, std::regex(R"(subgraph cluster_(\d+) \{)"));
       it = m.suffix().first)
    ++clusters;
  EXPECT_EQ(clusters, plan.fusion().groups.size()) << dot;
  // every node is declared once and every edge joins declared nodes
  std::set<std::string> declared;
  const std::regex decl(R"(^\s*(\w+) \[(shape|label)=)"), edge(R"re(^\s*(\w+) -> (\w+) \[label="([^"]*)"\];$)re");
  size_t edges = 0, arena_edges = 0;
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, decl)) {
      EXPECT_TRUE(declared.insert(m[1]).second) << line;
    }
    if (std::regex_match(line, m, edge)) {
      ++edges;
      EXPECT_TRUE(declared.count(m[1]) && declared.count(m[2])) << line;
      arena_edges += std::regex_search(std::string(m[3]), std::regex(R"(@\d+ \+\d+)"));
    }
  }
  size_t reads = 0;
  for (const Node& n : plan.trace().nodes()) reads += n.inputs.size();
  EXPECT_EQ(edges, reads + plan.trace().outputs().size()) << dot;
  // exp(x) reaches both reductions and the subtraction through the arena
  EXPECT_GE(arena_edges, 2u) << dot;
  EXPECT_GT(plan.arena_bytes(), 0);

  for (const char* section : {"# trace\n", "# fusion\n", "# memory\n"})
    EXPECT_NE(text.find(section), std::string::npos) << text;
  EXPECT_NE(text.find(plan.trace().to_string()), std::string::npos) << text;
  EXPECT_NE(text.find(plan.memory().to_string(plan.trace())), std::string::npos) << text;
  std::filesystem::remove_all(dir);
  testing::expect_error([&] { dump_plan("/proc/nnvm-cannot-write-here", plan); }, {"NNVM_DUMP", "cannot"});
}

}  // namespace
}  // namespace nnvm::trace
