// Pointwise unary and binary ops against double-precision references, over
// dtypes, layouts, broadcasting, sizes 0/1/odd, in-place forms and errors.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>

#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::kLayouts;
using testing::random;
using testing::values;
using testing::with_layout;

const std::vector<DimVector> kShapes = {{0}, {1}, {7}, {3, 5}, {2, 3, 33}, {4, 1, 70}};
const DType kFloatTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16};

double atol_for(DType t) { return t == kFloat16 ? 2e-3 : t == kBFloat16 ? 2e-2 : 1e-6; }

// Rounds a double to what a dtype can hold, so references see the same inputs.
double round_to(double v, DType t) { return scalar_tensor(v, kFloat64).to(t).item<double>(); }

struct UnaryCase {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  double lo, hi;
};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }

const UnaryCase kFloatingUnary[] = {
    {"exp", [](const Tensor& x) { return x.exp(); }, [](double x) { return std::exp(x); }, -3, 3},
    {"exp2", [](const Tensor& x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, -3, 3},
    {"log", [](const Tensor& x) { return x.log(); }, [](double x) { return std::log(x); }, 0.1, 4},
    {"log2", [](const Tensor& x) { return x.log2(); }, [](double x) { return std::log2(x); }, 0.1, 4},
    {"log1p", [](const Tensor& x) { return x.log1p(); }, [](double x) { return std::log1p(x); }, -0.5, 3},
    {"expm1", [](const Tensor& x) { return x.expm1(); }, [](double x) { return std::expm1(x); }, -2, 2},
    {"sqrt", [](const Tensor& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0, 4},
    {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, 0.1, 4},
    {"sin", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, -3, 3},
    {"cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -3, 3},
    {"tan", [](const Tensor& x) { return x.tan(); }, [](double x) { return std::tan(x); }, -1.2, 1.2},
    {"tanh", [](const Tensor& x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, -3, 3},
    {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, sigmoid_ref, -5, 5},
    {"erf", [](const Tensor& x) { return x.erf(); }, [](double x) { return std::erf(x); }, -3, 3},
    {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }, [](double x) { return 1 / x; }, 0.2, 3},
    {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x * sigmoid_ref(x); }, -4, 4},
    {"gelu", [](const Tensor& x) { return gelu(x); },
     [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4},
    {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); },
     [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -4, 4},
    {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, [](double x) { return x > 0 ? x : 0.2 * x; },
     -3, 3},
    {"elu", [](const Tensor& x) { return elu(x, 1.5); }, [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); },
     -3, 3},
    {"softplus", [](const Tensor& x) { return softplus(x, 2.0, 5.0); },
     [](double x) { return 2 * x > 5 ? x : std::log1p(std::exp(2 * x)) / 2; }, -4, 4},
};

const UnaryCase kSameUnary[] = {
    {"neg", [](const Tensor& x) { return x.neg(); }, [](double x) { return -x; }, -5, 5},
    {"abs", [](const Tensor& x) { return x.abs(); }, [](double x) { return std::fabs(x); }, -5, 5},
    {"relu", [](const Tensor& x) { return x.relu(); }, [](double x) { return x > 0 ? x : 0; }, -5, 5},
    {"square", [](const Tensor& x) { return x.square(); }, [](double x) { return x * x; }, -5, 5},
    {"sign", [](const Tensor& x) { return x.sign(); }, [](double x) { return double((0 < x) - (x < 0)); }, -5, 5},
    {"floor", [](const Tensor& x) { return x.floor(); }, [](double x) { return std::floor(x); }, -5, 5},
    {"ceil", [](const Tensor& x) { return x.ceil(); }, [](double x) { return std::ceil(x); }, -5, 5},
    {"round", [](const Tensor& x) { return x.round(); }, [](double x) { return std::nearbyint(x); }, -5, 5},
    {"trunc", [](const Tensor& x) { return x.trunc(); }, [](double x) { return std::trunc(x); }, -5, 5},
    {"clamp", [](const Tensor& x) { return x.clamp(-1, 2); }, [](double x) { return std::min(std::max(x, -1.0), 2.0); },
     -5, 5},
};

void check_unary(const UnaryCase& c, DType dtype, DType expect_dtype) {
  for (const DimVector& shape : kShapes) {
    const Tensor base = random(shape, dtype, 17 + shape.size(), c.lo, c.hi);
    std::vector<double> expected;
    for (double v : values(base)) expected.push_back(round_to(c.ref(v), expect_dtype));
    for (testing::Layout layout : kLayouts) {
      SCOPED_TRACE(::testing::Message() << c.name << " " << dtype << " " << shape_str(shape) << " "
                                        << testing::layout_name(layout));
      const Tensor x = with_layout(base, layout);
      const Tensor y = c.op(x);
      EXPECT_EQ(y.dtype(), expect_dtype);
      EXPECT_EQ(y.sizes(), x.sizes());
      expect_values(y, expected, testing::rtol_for(expect_dtype) * 4, atol_for(expect_dtype));
    }
  }
}

TEST(Unary, FloatingOpsMatchReference) {
  for (const UnaryCase& c : kFloatingUnary)
    for (DType t : kFloatTypes) check_unary(c, t, t);
}

TEST(Unary, FloatingOpsPromoteIntegersToFloat32) {
  for (const UnaryCase& c : kFloatingUnary) {
    if (std::string(c.name) == "log" || std::string(c.name) == "rsqrt" || std::string(c.name) == "reciprocal") continue;
    check_unary(c, kInt32, kFloat32);
  }
}

TEST(Unary, SameTypeOpsOnEveryNumericType) {
  for (const UnaryCase& c : kSameUnary)
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt8}) check_unary(c, t, t);
}

