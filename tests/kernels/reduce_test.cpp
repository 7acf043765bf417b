// Reductions, cumsum and softmax against naive double-precision references,
// over dtypes, layouts, keepdim, size-0/1/odd/large extents and the
// row-wise, column-wise, blocked and permuted paths of kernels/cpu/reduce.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::kLayouts;
using testing::rtol_for;
using testing::values;
using testing::with_layout;
using Group = std::vector<double>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const DType kAllTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kBool};
const DType kFloatTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16};

struct Case {
  DimVector shape, dims;
};
// Row-wise, column-wise, permuted (dims {0, 2}), size-1 dims, empty extents,
// rows long enough to be reduced in blocks, and a 0-d tensor.
const Case kCases[] = {{{}, {}},          {{0}, {}},          {{1}, {0}},        {{7}, {0}},
                       {{3, 5}, {1}},     {{3, 5}, {0}},      {{3, 5}, {}},      {{4, 0, 3}, {1}},
                       {{4, 0, 3}, {0}},  {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {-1, -2}}, {{2, 3, 4}, {1}},
                       {{5, 1, 6}, {1}},  {{33, 65}, {0}},    {{33, 65}, {1}},   {{2, 20000}, {1}},
                       {{40000}, {}},     {{300, 40}, {0}}};

// The input's values grouped by output element, each group in the input's
// row-major order (so a group's position is the flat index over the reduced dims).
std::vector<Group> groups(const Tensor& x, IntArrayRef dim_list) {
  const DimVector rd = reduction_dims(dim_list, x.dim(), "test");
  std::vector<Group> g(size_t(numel_of(reduced_shape(x.sizes(), rd, false))));
  const std::vector<double> v = values(x);
  int64_t k = 0;
  testing::for_each_index(x.sizes(), [&](const DimVector& idx) {
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!std::binary_search(rd.begin(), rd.end(), d)) o = o * x.size(d) + idx[d];
    g[size_t(o)].push_back(v[size_t(k++)]);
  });
  return g;
}

template <class F> std::vector<double> reference(const Tensor& x, IntArrayRef dim_list, F f) {
  std::vector<double> out;
  for (const Group& g : groups(x, dim_list)) out.push_back(f(g));
  return out;
}

DimVector expected_shape(const Tensor& x, IntArrayRef dim_list, bool keepdim) {
  return reduced_shape(x.sizes(), reduction_dims(dim_list, x.dim(), "test"), keepdim);
}

// Runs check(x, case, keepdim) on random inputs of `dtype` in every layout.
template <class Check>
void for_each_input(DType dtype, Check check, double lo = -2.0, double hi = 2.0, bool nonempty = false,
                    int64_t max_numel = std::numeric_limits<int64_t>::max()) {
  uint64_t seed = 1;
  for (const Case& c : kCases) {
    const Tensor base = testing::random(c.shape, dtype, seed++, lo, hi);
    if (base.numel() > max_numel) continue;
    if (nonempty) {
      const DimVector rd = reduction_dims(c.dims, base.dim(), "test");
      int64_t n = 1;
      for (int64_t d : rd) n *= base.size(d);
      if (n == 0) continue;
    }
    for (testing::Layout layout : kLayouts) {
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(testing::layout_name(layout) + std::string(" ") + shape_str(c.shape) + " dims " +
                     shape_str(c.dims) + (keepdim ? " keepdim " : " ") + std::string(dtype_name(dtype)));
        check(with_layout(base, layout), c, keepdim);
      }
    }
  }
}

