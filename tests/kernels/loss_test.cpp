// mse_loss, l1_loss, binary_cross_entropy_with_logits, nll_loss and
// cross_entropy against naive double loops.
#include <cmath>
#include <limits>

#include "reference.h"

namespace nnvm {
namespace {

using testing::kLayouts;
using testing::random;
using testing::values;
using testing::with_layout;

constexpr Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};
const char* reduction_name(Reduction r) { return r == Reduction::None ? "none" : r == Reduction::Mean ? "mean" : "sum"; }

double atol_for(DType t) { return t == kFloat16 ? 2e-3 : t == kFloat32 ? 1e-5 : 1e-10; }

// Applies `reduction` to per-element losses; Mean divides by `denominator`.
std::vector<double> reduce(const std::vector<double>& losses, Reduction reduction, double denominator) {
  if (reduction == Reduction::None) return losses;
  double sum = 0;
  for (double l : losses) sum += l;
  return {reduction == Reduction::Sum ? sum : sum / denominator};
}

void expect_loss(const Tensor& actual, IntArrayRef unreduced, Reduction reduction, const std::vector<double>& expected,
                 DType dt) {
  const DimVector shape = reduction == Reduction::None ? dims(unreduced) : DimVector{};
  ASSERT_EQ(shape_str(actual.sizes()), shape_str(shape));
  ASSERT_EQ(actual.dtype(), dt);
  // A sum of many terms carries more float32 rounding than one term.
  const double scale = reduction == Reduction::None ? 1.0 : 10.0;
  testing::expect_values(actual, expected, testing::rtol_for(dt) * scale, atol_for(dt) * scale);
}

const DimVector kPointwiseShapes[] = {{}, {1}, {7}, {3, 5}, {2, 3, 4}, {0, 3}, {129, 67}};

TEST(LossTest, MseAndL1MatchReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (const DimVector& shape : kPointwiseShapes) {
      for (testing::Layout layout : kLayouts) {
        for (Reduction r : kReductions) {
          SCOPED_TRACE(::testing::Message() << shape_str(shape) << " " << testing::layout_name(layout) << " "
                                            << reduction_name(r));
          const Tensor x = with_layout(random(shape, dt, 1), layout);
          const Tensor y = with_layout(random(shape, dt, 2), layout);
          const std::vector<double> xv = values(x), yv = values(y);
          std::vector<double> squared, absolute;
          for (size_t i = 0; i < xv.size(); ++i) {
            squared.push_back((xv[i] - yv[i]) * (xv[i] - yv[i]));
            absolute.push_back(std::fabs(xv[i] - yv[i]));
          }
          const double n = double(xv.size());
          expect_loss(mse_loss(x, y, r), shape, r, reduce(squared, r, n), dt);
          expect_loss(l1_loss(x, y, r), shape, r, reduce(absolute, r, n), dt);
        }
      }
    }
  }
}

TEST(LossTest, MseMeanOfNothingIsNan) {
  EXPECT_TRUE(std::isnan(mse_loss(zeros({0}), zeros({0})).item<float>()));
  EXPECT_EQ(l1_loss(zeros({0}), zeros({0}), Reduction::Sum).item<float>(), 0.0f);
}

TEST(LossTest, MixedDtypesPromote) {
  const Tensor x = random({4, 3}, kFloat32, 3), y = random({4, 3}, kFloat64, 4);
  const Tensor loss = mse_loss(x, y, Reduction::None);
  ASSERT_EQ(loss.dtype(), kFloat64);
  std::vector<double> expected;
  for (size_t i = 0; i < 12; ++i) expected.push_back(std::pow(values(x)[i] - values(y)[i], 2));
  testing::expect_values(loss, expected, 1e-12, 1e-12);
}

double log_sigmoid(double x) { return -std::log1p(std::exp(-x)); }

