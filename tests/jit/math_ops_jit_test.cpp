// The unary float ops the JIT lowers to vector_math injectors and primitives
// (erf, gelu, expm1, log1p, softplus, ...): each op alone in a pointwise
// group, run as machine code on every JIT ISA and as the tile program on the
// portable one, against the interpreter's reference kernels on random inputs
// and on the special values (±0, ±inf, NaN, denormals, huge magnitudes, the
// injectors' branch points).
#include <limits>

#include "nnvm/jit/pointwise_jit.h"
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
                          9.5f, -9.5f, 20.0f, 20.01f, -30.0f, 88.7f, 88.8f, -87.5f, -104.0f, 1e30f, -1e30f};
  const std::vector<double> r = testing::values(testing::random({1000}, kFloat32, 11, lo, hi));
  for (double d : r) v.push_back(float(d));
  return tensor(v);
}

// op(x) as a pointwise group (op(neg(-x)): one op alone is not a fused group).
Trace one_op(const Tensor& x, const char* name, Attrs attrs) {
  Trace t;
  const ValueId v = t.add_node1(find_op("neg"), {t.add_input(x)});
  t.mark_output(t.add_node1(find_op(name), {v}, std::move(attrs)));
  return t;
}

// The op on every ISA against the interpreter. The injectors' bounds are a
// few ulp (vector_math.h), so rtol covers them; atol covers results that
// cancel (1 + erf near -1 in gelu: an absolute error of erf's ulp at 1).
void expect_op(const char* name, Attrs attrs, double lo, double hi, double rtol = 1e-6, double atol = 1e-37) {
  SCOPED_TRACE(name);
  EagerGuard eager;
  const Tensor x = inputs(lo, hi);
  const Tensor minus_x = -x;
  const Trace t = one_op(minus_x, name, attrs);
  const Tensor expected = trace::interpret(t, {minus_x}, {})[0];
  std::vector<Isa> isas = jit_isas();
  isas.push_back(Isa::kPortable);
  for (Isa isa : isas) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    const trace::FusedPlan plan(t);
    ASSERT_EQ(plan.fusion().groups.size(), 1u) << plan.to_string();
    const PointwiseJit* jit = plan.program(0).jit();
    ASSERT_NE(jit, nullptr) << plan.to_string();
    ASSERT_EQ(jit->declined(), "") << jit->ir().to_string();
    const int64_t before = pointwise_compiles();
    testing::expect_tensors_close(plan.run({minus_x}, {})[0], expected, rtol, atol);
    if (isa == Isa::kPortable) {
      EXPECT_EQ(pointwise_compiles(), before);
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

}  // namespace
}  // namespace nnvm::jit