double sum_of(const Group& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
double prod_of(const Group& g) {
  double s = 1;
  for (double v : g) s *= v;
  return s;
}
double max_of(const Group& g) {
  double m = -kInf;
  for (double v : g) m = std::isnan(v) || v > m ? v : m;
  return m;
}
double min_of(const Group& g) {
  double m = kInf;
  for (double v : g) m = std::isnan(v) || v < m ? v : m;
  return m;
}
// First NaN, else the first extreme value.
template <bool kMax> double arg_of(const Group& g) {
  size_t best = 0;
  for (size_t i = 1; i < g.size(); ++i) {
    if (std::isnan(g[best])) break;
    if (std::isnan(g[i]) || (kMax ? g[i] > g[best] : g[i] < g[best])) best = i;
  }
  return double(best);
}
double var_of(const Group& g, int64_t correction) {
  const double mean = sum_of(g) / double(g.size());
  double ss = 0;
  for (double v : g) ss += (v - mean) * (v - mean);
  return ss / std::max(0.0, double(g.size()) - double(correction));
}

TEST(Reduce, SumMatchesReference) {
  for (DType dt : kAllTypes) {
    const DType out_dt = is_integral(dt, true) ? kInt64 : dt;
    for_each_input(dt, [&](const Tensor& x, const Case& c, bool keepdim) {
      const Tensor y = x.sum(c.dims, keepdim);
      EXPECT_EQ(y.dtype(), out_dt);
      EXPECT_EQ(shape_str(y.sizes()), shape_str(expected_shape(x, c.dims, keepdim)));
      expect_values(y, reference(x, c.dims, sum_of), rtol_for(out_dt), 1e-5);
    });
  }
}

TEST(Reduce, SumWithDtypeCastsFirst) {
  const Tensor x = testing::random({5, 7}, kInt32, 3);
  const Tensor y = x.sum({1}, false, kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  expect_values(y, reference(x, {1}, sum_of));
  expect_values(x.sum(), {sum_of(values(x))});
  EXPECT_EQ(x.sum().dim(), 0);
}

TEST(Reduce, MeanMatchesReference) {
  for (DType dt : kFloatTypes) {
    for_each_input(dt, [&](const Tensor& x, const Case& c, bool keepdim) {
      const Tensor y = x.mean(c.dims, keepdim);
      EXPECT_EQ(y.dtype(), dt);
      expect_values(y, reference(x, c.dims, [](const Group& g) { return sum_of(g) / double(g.size()); }),
                    rtol_for(dt), 1e-5);
    });
  }
  const Tensor i = testing::random({4, 6}, kInt64, 9);
  expect_values(i.mean({0}, false, kFloat32), reference(i, {0}, [](const Group& g) { return sum_of(g) / 4; }));
}

TEST(Reduce, ProdMatchesReference) {
  for (DType dt : kAllTypes) {
    const DType out_dt = is_integral(dt, true) ? kInt64 : dt;
    const bool ints = is_integral(dt, true);
    const double lo = ints ? (dt == kUInt8 ? 0.0 : -1.0) : 0.6, hi = ints ? 2.0 : 1.4;
    for_each_input(
        dt,
        [&](const Tensor& x, const Case& c, bool) {
          // prod takes one dim or all of them
          if (c.dims.size() > 1) return;
          const Tensor y = c.dims.empty() ? x.prod() : x.prod(c.dims[0]);
          EXPECT_EQ(y.dtype(), out_dt);
          expect_values(y, reference(x, c.dims, prod_of), rtol_for(out_dt) * 4, 1e-6);
        },
        lo, hi, false, 3000);
  }
}

TEST(Reduce, ExtremaMatchReference) {
  for (DType dt : kAllTypes) {
    for_each_input(
        dt,
        [&](const Tensor& x, const Case& c, bool keepdim) {
          expect_values(x.amax(c.dims, keepdim), reference(x, c.dims, max_of));
          expect_values(x.amin(c.dims, keepdim), reference(x, c.dims, min_of));
          EXPECT_EQ(x.amax(c.dims, keepdim).dtype(), dt);
          if (keepdim || !c.dims.empty()) return;
          expect_values(x.max(), reference(x, {}, max_of));
          expect_values(x.min(), reference(x, {}, min_of));
        },
        -2.0, 2.0, true);
  }
}

TEST(Reduce, MaxMinWithIndicesPickFirstOfTies) {
  // Integral inputs in [-2, 2] have many ties.
  for (DType dt : kAllTypes) {
    for_each_input(
        dt,
        [&](const Tensor& x, const Case& c, bool keepdim) {
          if (c.dims.size() != 1) return;
          const auto [mx, imx] = x.max(c.dims[0], keepdim);
          const auto [mn, imn] = x.min(c.dims[0], keepdim);
          EXPECT_EQ(imx.dtype(), kInt64);
          EXPECT_EQ(shape_str(imx.sizes()), shape_str(expected_shape(x, c.dims, keepdim)));
          expect_values(mx, reference(x, c.dims, max_of));
          expect_values(imx, reference(x, c.dims, arg_of<true>));
          expect_values(mn, reference(x, c.dims, min_of));
          expect_values(imn, reference(x, c.dims, arg_of<false>));
          expect_values(x.argmax(c.dims[0], keepdim), reference(x, c.dims, arg_of<true>));
          expect_values(x.argmin(c.dims[0], keepdim), reference(x, c.dims, arg_of<false>));
        },
        -2.0, 2.0, true);
  }
}

TEST(Reduce, ArgmaxWithoutDimIndexesTheFlattenedTensor) {
  for (DType dt : {kFloat32, kInt32}) {
    for_each_input(
        dt,
        [&](const Tensor& x, const Case&, bool keepdim) {
          if (x.numel() == 0) return;
          const Tensor a = x.argmax(std::nullopt, keepdim);
          EXPECT_EQ(shape_str(a.sizes()), shape_str(expected_shape(x, {}, keepdim)));
          expect_values(a, reference(x, {}, arg_of<true>));
          expect_values(x.argmin(std::nullopt, keepdim), reference(x, {}, arg_of<false>));
        },
        -2.0, 2.0, true);
  }
}

TEST(Reduce, NaNPropagatesThroughExtrema) {
  const Tensor x = tensor<float>({1.f, NAN, 5.f, NAN, 7.f, 2.f, 9.f, -1.f}, IntArrayRef{2, 4});
  expect_values(x.amax({1}), {kNaN, 9});
  expect_values(x.amin({1}), {kNaN, -1});
  expect_values(x.max(), {kNaN});
  expect_values(x.argmax(), {1});
  expect_values(x.argmin(1), {1, 3});
  const auto [v, i] = x.max(1);
  expect_values(v, {kNaN, 9});
  expect_values(i, {1, 2});
  // A long row crosses lanes and blocks: the first NaN still wins.
  Tensor big = testing::random({40000}, kFloat32, 5);
  big.slice(0, 30000, 30001).fill_(NAN);
  big.slice(0, 20000, 20001).fill_(NAN);
  expect_values(big.argmax(), {20000});
  EXPECT_TRUE(std::isnan(big.max().item<float>()));
}

TEST(Reduce, ZeroSizeExtents) {
  const Tensor x = zeros({2, 0});
  expect_values(x.sum({1}), {0, 0});
  expect_values(x.prod(1), {1, 1});
  expect_values(x.mean({1}), {kNaN, kNaN});
  expect_values(x.all(1), {1, 1});
  expect_values(x.any(1), {0, 0});
  expect_values(x.logsumexp({1}), {-kInf, -kInf});
  expect_values(x.var({1}), {kNaN, kNaN});
  EXPECT_EQ(shape_str(x.amax({0}).sizes()), "[0]");  // nothing reduced over the empty dim
  expect_error([&] { x.max(); }, {"max", "[2, 0]"});
  expect_error([&] { x.max(1); }, {"max", "[2, 0]"});
  expect_error([&] { x.min(1, true); }, {"min", "[2, 0]"});
  expect_error([&] { x.argmax(1); }, {"argmax", "[2, 0]"});
  expect_error([&] { x.argmin(); }, {"argmin", "[2, 0]"});
  expect_error([&] { x.amax({1}); }, {"amax", "[2, 0]"});
  expect_error([&] { x.norm(INFINITY, {1}); }, {"norm", "[2, 0]"});
}

TEST(Reduce, VarStdMatchReference) {
  for (DType dt : kFloatTypes) {
    for (int64_t correction : {0, 1, 2}) {
      for_each_input(dt, [&](const Tensor& x, const Case& c, bool keepdim) {
        const auto var = [&](const Group& g) { return var_of(g, correction); };
        const double rtol = rtol_for(dt) * 2;
        expect_values(x.var(c.dims, correction, keepdim), reference(x, c.dims, var), rtol, 1e-5);
        expect_values(x.std(c.dims, correction, keepdim),
                      reference(x, c.dims, [&](const Group& g) { return std::sqrt(var(g)); }), rtol, 1e-5);
        const auto [v, m] = var_mean(x, c.dims, correction, keepdim);
        expect_values(v, reference(x, c.dims, var), rtol, 1e-5);
        expect_values(m, reference(x, c.dims, [](const Group& g) { return sum_of(g) / double(g.size()); }),
                      rtol, 1e-5);
      });
    }
  }
  // A correction of N or more divides by zero: inf, or NaN when every value is equal.
  expect_values(tensor<float>({1.f, 3.f}).var({}, 2), {kInf});
  expect_values(tensor<float>({2.f, 2.f}).var({}, 3), {kNaN});
}

TEST(Reduce, LogsumexpMatchesReference) {
  const auto lse = [](const Group& g) {
    double m = max_of(g);
    if (std::isinf(m)) m = 0;
    double s = 0;
    for (double v : g) s += std::exp(v - m);
    return std::log(s) + m;
  };
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32}) {
    for_each_input(dt, [&](const Tensor& x, const Case& c, bool keepdim) {
      const Tensor y = x.logsumexp(c.dims, keepdim);
      EXPECT_EQ(y.dtype(), is_floating(dt) ? dt : kFloat32);
      expect_values(y, reference(x, c.dims, lse), rtol_for(y.dtype()), 1e-5);
    });
  }
  // Large values do not overflow; infinities follow libtorch.
  const Tensor x = tensor<float>({1000.f, 1000.f, -INFINITY, -INFINITY, INFINITY, 1.f}, IntArrayRef{3, 2});
  expect_values(logsumexp(x, {1}), {1000 + std::log(2.0), -kInf, kInf});
}