// float exp is the JIT's Cephes polynomial (kernels/cpu/exp.h): 1 ulp by
// jit/x86/vector_math.h, under 2.5e-7 relative over the normal range on a
// dense sweep.
TEST(Unary, FloatExpErrorBound) {
  const Tensor x = linspace(-87.3, 88.72, 2000001);
  const std::vector<float> got = x.exp().to_vector<float>();
  const std::vector<float> in = x.to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const double ref = std::exp(double(in[i]));
    worst = std::max(worst, std::fabs(double(got[i]) - ref) / ref);
  }
  EXPECT_LT(worst, 2.5e-7);
  expect_values(tensor<float>({-INFINITY, INFINITY, NAN, 88.8f, -104.f, 0.f}).exp(), {0, INFINITY, NAN, INFINITY, 0, 1});
}

// The largest error(x, f(x)) over dense sweeps (2,000,001 points each) of
// the ranges [lo0, hi0], [lo1, hi1], ..., run eagerly: the reference kernel
// (a hot trace would run the JIT's own function).
template <class Error>
double worst_error(Tensor (*f)(const Tensor&), std::initializer_list<double> bounds, Error error) {
  EagerGuard eager;
  double worst = 0;
  const std::vector<double> b(bounds);
  for (size_t k = 0; k + 1 < b.size(); k += 2) {
    const Tensor x = linspace(b[k], b[k + 1], 2000001);
    const std::vector<float> got = f(x).to_vector<float>(), in = x.to_vector<float>();
    for (size_t i = 0; i < in.size(); ++i) worst = std::max(worst, error(in[i], got[i]));
  }
  return worst;
}

// An odd float function that saturates at ±1 (tanh, erf): ±inf and ±big give
// ±1, NaN stays NaN, 0 gives 0 and -0 gives -0.
void expect_odd_and_saturating(Tensor (*f)(const Tensor&), float big) {
  const std::vector<float> y = f(tensor<float>({-INFINITY, INFINITY, NAN, big, -big, 0.f, -0.f})).to_vector<float>();
  EXPECT_EQ(y[0], -1.f);
  EXPECT_EQ(y[1], 1.f);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 1.f);
  EXPECT_EQ(y[4], -1.f);
  EXPECT_EQ(y[5], 0.f);
  EXPECT_TRUE(std::signbit(y[6])) << "f(-0) is -0";
}

// float tanh is the JIT's rational fit (kernels/cpu/exp.h, 4.4 ulp by
// jit/x86/vector_math.h): its relative error on a dense sweep of [-10, 10]
// and of [-0.01, 0.01].
TEST(Unary, FloatTanhErrorBound) {
  const double worst = worst_error([](const Tensor& x) { return x.tanh(); }, {-10.0, 10.0, -0.01, 0.01},
                                   [](float x, float got) {
                                     const double ref = std::tanh(double(x));
                                     return ref == 0 ? 0.0 : std::fabs(double(got) - ref) / std::fabs(ref);
                                   });
  EXPECT_LT(worst, 4e-7);  // 3.01e-7 measured with FMA (5.1 ulp just below 1)
  expect_odd_and_saturating([](const Tensor& x) { return x.tanh(); }, 50);
}

