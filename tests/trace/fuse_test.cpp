// Fusion grouping: which nodes become one kernel, and why the others do not.
#include "nnvm/trace/passes/fuse.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

const OpDef& op(const char* name) { return find_op(name); }

// Each node is in exactly one group, and every edge between groups has a reason.
void expect_partition(const Trace& t, const FusionPlan& p) {
  std::vector<int> count(t.nodes().size(), 0);
  for (const FusionGroup& g : p.groups)
    for (int32_t n : g.nodes) ++count[size_t(n)];
  for (size_t n = 0; n < count.size(); ++n) EXPECT_EQ(count[n], 1) << "#" << n << "\n" << p.to_string(t);
  for (size_t n = 0; n < t.nodes().size(); ++n)
    for (ValueId in : t.nodes()[n].inputs) {
      const int32_t producer = t.value(in).node;
      if (producer < 0 || p.group_of[size_t(producer)] == p.group_of[n]) continue;
      const bool has_reason = std::any_of(p.not_fused.begin(), p.not_fused.end(), [&](const NotFused& nf) {
        return nf.producer == producer && nf.consumer == int32_t(n) && !nf.reason.empty();
      });
      EXPECT_TRUE(has_reason) << "#" << producer << " -> #" << n << "\n" << p.to_string(t);
    }
}

std::string reason(const FusionPlan& p, int32_t producer, int32_t consumer) {
  for (const NotFused& nf : p.not_fused)
    if (nf.producer == producer && nf.consumer == consumer) return nf.reason;
  return "(fused)";
}

TEST(Fuse, GeluOfAffineIsOnePointwiseGroup) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {16, 8}, {8, 1});
  const ValueId a = t.add_input(kFloat32, {8}, {1});
  const ValueId b = t.add_input(kFloat32, {16, 1}, {1, 1});
  const ValueId m = t.add_node1(op("mul"), {x, a});
  const ValueId s = t.add_node1(op("add"), {m, b}, {Scalar(1)});
  const ValueId g = t.add_node1(op("gelu"), {s});
  t.mark_output(g);
  const FusionPlan p = fuse(t);
  ASSERT_EQ(p.groups.size(), 1u) << p.to_string(t);
  EXPECT_EQ(p.groups[0].kind, GroupKind::kPointwise);
  EXPECT_EQ(p.groups[0].nodes, std::vector<int32_t>({0, 1, 2}));
  EXPECT_EQ(p.groups[0].inputs, std::vector<ValueId>({x, a, b}));
  EXPECT_EQ(p.groups[0].outputs, std::vector<ValueId>({g}));
  EXPECT_TRUE(p.not_fused.empty());
  EXPECT_NE(p.to_string(t).find("group 0 pointwise: #0 mul, #1 add, #2 gelu"), std::string::npos) << p.to_string(t);
}

TEST(Fuse, ExpFoldsIntoTheSumOverIt) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 6}, {6, 1});
  const ValueId e = t.add_node1(op("exp"), {x});
  const ValueId s = t.add_node1(op("sum"), {e}, {DimVector{1}, false, kFloat32});
  const ValueId after = t.add_node1(op("neg"), {s});  // a reduction closes its group
  t.mark_output(after);
  const FusionPlan p = fuse(t);
  ASSERT_EQ(p.groups.size(), 2u) << p.to_string(t);
  EXPECT_EQ(p.groups[0].kind, GroupKind::kReduction);
  EXPECT_EQ(p.groups[0].nodes, std::vector<int32_t>({0, 1}));
  EXPECT_EQ(p.groups[0].outputs, std::vector<ValueId>({s}));
  EXPECT_EQ(p.groups[1].kind, GroupKind::kSingle);
  EXPECT_EQ(reason(p, 1, 2), "producer's group ends in a reduction");
  expect_partition(t, p);
}

TEST(Fuse, AValueReadByTwoReductionsIsFusedIntoNeither) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 6}, {6, 1});
  const ValueId e = t.add_node1(op("exp"), {x});
  const ValueId s = t.add_node1(op("sum"), {e}, {DimVector{1}, false, kFloat32});
  const ValueId m = t.add_node1(op("amax"), {e}, {DimVector{1}, false});
  t.mark_output(s);
  t.mark_output(m);
  const FusionPlan p = fuse(t);
  expect_partition(t, p);
  ASSERT_EQ(p.groups.size(), 3u) << p.to_string(t);
  EXPECT_EQ(reason(p, 0, 1), "producer has users outside the group");
  EXPECT_EQ(reason(p, 0, 2), "producer has users outside the group");
  EXPECT_EQ(p.groups[0].outputs, std::vector<ValueId>({e}));  // written once, read by both
}