TEST(Reduce, NormMatchesReference) {
  for (double p : {0.0, 1.0, 2.0, kInf, -kInf, 3.0, 0.5}) {
    for (DType dt : kFloatTypes) {
      for_each_input(
          dt,
          [&](const Tensor& x, const Case& c, bool keepdim) {
            const auto norm = [&](const Group& g) {
              if (p == kInf || p == -kInf) {
                double m = p > 0 ? 0 : kInf;
                for (double v : g) m = p > 0 ? std::max(m, std::fabs(v)) : std::min(m, std::fabs(v));
                return m;
              }
              double s = 0;
              for (double v : g) s += p == 0 ? double(v != 0) : std::pow(std::fabs(v), p);
              return p == 0 || p == 1 ? s : std::pow(s, 1 / p);
            };
            SCOPED_TRACE("p = " + std::to_string(p));
            const std::vector<double> expected = reference(x, c.dims, norm);
            // Large extents with p = 0.5 overflow float16, as they do in libtorch.
            if (dt == kFloat16 && std::any_of(expected.begin(), expected.end(), [](double v) { return v > 65504; }))
              return;
            expect_values(x.norm(p, c.dims, keepdim), expected, rtol_for(dt) * 2, 1e-5);
          },
          -2.0, 2.0, std::isinf(p));
    }
  }
}

