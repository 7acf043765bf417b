// nnvm::explain and nnvm::why_not_fused (nnvm/explain.h): every field where
// two signatures differ, and every edge fusion refused, as data and text,
// by the hashes the cache statistics name or by traces.
#include "nnvm/explain.h"

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "nnvm/trace/ir.h"
#include "reference.h"

namespace nnvm {
namespace {

using trace::Trace;
using trace::ValueId;

// tanh(exp(x) * 2 + 1) over [rows, 3], its row sums: one trace, new to the
// cache (no other test runs it); returns its signature's hash.
uint64_t run_rows(int64_t rows) {
  const int64_t misses = cache_stats().trace.misses;
  const Mode previous = mode();
  set_mode(Mode::Eager);
  const Tensor x = testing::random({rows, 3}, kFloat32, 7);
  set_mode(Mode::Traced);
  const Tensor y = ((x.exp() * 2.0 + 1.0).tanh()).sum(1);
  mark_step();
  set_mode(previous);
  const TraceCacheStats after = cache_stats().trace;
  EXPECT_EQ(after.misses, misses + 1);
  return after.recent_misses.back().hash;
}

TEST(Explain, NamesEveryFieldThatDiffersBetweenCachedSignatures) {
  const uint64_t a = run_rows(4), b = run_rows(6);
  ASSERT_NE(a, b);
  const TraceExplanation e = explain(a, b);
  ASSERT_FALSE(e.differences.empty());
  EXPECT_EQ(e.differences[0].where, "input 0 shape");
  EXPECT_EQ(e.differences[0].before, "[4, 3]");
  EXPECT_EQ(e.differences[0].after, "[6, 3]");
  EXPECT_NE(e.text().find("input 0 shape: [4, 3] -> [6, 3]\n"), std::string::npos) << e.text();
  EXPECT_EQ(explain(a, a).text(), "same signature\n");
  try {
    explain(a, 0x1234);
    FAIL() << "expected nnvm::Error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("holds no signature 0000000000001234"), std::string::npos) << err.what();
  }
}

TEST(Explain, ListsAllDifferencesNotOnlyTheFirst) {
  auto program = [](int64_t rows, DType dtype, int64_t dim) {
    Trace t;
    const ValueId x = t.add_input(dtype, {rows, 3}, {3, 1});
    t.mark_output(t.add_node1(find_op("sum"), {t.add_node1(find_op("exp"), {x})}, {DimVector{dim}, false, dtype}));
    return t;
  };
  const TraceExplanation e = explain(program(4, kFloat32, 1), program(5, kFloat64, 0));
  std::vector<std::string> where;
  for (const TraceDifference& d : e.differences) where.push_back(d.where);
  EXPECT_EQ(where, (std::vector<std::string>{"input 0 dtype", "input 0 shape", "node 1 (sum) attribute 0",
                                             "node 1 (sum) attribute 2"}))
      << e.text();
  EXPECT_EQ(e.differences[2].before, "[1]");
  EXPECT_EQ(e.differences[2].after, "[0]");
}

TEST(WhyNotFused, ListsEachRefusedEdgeWithItsReason) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 6}, {6, 1});
  const ValueId e = t.add_node1(find_op("exp"), {x});
  const ValueId v = t.add_node1(find_op("view"), {e}, {DimVector{24}});
  t.mark_output(t.add_node1(find_op("sin"), {v}));
  const FusionReport r = why_not_fused(t);
  EXPECT_EQ(r.nodes, 3);
  EXPECT_EQ(r.groups, 3);
  ASSERT_EQ(r.refused.size(), 2u);
  EXPECT_EQ(r.refused[0].producer_op, "exp");
  EXPECT_EQ(r.refused[0].consumer_op, "view");
  EXPECT_EQ(r.refused[0].reason, "consumer is a view");
  EXPECT_EQ(r.refused[1].reason, "producer is a view");
  EXPECT_NE(r.text().find("#0 exp -> #1 view: consumer is a view\n"), std::string::npos) << r.text();
  // by a cached signature: the elementwise chain fuses whole, the sum closes it
  const FusionReport cached = why_not_fused(run_rows(5));
  EXPECT_EQ(cached.groups, 1) << cached.text();
  EXPECT_TRUE(cached.refused.empty()) << cached.text();
  EXPECT_THROW(why_not_fused(uint64_t(0x1234)), Error);
}

}  // namespace
}  // namespace nnvm
