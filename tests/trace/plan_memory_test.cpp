// Memory planning: liveness, placement without overlap, in-place reuse.
#include "nnvm/trace/passes/plan_memory.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

const OpDef& op(const char* name) { return find_op(name); }

bool is_in_place_pair(const MemoryPlan& p, ValueId a, ValueId b) {
  for (const MemoryPlan::InPlace& ip : p.in_place)
    if ((ip.input == a && ip.output == b) || (ip.input == b && ip.output == a)) return true;
  return false;
}

// Every pair of arena values live at the same time occupies disjoint bytes,
// except an in-place pair (which shares exactly the node where one dies and the other is born).
void expect_no_overlap(const Trace& t, const MemoryPlan& p) {
  for (size_t a = 0; a < p.offsets.size(); ++a) {
    if (p.offsets[a] < 0) continue;
    EXPECT_EQ(p.offsets[a] % kArenaAlignment, 0) << "%" << a;
    EXPECT_LE(p.offsets[a] + p.bytes[a], p.arena_bytes) << "%" << a;
    for (size_t b = a + 1; b < p.offsets.size(); ++b) {
      if (p.offsets[b] < 0 || !p.live[a].overlaps(p.live[b])) continue;
      if (is_in_place_pair(p, ValueId(a), ValueId(b))) continue;
      const bool disjoint = p.offsets[a] + p.bytes[a] <= p.offsets[b] || p.offsets[b] + p.bytes[b] <= p.offsets[a];
      EXPECT_TRUE(disjoint) << "%" << a << " and %" << b << " overlap\n" << p.to_string(t);
    }
  }
}

TEST(PlanMemory, ChainOfTenPointwiseOpsNeedsAtMostTwoBuffers) {
  Trace t;
  const int64_t n = 1 << 20;
  ValueId v = t.add_input(kFloat32, {n}, {1});
  const char* ops[] = {"exp", "neg", "sin", "cos", "abs", "relu", "sqrt", "log1p", "tanh", "sigmoid"};
  for (const char* name : ops) v = t.add_node1(op(name), {v});
  t.mark_output(v);
  const MemoryPlan p = plan_memory(t);
  const int64_t one = n * 4;
  EXPECT_EQ(p.naive_bytes, 10 * one);
  EXPECT_LE(p.arena_bytes, 2 * one) << p.to_string(t);
  EXPECT_EQ(p.in_place.size(), 9u) << p.to_string(t);  // all but the first, which reads a trace input
  ASSERT_EQ(p.not_in_place.size(), 1u);
  EXPECT_NE(p.not_in_place[0].reason.find("trace input"), std::string::npos);
  expect_no_overlap(t, p);
}

TEST(PlanMemory, InPlaceOnlyOverAnInputThatDiesWithTheSameSize) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {8, 16}, {16, 1});
  const ValueId row = t.add_input(kFloat32, {16}, {1});
  const ValueId a = t.add_node1(op("exp"), {x});
  const ValueId b = t.add_node1(op("neg"), {a});        // a dies here: b goes over it
  const ValueId c = t.add_node1(op("sin"), {b});        // b is read again below: c needs its own bytes
  const ValueId d = t.add_node1(op("add"), {c, b}, {Scalar(1)});
  const ValueId r = t.add_node1(op("exp"), {row});
  const ValueId e = t.add_node1(op("mul"), {r, d});     // r is smaller than e: not in place of r
  t.mark_output(e);
  const MemoryPlan p = plan_memory(t);
  const std::string text = p.to_string(t);
  EXPECT_TRUE(is_in_place_pair(p, a, b)) << text;
  EXPECT_FALSE(is_in_place_pair(p, b, c)) << text;
  EXPECT_EQ(p.offsets[size_t(a)], p.offsets[size_t(b)]);
  auto reason_for = [&](ValueId v) {
    for (const MemoryPlan::Decline& dcl : p.not_in_place)
      if (dcl.value == v) return dcl.reason;
    return std::string("(none)");
  };
  EXPECT_NE(reason_for(c).find("read later"), std::string::npos) << text;
  EXPECT_TRUE(is_in_place_pair(p, d, e)) << text;  // d dies at e with the same size
  EXPECT_FALSE(is_in_place_pair(p, r, e)) << text;
  EXPECT_NE(text.find("in place of %2"), std::string::npos) << text;
  expect_no_overlap(t, p);
}

// A bool mask of 15 elements and a float result of 15 take the same aligned
// bytes, but writing float i over the mask clobbers mask bytes 4i..4i+3 not
// yet read: the result never goes over the mask.
TEST(PlanMemory, NotInPlaceOverAnInputWithAnotherElementSize) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {3, 5}, {5, 1});
  const ValueId y = t.add_input(kFloat32, {3, 5}, {5, 1});
  const ValueId mask = t.add_node1(op("logical_not"), {t.add_node1(op("gt"), {x, y})});
  const ValueId z = t.add_node1(op("exp"), {x});
  const ValueId out = t.add_node1(op("masked_fill"), {z, mask}, {Scalar(0)});
  t.mark_output(t.add_node1(op("mul"), {out, z}));  // z is read later: the mask is the only candidate
  const MemoryPlan p = plan_memory(t);
  ASSERT_EQ(p.bytes[size_t(mask)], p.bytes[size_t(out)]);
  EXPECT_FALSE(is_in_place_pair(p, mask, out)) << p.to_string(t);
  bool said = false;
  for (const MemoryPlan::Decline& d : p.not_in_place) said = said || d.reason.find("element size") != std::string::npos;
  EXPECT_TRUE(said) << p.to_string(t);
  expect_no_overlap(t, p);
}

