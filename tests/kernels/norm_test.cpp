// layer_norm, group_norm, batch_norm and dropout against naive double loops.
#include <cmath>

#include "reference.h"

namespace nnvm {
namespace {

using testing::kLayouts;
using testing::random;
using testing::values;
using testing::with_layout;

double atol_for(DType t) { return t == kFloat16 ? 2e-3 : t == kFloat32 ? 1e-5 : 1e-10; }

// Mean and biased variance of x[at(k)] for k in [0, n).
template <class At> std::pair<double, double> moments(const std::vector<double>& x, int64_t n, At at) {
  double sum = 0, squares = 0;
  for (int64_t k = 0; k < n; ++k) sum += x[size_t(at(k))];
  const double mean = sum / double(n);
  for (int64_t k = 0; k < n; ++k) squares += (x[size_t(at(k))] - mean) * (x[size_t(at(k))] - mean);
  return {mean, squares / double(n)};
}

// weight/bias values or nothing (an undefined tensor).
std::vector<double> values_or_empty(const Tensor& t) { return t.defined() ? values(t) : std::vector<double>{}; }

TEST(NormTest, LayerNormMatchesReference) {
  struct Case {
    DimVector shape;
    DimVector normalized;
  };
  const Case cases[] = {{{1, 1}, {1}},       {{3, 5}, {5}},     {{4, 7, 9}, {9}},  {{4, 7, 9}, {7, 9}},
                        {{2, 3, 1}, {3, 1}}, {{0, 4}, {4}},     {{65, 33}, {33}},  {{5}, {5}},
                        {{300, 257}, {257}}};
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    for (const Case& c : cases) {
      for (bool affine : {false, true}) {
        for (testing::Layout layout : kLayouts) {
          SCOPED_TRACE(testing::layout_name(layout));
          SCOPED_TRACE(shape_str(c.shape));
          const Tensor x = with_layout(random(c.shape, dt, 1, -3, 5), layout);
          const Tensor w = affine ? random(c.normalized, dt, 2) : Tensor();
          const Tensor b = affine ? random(c.normalized, dt, 3) : Tensor();
          const double eps = 1e-5;
          const Tensor y = layer_norm(x, c.normalized, w, b, eps);
          ASSERT_EQ(y.dtype(), dt);
          ASSERT_EQ(shape_str(y.sizes()), shape_str(c.shape));
          const std::vector<double> xv = values(x), wv = values_or_empty(w), bv = values_or_empty(b);
          const int64_t cols = numel_of(c.normalized), rows = cols ? int64_t(xv.size()) / cols : 0;
          std::vector<double> expected(xv.size());
          for (int64_t r = 0; r < rows; ++r) {
            const auto [mean, var] = moments(xv, cols, [&](int64_t k) { return r * cols + k; });
            for (int64_t j = 0; j < cols; ++j) {
              double v = (xv[size_t(r * cols + j)] - mean) / std::sqrt(var + eps);
              if (affine) v = v * wv[size_t(j)] + bv[size_t(j)];
              expected[size_t(r * cols + j)] = v;
            }
          }
          testing::expect_values(y, expected, testing::rtol_for(dt), atol_for(dt));
        }
      }
    }
  }
}

TEST(NormTest, LayerNormWeightWithoutBias) {
  const Tensor x = random({3, 4}, kFloat64, 4);
  const Tensor w = random({4}, kFloat64, 5);
  const std::vector<double> plain = values(layer_norm(x, {4}));
  std::vector<double> expected(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) expected[i] = plain[i] * values(w)[i % 4];
  testing::expect_values(layer_norm(x, {4}, w), expected, 1e-12, 1e-12);
}

TEST(NormTest, GroupNormMatchesReference) {
  struct Case {
    DimVector shape;
    int64_t groups;
  };
  const Case cases[] = {{{1, 1}, 1},       {{2, 6, 5}, 3},  {{2, 6, 5}, 6}, {{3, 4, 3, 3}, 2},
                        {{2, 6}, 2},       {{1, 3, 7}, 1},  {{0, 4, 2}, 2}, {{3, 8, 1, 5}, 4},
                        {{40, 8, 301}, 2}};
  for (DType dt : {kFloat32, kFloat64}) {
    for (const Case& c : cases) {
      for (bool affine : {false, true}) {
        for (testing::Layout layout : kLayouts) {
          SCOPED_TRACE(testing::layout_name(layout));
          SCOPED_TRACE(shape_str(c.shape));
          const int64_t n = c.shape[0], ch = c.shape[1];
          const Tensor x = with_layout(random(c.shape, dt, 6, -1, 3), layout);
          const Tensor w = affine ? random({ch}, dt, 7) : Tensor();
          const Tensor b = affine ? random({ch}, dt, 8) : Tensor();
          const Tensor y = group_norm(x, c.groups, w, b, 1e-5);
          const std::vector<double> xv = values(x), wv = values_or_empty(w), bv = values_or_empty(b);
          const int64_t spatial = numel_of(c.shape) / std::max<int64_t>(n * ch, 1);
          const int64_t len = ch / c.groups * spatial;
          std::vector<double> expected(xv.size());
          for (int64_t r = 0; r < n * c.groups; ++r) {
            const auto [mean, var] = moments(xv, len, [&](int64_t k) { return r * len + k; });
            for (int64_t k = 0; k < len; ++k) {
              const int64_t i = r * len + k, channel = (i / spatial) % ch;
              double v = (xv[size_t(i)] - mean) / std::sqrt(var + 1e-5);
              if (affine) v = v * wv[size_t(channel)] + bv[size_t(channel)];
              expected[size_t(i)] = v;
            }
          }
          testing::expect_values(y, expected, testing::rtol_for(dt), atol_for(dt));
        }
      }
    }
  }
}

TEST(NormTest, BatchNormTrainingMatchesReferenceAndUpdatesRunningStats) {
  const DimVector shapes[] = {{2, 3}, {4, 3, 5}, {3, 2, 3, 3}, {1, 5, 1, 7}, {5, 1}};
  for (DType dt : {kFloat32, kFloat64}) {
    for (const DimVector& shape : shapes) {
      for (testing::Layout layout : kLayouts) {
        SCOPED_TRACE(testing::layout_name(layout));
        SCOPED_TRACE(shape_str(shape));
        const int64_t n = shape[0], ch = shape[1], spatial = numel_of(shape) / (n * ch), count = n * spatial;
        const Tensor x = with_layout(random(shape, dt, 9, -2, 4), layout);
        const Tensor w = random({ch}, dt, 10), b = random({ch}, dt, 11);
        Tensor running_mean = random({ch}, dt, 12), running_var = random({ch}, dt, 13, 0.5, 2);
        const std::vector<double> rm0 = values(running_mean), rv0 = values(running_var);
        const double momentum = 0.3, eps = 1e-5;
        const Tensor y = batch_norm(x, running_mean, running_var, w, b, true, momentum, eps);
        const std::vector<double> xv = values(x), wv = values(w), bv = values(b);
        std::vector<double> expected(xv.size()), rm(static_cast<size_t>(ch)), rv(static_cast<size_t>(ch));
        for (int64_t c = 0; c < ch; ++c) {
          auto at = [&](int64_t k) { return (k / spatial) * ch * spatial + c * spatial + k % spatial; };
          const auto [mean, var] = moments(xv, count, at);
          for (int64_t k = 0; k < count; ++k)
            expected[size_t(at(k))] = (xv[size_t(at(k))] - mean) / std::sqrt(var + eps) * wv[size_t(c)] + bv[size_t(c)];
          rm[size_t(c)] = (1 - momentum) * rm0[size_t(c)] + momentum * mean;
          rv[size_t(c)] = (1 - momentum) * rv0[size_t(c)] + momentum * var * double(count) / double(count - 1);
        }
        testing::expect_values(y, expected, testing::rtol_for(dt), atol_for(dt));
        testing::expect_values(running_mean, rm, testing::rtol_for(dt), atol_for(dt));
        testing::expect_values(running_var, rv, testing::rtol_for(dt), atol_for(dt));
      }
    }
  }
}

TEST(NormTest, BatchNormTrainingWithoutRunningStatsOrAffine) {
  const Tensor x = random({6, 2, 3}, kFloat64, 14);
  const Tensor y = batch_norm(x, {}, {}, {}, {}, true);
  const std::vector<double> xv = values(x);
  std::vector<double> expected(xv.size());
  for (int64_t c = 0; c < 2; ++c) {
    auto at = [&](int64_t k) { return (k / 3) * 6 + c * 3 + k % 3; };
    const auto [mean, var] = moments(xv, 18, at);
    for (int64_t k = 0; k < 18; ++k) expected[size_t(at(k))] = (xv[size_t(at(k))] - mean) / std::sqrt(var + 1e-5);
  }
  testing::expect_values(y, expected, 1e-12, 1e-12);
}

TEST(NormTest, BatchNormEvalUsesRunningStats) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (testing::Layout layout : kLayouts) {
      const Tensor x = with_layout(random({3, 4, 5}, dt, 15), layout);
      const Tensor rm = random({4}, dt, 16), rv = random({4}, dt, 17, 0.5, 2);
      const Tensor w = random({4}, dt, 18), b = random({4}, dt, 19);
      const std::vector<double> rm0 = values(rm), rv0 = values(rv);
      const Tensor y = batch_norm(x, rm, rv, w, b, false, 0.1, 1e-3);
      const std::vector<double> xv = values(x), wv = values(w), bv = values(b);
      std::vector<double> expected(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) {
        const size_t c = (i / 5) % 4;
        expected[i] = (xv[i] - rm0[c]) / std::sqrt(rv0[c] + 1e-3) * wv[c] + bv[c];
      }
      testing::expect_values(y, expected, testing::rtol_for(dt), atol_for(dt));
      EXPECT_EQ(values(rm), rm0);  // eval leaves the running stats alone
      EXPECT_EQ(values(rv), rv0);
    }
  }
}

