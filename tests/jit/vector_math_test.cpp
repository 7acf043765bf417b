// The vector math injectors' accuracy on every ISA this CPU has, against
// double-precision libm (softplus: against the reference's rule): the bounds vector_math.h documents, over a dense
// sweep of [-100, 100], 10^5 log-spaced magnitudes in [1e-38, 1e38] of both
// signs, and the specials (±0, ±inf, NaN, ±FLT_MAX, denormals); and the
// injectors the reference kernels share bit for bit against them.
#include "nnvm/jit/x86/vector_math.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

#include "nnvm/jit/x86/pointwise_kernel.h"
#include "nnvm/kernels/cpu/exp.h"
#include "reference.h"

namespace nnvm::jit::x86 {
namespace {

// y = the IR's one store over x, with `args` as its run-time Scalars.
std::vector<float> run(const LoopIR& ir, Isa isa, const std::vector<float>& x, const std::vector<float>& args = {}) {
  const PointwiseKernel kernel(ir, "cc", isa);
  std::vector<float> y(x.size());
  PointwiseCall call;
  for (size_t a = 0; a < args.size(); ++a) std::fill_n(call.args[a], 16, args[a]);
  call.ptr[0] = reinterpret_cast<const char*>(x.data());
  call.ptr[1] = reinterpret_cast<const char*>(y.data());
  call.vec_step[0] = call.vec_step[1] = 4 * kernel.lanes();
  call.row_stride[0] = call.row_stride[1] = 0;
  call.cols = int64_t(x.size());
  call.rows = 1;
  kernel(&call);
  return y;
}

// y = prim(x) through a one-expression kernel.
std::vector<float> run(Prim prim, Isa isa, const std::vector<float>& x) {
  LoopIR ir;
  ir.inputs = 1;
  ir.exprs = {Expr{Prim::kLoad, -1, -1, -1, 0}, Expr{prim, 0}};
  ir.stores = {1};
  return run(ir, isa, x);
}

std::vector<float> inputs() {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(float(i) * 5e-4f);
  for (int i = 0; i <= 100000; ++i) {
    const float m = float(std::pow(10.0, -38.0 + 76.0 * i / 100000.0));
    x.push_back(m);
    x.push_back(-m);
  }
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  const float tiny = std::numeric_limits<float>::denorm_min(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float s : {0.0f, -0.0f, inf, -inf, nan, big, -big, tiny, -tiny, 1e-40f, -1e-40f, 88.7f, 88.73f, -87.4f, -103.9f,
                  -104.5f, 9.1f, -9.1f, 0.625f, -0.625f, 0.6249f})
    x.push_back(s);
  return x;
}

// Error of y against the double result r: in ulps of r where r is a normal
// float, else absolute in units of the smallest denormal.
double ulps(float y, double r) {
  if (std::isnan(r)) return std::isnan(y) ? 0 : INFINITY;
  if (std::isinf(r) || std::isinf(y)) return (std::isinf(y) && (y > 0) == (r > 0) && std::isinf(float(r))) ? 0 : INFINITY;
  const double a = std::abs(r);
  const double ulp = a < 1.17549435e-38 ? std::ldexp(1.0, -149) : std::ldexp(1.0, std::ilogb(a) - 23);
  return std::abs(double(y) - r) / ulp;
}

// The worst error of y = f(x) against ref on every input, on each JIT ISA;
// normal_only: results below FLT_MIN may be flushed to 0 (sigmoid below -88.72).
void expect_accuracy(const char* name, const std::function<std::vector<float>(Isa, const std::vector<float>&)>& f,
                     const std::function<double(float)>& ref, double max_ulps, bool normal_only = false) {
  const std::vector<float> x = inputs();
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {
    if (!isa_supported(isa)) continue;
    const std::vector<float> y = f(isa, x);
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double r = ref(x[i]);
      if (std::abs(r) > std::numeric_limits<float>::max()) r = std::copysign(INFINITY, r);  // overflows in float
      if (normal_only && std::abs(r) < 1.17549435e-38) {
        EXPECT_LT(std::abs(double(y[i]) - r), 1.17549435e-38) << x[i];
        continue;
      }
      const double e = ulps(y[i], r);
      if (e > worst) worst = e, at = i;
    }
    std::printf("%s on %s: at most %.2f ulp\n", name, isa_name(isa), worst);
    EXPECT_LE(worst, max_ulps) << name << " on " << isa_name(isa) << ": " << worst << " ulp at x = " << x[at]
                               << " (got " << y[at] << ", libm " << ref(x[at]) << ")";
  }
}

void expect_accuracy(Prim prim, const std::function<double(double)>& ref, double max_ulps, bool normal_only = false) {
  expect_accuracy(
      prim_name(prim), [&](Isa isa, const std::vector<float>& x) { return run(prim, isa, x); },
      [&](float x) { return ref(double(x)); }, max_ulps, normal_only);
}

TEST(VectorMath, Exp) { expect_accuracy(Prim::kExp, [](double x) { return std::exp(x); }, 1.5); }
TEST(VectorMath, Log) { expect_accuracy(Prim::kLog, [](double x) { return std::log(x); }, 1); }
TEST(VectorMath, Tanh) { expect_accuracy(Prim::kTanh, [](double x) { return std::tanh(x); }, 5); }
TEST(VectorMath, Sigmoid) {
  expect_accuracy(Prim::kSigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, 3, true);
}

// exp, sigmoid, tanh, erf, exp2, expm1, log and log1p compute the reference
// kernels' bits (kernels/cpu/exp.h), so a fused and an unfused run of a
// program agree (expm1 and log1p: but for the sign of a zero).
TEST(VectorMath, MatchReferenceKernelsBitForBit) {
  std::vector<float> x = inputs();
  for (int i = 0; i < 20000; ++i) x.push_back(-105.0f + float(i) * 1e-3f);  // the clamps and denormal results
  const struct {
    Prim prim;
    float (*reference)(float);
  } cases[] = {{Prim::kExp, cpu::exp_vec},
               {Prim::kSigmoid, [](float v) { return 1.0f / (1.0f + cpu::exp_vec(-v)); }},
               {Prim::kTanh, cpu::tanh_vec},
               {Prim::kErf, cpu::erf_vec},
               {Prim::kExp2, cpu::exp2_vec},
               {Prim::kExpm1, cpu::expm1_vec},
               {Prim::kLog, cpu::log_vec},
               {Prim::kLog1p, cpu::log1p_vec}};
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {
    if (!isa_supported(isa)) continue;
    for (const auto& c : cases) {
      const std::vector<float> y = run(c.prim, isa, x);
      int64_t differ = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        if (x[i] == 0 && (c.prim == Prim::kExpm1 || c.prim == Prim::kLog1p)) continue;  // the reference keeps -0
        const float want = c.reference(x[i]);
        if (std::memcmp(&y[i], &want, 4) != 0 && !(std::isnan(y[i]) && std::isnan(want)) && differ++ < 5)
          ADD_FAILURE() << isa_name(isa) << ": " << prim_name(c.prim) << "(" << x[i] << ") = " << y[i]
                        << ", the reference kernel's " << want;
      }
      EXPECT_EQ(differ, 0) << prim_name(c.prim) << " on " << isa_name(isa);
    }
  }
}