// The error of a float result in ulps of the true result (double libm),
// the ulp taken at the float nearest it.
double ulps(double ref, float got) {
  if (std::isinf(ref)) return double(got) == ref ? 0.0 : INFINITY;
  const float r = float(ref);
  const double ulp = r == 0 ? double(std::numeric_limits<float>::denorm_min())
                            : double(std::nextafter(std::fabs(r), INFINITY)) - std::fabs(double(r));
  return std::fabs(double(got) - ref) / ulp;
}

// float erf is the JIT's algorithm in C++ (kernels/cpu/exp.h): its error in
// ulps of the result on dense sweeps of [-5, 5] and [-0.01, 0.01].
TEST(Unary, FloatErfErrorBound) {
  const double worst = worst_error([](const Tensor& x) { return x.erf(); }, {-5.0, 5.0, -0.01, 0.01},
                                   [](float x, float got) { return ulps(std::erf(double(x)), got); });
  EXPECT_LT(worst, 3.0);  // 1.95 measured with FMA, 2.3 without
  expect_odd_and_saturating([](const Tensor& x) { return x.erf(); }, 9);
}

// exp2, expm1, log, log2 and log1p are the JIT's functions in C++
// (kernels/cpu/exp.h): their error in ulps on dense sweeps, wide ranges and
// the small arguments where cancellation would show.
TEST(Unary, FloatExpAndLogFamilyErrorBounds) {
  auto worst = [](Tensor (*f)(const Tensor&), double (*ref)(double), std::initializer_list<double> ranges) {
    return worst_error(f, ranges, [ref](float x, float got) { return ulps(ref(double(x)), got); });
  };
  const double log = worst([](const Tensor& x) { return x.log(); }, [](double x) { return std::log(x); },
                           {1e-30, 1e-20, 1e-6, 0.5, 0.5, 2.0, 2.0, 1e6, 1e30, 3e38});
  const double log2 = worst([](const Tensor& x) { return x.log2(); }, [](double x) { return std::log2(x); },
                            {1e-30, 1e-20, 1e-6, 0.5, 0.5, 2.0, 2.0, 1e6, 1e30, 3e38});
  const double log1p = worst([](const Tensor& x) { return x.log1p(); }, [](double x) { return std::log1p(x); },
                             {-0.999, 10.0, -1e-3, 1e-3, 10.0, 1e30});
  const double expm1 = worst([](const Tensor& x) { return x.expm1(); }, [](double x) { return std::expm1(x); },
                             {-20.0, 88.7, -1e-3, 1e-3, -0.5, 0.5});
  const double exp2 = worst([](const Tensor& x) { return x.exp2(); }, [](double x) { return std::exp2(x); },
                            {-126.0, 127.9, -0.01, 0.01});
  EXPECT_LT(log, 2.0) << "log";
  EXPECT_LT(log2, 2.0) << "log2";
  EXPECT_LT(log1p, 2.5) << "log1p";
  EXPECT_LT(expm1, 2.5) << "expm1";
  EXPECT_LT(exp2, 2.0) << "exp2";
  std::printf("worst ulps: log %.2f, log2 %.2f, log1p %.2f, expm1 %.2f, exp2 %.2f\n", log, log2, log1p, expm1, exp2);
}