TEST(Reduce, AllAnyMatchReference) {
  for (DType dt : kAllTypes) {
    // A narrow range around 0 gives integral inputs with zeros and non-zeros.
    for_each_input(
        dt,
        [&](const Tensor& x, const Case& c, bool keepdim) {
          if (c.dims.size() > 1) return;
          const auto all = [](const Group& g) { return double(std::all_of(g.begin(), g.end(), [](double v) { return v != 0; })); };
          const auto any = [](const Group& g) { return double(std::any_of(g.begin(), g.end(), [](double v) { return v != 0; })); };
          const Tensor a = c.dims.empty() ? x.all() : x.all(c.dims[0], keepdim);
          const Tensor o = c.dims.empty() ? x.any() : x.any(c.dims[0], keepdim);
          EXPECT_EQ(a.dtype(), kBool);
          expect_values(a, reference(x, c.dims, all));
          expect_values(o, reference(x, c.dims, any));
        },
        -0.6, 0.6);
  }
}

TEST(Reduce, IntegralMeanAndMomentsAreErrors) {
  const Tensor x = testing::random({2, 3}, kInt64, 1);
  expect_error([&] { x.mean(); }, {"mean", "int64", "[2, 3]"});
  expect_error([&] { x.mean({0}, false, kInt32); }, {"mean", "int32"});
  expect_error([&] { x.var(); }, {"var", "int64"});
  expect_error([&] { x.std({1}); }, {"std", "int64"});
  expect_error([&] { x.norm(); }, {"norm", "int64"});
  expect_error([&] { x.sum({2}); }, {"sum", "dim 2"});
  expect_error([&] { x.sum({0, -2}); }, {"sum", "twice"});
  expect_error([&] { x.cumsum(3); }, {"cumsum", "dim 3"});
  expect_error([&] { softmax(x, 0, kInt64); }, {"softmax", "int64"});
}