TEST(LossTest, BceWithLogitsMatchesReference) {
  const DimVector shapes[] = {{}, {1}, {7}, {3, 5}, {2, 3, 4}, {0, 5}};
  for (DType dt : {kFloat32, kFloat64}) {
    for (const DimVector& shape : shapes) {
      const int64_t last = shape.empty() ? 1 : shape.back();
      for (int weights = 0; weights < 4; ++weights) {
        for (testing::Layout layout : kLayouts) {
          for (Reduction r : kReductions) {
            SCOPED_TRACE(::testing::Message() << shape_str(shape) << " " << testing::layout_name(layout) << " "
                                              << reduction_name(r) << " weights " << weights);
            const Tensor x = with_layout(random(shape, dt, 5, -6, 6), layout);
            const Tensor y = with_layout(random(shape, dt, 6, 0, 1), layout);
            // weight: the input's own shape; pos_weight: one per class of the last dim.
            const Tensor w = weights & 1 ? random(shape, dt, 7, 0, 2) : Tensor();
            const Tensor pw = weights & 2 ? random(shape.empty() ? DimVector{} : DimVector{last}, dt, 8, 0, 3) : Tensor();
            const std::vector<double> xv = values(x), yv = values(y);
            const std::vector<double> wv = w.defined() ? values(w) : std::vector<double>(xv.size(), 1.0);
            std::vector<double> expected;
            for (size_t i = 0; i < xv.size(); ++i) {
              const double p = pw.defined() ? values(pw)[i % size_t(last)] : 1.0;
              expected.push_back(-(p * yv[i] * log_sigmoid(xv[i]) + (1 - yv[i]) * log_sigmoid(-xv[i])) * wv[i]);
            }
            expect_loss(binary_cross_entropy_with_logits(x, y, w, r, pw), shape, r,
                        reduce(expected, r, double(xv.size())), dt);
          }
        }
      }
    }
  }
}

TEST(LossTest, BceWithLogitsIsStableForLargeLogits) {
  const Tensor x = tensor<float>({100.f, -100.f, 100.f, -100.f, 0.f});
  const Tensor y = tensor<float>({0.f, 1.f, 1.f, 0.f, 1.f});
  testing::expect_values(binary_cross_entropy_with_logits(x, y, {}, Reduction::None),
                         {100.0, 100.0, -log_sigmoid(100), -log_sigmoid(100), std::log(2.0)}, 1e-6, 1e-30);
}

TEST(LossTest, BceWithLogitsBroadcastsWeight) {
  const Tensor x = random({4, 3}, kFloat64, 9), y = random({4, 3}, kFloat64, 10, 0, 1);
  const Tensor w = random({4, 1}, kFloat64, 11, 0, 2);
  const std::vector<double> plain = values(binary_cross_entropy_with_logits(x, y, {}, Reduction::None));
  std::vector<double> expected;
  for (size_t i = 0; i < 12; ++i) expected.push_back(plain[i] * values(w)[i / 3]);
  testing::expect_values(binary_cross_entropy_with_logits(x, y, w, Reduction::None), expected, 1e-12, 1e-12);
}

// Class-index targets in [0, classes) with about a quarter set to `ignore_index`.
Tensor class_targets(IntArrayRef shape, int64_t classes, int64_t ignore_index, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> t = randint(0, classes, shape, kInt64, &gen).to_vector<int64_t>();
  const std::vector<double> coin = values(rand(shape, kFloat64, &gen));
  for (size_t i = 0; i < t.size(); ++i)
    if (coin[i] < 0.25) t[i] = ignore_index;
  return tensor(t, shape);
}

// Reference of nll_loss / cross_entropy. `log_probs` of row-major scores with
// classes at dim 1 (dim 0 for a 1-d input): lp(row, c).
struct ClassCase {
  DimVector shape;  // scores
  DimVector target_shape() const {
    DimVector t = shape;
    t.erase(t.begin() + (shape.size() == 1 ? 0 : 1));
    return t;
  }
  int64_t classes() const { return shape.size() == 1 ? shape[0] : shape[1]; }
  int64_t spatial() const {
    int64_t s = 1;
    for (size_t d = 2; d < shape.size(); ++d) s *= shape[d];
    return s;
  }
  size_t index(int64_t row, int64_t c) const {
    return size_t((row / spatial()) * classes() * spatial() + c * spatial() + row % spatial());
  }
};

const ClassCase kClassCases[] = {{{5}}, {{1, 1}}, {{4, 3}}, {{7, 5}}, {{3, 4, 5}}, {{2, 3, 2, 3}}, {{0, 4}}, {{300, 11}}};

