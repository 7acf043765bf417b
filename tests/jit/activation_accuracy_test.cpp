// The composed activations (gelu, gelu_tanh, silu) as the JIT runs them, a
// hot plan's pointwise kernel, against double-precision math over the inputs
// the injector tests sweep: the bounds vector_math.h documents for them.
// Where the result cancels far below its input (gelu of a large negative x is
// x times a tiny probability) the error is counted against the input's
// magnitude instead: ulps of max(|result|, |x| / 16).
#include <cmath>
#include <cstdio>
#include <limits>

#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/jit/x86_backend.h"
#include "nnvm/trace/executor.h"
#include "isa_scope.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

std::vector<float> sweep() {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(float(i) * 5e-4f);
  for (int i = 0; i <= 20000; ++i) {
    const float m = float(std::pow(10.0, -38.0 + 76.0 * i / 20000.0));
    x.push_back(m);
    x.push_back(-m);
  }
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  for (float s : {0.0f, -0.0f, inf, -inf, big, -big, std::numeric_limits<float>::denorm_min(), 1e-40f, -1e-40f})
    x.push_back(s);
  return x;
}

double ulps(float y, double r, double x) {
  if (std::isnan(r)) return std::isnan(y) ? 0 : INFINITY;
  if (std::isinf(r)) return y == float(r) ? 0 : INFINITY;
  const double scale = std::max(std::abs(r), std::abs(x) / 16);
  const double ulp = scale < 1.17549435e-38 ? std::ldexp(1.0, -149) : std::ldexp(1.0, std::ilogb(scale) - 23);
  return std::abs(double(y) - r) / ulp;
}

// The worst error of op(x) (run as op(neg(-x)): one op alone is no fused group).
void expect_bound(const char* name, double (*ref)(double), double bound) {
  EagerGuard eager;
  const std::vector<float> xs = sweep();
  const Tensor minus_x = -tensor(xs);
  Trace t;
  const ValueId v = t.add_node1(find_op("neg"), {t.add_input(minus_x)});
  t.mark_output(t.add_node1(find_op(name), {v}));
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    const trace::FusedPlan plan(t);
    const PointwiseJit* jit = pointwise_jit(plan.program(0));
    ASSERT_TRUE(jit != nullptr && jit->declined().empty()) << plan.to_string();
    const std::vector<float> y = plan.run({minus_x}, {})[0].to_vector<float>();
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < xs.size(); ++i)
      if (const double e = ulps(y[i], ref(double(xs[i])), xs[i]); e > worst) worst = e, at = i;
    std::printf("%s on %s: at most %.2f ulp\n", name, isa_name(isa), worst);
    EXPECT_LE(worst, bound) << name << " on " << isa_name(isa) << " at x = " << xs[at] << ": got " << y[at]
                            << ", expected " << ref(double(xs[at]));
  }
}

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double silu(double x) { return x / (1 + std::exp(-x)); }

TEST(ActivationAccuracy, Gelu) { expect_bound("gelu", gelu, 12); }
TEST(ActivationAccuracy, GeluTanh) { expect_bound("gelu_tanh", gelu_tanh, 36); }
TEST(ActivationAccuracy, Silu) { expect_bound("silu", silu, 3); }

}  // namespace
}  // namespace nnvm::jit