TEST(Reduce, DeterministicAcrossRunsAndThreadCounts) {
  const Tensor x = testing::random({40000}, kFloat32, 11);
  const Tensor m = testing::random({513, 300}, kFloat32, 12);
  const int threads = get_num_threads();
  const float full = x.sum().item<float>();
  const std::vector<float> cols = m.sum({0}).to_vector<float>(), rows = m.sum({1}).to_vector<float>();
  set_num_threads(1);
  EXPECT_EQ(x.sum().item<float>(), full);
  EXPECT_EQ(m.sum({0}).to_vector<float>(), cols);
  EXPECT_EQ(m.sum({1}).to_vector<float>(), rows);
  set_num_threads(threads);
  EXPECT_EQ(x.sum().item<float>(), full);
}

// ---- ops along one dim: cumsum, softmax, log_softmax ----

// Calls f(slice) for every 1-d slice along `dim`, with its elements' row-major positions.
void for_each_slice(IntArrayRef shape, int64_t dim, const std::function<void(const std::vector<int64_t>&)>& f) {
  if (shape.empty()) return f({0});
  DimVector outer(shape.begin(), shape.end());
  outer[size_t(dim)] = 1;
  const DimVector strides = contiguous_strides(shape);
  testing::for_each_index(outer, [&](const DimVector& idx) {
    int64_t base = 0;
    for (size_t d = 0; d < idx.size(); ++d) base += idx[d] * strides[d];
    std::vector<int64_t> pos;
    for (int64_t k = 0; k < shape[size_t(dim)]; ++k) pos.push_back(base + k * strides[size_t(dim)]);
    f(pos);
  });
}

template <class F> std::vector<double> along(const Tensor& x, int64_t dim, F per_slice) {
  const std::vector<double> v = values(x);
  std::vector<double> out(v.size());
  for_each_slice(x.sizes(), x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "test"), [&](const std::vector<int64_t>& pos) {
    Group g;
    for (int64_t p : pos) g.push_back(v[size_t(p)]);
    const Group r = per_slice(g);
    for (size_t k = 0; k < pos.size(); ++k) out[size_t(pos[k])] = r[k];
  });
  return out;
}