TEST(PlanMemory, ViewsKeepTheirBaseAliveAndNothingOverlaps) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {32, 48}, {48, 1});
  const ValueId w = t.add_input(kFloat32, {48, 32}, {32, 1});
  const ValueId a = t.add_node1(op("exp"), {x});
  const ValueId at = t.add_node1(op("transpose"), {a}, {int64_t(0), int64_t(1)});
  const ValueId m = t.add_node1(op("matmul"), {x, w});
  const ValueId s = t.add_node1(op("sum"), {m}, {DimVector{1}, true, kFloat32});
  const ValueId q = t.add_node1(op("add"), {m, s}, {Scalar(-1)});
  const ValueId g = t.add_node1(op("relu"), {q});
  const ValueId late = t.add_node1(op("neg"), {at});  // reads a through its view, after everything above
  const ValueId xt = t.add_node1(op("transpose"), {x}, {int64_t(0), int64_t(1)});
  const ValueId y = t.add_node1(op("mul"), {late, xt});
  t.mark_output(g);
  t.mark_output(y);
  const MemoryPlan p = plan_memory(t);
  EXPECT_EQ(p.base[size_t(at)], a);
  EXPECT_EQ(p.offsets[size_t(at)], -1);
  EXPECT_EQ(p.offsets[size_t(xt)], -1);
  EXPECT_EQ(p.offsets[size_t(x)], -1);
  EXPECT_EQ(p.live[size_t(a)].last, t.value(late).node) << p.to_string(t);
  EXPECT_EQ(p.live[size_t(g)].last, int32_t(t.nodes().size()));
  EXPECT_LT(p.arena_bytes, p.naive_bytes);
  expect_no_overlap(t, p);
  // a trace whose every intermediate is live at once can reuse nothing, and says so
  Trace wide;
  const ValueId in = wide.add_input(kFloat32, {64}, {1});
  wide.mark_output(wide.add_node1(op("exp"), {in}));
  wide.mark_output(wide.add_node1(op("sin"), {in}));
  const MemoryPlan pw = plan_memory(wide);
  EXPECT_EQ(pw.arena_bytes, pw.naive_bytes);
  ASSERT_EQ(pw.not_reused.size(), 2u) << pw.to_string(wide);
  EXPECT_NE(pw.not_reused[0].reason.find("live while every other"), std::string::npos);
}

TEST(PlanMemory, ConstantsAreNotPlacedLikeInputs) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4}, {1});
  const ValueId c = t.add_constant(nnvm::full({4}, 2.0));
  const ValueId e = t.add_node1(op("exp"), {t.add_node1(op("mul"), {x, c})});
  t.mark_output(e);
  const MemoryPlan p = plan_memory(t);
  EXPECT_EQ(p.offsets[size_t(c)], -1);
  EXPECT_EQ(p.bytes[size_t(c)], 0);
  EXPECT_GE(p.offsets[size_t(e)], 0);
  EXPECT_EQ(p.to_string(t).find("\n  %1 "), std::string::npos) << p.to_string(t);  // no line of its own
  EXPECT_NE(p.to_string(t).find("%1 is a constant"), std::string::npos) << p.to_string(t);
}

// Under a schedule a fused step reads all its inputs while it writes all its
// outputs, and what it keeps in scratch takes no bytes.
TEST(PlanMemory, AScheduleMakesEachStepOneKernel) {
  Trace t;
  const ValueId a = t.add_input(kFloat32, {16}, {1});
  const ValueId y = t.add_input(kFloat32, {16, 16}, {16, 1});
  const ValueId ea = t.add_node1(op("exp"), {a});                  // #0 step 0
  const ValueId m = t.add_node1(op("mul"), {y, ea});              // #1 step 1: ea dies here
  const ValueId w = t.add_node1(op("neg"), {m});                  // #2 step 1: m is scratch
  const ValueId s = t.add_node1(op("sin"), {w});                  // #3 step 2
  t.mark_output(t.add_node1(op("add"), {s, w}, {Scalar(1)}));     // #4 step 2
  // node by node, w may take ea's bytes: ea is dead before w is born
  const MemoryPlan nodes = plan_memory(t);
  EXPECT_LT(nodes.live[size_t(ea)].last, nodes.live[size_t(w)].first);
  Schedule schedule{{0, 1, 1, 2, 2}, std::vector<bool>(t.values().size(), true)};
  schedule.in_arena[size_t(m)] = false;
  const MemoryPlan p = plan_memory(t, &schedule);
  EXPECT_EQ(p.offsets[size_t(m)], -1);
  EXPECT_EQ(p.live[size_t(ea)].last, 1);
  EXPECT_EQ(p.live[size_t(w)].first, 1);
  EXPECT_TRUE(p.live[size_t(ea)].overlaps(p.live[size_t(w)]));
  expect_no_overlap(t, p);
  // in the last step s dies at #4, the step's last reader: the sum may go over it
  EXPECT_TRUE(is_in_place_pair(p, s, t.outputs()[0])) << p.to_string(t);
  // w is read at #4 after sin wrote s at #3: s may not go over w
  EXPECT_FALSE(is_in_place_pair(p, w, s)) << p.to_string(t);
}

}  // namespace
}  // namespace nnvm::trace