// Their special values: zeros (with their sign), infinities, NaN, values
// outside the domain, denormal arguments and results, exact cases.
TEST(Unary, FloatExpAndLogFamilySpecialValues) {
  EagerGuard eager;
  const float denormal = 1e-40f, nan = NAN, inf = INFINITY;
  const Tensor x = tensor<float>({0.f, -0.f, -1.f, inf, -inf, nan, denormal, 1.f, 8.f, 0x1p-140f});
  auto got = [&](Tensor (*f)(const Tensor&)) { return f(x).to_vector<float>(); };
  const std::vector<float> log = got([](const Tensor& t) { return t.log(); });
  EXPECT_EQ(log[0], -inf);
  EXPECT_EQ(log[1], -inf);
  EXPECT_TRUE(std::isnan(log[2]) && std::isnan(log[4]) && std::isnan(log[5]));
  EXPECT_EQ(log[3], inf);
  EXPECT_NEAR(log[6], std::log(double(denormal)), 1e-5);
  EXPECT_EQ(log[7], 0.f);
  const std::vector<float> log2 = got([](const Tensor& t) { return t.log2(); });
  EXPECT_EQ(log2[0], -inf);
  EXPECT_TRUE(std::isnan(log2[2]));
  EXPECT_EQ(log2[3], inf);
  EXPECT_EQ(log2[7], 0.f);
  EXPECT_EQ(log2[8], 3.f) << "exact at powers of two";
  EXPECT_EQ(log2[9], -140.f) << "exact at denormal powers of two";
  const std::vector<float> log1p = got([](const Tensor& t) { return t.log1p(); });
  EXPECT_EQ(log1p[0], 0.f);
  EXPECT_TRUE(std::signbit(log1p[1])) << "log1p(-0) is -0";
  EXPECT_EQ(log1p[2], -inf);
  EXPECT_EQ(log1p[3], inf);
  EXPECT_TRUE(std::isnan(log1p[4]) && std::isnan(log1p[5]));
  EXPECT_EQ(log1p[6], denormal);
  const std::vector<float> expm1 = got([](const Tensor& t) { return t.expm1(); });
  EXPECT_EQ(expm1[0], 0.f);
  EXPECT_TRUE(std::signbit(expm1[1])) << "expm1(-0) is -0";
  EXPECT_EQ(expm1[3], inf);
  EXPECT_EQ(expm1[4], -1.f);
  EXPECT_TRUE(std::isnan(expm1[5]));
  EXPECT_EQ(expm1[6], denormal);
  const std::vector<float> exp2 = got([](const Tensor& t) { return t.exp2(); });
  EXPECT_EQ(exp2[0], 1.f);
  EXPECT_EQ(exp2[3], inf);
  EXPECT_EQ(exp2[4], 0.f);
  EXPECT_TRUE(std::isnan(exp2[5]));
  EXPECT_EQ(exp2[8], 256.f) << "exact at integers";
  expect_values(tensor<float>({-149.f, -130.f, 127.f, 128.f}).exp2(), {0x1p-149, 0x1p-130, 0x1p127, INFINITY});
  // Double keeps libm: the same special values.
  const std::vector<double> d = values(tensor<double>({0.0, -1.0, 8.0}).log2());
  EXPECT_EQ(d[0], -INFINITY);
  EXPECT_TRUE(std::isnan(d[1]));
  EXPECT_EQ(d[2], 3.0);
}

// float sin, cos and tan reduce and evaluate in double (kernels/cpu/trig.h):
// their error in ulps on dense sweeps around 0, of tiny arguments (where
// sin x is x) and of large ones up to the fast reduction's limit (2^20),
// where x nearly a multiple of pi/2 cancels most; past the limit, on a dense
// sweep to 1e9, exactly libm's float functions (glibc's tanf is off by 1.38
// ulp there, and by 1.19 near 5 pi/2, where these are within 0.5).
TEST(Unary, FloatTrigErrorBounds) {
  struct Function {
    const char* name;
    Tensor (*f)(const Tensor&);
    double (*ref)(double);
    float (*libm)(float);
  };
  const Function functions[] = {
      {"sin", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); },
       [](float x) { return std::sin(x); }},
      {"cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); },
       [](float x) { return std::cos(x); }},
      {"tan", [](const Tensor& x) { return x.tan(); }, [](double x) { return std::tan(x); },
       [](float x) { return std::tan(x); }},
  };
  for (const Function& fn : functions) {
    const double worst = worst_error(fn.f, {-10.0, 10.0, -1e-3, 1e-3, 1e3, 1e4, 9e5, 1048576.0},
                                     [&](float x, float got) { return ulps(fn.ref(double(x)), got); });
    EXPECT_LT(worst, 1.0) << fn.name;
    const double past_limit = worst_error(fn.f, {1048576.0, 1e9}, [&](float x, float got) {
      return std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(fn.libm(x)) ? 0.0 : 1.0;
    });
    EXPECT_EQ(past_limit, 0.0) << fn.name << " past 2^20 is libm's";
    std::printf("worst ulps: %s %.3f\n", fn.name, worst);
  }
}