const std::vector<std::pair<DimVector, int64_t>> kDimCases = {
    {{}, 0}, {{0}, 0}, {{1}, 0}, {{7}, 0}, {{3, 5}, 1}, {{3, 5}, 0}, {{4, 0, 3}, 1}, {{2, 3, 4}, 1},
    {{2, 3, 4}, -1}, {{33, 65}, 0}, {{64, 1000}, -1}, {{300, 40}, 0}};

template <class Check> void for_each_dim_input(DType dt, Check check, double lo = -2.0, double hi = 2.0) {
  uint64_t seed = 100;
  for (const auto& [shape, dim] : kDimCases) {
    const Tensor base = testing::random(shape, dt, seed++, lo, hi);
    for (testing::Layout layout : kLayouts) {
      SCOPED_TRACE(testing::layout_name(layout) + std::string(" ") + shape_str(shape) + " dim " +
                   std::to_string(dim) + " " + std::string(dtype_name(dt)));
      check(with_layout(base, layout), dim);
    }
  }
}

TEST(Reduce, CumsumMatchesReference) {
  for (DType dt : kAllTypes) {
    const DType out_dt = is_integral(dt, true) ? kInt64 : dt;
    for_each_dim_input(dt, [&](const Tensor& x, int64_t dim) {
      const Tensor y = x.cumsum(dim);
      EXPECT_EQ(y.dtype(), out_dt);
      EXPECT_EQ(shape_str(y.sizes()), shape_str(x.sizes()));
      expect_values(y, along(x, dim, [](const Group& g) {
                      Group r;
                      double s = 0;
                      for (double v : g) r.push_back(s += v);
                      return r;
                    }),
                    rtol_for(out_dt), 1e-5);
    });
  }
  const Tensor i = testing::random({3, 4}, kInt32, 8);
  EXPECT_EQ(i.cumsum(1, kFloat64).dtype(), kFloat64);
}

Group softmax_of(const Group& g, bool log) {
  const double m = max_of(g);
  double s = 0;
  for (double v : g) s += std::exp(v - m);
  Group r;
  for (double v : g) r.push_back(log ? v - m - std::log(s) : std::exp(v - m) / s);
  return r;
}

TEST(Reduce, SoftmaxMatchesReference) {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kUInt8, kBool}) {
    const DType out_dt = is_floating(dt) ? dt : kFloat32;
    for_each_dim_input(dt, [&](const Tensor& x, int64_t dim) {
      const Tensor s = softmax(x, dim), l = x.log_softmax(dim);
      EXPECT_EQ(s.dtype(), out_dt);
      EXPECT_EQ(shape_str(s.sizes()), shape_str(x.sizes()));
      expect_values(s, along(x, dim, [](const Group& g) { return softmax_of(g, false); }), rtol_for(out_dt) * 2, 1e-6);
      expect_values(l, along(x, dim, [](const Group& g) { return softmax_of(g, true); }), rtol_for(out_dt) * 2, 1e-5);
      expect_values(x.softmax(dim), values(s), 0, 0);
    });
  }
  // dtype casts the input first and sets the result type.
  const Tensor h = testing::random({3, 6}, kFloat16, 4);
  const Tensor y = softmax(h, 1, kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  expect_values(y, along(h, 1, [](const Group& g) { return softmax_of(g, false); }), 1e-12, 1e-15);
}

TEST(Reduce, SoftmaxIsStableForLargeAndMaskedInputs) {
  const Tensor x = tensor<float>({1000.f, 999.f, -INFINITY, 1e30f, -1e30f, 0.f}, IntArrayRef{2, 3});
  expect_values(softmax(x, 1), {1 / (1 + std::exp(-1.0)), std::exp(-1.0) / (1 + std::exp(-1.0)), 0, 1, 0, 0});
  expect_values(log_softmax(x, 1), {-std::log1p(std::exp(-1.0)), -1 - std::log1p(std::exp(-1.0)), -kInf, 0, -2e30, -1e30},
                1e-6, 1e-5);
  expect_values(softmax(x, 0), {0, 1, 0, 1, 0, 1});
  expect_values(softmax(tensor<float>({NAN, 1.f}), 0), {kNaN, kNaN});
}

