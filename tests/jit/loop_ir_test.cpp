// LoopIR: lowering of pointwise groups to primitives (with reasons for what
// does not lower) and the run-time iteration space.
#include "nnvm/jit/loop_ir.h"

#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

const OpDef& op(const char* name) { return find_op(name); }

Lowering lower_only_group(const Trace& t) {
  const trace::FusionPlan f = trace::fuse(t);
  EXPECT_EQ(f.groups.size(), 1u) << f.to_string(t);
  return lower_pointwise(t, f.groups[0], trace::group_values(t, f.groups[0]));
}

int count(const LoopIR& ir, Prim p) {
  return int(std::count_if(ir.exprs.begin(), ir.exprs.end(), [&](const Expr& e) { return e.prim == p; }));
}

TEST(LoopIR, LowersAddWithAlphaAndScalarOpsToRunTimeArguments) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {4, 3}, {3, 1}), y = t.add_input(kFloat32, {3}, {1});
  ValueId v = t.add_node1(op("add"), {x, y}, {Scalar(2.0)});      // x + 2 y: alpha is slot 0
  v = t.add_node1(op("mul.Scalar"), {v}, {Scalar(3.0)});          // slot 1
  v = t.add_node1(op("div.Scalar"), {v}, {Scalar(5)}, trace::ScalarBinding::kCompileTime);
  t.mark_output(t.add_node1(op("exp"), {v}));
  const Lowering l = lower_only_group(t);
  ASSERT_TRUE(l.ok()) << l.declined;
  const LoopIR& ir = l.ir;
  EXPECT_EQ(ir.inputs, 2);
  ASSERT_EQ(ir.args.size(), 2u);
  EXPECT_EQ(ir.args[0].step, 0);
  EXPECT_EQ(ir.args[0].attr, 0);
  EXPECT_EQ(ir.args[1].step, 1);
  EXPECT_EQ(count(ir, Prim::kLoad), 2);
  EXPECT_EQ(count(ir, Prim::kFma), 1);  // x + alpha * y, rounded once as the reference kernel does
  EXPECT_EQ(count(ir, Prim::kMul), 1);  // * s1
  EXPECT_EQ(count(ir, Prim::kExp), 1);
  ASSERT_EQ(count(ir, Prim::kConst), 1);  // the compile-time 5 is a constant, not an argument
  for (const Expr& e : ir.exprs) {
    if (e.prim == Prim::kConst) {
      EXPECT_EQ(e.value, 5.0f);
    }
  }
  ASSERT_EQ(ir.stores.size(), 1u);
  EXPECT_EQ(ir.exprs[size_t(ir.stores[0])].prim, Prim::kExp);
  // operands come before their users
  for (size_t i = 0; i < ir.exprs.size(); ++i)
    for (int32_t o : {ir.exprs[i].a, ir.exprs[i].b, ir.exprs[i].c}) {
      EXPECT_LT(o, int32_t(i));
    }
  const std::string s = ir.to_string();
  EXPECT_NE(s.find("arg s1 (node 1 attr 0)"), std::string::npos) << s;
  EXPECT_NE(s.find("out0 = e"), std::string::npos) << s;
}

TEST(LoopIR, SharesIdenticalExpressions) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {8}, {1});
  const ValueId a = t.add_node1(op("gelu_tanh"), {x});
  const ValueId b = t.add_node1(op("gelu_tanh"), {x});
  t.mark_output(t.add_node1(op("mul"), {a, b}));
  const Lowering l = lower_only_group(t);
  ASSERT_TRUE(l.ok()) << l.declined;
  EXPECT_EQ(count(l.ir, Prim::kTanh), 1) << l.ir.to_string();
  EXPECT_EQ(count(l.ir, Prim::kLoad), 1);
}