// Their special values; a run with arguments either side of the fast path's
// limit, the multiples of pi/2 nearest float values and the float in
// [1, 2^20] nearest one of them (a search over every float); strided and
// in-place runs. Within an ulp of the true value, and exactly libm's float
// function where the fast path leaves the argument to it.
TEST(Unary, FloatTrigSpecialValuesAndRuns) {
  EagerGuard eager;
  const float inf = INFINITY;
  const std::vector<float> sin = tensor<float>({0.f, -0.f, inf, -inf, NAN, 1e-40f}).sin().to_vector<float>();
  EXPECT_EQ(sin[0], 0.f);
  EXPECT_TRUE(std::signbit(sin[1])) << "sin(-0) is -0";
  EXPECT_TRUE(std::isnan(sin[2]) && std::isnan(sin[3]) && std::isnan(sin[4]));
  EXPECT_EQ(sin[5], 1e-40f) << "sin of a denormal is itself";
  const std::vector<float> cos = tensor<float>({0.f, -0.f, inf, NAN}).cos().to_vector<float>();
  EXPECT_EQ(cos[0], 1.f);
  EXPECT_EQ(cos[1], 1.f);
  EXPECT_TRUE(std::isnan(cos[2]) && std::isnan(cos[3]));
  const std::vector<float> tan = tensor<float>({0.f, -0.f, inf, NAN}).tan().to_vector<float>();
  EXPECT_EQ(tan[0], 0.f);
  EXPECT_TRUE(std::signbit(tan[1])) << "tan(-0) is -0";
  EXPECT_TRUE(std::isnan(tan[2]) && std::isnan(tan[3]));
  // A run with arguments on both paths (the libm ones exact), and the
  // multiples of pi/2 nearest float values give (cancellation).
  std::vector<float> x;
  for (int i = 0; i < 300; ++i) x.push_back(float(i) * 1.5707963f * (i % 2 ? 1 : -1));
  x.push_back(1048576.f);
  x.push_back(1048576.1f);
  x.push_back(-3e7f);
  x.push_back(1e38f);
  x.push_back(252.898209f);  // of all floats in [1, 2^20] the nearest a multiple of pi/2: 4.2e-9 from 161 pi/2
  x.push_back(534117.875f);  // of those in [2^19, 2^20]: 6.9e-8 from one
  const Tensor t = tensor<float>(x);
  const std::vector<float> s = t.sin().to_vector<float>(), c = t.cos().to_vector<float>(),
                           tn = t.tan().to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LT(ulps(std::sin(double(x[i])), s[i]), 1.0) << "sin(" << x[i] << ")";
    EXPECT_LT(ulps(std::cos(double(x[i])), c[i]), 1.0) << "cos(" << x[i] << ")";
    EXPECT_LT(ulps(std::tan(double(x[i])), tn[i]), 1.0) << "tan(" << x[i] << ")";
    if (std::fabs(x[i]) > 1048576.f) {
      EXPECT_EQ(s[i], std::sin(x[i])) << "libm's sinf past the limit";
      EXPECT_EQ(c[i], std::cos(x[i])) << "libm's cosf past the limit";
      EXPECT_EQ(tn[i], std::tan(x[i])) << "libm's tanf past the limit";
    }
  }
  // Strided (every other element, read through the loop's buffer) and in place.
  const Tensor strided = t.slice(0, 0, int64_t(x.size()), 2);
  const std::vector<float> ss = strided.sin().to_vector<float>();
  for (size_t i = 0; i < ss.size(); ++i) EXPECT_EQ(ss[i], s[2 * i]);
  Tensor in_place = t.clone();
  in_place.cos_();
  EXPECT_EQ(in_place.to_vector<float>(), c);
  // Double keeps libm.
  const std::vector<double> d = values(tensor<double>({1.0, 1e22}).sin());
  EXPECT_EQ(d[0], std::sin(1.0));
  EXPECT_EQ(d[1], std::sin(1e22));
}

TEST(Unary, PredicatesAndSpecialValues) {
  const Tensor x = tensor<float>({0.f, -1.5f, NAN, INFINITY, -INFINITY, 2.f});
  expect_values(x.isnan(), {0, 0, 1, 0, 0, 0});
  expect_values(x.isinf(), {0, 0, 0, 1, 1, 0});
  expect_values(x.isfinite(), {1, 1, 0, 0, 0, 1});
  EXPECT_EQ(x.isnan().dtype(), kBool);
  expect_values(x.logical_not(), {1, 0, 0, 0, 0, 0});
  expect_values(x.nan_to_num(), {0, -1.5, 0, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 2});
  expect_values(x.nan_to_num(7.0, 100.0, -100.0), {0, -1.5, 7, 100, -100, 2});
  expect_values(x.to(kFloat16).nan_to_num(), {0, -1.5, 0, 65504, -65504, 2});
  // NaN passes through clamp and relu keeps its sign convention
  const std::vector<double> c = values(x.clamp(-1, 1));
  EXPECT_TRUE(std::isnan(c[2]));
  EXPECT_EQ(c[3], 1);
  expect_values(tensor<int64_t>({-3, 0, 3}).isnan(), {0, 0, 0});
  expect_values(tensor<float>({0.5f, 1.5f, 2.5f, -0.5f}).round(), {0, 2, 2, -0});
  // clamp with min > max gives max everywhere, like libtorch
  expect_values(tensor<float>({-1.f, 5.f}).clamp(3, 1), {1, 1});
  expect_values(tensor<float>({-1.f, 5.f}).clamp_min(0), {0, 5});
  expect_values(tensor<float>({-1.f, 5.f}).clamp_max(0), {-1, 0});
}