// A single output of a contiguous input of the compute dtype skips the layout
// (reduce_into's shortcut); a strided copy of the same values takes the full
// path. Both must give the same bits, up to and past the blocked row length.
// A reduction over dims that are not one block (a conv bias gradient's sum
// over {0, 2, 3}) reads its rows in place a block at a time: bit for bit the
// same as the same reduction of the permuted contiguous copy, rows long
// enough for several blocks and short ones, a size-1 dim in between, a
// strided input, and every reduction that takes that path.
TEST(Reduce, NonAdjacentDimsReadInPlaceMatchThePermutedCopy) {
  EagerGuard eager;
  struct Shape {
    DimVector sizes, dims, order;  // order: the kept dims, then the reduced ones
  };
  const Shape shapes[] = {{{64, 3, 28, 28}, {0, 2, 3}, {1, 0, 2, 3}},
                          {{5, 3, 7, 1, 9}, {0, 2, 4}, {1, 3, 0, 2, 4}},
                          {{3, 4, 5}, {0, 2}, {1, 0, 2}},
                          {{2, 6, 3, 5}, {1, 3}, {0, 2, 1, 3}}};
  using Op = Tensor (*)(const Tensor&, IntArrayRef);
  const std::pair<const char*, Op> ops[] = {
      {"sum", [](const Tensor& x, IntArrayRef d) { return x.sum(d); }},
      {"mean", [](const Tensor& x, IntArrayRef d) { return x.mean(d); }},
      {"prod", [](const Tensor& x, IntArrayRef d) {
         return call1(find_op("prod"), {x * 0.01 + 1}, Attrs(dims(d), false, kFloat32));
       }},
      {"amax", [](const Tensor& x, IntArrayRef d) { return x.amax(d); }},
      {"amin", [](const Tensor& x, IntArrayRef d) { return x.amin(d); }},
      {"norm", [](const Tensor& x, IntArrayRef d) { return x.norm(2, d); }},
      {"any", [](const Tensor& x, IntArrayRef d) { return call1(find_op("any"), {x > 2.5}, Attrs(dims(d), false)); }},
      {"all", [](const Tensor& x, IntArrayRef d) { return call1(find_op("all"), {x > -2.5}, Attrs(dims(d), false)); }},
  };
  uint64_t seed = 11;
  for (const Shape& sh : shapes) {
    const Tensor x = testing::random(sh.sizes, kFloat32, seed++);
    // The same values through a transposed view: strided in place.
    const Tensor strided = x.transpose(0, -1).contiguous().transpose(0, -1);
    ASSERT_FALSE(strided.is_contiguous());
    const Tensor permuted = x.permute(sh.order).contiguous();
    DimVector trailing;
    for (size_t k = 0; k < sh.dims.size(); ++k) trailing.push_back(int64_t(sh.sizes.size() - sh.dims.size() + k));
    for (const auto& [name, op] : ops) {
      const std::vector<double> want = values(op(permuted, trailing));
      EXPECT_EQ(values(op(x, sh.dims)), want) << name << " " << shape_str(sh.sizes);
      EXPECT_EQ(values(op(strided, sh.dims)), want) << name << " strided " << shape_str(sh.sizes);
    }
  }
}