TEST(VectorMath, Erf) { expect_accuracy(Prim::kErf, [](double x) { return std::erf(x); }, 2); }
TEST(VectorMath, Expm1) { expect_accuracy(Prim::kExpm1, [](double x) { return std::expm1(x); }, 2); }
TEST(VectorMath, Exp2) { expect_accuracy(Prim::kExp2, [](double x) { return std::exp2(x); }, 1.5); }
TEST(VectorMath, Log1p) { expect_accuracy(Prim::kLog1p, [](double x) { return std::log1p(x); }, 2); }

// softplus(x; beta, threshold) against the reference's rule with x beta
// rounded to float (as the kernel does) and the rest in double.
TEST(VectorMath, Softplus) {
  LoopIR ir;
  ir.inputs = 1;
  ir.exprs = {Expr{Prim::kLoad, -1, -1, -1, 0}, Expr{Prim::kArg, -1, -1, -1, 0}, Expr{Prim::kArg, -1, -1, -1, 1},
              Expr{Prim::kSoftplus, 0, 1, 2}};
  ir.stores = {3};
  ir.args = {{0, 0}, {0, 1}};
  for (auto [beta, threshold] : {std::pair{1.0f, 20.0f}, {2.0f, 5.0f}, {0.5f, 30.0f}, {-1.5f, 20.0f}}) {
    SCOPED_TRACE(::testing::Message() << "beta " << beta << " threshold " << threshold);
    expect_accuracy(
        "softplus",
        [&, beta = beta, threshold = threshold](Isa isa, const std::vector<float>& x) {
          return run(ir, isa, x, {beta, threshold});
        },
        [beta = beta, threshold = threshold](float x) {  // init-captures: clang 14 cannot capture a structured binding
          const float t = x * beta;
          return t > threshold ? double(x) : std::log1p(std::exp(double(t))) / double(beta);
        },
        3, true);
  }
}

// pow(x, y) for a y in every lane, against std::pow in double: the error
// grows with |y| (the log's error is multiplied by it).
TEST(VectorMath, Pow) {
  LoopIR ir;
  ir.inputs = 1;
  ir.exprs = {Expr{Prim::kLoad, -1, -1, -1, 0}, Expr{Prim::kArg, -1, -1, -1, 0}, Expr{Prim::kPow, 0, 1}};
  ir.stores = {2};
  ir.args = {{0, 0}};
  for (float y : {2.5f, -1.5f, 0.5f, -0.5f, 3.0f, -3.0f, 7.0f, 1.0f / 3, 12.5f, -25.0f, 0.0f, -0.0f, INFINITY, -INFINITY,
                  NAN}) {
    SCOPED_TRACE(::testing::Message() << "y " << y);
    expect_accuracy(
        "pow", [&](Isa isa, const std::vector<float>& x) { return run(ir, isa, x, {y}); },
        [&](float x) { return std::pow(double(x), double(y)); },
        2 + (std::isfinite(y) ? std::abs(y) / 10 : 0), true);
  }
}

}  // namespace
}  // namespace nnvm::jit::x86