TEST(Unary, InPlaceWritesThroughViews) {
  Tensor base = arange(12, kFloat32).view({3, 4});
  Tensor col = base.select(1, 2);  // strided view: 2, 6, 10
  const uint64_t v0 = base.storage()->version();
  col.neg_();
  EXPECT_GT(base.storage()->version(), v0);
  expect_values(base.select(1, 2), {-2, -6, -10});
  expect_values(base.select(1, 1), {1, 5, 9});
  base.exp_();
  EXPECT_NEAR(base[0][1].item<float>(), std::exp(1.0f), 1e-5);
  Tensor i = tensor<int64_t>({1, 2});
  expect_error([&] { i.exp_(); }, {"exp", "float32", "int64"});
  expect_error([&] { tensor<bool>({true}).neg(); }, {"neg", "bool"});
}

// ---- binary ----

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
  bool divides;  // keep the second operand away from zero
};

double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

const BinaryCase kBinary[] = {
    {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }, false},
    {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }, false},
    {"add_alpha", [](const Tensor& a, const Tensor& b) { return a.add(b, 3); },
     [](double a, double b) { return a + 3 * b; }, false},
    {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }, false},
    {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }, true},
    {"div_floor", [](const Tensor& a, const Tensor& b) { return a.div(b, "floor"); },
     [](double a, double b) { return std::floor(a / b); }, true},
    {"div_trunc", [](const Tensor& a, const Tensor& b) { return a.div(b, "trunc"); },
     [](double a, double b) { return std::trunc(a / b); }, true},
    {"remainder", [](const Tensor& a, const Tensor& b) { return a % b; }, py_mod, true},
    {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
     [](double a, double b) { return std::max(a, b); }, false},
    {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
     [](double a, double b) { return std::min(a, b); }, false},
    {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); },
     [](double a, double b) { return std::atan2(a, b); }, false},
    {"pow", [](const Tensor& a, const Tensor& b) { return a.abs().pow(b); },
     [](double a, double b) { return std::pow(std::fabs(a), b); }, false},
    {"eq", [](const Tensor& a, const Tensor& b) { return a == b; }, [](double a, double b) { return double(a == b); }, false},
    {"ne", [](const Tensor& a, const Tensor& b) { return a != b; }, [](double a, double b) { return double(a != b); }, false},
    {"lt", [](const Tensor& a, const Tensor& b) { return a < b; }, [](double a, double b) { return double(a < b); }, false},
    {"le", [](const Tensor& a, const Tensor& b) { return a <= b; }, [](double a, double b) { return double(a <= b); }, false},
    {"gt", [](const Tensor& a, const Tensor& b) { return a > b; }, [](double a, double b) { return double(a > b); }, false},
    {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; }, [](double a, double b) { return double(a >= b); }, false},
    {"logical_and", [](const Tensor& a, const Tensor& b) { return a && b; },
     [](double a, double b) { return double(a != 0 && b != 0); }, false},
    {"logical_or", [](const Tensor& a, const Tensor& b) { return a || b; },
     [](double a, double b) { return double(a != 0 || b != 0); }, false},
    {"logical_xor", [](const Tensor& a, const Tensor& b) { return a.logical_xor(b); },
     [](double a, double b) { return double((a != 0) != (b != 0)); }, false},
};

// Pairs of shapes that broadcast, including size 0 and 1.
const std::pair<DimVector, DimVector> kBroadcastPairs[] = {
    {{0}, {0}},          {{1}, {1}},       {{7}, {7}},           {{3, 5}, {5}},
    {{3, 1}, {1, 33}},   {{2, 3, 33}, {3, 1}}, {{4, 1, 70}, {4, 5, 70}}, {{0, 3}, {1, 3}},
};

Tensor away_from_zero(const Tensor& t) { return where(t.abs() < 0.5, t.sign() + (t == 0).to(t.dtype()) , t); }