TEST(Reduce, SingleOutputShortcutMatchesTheFullPath) {
  EagerGuard eager;
  for (int64_t n : {3, 64, 16384, 16385}) {
    const Tensor wide = testing::random({n, 2}, kFloat32, 7);
    const Tensor strided = wide.select(1, 0), contiguous = strided.contiguous();
    ASSERT_TRUE(contiguous.is_contiguous() && !strided.is_contiguous());
    for (auto [name, f] : std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&)>>{
             {"sum", [](const Tensor& x) { return x.sum(); }},
             {"mean", [](const Tensor& x) { return x.mean(); }},
             {"norm", [](const Tensor& x) { return x.norm(); }},
             {"amax", [](const Tensor& x) { return x.amax(); }},
             {"sum keepdim", [](const Tensor& x) { return x.unsqueeze(0).sum({1}, true); }}}) {
      const Tensor fast = f(contiguous), full = f(strided);
      EXPECT_EQ(fast.sizes(), full.sizes()) << name;
      EXPECT_EQ(fast.item<float>(), full.item<float>()) << name << " of " << n;
    }
    expect_values(contiguous.norm(), {std::sqrt(reference(contiguous, {}, [](const Group& g) {
                    double s = 0;
                    for (double v : g) s += v * v;
                    return s;
                  })[0])}, 1e-5);
  }
}

}  // namespace
}  // namespace nnvm

namespace nnvm {
namespace {

// Rows long enough for the vector lanes of the row kernel (and their
// remainders), drawn from values that tie often: -0 and +0, infinities,
// and NaN for the float types, anywhere in the row, the first element too.
// The same data transposed runs the column kernel (reduced dim outermost).
TEST(Reduce, ArgExtremaAlongRowsAndColumnsTiesZerosInfinitiesAndNaN) {
  const double pool[] = {-kInf, -1, -0.0, 0.0, 1, 2, kInf, std::nan("")};
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return size_t(state >> 33);
  };
  for (DType dt : {kFloat32, kFloat64, kFloat16, kInt64, kInt32}) {
    const bool floating = dt == kFloat32 || dt == kFloat64 || dt == kFloat16;
    for (int64_t rows : {3, 40}) {
      for (int64_t n : {1, 2, 7, 15, 16, 17, 31, 33, 100, 1000}) {
        for (int trial = 0; trial < 4; ++trial) {
          SCOPED_TRACE(::testing::Message() << dt << " rows=" << rows << " n=" << n << " trial " << trial);
          std::vector<double> v(size_t(rows * n));
          // trial 0 without NaN; later ones with NaN at a rate that leaves NaN-free rows too
          for (double& e : v) {
            const size_t k = next() % (floating && trial > 0 ? (trial == 1 ? 8 : 60) : 7);
            e = k < 8 ? pool[k] : pool[k % 7];
            if (!floating && !std::isfinite(e)) e = e > 0 ? 3 : -3;
          }
          const Tensor x = tensor<double>(v, IntArrayRef{rows, n}).to(dt);
          const Tensor xt = x.t().contiguous();  // [n, rows]: each row of x is a column
          std::vector<double> imax, imin, vmax;
          for (int64_t r = 0; r < rows; ++r) {
            const Group g(v.begin() + r * n, v.begin() + (r + 1) * n);
            imax.push_back(arg_of<true>(g));
            imin.push_back(arg_of<false>(g));
            vmax.push_back(g[size_t(imax.back())]);
          }
          for (const auto& [t, dim] : {std::pair{x, int64_t(1)}, std::pair{xt, int64_t(0)}}) {
            SCOPED_TRACE(::testing::Message() << "dim " << dim);
            expect_values(t.argmax(dim), imax);
            expect_values(t.argmin(dim), imin);
            const auto [values_max, indices_max] = t.max(dim);
            expect_values(indices_max, imax);
            expect_values(values_max, vmax);
            // -0 and +0 tie: the index picks which one max returns
            const Tensor picked = values_max.to(kFloat64);
            for (int64_t r = 0; r < rows; ++r) {
              if (floating && vmax[size_t(r)] == 0) {
                EXPECT_EQ(std::signbit(picked[r].item<double>()), std::signbit(vmax[size_t(r)])) << "row " << r;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nnvm