TEST(Fuse, MatmulTakesBiasAndReluAsItsEpilogue) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {8, 5}, {5, 1});
  const ValueId w = t.add_input(kFloat32, {5, 3}, {3, 1});
  const ValueId bias = t.add_input(kFloat32, {3}, {1});
  const ValueId mm = t.add_node1(op("matmul"), {x, w});
  const ValueId biased = t.add_node1(op("add"), {mm, bias}, {Scalar(1)});
  const ValueId r = t.add_node1(op("relu"), {biased});
  const ValueId v = t.add_node1(op("transpose"), {r}, {int64_t(0), int64_t(1)});
  t.mark_output(v);
  const FusionPlan p = fuse(t);
  expect_partition(t, p);
  ASSERT_EQ(p.groups.size(), 2u) << p.to_string(t);
  EXPECT_EQ(p.groups[0].kind, GroupKind::kMatmulEpilogue);
  EXPECT_EQ(p.groups[0].nodes, std::vector<int32_t>({0, 1, 2}));
  EXPECT_EQ(reason(p, 2, 3), "consumer is a view");

  // the same matmul read by two consumers keeps its output in memory
  Trace two;
  const ValueId x2 = two.add_input(kFloat32, {8, 5}, {5, 1});
  const ValueId w2 = two.add_input(kFloat32, {5, 3}, {3, 1});
  const ValueId mm2 = two.add_node1(op("matmul"), {x2, w2});
  two.mark_output(two.add_node1(op("relu"), {mm2}));
  two.mark_output(two.add_node1(op("sigmoid"), {mm2}));
  const FusionPlan p2 = fuse(two);
  expect_partition(two, p2);
  EXPECT_EQ(p2.groups.size(), 3u) << p2.to_string(two);
  EXPECT_EQ(reason(p2, 0, 1), "matmul output feeds two groups");
  EXPECT_EQ(reason(p2, 0, 2), "matmul output feeds two groups");
}

TEST(Fuse, BroadcastingUpAndCyclesStopFusion) {
  Trace t;
  const ValueId row = t.add_input(kFloat32, {6}, {1});
  const ValueId x = t.add_input(kFloat32, {4, 6}, {6, 1});
  const ValueId e = t.add_node1(op("exp"), {row});                          // #0 at [6]
  const ValueId big = t.add_node1(op("mul"), {x, e});                       // #1 broadcasts e up to [4, 6]
  const ValueId a = t.add_node1(op("neg"), {big});                          // #2 joins #1
  const ValueId s = t.add_node1(op("sum"), {big}, {DimVector{0}, false, kFloat32});  // #3 reads #1 (not folded)
  const ValueId y = t.add_node1(op("add"), {a, s}, {Scalar(1)});            // #4: a path #1 -> #3 -> #4
  t.mark_output(y);
  const FusionPlan p = fuse(t);
  expect_partition(t, p);
  EXPECT_EQ(reason(p, 0, 1), "consumer broadcasts the group's result to a larger shape") << p.to_string(t);
  EXPECT_EQ(p.group_of[1], p.group_of[2]);
  EXPECT_EQ(reason(p, 1, 3), "producer has users outside the group");
  // #4 fused with #1 would need the sum, which needs all of #1, in the middle of one kernel
  EXPECT_EQ(reason(p, 2, 4), "fusing would need a node outside the group between its members") << p.to_string(t);
  EXPECT_EQ(reason(p, 3, 4), "producer's group ends in a reduction");
}

TEST(Fuse, NoCycleThroughAnotherGroup) {
  // a1 -> view -> b2 and b1 -> view -> a2: a2 may join a1's group only if b1
  // and b2 are not one group, since a group runs as a unit
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 4}, {4, 1});
  const ValueId y = t.add_input(kFloat32, {4, 4}, {4, 1});
  const ValueId a1 = t.add_node1(op("exp"), {x});                                           // #0
  const ValueId b1 = t.add_node1(op("sin"), {y});                                           // #1
  const ValueId v1 = t.add_node1(op("transpose"), {a1}, {int64_t(0), int64_t(1)});          // #2
  const ValueId b2 = t.add_node1(op("mul"), {b1, v1});                                      // #3 joins b1
  const ValueId v2 = t.add_node1(op("transpose"), {b1}, {int64_t(0), int64_t(1)});          // #4
  const ValueId a2 = t.add_node1(op("add"), {a1, v2}, {Scalar(1)});                         // #5
  t.mark_output(b2);
  t.mark_output(a2);
  const FusionPlan p = fuse(t);
  expect_partition(t, p);
  EXPECT_EQ(p.group_of[1], p.group_of[3]) << p.to_string(t);
  EXPECT_NE(p.group_of[0], p.group_of[5]) << p.to_string(t);
  EXPECT_EQ(reason(p, 0, 5), "fusing would need a node outside the group between its members") << p.to_string(t);
}

}  // namespace
}  // namespace nnvm::trace