void check_binary(const BinaryCase& c, DType ta, DType tb) {
  for (const auto& [sa, sb] : kBroadcastPairs) {
    const Tensor a = random(sa, ta, 3, -4, 4);
    Tensor b = random(sb, tb, 5, -4, 4);
    if (c.divides) b = away_from_zero(b);
    const DimVector out_shape = broadcast_shapes(sa, sb, "test");
    const std::vector<double> va = values(a), vb = values(b);
    const Tensor reference_dtype = c.op(a, b);
    std::vector<double> expected;
    testing::for_each_index(out_shape, [&, &sa = sa, &sb = sb](const DimVector& idx) {  // clang 14: no binding captures
      expected.push_back(round_to(c.ref(va[testing::broadcast_offset(idx, sa)], vb[testing::broadcast_offset(idx, sb)]),
                                  reference_dtype.dtype()));
    });
    for (testing::Layout la : kLayouts) {
      for (testing::Layout lb : kLayouts) {
        SCOPED_TRACE(::testing::Message() << c.name << " " << ta << "/" << tb << " " << shape_str(sa) << " & "
                                          << shape_str(sb) << " " << testing::layout_name(la) << "/"
                                          << testing::layout_name(lb));
        const Tensor y = c.op(with_layout(a, la), with_layout(b, lb));
        EXPECT_EQ(y.sizes(), IntArrayRef(out_shape));
        const DType rt = y.dtype();
        expect_values(y, expected, testing::rtol_for(rt) * 4, atol_for(rt));
      }
    }
  }
}

TEST(Binary, MatchReferenceWithBroadcastingAndLayouts) {
  for (const BinaryCase& c : kBinary)
    for (DType t : {kFloat32, kFloat64, kFloat16}) check_binary(c, t, t);
}

TEST(Binary, MixedDtypes) {
  for (const BinaryCase& c : kBinary) check_binary(c, kFloat16, kFloat32);
  for (const BinaryCase& c : kBinary) check_binary(c, kInt32, kFloat64);
}

TEST(Binary, IntegerArithmetic) {
  const Tensor a = tensor<int64_t>({7, -7, 7, -7, 0, 9});
  const Tensor b = tensor<int64_t>({2, 2, -2, -2, 3, 3});
  expect_values(a.div(b, "floor"), {3, -4, -4, 3, 0, 3});
  expect_values(a.div(b, "trunc"), {3, -3, -3, 3, 0, 3});
  expect_values(a % b, {1, 1, -1, -1, 0, 0});
  expect_values(a / b, {3.5, -3.5, -3.5, 3.5, 0, 3});
  EXPECT_EQ((a / b).dtype(), kFloat32);
  EXPECT_EQ((a + b).dtype(), kInt64);
  expect_values(tensor<int32_t>({2, 3, -2}).pow(3), {8, 27, -8});
  expect_values(tensor<int32_t>({100, 200}).to(kInt8) + tensor<int32_t>({100, 100}).to(kInt8), {-56, 44});
  expect_error([&] { (a.div(tensor<int64_t>({0, 1, 1, 1, 1, 1}), "floor")).numel(); }, {"division by zero"});
  expect_error([&] { (a % 0).numel(); }, {"remainder", "division by zero"});
  expect_error([&] { tensor<int64_t>({2}).pow(-1); }, {"pow", "negative"});
}

TEST(Binary, TypePromotion) {
  const Tensor f16 = ones({2}, kFloat16), bf16 = ones({2}, kBFloat16), f32 = ones({2}), f64 = ones({2}, kFloat64);
  const Tensor i8 = ones({2}, kInt8), u8 = ones({2}, kUInt8), i32 = ones({2}, kInt32), i64 = ones({2}, kInt64);
  const Tensor b = ones({2}, kBool);
  EXPECT_EQ((f16 + bf16).dtype(), kFloat32);
  EXPECT_EQ((f16 + f32).dtype(), kFloat32);
  EXPECT_EQ((f32 + f64).dtype(), kFloat64);
  EXPECT_EQ((i8 + u8).dtype(), kInt32);
  EXPECT_EQ((i32 + i64).dtype(), kInt64);
  EXPECT_EQ((i64 + f16).dtype(), kFloat16);
  EXPECT_EQ((b + b).dtype(), kBool);
  EXPECT_EQ((b + i8).dtype(), kInt8);
  // scalars change only the category
  EXPECT_EQ((i32 + 2).dtype(), kInt32);
  EXPECT_EQ((i32 + 2.5).dtype(), kFloat32);
  EXPECT_EQ((f16 * 2.5).dtype(), kFloat16);
  EXPECT_EQ((b + 1).dtype(), kInt64);
  EXPECT_EQ((f32 < 2).dtype(), kBool);
  expect_values(i32 + 2.5, {3.5, 3.5});
}