TEST(LoopIR, DeclinesWithAReason) {
  {
    Trace t;
    const ValueId x = t.add_input(kFloat32, {8}, {1});
    t.mark_output(t.add_node1(op("sin"), {t.add_node1(op("neg"), {x})}));
    EXPECT_EQ(lower_only_group(t).declined, "sin has no JIT primitive");
  }
  {
    Trace t;
    const ValueId x = t.add_input(kFloat64, {8}, {1});
    t.mark_output(t.add_node1(op("exp"), {t.add_node1(op("neg"), {x})}));
    EXPECT_NE(lower_only_group(t).declined.find("float64: the JIT computes in float32"), std::string::npos);
  }
  {
    Trace t;
    const ValueId x = t.add_input(kFloat32, {4, 8}, {8, 1});
    t.mark_output(t.add_node1(op("sum"), {t.add_node1(op("exp"), {x})}, {DimVector{1}, false, kFloat32}));
    EXPECT_NE(lower_only_group(t).declined.find("not a pointwise one"), std::string::npos);
  }
}

TEST(LoopIR, HalfTypedOperandsLowerWithTheirDtypes) {
  Trace t;
  const ValueId x = t.add_input(kFloat16, {8}, {1}), y = t.add_input(kBFloat16, {8}, {1});
  const ValueId v = t.add_node1(op("exp"), {t.add_node1(op("mul"), {x, x})});
  t.mark_output(v);
  t.mark_output(t.add_node1(op("add"), {v, y}, {Scalar(1)}));  // float16 + bfloat16 -> float32
  const Lowering l = lower_only_group(t);
  ASSERT_TRUE(l.ok()) << l.declined;
  EXPECT_EQ(l.ir.dtypes, (std::vector<DType>{kFloat16, kBFloat16, kFloat16, kFloat32}));
  const std::string s = l.ir.to_string();
  EXPECT_NE(s.find("load in0 float16"), std::string::npos) << s;
  EXPECT_NE(s.find("load in1 bfloat16"), std::string::npos) << s;
  EXPECT_NE(s.find("out0 = e3 float16\n"), std::string::npos) << s;
}

DimVector dv(std::initializer_list<int64_t> v) { return DimVector(v); }

TEST(LoopSpace, MergesDimsEveryOperandSteps) {
  // contiguous [2, 3, 4] with a [4] row broadcast: the row does not merge with
  // dim 1 (stride 0 vs 4), so two dims remain: [6, 4]
  {
    const DimVector loop = dv({2, 3, 4}), c = contiguous_strides(loop), row = dv({4}), row_s = dv({1});
    const LoopSpace s = loop_space(loop, {loop, row, loop}, {c, row_s, c});
    EXPECT_EQ(s.sizes, dv({6, 4}));
    EXPECT_EQ(s.strides[0], dv({4, 1}));
    EXPECT_EQ(s.strides[1], dv({0, 1}));
    EXPECT_EQ(s.accesses(), "ccc");
  }
  // all contiguous: one inner loop of every element
  {
    const DimVector loop = dv({5, 1, 7}), c = contiguous_strides(loop);
    const LoopSpace s = loop_space(loop, {loop, loop}, {c, c});
    EXPECT_EQ(s.sizes, dv({35}));
    EXPECT_EQ(s.to_string(1), "[35] in0 [1] out0 [1]");
  }
  // a column broadcast along the inner dim, and a transposed input
  {
    const DimVector loop = dv({3, 5}), c = contiguous_strides(loop);
    const LoopSpace s = loop_space(loop, {dv({3, 1}), loop, loop}, {dv({1, 1}), dv({1, 3}), c});
    EXPECT_EQ(s.sizes, loop);
    EXPECT_EQ(s.accesses(), "bsc");
    EXPECT_EQ(s.strides[0], dv({1, 0}));
  }
  // a scalar loop is one contiguous element
  {
    const LoopSpace s = loop_space({}, {IntArrayRef{}, IntArrayRef{}}, {IntArrayRef{}, IntArrayRef{}});
    EXPECT_EQ(s.sizes, dv({1}));
    EXPECT_EQ(s.accesses(), "cc");
    EXPECT_EQ(s.numel(), 1);
  }
}

}  // namespace
}  // namespace nnvm::jit