TEST(NormTest, Errors) {
  const Tensor x = random({2, 3}, kFloat32, 20);
  testing::expect_error([&] { layer_norm(x, {4}); }, {"layer_norm", "[4]", "[2, 3]"});
  testing::expect_error([&] { layer_norm(x, {2, 3, 1}); }, {"layer_norm", "[2, 3, 1]"});
  testing::expect_error([&] { layer_norm(x, {3}, ones({4})); }, {"layer_norm", "weight", "[4]", "expected shape [3]"});
  testing::expect_error([&] { layer_norm(x, {3}, ones({3}), ones({2})); }, {"layer_norm", "bias", "[2]"});
  testing::expect_error([&] { layer_norm(ones({2, 3}, kInt64), {3}); }, {"layer_norm", "int64"});
  const Tensor img = random({2, 6, 4}, kFloat32, 21);
  testing::expect_error([&] { group_norm(img, 4); }, {"group_norm", "[2, 6, 4]", "num_groups 4"});
  testing::expect_error([&] { group_norm(img, 0); }, {"group_norm", "num_groups 0"});
  testing::expect_error([&] { group_norm(img, 3, ones({3})); }, {"group_norm", "weight", "[3]", "[6]"});
  testing::expect_error([&] { group_norm(ones({6}), 3); }, {"group_norm", "[6]", "[N, C, *]"});
  testing::expect_error([&] { batch_norm(img, zeros({6}), ones({5}), {}, {}, true); },
                        {"batch_norm", "running_var", "[5]", "[6]"});
  testing::expect_error([&] { batch_norm(img, {}, {}, ones({6}), ones({7}), true); }, {"batch_norm", "bias", "[7]"});
  testing::expect_error([&] { batch_norm(img, {}, {}, {}, {}, false); }, {"batch_norm", "evaluation mode"});
  testing::expect_error([&] { batch_norm(img, zeros({6}), {}, {}, {}, true); }, {"batch_norm", "running_var"});
  testing::expect_error([&] { batch_norm(ones({1, 3}), {}, {}, {}, {}, true); },
                        {"batch_norm", "more than 1 value per channel", "[1, 3]"});
}

