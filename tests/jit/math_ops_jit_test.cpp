// The unary float ops the JIT lowers to vector_math injectors and primitives
// (erf, gelu, expm1, log1p, softplus, ...): each op alone in a pointwise
// group, run as machine code on every JIT ISA and as the tile program on the
// portable one, against the interpreter's reference kernels on random inputs
// and on the special values (±0, ±inf, NaN, denormals, huge magnitudes, the
// injectors' branch points).
#include <limits>

#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/jit/x86_backend.h"
#include "nnvm/jit/reduce_jit.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "isa_scope.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

// x with the special values first, then uniform randoms on [lo, hi).
Tensor inputs(double lo, double hi) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max(), tiny = std::numeric_limits<float>::denorm_min();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, nan, big, -big, tiny, -tiny, 1e-40f, -1e-40f, 1e-30f, -1e-30f,
                          1e-7f, -1e-7f, 0.3f, -0.3f, 0.999f, 1.0f, -1.0f, 1.001f, -0.999999f, 2.5f, 3.99f, -4.01f,
                          9.5f, -9.5f, 0.5f, -2.5f, 1.5f, -1.5f, 8388609.0f, 20.0f, 20.01f, -30.0f, 88.7f, 88.8f, -87.5f, -104.0f, 1e30f, -1e30f};
  const std::vector<double> r = testing::values(testing::random({1000}, kFloat32, 11, lo, hi));
  for (double d : r) v.push_back(float(d));
  return tensor(v);
}

// op(x) as a pointwise group (op(neg(-x)): one op alone is not a fused group).
Trace one_op(const Tensor& x, const char* name, Attrs attrs, trace::ScalarBinding binding) {
  Trace t;
  const ValueId v = t.add_node1(find_op("neg"), {t.add_input(x)});
  t.mark_output(t.add_node1(find_op(name), {v}, std::move(attrs), binding));
  return t;
}

// The op on every ISA against the interpreter. The injectors' bounds are a
// few ulp (vector_math.h), so rtol covers them; atol covers results that
// cancel (1 + erf near -1 in gelu: an absolute error of erf's ulp at 1).
void expect_op(const char* name, Attrs attrs, double lo, double hi, double rtol = 1e-6, double atol = 1e-37,
               trace::ScalarBinding binding = trace::ScalarBinding::kRunTime) {
  SCOPED_TRACE(name);
  EagerGuard eager;
  const Tensor x = inputs(lo, hi);
  const Tensor minus_x = -x;
  const Trace t = one_op(minus_x, name, attrs, binding);
  const Tensor expected = trace::interpret(t, {minus_x}, {})[0];
  std::vector<Isa> isas = jit_isas();
  isas.push_back(Isa::kPortable);
  for (Isa isa : isas) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    const trace::FusedPlan plan(t);
    ASSERT_EQ(plan.fusion().groups.size(), 1u) << plan.to_string();
    const PointwiseJit* jit = pointwise_jit(plan.program(0));
    ASSERT_NE(jit, nullptr) << plan.to_string();
    ASSERT_EQ(jit->declined(), "") << jit->ir().to_string();
    const int64_t before = pointwise_compiles();
    testing::expect_tensors_close(plan.run({minus_x}, {})[0], expected, rtol, atol);
    if (isa == Isa::kPortable) {
      EXPECT_EQ(pointwise_compiles(), before);
    } else {
      EXPECT_TRUE(jit->declined_variants().empty()) << jit->declined_variants()[0];  // its code was generated
    }
  }
}

TEST(MathOpsJit, Erf) { expect_op("erf", {}, -5, 5); }
TEST(MathOpsJit, GeluExact) { expect_op("gelu", {}, -8, 8, 1e-6, 2e-6); }
TEST(MathOpsJit, Expm1) { expect_op("expm1", {}, -3, 3); }
TEST(MathOpsJit, Log1p) { expect_op("log1p", {}, -1, 4); }
TEST(MathOpsJit, Softplus) {
  expect_op("softplus", {Scalar(1.0), Scalar(20.0)}, -30, 30);
  expect_op("softplus", {Scalar(2.0), Scalar(5.0)}, -10, 10);
  expect_op("softplus", {Scalar(0.5), Scalar(3.0)}, -10, 10);
}

TEST(MathOpsJit, Exp2AndLog2) {
  expect_op("exp2", {}, -130, 130);
  expect_op("log2", {}, 0, 100, 2e-6);
}
TEST(MathOpsJit, EluAndLeakyRelu) {
  expect_op("elu", {Scalar(1.0)}, -5, 5);
  expect_op("elu", {Scalar(0.3)}, -20, 5);
  expect_op("leaky_relu", {Scalar(0.01)}, -5, 5);
  expect_op("leaky_relu", {Scalar(-2.0)}, -5, 5);
}
TEST(MathOpsJit, SignAndRounding) {
  for (const char* name : {"sign", "round", "floor", "ceil", "trunc"}) expect_op(name, {}, -6, 6, 0, 0);
}