// Per-row losses and weights: cross-entropy from logits (smoothing `ls`) or nll from log-probs.
void class_reference(const ClassCase& c, const std::vector<double>& scores, const std::vector<int64_t>& target,
                     const std::vector<double>& weight, int64_t ignore_index, bool from_logits, double ls,
                     std::vector<double>& losses, double& weight_sum) {
  const int64_t classes = c.classes();
  weight_sum = 0;
  for (size_t row = 0; row < target.size(); ++row) {
    const int64_t t = target[row];
    if (t == ignore_index) {
      losses.push_back(0);
      continue;
    }
    std::vector<double> lp(static_cast<size_t>(classes));
    double max = -INFINITY, sum = 0;
    for (int64_t k = 0; k < classes; ++k) max = std::max(max, scores[c.index(int64_t(row), k)]);
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(scores[c.index(int64_t(row), k)] - max);
    for (int64_t k = 0; k < classes; ++k)
      lp[size_t(k)] = from_logits ? scores[c.index(int64_t(row), k)] - max - std::log(sum) : scores[c.index(int64_t(row), k)];
    auto w = [&](int64_t k) { return weight.empty() ? 1.0 : weight[size_t(k)]; };
    double smooth = 0;
    for (int64_t k = 0; k < classes; ++k) smooth -= w(k) * lp[size_t(k)];
    losses.push_back((1 - ls) * -w(t) * lp[size_t(t)] + ls / double(classes) * smooth);
    weight_sum += w(t);
  }
}

TEST(LossTest, NllLossMatchesReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (const ClassCase& c : kClassCases) {
      for (int64_t ignore_index : {int64_t(-100), int64_t(1)}) {
        for (bool weighted : {false, true}) {
          for (testing::Layout layout : kLayouts) {
            for (Reduction r : kReductions) {
              SCOPED_TRACE(::testing::Message() << shape_str(c.shape) << " " << testing::layout_name(layout) << " "
                                                << reduction_name(r) << " ignore " << ignore_index << " weighted "
                                                << weighted);
              const Tensor lp = with_layout(random(c.shape, dt, 12, -5, 0), layout);
              const Tensor target = class_targets(c.target_shape(), c.classes(), ignore_index, 13);
              const Tensor w = weighted ? random({c.classes()}, dt, 14, 0.1, 2) : Tensor();
              std::vector<double> losses;
              double weight_sum;
              class_reference(c, values(lp), target.to_vector<int64_t>(), weighted ? values(w) : std::vector<double>{},
                              ignore_index, false, 0.0, losses, weight_sum);
              expect_loss(nll_loss(lp, target, w, r, ignore_index), c.target_shape(), r,
                          reduce(losses, r, weight_sum), dt);
            }
          }
        }
      }
    }
  }
}

TEST(LossTest, CrossEntropyMatchesReference) {
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    for (const ClassCase& c : kClassCases) {
      for (double ls : {0.0, 0.1, 1.0}) {
        for (bool weighted : {false, true}) {
          for (testing::Layout layout : kLayouts) {
            for (Reduction r : kReductions) {
              SCOPED_TRACE(::testing::Message() << shape_str(c.shape) << " " << testing::layout_name(layout) << " "
                                                << reduction_name(r) << " smoothing " << ls << " weighted "
                                                << weighted << " " << dt);
              const Tensor logits = with_layout(random(c.shape, dt, 15, -4, 4), layout);
              const Tensor target = class_targets(c.target_shape(), c.classes(), -100, 16);
              const Tensor w = weighted ? random({c.classes()}, dt, 17, 0.1, 2) : Tensor();
              std::vector<double> losses;
              double weight_sum;
              class_reference(c, values(logits), target.to_vector<int64_t>(),
                              weighted ? values(w) : std::vector<double>{}, -100, true, ls, losses, weight_sum);
              expect_loss(cross_entropy(logits, target, w, r, -100, ls), c.target_shape(), r,
                          reduce(losses, r, weight_sum), dt);
            }
          }
        }
      }
    }
  }
}