// ---- dropout ----

// The positions dropout zeroed (x has no zeros of its own).
std::vector<bool> dropped(const Tensor& y) {
  std::vector<bool> out;
  for (double v : values(y)) out.push_back(v == 0);
  return out;
}

TEST(DropoutTest, FractionAndScaling) {
  const double p = 0.3;
  const Tensor x = random({400, 501}, kFloat32, 22, 0.5, 2);
  Generator gen(7);
  const Tensor y = dropout(x, p, true, &gen);
  const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  const float scale = float(1.0 / (1.0 - p));
  int64_t zeros_seen = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++zeros_seen;
      continue;
    }
    ASSERT_EQ(yv[i], xv[i] * scale) << "element " << i;
  }
  // 200k draws: the standard deviation of the fraction is about 0.001.
  EXPECT_NEAR(double(zeros_seen) / double(xv.size()), p, 0.01);
}

TEST(DropoutTest, MaskIsBernoulliOfKeepProbability) {
  const Tensor x = random({33, 17}, kFloat64, 23, 1, 2);
  Generator a(99), b(99);
  const std::vector<bool> mask = dropped(dropout(x, 0.4, true, &a));
  const std::vector<double> keep = values(bernoulli(full({33, 17}, 0.6, kFloat64), &b));
  for (size_t i = 0; i < mask.size(); ++i) ASSERT_EQ(mask[i], keep[i] == 0) << "element " << i;
}