// pow.Scalar with a run-time exponent (the injector) and a compile-time one
// (0, ±1, ±2 and 3 as products, others the injector).
TEST(MathOpsJit, PowScalar) {
  for (trace::ScalarBinding binding : {trace::ScalarBinding::kRunTime, trace::ScalarBinding::kCompileTime})
    for (double y : {2.0, 3.0, -1.0, -2.0, 0.0, 1.0, 0.5, -0.5, 2.5, -1.5, 7.0, 1.0 / 3})
      expect_op("pow.Scalar", {Scalar(y)}, -3, 3, 1e-6, 1e-37, binding);
}

// pow(x, y) and base ** x over the special values in both operands: std::pow's rules.
TEST(MathOpsJit, PowOverSpecialValues) {
  EagerGuard eager;
  const Tensor v = inputs(-4, 4).slice(0, 0, 60);
  const float odd[] = {3.0f, -3.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, 8388609.0f, 16777216.0f};
  const Tensor y = cat({v, tensor(std::vector<float>(std::begin(odd), std::end(odd)))}, 0);
  const Tensor xs = v.reshape({-1, 1}).expand({v.size(0), y.size(0)}).contiguous(), ys = y.reshape({1, -1}).expand_as(xs).contiguous();
  Trace t;
  const ValueId xv = t.add_input(xs), yv = t.add_input(ys);
  const ValueId x2 = t.add_node1(find_op("neg"), {xv});
  t.mark_output(t.add_node1(find_op("pow"), {x2, yv}));
  t.mark_output(t.add_node1(find_op("pow.ScalarBase"), {x2}, {Scalar(-2.5)}));
  t.mark_output(t.add_node1(find_op("pow"), {x2, x2}));  // one register for both operands
  const std::vector<Tensor> expected = trace::interpret(t, {xs, ys}, {});
  for (Isa isa : jit_isas()) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    const trace::FusedPlan plan(t);
    ASSERT_EQ(plan.fusion().groups.size(), 1u) << plan.to_string();
    ASSERT_EQ(pointwise_jit(plan.program(0))->declined(), "");
    const std::vector<Tensor> got = plan.run({xs, ys}, {});
    for (size_t k = 0; k < 3; ++k) testing::expect_tensors_close(got[k], expected[k], 1e-6, 1e-37);
  }
}

// The reduce kernel's prologue calls the same injectors, operands included:
// sum(op(x)) over each dim runs the reduction kernel and matches the reference
// (softplus on AVX2 needs more registers than the kernel's pool: it falls back).
TEST(MathOpsJit, ReductionPrologues) {
  struct Op {
    const char* name;
    Attrs attrs;
  };
  const std::vector<Op> ops = {{"softplus", {Scalar(2.0), Scalar(3.0)}}, {"pow.Scalar", {Scalar(2.5)}}, {"elu", {Scalar(0.7)}},
                               {"erf", {}}, {"expm1", {}}, {"leaky_relu", {Scalar(0.1)}}, {"floor", {}}};
  for (Isa isa : jit_isas()) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    EagerGuard eager;
    for (const Op& o : ops) {
      for (int64_t dim : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << o.name << " dim " << dim);
        const Tensor x = testing::random({37, 1025}, kFloat32, 12, -2, 2);
        Trace t;
        const ValueId v = t.add_node1(find_op(o.name), {t.add_input(x)}, o.attrs);
        t.mark_output(t.add_node1(find_op("sum"), {v}, {DimVector{dim}, false, kFloat32}));
        const trace::FusedPlan plan(t);
        ASSERT_EQ(plan.fusion().groups.size(), 1u) << plan.to_string();
        const ReduceJit* reduce = reduce_jit(plan.program(0));
        ASSERT_NE(reduce, nullptr) << plan.to_string();
        const int64_t runs = reduce_runs();
        const Tensor got = plan.run({x}, {})[0];
        EXPECT_EQ(reduce->declined(), "");
        if (isa == Isa::kAvx2 && std::string_view(o.name) == "softplus") {  // 8 scratch: past AVX2's pool
          EXPECT_NE(reduce->last_fallback().find("vector registers"), std::string::npos) << reduce->last_fallback();
        } else {
          EXPECT_EQ(reduce_runs(), runs + 1) << reduce->last_fallback() << "\n" << reduce->ir().to_string();
        }
        testing::expect_tensors_close(got, trace::interpret(t, {x}, {})[0], 1e-5, 1e-5);
      }
    }
  }
}

// A group whose code does not fit the generator's buffer (120 pow
// injectors, 6 copies of the body each) compiles nothing, throws nothing and
// runs as the tile program, on every ISA.
TEST(MathOpsJit, CodeTooBigFallsBackToTheTileProgram) {
  EagerGuard eager;
  const Tensor x = testing::random({100}, kFloat32, 13, 0.5, 1.5);
  Trace t;
  ValueId v = t.add_input(x);
  for (int k = 0; k < 120; ++k)
    v = t.add_node1(find_op("pow.Scalar"), {v}, {Scalar(1.01)}, trace::ScalarBinding::kCompileTime);
  t.mark_output(v);
  const Tensor expected = trace::interpret(t, {x}, {})[0];
  for (Isa isa : jit_isas()) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    const trace::FusedPlan plan(t);
    const int64_t before = pointwise_compiles();
    testing::expect_tensors_close(plan.run({x}, {})[0], expected, 0, 0);
    EXPECT_EQ(pointwise_compiles(), before);
  }
}

}  // namespace
}  // namespace nnvm::jit