TEST(LossTest, AllTargetsIgnoredGivesNanMeanAndZeroSum) {
  const Tensor logits = random({3, 4}, kFloat32, 18);
  const Tensor target = full({3}, int64_t(-100), kInt64);
  EXPECT_TRUE(std::isnan(cross_entropy(logits, target).item<float>()));
  EXPECT_EQ(cross_entropy(logits, target, {}, Reduction::Sum).item<float>(), 0.0f);
  EXPECT_EQ(values(nll_loss(logits, target, {}, Reduction::None)), std::vector<double>(3, 0.0));
}

TEST(LossTest, ReductionsDoNotDependOnThreadCount) {
  const int threads = get_num_threads();
  const Tensor x = random({700, 301}, kFloat32, 19), y = random({700, 301}, kFloat32, 20);
  const Tensor logits = random({5000, 37}, kFloat32, 21);
  const Tensor target = class_targets({5000}, 37, -100, 22);
  auto run = [&](int n) {
    set_num_threads(n);
    return std::vector<float>{mse_loss(x, y).item<float>(), l1_loss(x, y, Reduction::Sum).item<float>(),
                              cross_entropy(logits, target, {}, Reduction::Mean, -100, 0.1).item<float>()};
  };
  const std::vector<float> one = run(1);
  EXPECT_EQ(run(2), one);
  EXPECT_EQ(run(3), one);
  EXPECT_EQ(run(4), one);
  set_num_threads(threads);
}

TEST(LossTest, Errors) {
  const Tensor a = random({2, 3}, kFloat32, 23), b = random({3, 2}, kFloat32, 24);
  testing::expect_error([&] { mse_loss(a, b); }, {"mse_loss", "[2, 3]", "[3, 2]", "same shape"});
  testing::expect_error([&] { l1_loss(a, b); }, {"l1_loss", "[2, 3]", "[3, 2]"});
  testing::expect_error([&] { l1_loss(a, ones({2, 3}, kInt64)); }, {"l1_loss", "int64"});
  testing::expect_error([&] { binary_cross_entropy_with_logits(a, b); },
                        {"binary_cross_entropy_with_logits", "[2, 3]", "[3, 2]"});
  testing::expect_error([&] { binary_cross_entropy_with_logits(a, a, ones({2})); },
                        {"binary_cross_entropy_with_logits", "weight", "[2]", "[2, 3]"});
  testing::expect_error([&] { binary_cross_entropy_with_logits(a, a, {}, Reduction::Mean, ones({4})); },
                        {"binary_cross_entropy_with_logits", "pos_weight", "[4]"});

  const Tensor target = tensor<int64_t>({0, 5});
  testing::expect_error([&] { nll_loss(a, target); }, {"nll_loss", "target 5", "[0, 3)", "[2, 3]", "[2]"});
  testing::expect_error([&] { cross_entropy(a, tensor<int64_t>({-1, 0})); }, {"cross_entropy", "target -1", "[0, 3)"});
  testing::expect_error([&] { cross_entropy(a, tensor<int64_t>({0, 7})); }, {"cross_entropy", "target 7"});
  EXPECT_NO_THROW(cross_entropy(a, tensor<int64_t>({0, 7}), {}, Reduction::Mean, 7));  // 7 is ignore_index
  testing::expect_error([&] { cross_entropy(a, tensor<int32_t>({0, 1})); }, {"cross_entropy", "int64", "int32"});
  testing::expect_error([&] { nll_loss(a, tensor<int64_t>({0, 1, 2})); },
                        {"nll_loss", "target of shape [3]", "[2, 3]", "expected target of shape [2]"});
  testing::expect_error([&] { cross_entropy(a, tensor<int64_t>({0, 1}), ones({4})); },
                        {"cross_entropy", "weight of shape [4]", "expected shape [3]"});
  testing::expect_error([&] { cross_entropy(a, tensor<int64_t>({0, 1}), {}, Reduction::Mean, -100, 1.5); },
                        {"cross_entropy", "label_smoothing", "1.5"});
  testing::expect_error([&] { nll_loss(ones({2, 3}, kInt64), tensor<int64_t>({0, 1})); }, {"nll_loss", "int64"});
}

}  // namespace
}  // namespace nnvm