TEST(Binary, ScalarForms) {
  const Tensor x = tensor<float>({1.f, -2.f, 3.f});
  expect_values(x + 1, {2, -1, 4});
  expect_values(1 + x, {2, -1, 4});
  expect_values(x - 1, {0, -3, 2});
  expect_values(1 - x, {0, 3, -2});
  expect_values(x * 2, {2, -4, 6});
  expect_values(2 * x, {2, -4, 6});
  expect_values(x / 2, {0.5, -1, 1.5});
  expect_values(2 / x, {2, -1, 2.0 / 3}, 1e-6);
  expect_values(x.pow(2), {1, 4, 9});
  expect_values(pow(2, x), {2, 0.25, 8});
  expect_values(x % 2, {1, 0, 1});
  expect_values(x.maximum(0), {1, 0, 3});
  expect_values(x == 3, {0, 0, 1});
  expect_values(x.sub(1, 2), {-1, -4, 1});
  expect_values(x.add(1, 0.5), {1.5, -1.5, 3.5});
}

TEST(Binary, InPlaceAndAliasing) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  x += tensor<float>({10.f, 20.f, 30.f});
  expect_values(x, {10, 21, 32, 13, 24, 35});
  x *= 2;
  expect_values(x, {20, 42, 64, 26, 48, 70});
  x.sub_(x);
  expect_values(x, {0, 0, 0, 0, 0, 0});
  // reading a transposed view of the output while writing it goes through a temporary
  Tensor m = arange(4, kFloat32).view({2, 2});
  m.add_(m.t());
  expect_values(m, {0, 3, 3, 6});
  // a float result cannot be written into an integer tensor; a broadcast result must fit self
  Tensor i = zeros({3}, kInt64);
  expect_error([&] { i.add_(1.5); }, {"add", "float32", "int64"});
  expect_error([&] { i /= 2; }, {"div", "float32", "int64"});
  Tensor small = zeros({3});
  expect_error([&] { small.add_(ones({2, 3})); }, {"add", "[3]", "[2, 3]"});
  Tensor expanded = zeros({1}).expand({3});
  expect_error([&] { expanded.add_(1); }, {"add", "share memory"});
}

TEST(Binary, Errors) {
  expect_error([&] { (ones({2, 3}) + ones({4})).numel(); }, {"add", "[2, 3]", "[4]", "broadcast"});
  expect_error([&] { (ones({3}) < ones({2})).numel(); }, {"lt", "[3]", "[2]"});
  expect_error([&] { ones({2}).div(ones({2}), "ceil"); }, {"div", "rounding_mode"});
  expect_error([&] { where(ones({2}), ones({2}), ones({2})); }, {"where", "bool"});
  expect_error([&] { ones({2}) + Tensor(); }, {"add", "undefined"});
}

TEST(Binary, WhereAndMaskedFill) {
  const Tensor c = tensor<float>({1.f, -1.f, 2.f}) > 0;
  expect_values(where(c, tensor<float>({1.f, 2.f, 3.f}), tensor<float>({-1.f, -2.f, -3.f})), {1, -2, 3});
  expect_values(where(c, 0.5, tensor<float>({-1.f, -2.f, -3.f})), {0.5, -2, 0.5});
  EXPECT_EQ(where(c, 1, tensor<int32_t>({4, 5, 6})).dtype(), kInt32);
  expect_values(where(c.view({3, 1}), ones({1, 2}), zeros({1, 2})), {1, 1, 0, 0, 1, 1});
  Tensor x = zeros({2, 3});
  x.masked_fill_(tensor<float>({1.f, 0.f, 1.f}) > 0, 7);
  expect_values(x, {7, 0, 7, 7, 0, 7});
  expect_values(ones({2}, kInt32).masked_fill(tensor<float>({1.f, 0.f}) > 0, 5), {5, 1});
  expect_error([&] { zeros({3}).masked_fill(ones({2, 3}) > 0, 1); }, {"masked_fill", "[2, 3]", "[3]"});
  expect_error([&] { zeros({3}).masked_fill(ones({3}), 1); }, {"masked_fill", "bool"});
}

}  // namespace
}  // namespace nnvm