TEST(DropoutTest, SameSeedSameMaskAcrossThreadCountsAndLayouts) {
  const int threads = get_num_threads();
  const Tensor x = random({300, 257}, kFloat32, 24, 1, 2);
  auto run = [&](int n, const Tensor& input) {
    set_num_threads(n);
    Generator gen(1234);
    return dropped(dropout(input, 0.5, true, &gen));
  };
  const std::vector<bool> one = run(1, x);
  EXPECT_EQ(run(1, x), one);
  EXPECT_EQ(run(3, x), one);
  EXPECT_EQ(run(4, x), one);
  for (testing::Layout layout : kLayouts) EXPECT_EQ(run(2, with_layout(x, layout)), one) << testing::layout_name(layout);
  set_num_threads(threads);
  Generator gen(1234);
  dropout(x, 0.5, true, &gen);
  EXPECT_NE(dropped(dropout(x, 0.5, true, &gen)), one);  // the generator moved on
}

TEST(DropoutTest, EdgeCases) {
  const Tensor x = random({5, 7}, kFloat32, 25, 1, 2);
  EXPECT_TRUE(dropout(x, 0.0, true).is_same(x));
  EXPECT_TRUE(dropout(x, 0.7, false).is_same(x));
  EXPECT_EQ(values(dropout(x, 1.0, true)), std::vector<double>(35, 0.0));
  EXPECT_EQ(dropout(zeros({0, 3}), 0.5, true).numel(), 0);
  const Tensor h = random({64, 9}, kFloat16, 26, 1, 2);
  const Tensor yh = dropout(h, 0.25, true);
  ASSERT_EQ(yh.dtype(), kFloat16);
  const std::vector<double> hv = values(h), yv = values(yh);
  for (size_t i = 0; i < hv.size(); ++i) {
    if (yv[i] == 0) continue;
    ASSERT_EQ(yv[i], double(float(Half(float(hv[i]) * float(1.0 / 0.75))))) << i;
  }
  testing::expect_error([&] { dropout(x, 1.5, true); }, {"dropout", "1.5", "[0, 1]", "[5, 7]"});
  testing::expect_error([&] { dropout(x, -0.1, false); }, {"dropout", "-0.1"});
  testing::expect_error([&] { dropout(ones({3}, kInt64), 0.5, true); }, {"dropout", "int64"});
}

}  // namespace
}  // namespace nnvm
