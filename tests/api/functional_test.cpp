// nn::functional and the composite ops of nn/ops.h: the new losses and
// activations against naive loops over doubles, their gradients against
// finite differences, traced against eager; the other functions' options
// against the nnvm op they map onto, with options that would show a mix-up.
#include <cmath>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace F = nnvm::nn::functional;

constexpr Reduction kReductions[] = {kNone, kMean, kSum};

std::vector<double> reduced(const std::vector<double>& per_element, Reduction reduction) {
  if (reduction == kNone) return per_element;
  double sum = 0;
  for (double v : per_element) sum += v;
  return {reduction == kSum ? sum : sum / double(per_element.size())};
}

TEST(ApiFunctional, SmoothL1AndHuberMatchLoops) {
  const Tensor x = testing::random({3, 4}, kFloat64, 1), y = testing::random({3, 4}, kFloat64, 2);
  const std::vector<double> xv = testing::values(x), yv = testing::values(y);
  for (double beta : {0.5, 1.0, 3.0}) {
    std::vector<double> smooth, huber;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double d = xv[i] - yv[i], ad = std::abs(d);
      smooth.push_back(ad < beta ? 0.5 * d * d / beta : ad - 0.5 * beta);
      huber.push_back(ad < beta ? 0.5 * d * d : beta * (ad - 0.5 * beta));
    }
    for (Reduction r : kReductions) {
      SCOPED_TRACE(::testing::Message() << "beta " << beta << ", reduction " << int(r));
      testing::expect_values(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions(r).beta(beta)), reduced(smooth, r));
      testing::expect_values(F::huber_loss(x, y, F::HuberLossFuncOptions(r).delta(beta)), reduced(huber, r));
    }
  }
  // beta unset is 1; beta 0 is the L1 loss
  testing::expect_tensors_close(F::smooth_l1_loss(x, y), smooth_l1_loss(x, y, kMean, 1.0));
  std::vector<double> l1;
  for (size_t i = 0; i < xv.size(); ++i) l1.push_back(std::abs(xv[i] - yv[i]));
  testing::expect_values(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions(kNone).beta(0.0)), l1);
}

TEST(ApiFunctional, IsCloseAndAllClose) {
  const double inf = INFINITY, nan = NAN;
  const Tensor a = tensor({1.0, 1.0, inf, -inf, nan, 100.0}, kFloat64);
  const Tensor b = tensor({1.0 + 1e-9, 1.1, inf, inf, nan, 100.0005}, kFloat64);
  // |a - b| <= atol + rtol |b|: 1e-9 passes, 0.1 does not, 5e-4 passes rtol 1e-5 (1e-3 allowed)
  EXPECT_EQ(testing::values(isclose(a, b).to(kFloat64)), (std::vector<double>{1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(testing::values(isclose(a, b, 1e-5, 1e-8, /*equal_nan=*/true).to(kFloat64)),
            (std::vector<double>{1, 0, 1, 0, 1, 1}));
  EXPECT_TRUE(allclose(a.narrow(0, 0, 1), b.narrow(0, 0, 1)));
  EXPECT_FALSE(allclose(a, b, 1e-5, 1e-8, true));
  EXPECT_TRUE(allclose(a.narrow(0, 1, 1), b.narrow(0, 1, 1), /*rtol=*/0.0, /*atol=*/0.2));
}

TEST(ApiFunctional, BinaryCrossEntropyMatchesLoops) {
  const Tensor x = testing::random({2, 3}, kFloat64, 3, 0.05, 0.95), y = testing::random({2, 3}, kFloat64, 4, 0, 1);
  const Tensor w = tensor<double>({0.5, 2.0, 1.0});
  const std::vector<double> xv = testing::values(x), yv = testing::values(y), wv = testing::values(w);
  std::vector<double> plain, weighted;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double l = -(yv[i] * std::log(xv[i]) + (1 - yv[i]) * std::log(1 - xv[i]));
    plain.push_back(l);
    weighted.push_back(l * wv[i % 3]);
  }
  for (Reduction r : kReductions) {
    testing::expect_values(F::binary_cross_entropy(x, y, F::BinaryCrossEntropyFuncOptions().reduction(r)),
                           reduced(plain, r));
    testing::expect_values(F::binary_cross_entropy(x, y, F::BinaryCrossEntropyFuncOptions().weight(w).reduction(r)),
                           reduced(weighted, r));
  }
}

TEST(ApiFunctional, BinaryCrossEntropyFloorsTheLogAt100) {
  const Tensor x = tensor<double>({0.0, 1.0, 0.5, 1e-50}).requires_grad_();
  const Tensor y = tensor<double>({1.0, 0.0, 1.0, 1.0});
  const Tensor loss = binary_cross_entropy(x, y, {}, kNone);
  testing::expect_values(loss, {100.0, 100.0, std::log(2.0), 100.0});
  loss.sum().backward();
  // Where the floor holds, the loss does not move: a zero gradient, not 0 / 0.
  testing::expect_values(x.grad(), {0.0, 0.0, -2.0, 0.0});
}

TEST(ApiFunctional, KLDivMatchesLoops) {
  const Tensor x = testing::random({3, 4}, kFloat64, 5, -3, 0);
  const Tensor t = testing::random({3, 4}, kFloat64, 6, 0, 1).masked_fill(tensor<bool>({true, false, false, false}), 0);
  const std::vector<double> xv = testing::values(x), tv = testing::values(t);
  std::vector<double> prob, log_target;
  for (size_t i = 0; i < xv.size(); ++i) {
    prob.push_back(tv[i] > 0 ? tv[i] * (std::log(tv[i]) - xv[i]) : 0.0);
    log_target.push_back(std::exp(tv[i]) * (tv[i] - xv[i]));
  }
  EXPECT_EQ(prob[0], 0.0);
  for (Reduction r : kReductions) {
    testing::expect_values(F::kl_div(x, t, F::KLDivFuncOptions(r)), reduced(prob, r));
    testing::expect_values(F::kl_div(x, t, F::KLDivFuncOptions(r).log_target(true)), reduced(log_target, r));
  }
  testing::expect_values(F::kl_div(x, t, F::KLDivFuncOptions(kBatchMean)), {reduced(prob, kSum)[0] / 3});
  testing::expect_values(F::kl_div(x, t, F::KLDivFuncOptions().reduction(kBatchMean).log_target(true)),
                         {reduced(log_target, kSum)[0] / 3});
}

TEST(ApiFunctional, LossGradients) {
  for (Reduction r : kReductions) {
    SCOPED_TRACE(::testing::Message() << "reduction " << int(r));
    testing::gradcheck([r](const std::vector<Tensor>& in) { return smooth_l1_loss(in[0], in[1], r, 0.7); },
                       {testing::leaf({3, 4}, 1), testing::leaf({3, 4}, 2)});
    testing::gradcheck([r](const std::vector<Tensor>& in) { return huber_loss(in[0], in[1], r, 1.3); },
                       {testing::leaf({3, 4}, 3), testing::leaf({3, 4}, 4)});
    testing::gradcheck([r](const std::vector<Tensor>& in) { return binary_cross_entropy(in[0], in[1], in[2], r); },
                       {testing::leaf({2, 5}, 5, 0.05, 0.95), testing::leaf({2, 5}, 6, 0, 1),
                        testing::leaf({5}, 7, 0.5, 2)});
    testing::gradcheck([r](const std::vector<Tensor>& in) { return kl_div(in[0], in[1], r); },
                       {testing::leaf({2, 5}, 8, -3, 0), testing::leaf({2, 5}, 9, 0.1, 1)});
    testing::gradcheck([r](const std::vector<Tensor>& in) { return kl_div(in[0], in[1], r, true); },
                       {testing::leaf({2, 5}, 10), testing::leaf({2, 5}, 11)});
  }
}

TEST(ApiFunctional, LossesTracedEqualEager) {
  auto make_inputs = [] {
    return std::vector<Tensor>{testing::leaf({4, 3}, 12, 0.05, 0.95), testing::leaf({4, 3}, 13, 0.05, 0.95)};
  };
  testing::expect_traced_equals_eager(make_inputs, [](std::vector<Tensor>& in) {
    const Tensor loss = F::smooth_l1_loss(in[0], in[1], F::SmoothL1LossFuncOptions().beta(0.1)) +
                        F::huber_loss(in[0], in[1], F::HuberLossFuncOptions(kSum).delta(0.2)) +
                        F::binary_cross_entropy(in[0], in[1]) +
                        F::kl_div(in[0].log(), in[1], F::KLDivFuncOptions(kBatchMean));
    loss.backward();
    return std::vector<Tensor>{loss, in[0].grad(), in[1].grad()};
  });
}

TEST(ApiFunctional, LossErrorsNameTheOpAndShapes) {
  const Tensor a = randn({2, 3}), b = randn({3, 2});
  testing::expect_error([&] { F::smooth_l1_loss(a, b); }, {"smooth_l1_loss", "[2, 3]", "[3, 2]", "same shape"});
  testing::expect_error([&] { F::huber_loss(a, b); }, {"huber_loss", "[2, 3]", "[3, 2]"});
  testing::expect_error([&] { F::binary_cross_entropy(a, b); }, {"binary_cross_entropy", "[2, 3]", "[3, 2]"});
  testing::expect_error([&] { F::kl_div(a, b); }, {"kl_div", "[2, 3]", "[3, 2]"});
  testing::expect_error([&] { F::smooth_l1_loss(a, a, F::SmoothL1LossFuncOptions().beta(-0.5)); },
                        {"smooth_l1_loss", "beta", "-0.5"});
  testing::expect_error([&] { F::huber_loss(a, a, F::HuberLossFuncOptions().delta(0)); },
                        {"huber_loss", "delta must be positive", "[2, 3]"});
  testing::expect_error([&] { F::binary_cross_entropy(a, a, F::BinaryCrossEntropyFuncOptions().weight(ones({2}))); },
                        {"binary_cross_entropy", "weight of shape [2]", "input of shape [2, 3]"});
  testing::expect_error([&] { F::kl_div(a, zeros({2, 3}, kInt64)); }, {"kl_div", "floating-point target"});
}

TEST(ApiFunctional, Dropout2dZeroesWholeChannels) {
  manual_seed(0);
  const Tensor x = testing::random({8, 6, 3, 2}, kFloat32, 14, 0.5, 1.5);
  const std::vector<double> xv = testing::values(x);
  const std::vector<double> yv = testing::values(F::dropout2d(x, F::Dropout2dFuncOptions().p(0.5)));
  int64_t dropped = 0;
  for (size_t channel = 0; channel < 8 * 6; ++channel) {
    const bool zero = yv[channel * 6] == 0;
    dropped += zero;
    for (size_t i = channel * 6; i < channel * 6 + 6; ++i) EXPECT_NEAR(yv[i], zero ? 0.0 : 2 * xv[i], 1e-5) << i;
  }
  EXPECT_GT(dropped, 8);
  EXPECT_LT(dropped, 40);
  // [N, C, L] drops per (n, c) too; eval and p = 0 are the identity; p = 1 zeroes all
  const Tensor x3 = testing::random({4, 5, 7}, kFloat32, 15, 0.5, 1.5);
  const std::vector<double> y3 = testing::values(dropout2d(x3, 0.5, true));
  for (size_t row = 0; row < 20; ++row)
    for (size_t i = row * 7; i < row * 7 + 7; ++i) EXPECT_EQ(y3[i] == 0, y3[row * 7] == 0) << i;
  testing::expect_tensors_close(F::dropout2d(x, F::Dropout2dFuncOptions().training(false)), x, 0, 0);
  testing::expect_tensors_close(dropout2d(x, 0.0, true), x, 0, 0);
  testing::expect_tensors_close(dropout2d(x, 1.0, true), zeros_like(x), 0, 0);
  testing::expect_error([&] { dropout2d(x, 1.5, true); }, {"dropout2d", "[0, 1]", "1.5"});
  testing::expect_error([] { dropout2d(ones({4, 5}), 0.5, true); }, {"dropout2d", "[4, 5]", "[N, C, H, W]"});
}

TEST(ApiFunctional, DropoutOptions) {
  const Tensor x = testing::random({1000}, kFloat32, 16, 0.5, 1.5);
  testing::expect_tensors_close(F::dropout(x, F::DropoutFuncOptions().training(false)), x, 0, 0);
  testing::expect_tensors_close(F::dropout(x, F::DropoutFuncOptions().p(1)), zeros_like(x), 0, 0);
  int64_t zeros = 0;
  for (double v : testing::values(F::dropout(x, F::DropoutFuncOptions().p(0.2)))) zeros += v == 0;
  EXPECT_NEAR(double(zeros) / 1000, 0.2, 0.05);
  testing::expect_error([&] { F::dropout(x, F::DropoutFuncOptions().p(-0.1)); }, {"dropout", "-0.1"});
}

TEST(ApiFunctional, ActivationsMatchLoops) {
  const Tensor x = testing::random({4, 6}, kFloat64, 17, -8, 8);
  const std::vector<double> xv = testing::values(x);
  auto map = [&](auto f) {
    std::vector<double> out;
    for (double v : xv) out.push_back(f(v));
    return out;
  };
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  testing::expect_values(F::relu(x), map([](double v) { return std::max(v, 0.0); }));
  testing::expect_values(F::relu6(x), map([](double v) { return std::clamp(v, 0.0, 6.0); }));
  testing::expect_values(F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2).max_val(3)),
                         map([](double v) { return std::clamp(v, -2.0, 3.0); }));
  testing::expect_values(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)),
                         map([](double v) { return v > 0 ? v : 0.2 * v; }));
  testing::expect_values(F::elu(x, F::ELUFuncOptions().alpha(0.5)),
                         map([](double v) { return v > 0 ? v : 0.5 * std::expm1(v); }));
  testing::expect_values(F::selu(x), map([&](double v) { return scale * (v > 0 ? v : alpha * std::expm1(v)); }));
  testing::expect_values(F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(6)),
                         map([](double v) { return 2 * v > 6 ? v : std::log1p(std::exp(2 * v)) / 2; }));
  testing::expect_values(F::gelu(x, F::GELUFuncOptions().approximate("tanh")), map([](double v) {
                           return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                         }));
  testing::expect_values(F::silu(x), map([](double v) { return v / (1 + std::exp(-v)); }));
  testing::expect_values(F::sigmoid(x), map([](double v) { return 1 / (1 + std::exp(-v)); }));
  testing::expect_values(F::tanh(x), map([](double v) { return std::tanh(v); }));
  testing::expect_error([&] { F::hardtanh(x, F::HardtanhFuncOptions().min_val(2).max_val(1)); },
                        {"hardtanh", "min_val 2", "max_val 1"});
}

TEST(ApiFunctional, InplaceOverwritesTheInput) {
  Tensor x = tensor<float>({-1.0f, 2.0f, 7.0f});
  const Tensor y = F::relu6(x, F::ReLU6FuncOptions(true));
  testing::expect_values(x, {0.0, 2.0, 6.0});
  testing::expect_values(y, {0.0, 2.0, 6.0});
  Tensor z = tensor<float>({-1.0f, 2.0f});
  F::leaky_relu(z, F::LeakyReLUFuncOptions().negative_slope(0.5).inplace(true));
  testing::expect_values(z, {-0.5, 2.0});
  const Tensor kept = tensor<float>({-1.0f, 2.0f});
  F::relu(kept);
  testing::expect_values(kept, {-1.0, 2.0});
}

TEST(ApiFunctional, ActivationGradients) {
  // Inputs keep clear of the kinks (0, the clamp bounds) that finite differences straddle badly.
  const Tensor x = tensor<double>({-7.5, -3.2, -0.6, 0.4, 2.1, 5.3, 6.8}).requires_grad_();
  testing::gradcheck([](const std::vector<Tensor>& in) { return selu(in[0]); }, {x});
  testing::gradcheck([](const std::vector<Tensor>& in) { return relu6(in[0]); }, {x});
  testing::gradcheck([](const std::vector<Tensor>& in) { return hardtanh(in[0], -3.0, 2.0); }, {x});
  testing::gradcheck([](const std::vector<Tensor>& in) { return F::relu(in[0]); }, {x});
}

TEST(ApiFunctional, SoftmaxWithDimAndDtype) {
  const Tensor x = testing::random({3, 4}, kFloat32, 18);
  testing::expect_tensors_close(F::softmax(x, F::SoftmaxFuncOptions(0)), softmax(x, 0));
  testing::expect_tensors_close(F::softmax(x, 1), softmax(x, 1));
  const Tensor wide = F::log_softmax(x, F::LogSoftmaxFuncOptions(-1).dtype(kFloat64));
  EXPECT_EQ(wide.dtype(), kFloat64);
  testing::expect_tensors_close(wide, log_softmax(x.to(kFloat64), -1));
}

TEST(ApiFunctional, LinearConvAndPoolOptionsReachTheOps) {
  const Tensor x = testing::random({2, 4, 9, 8}, kFloat32, 19);
  const Tensor w = testing::random({6, 2, 3, 2}, kFloat32, 20), b = testing::random({6}, kFloat32, 21);
  testing::expect_tensors_close(
      F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride({2, 1}).padding({1, 0}).dilation({1, 2}).groups(2)),
      conv2d(x, w, b, {2, 1}, {1, 0}, {1, 2}, 2));
  const Tensor x1 = testing::random({2, 3, 10}, kFloat32, 22), w1 = testing::random({5, 3, 3}, kFloat32, 23);
  testing::expect_tensors_close(F::conv1d(x1, w1, F::Conv1dFuncOptions().stride(2).padding(1).dilation(2)),
                                conv1d(x1, w1, {}, {2}, {1}, {2}));
  const Tensor wt = testing::random({4, 3, 3, 3}, kFloat32, 24);
  testing::expect_tensors_close(
      F::conv_transpose2d(x, wt, F::ConvTranspose2dFuncOptions().stride(2).padding(1).output_padding({1, 0})),
      conv_transpose2d(x, wt, {}, {2, 2}, {1, 1}, {1, 0}, 1, {1, 1}));
  const Tensor lw = testing::random({3, 8}, kFloat32, 25);
  testing::expect_tensors_close(F::linear(x, lw), linear(x, lw));

  testing::expect_tensors_close(F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride({2, 1}).padding(1).ceil_mode(true)),
                                max_pool2d(x, {3, 3}, {2, 1}, {1, 1}, {1, 1}, true));
  testing::expect_tensors_close(F::avg_pool2d(x, F::AvgPool2dFuncOptions({2, 3}).padding(1).count_include_pad(false)),
                                avg_pool2d(x, {2, 3}, {2, 3}, {1, 1}, false, false));
  const Tensor pooled = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({3, 2}));
  EXPECT_EQ(pooled.sizes(), IntArrayRef({2, 4, 3, 2}));
  testing::expect_tensors_close(pooled, adaptive_avg_pool2d(x, {3, 2}));
}

TEST(ApiFunctional, NormalisationOptionsReachTheOps) {
  const Tensor x = testing::random({4, 6, 3}, kFloat32, 26);
  const Tensor w = testing::random({6}, kFloat32, 27), b = testing::random({6}, kFloat32, 28);
  testing::expect_tensors_close(F::group_norm(x, F::GroupNormFuncOptions(3).weight(w).bias(b).eps(1e-3)),
                                group_norm(x, 3, w, b, 1e-3));
  const Tensor lw = testing::random({3}, kFloat32, 29);
  testing::expect_tensors_close(F::layer_norm(x, F::LayerNormFuncOptions({3}).weight(lw).eps(1e-2)),
                                layer_norm(x, {3}, lw, {}, 1e-2));
  const Tensor mean = testing::random({6}, kFloat32, 30), var = testing::random({6}, kFloat32, 31, 0.5, 2);
  testing::expect_tensors_close(F::batch_norm(x, mean, var, F::BatchNormFuncOptions().weight(w).eps(1e-3)),
                                batch_norm(x, mean, var, w, {}, false, 0.1, 1e-3));
  Tensor running_mean = zeros({6}), running_var = ones({6});
  F::batch_norm(x, running_mean, running_var, F::BatchNormFuncOptions().training(true).momentum(0.5));
  const Tensor batch_mean = x.mean({0, 2});
  testing::expect_tensors_close(running_mean, batch_mean * 0.5);
  testing::expect_error(
      [&] { F::batch_norm(x, running_mean, running_var, F::BatchNormFuncOptions().training(true).momentum({})); },
      {"batch_norm", "momentum", "[4, 6, 3]"});
}

TEST(ApiFunctional, NormalizeAndCosineSimilarity) {
  const Tensor a = testing::random({3, 4}, kFloat64, 32), b = testing::random({3, 4}, kFloat64, 33);
  const std::vector<double> av = testing::values(a), bv = testing::values(b);
  std::vector<double> unit, l1_unit(12), cosine;
  for (size_t r = 0; r < 3; ++r) {
    double dot = 0, na = 0, nb = 0, l1 = 0;
    for (size_t c = 0; c < 4; ++c) {
      dot += av[r * 4 + c] * bv[r * 4 + c];
      na += av[r * 4 + c] * av[r * 4 + c];
      nb += bv[r * 4 + c] * bv[r * 4 + c];
    }
    for (size_t c = 0; c < 4; ++c) unit.push_back(av[r * 4 + c] / std::sqrt(na));
    cosine.push_back(dot / std::sqrt(na * nb));
    for (size_t i = 0; i < 3; ++i) l1 += std::abs(av[i * 4 + r]);
    for (size_t i = 0; i < 3; ++i) l1_unit[i * 4 + r] = av[i * 4 + r] / l1;
  }
  testing::expect_values(F::normalize(a), unit);
  testing::expect_values(F::normalize(a.narrow(1, 0, 3), F::NormalizeFuncOptions().p(1).dim(0)),
                         {l1_unit[0], l1_unit[1], l1_unit[2], l1_unit[4], l1_unit[5], l1_unit[6], l1_unit[8],
                          l1_unit[9], l1_unit[10]});
  testing::expect_values(F::cosine_similarity(a, b), cosine);
  testing::expect_values(F::cosine_similarity(zeros({1, 4}), b.narrow(0, 0, 1)), {0.0});
  testing::gradcheck([](const std::vector<Tensor>& in) { return F::cosine_similarity(in[0], in[1]); },
                     {testing::leaf({3, 4}, 34), testing::leaf({3, 4}, 35)});
}

TEST(ApiFunctional, EmbeddingOneHotPadInterpolate) {
  const Tensor weight = testing::random({5, 3}, kFloat32, 36), idx = tensor<int64_t>({4, 0, 2});
  testing::expect_tensors_close(F::embedding(idx, weight, F::EmbeddingFuncOptions().padding_idx(-1)),
                                embedding(weight, idx, 4));
  testing::expect_values(F::one_hot(tensor<int64_t>({2, 0}), 3), {0, 0, 1, 1, 0, 0});
  const Tensor x = testing::random({1, 2, 4, 5}, kFloat32, 37);
  testing::expect_tensors_close(F::pad(x, F::PadFuncOptions({1, 2, 2, 0}).mode(kReflect)),
                                pad(x, {1, 2, 2, 0}, "reflect"));
  testing::expect_tensors_close(F::pad(x, F::PadFuncOptions({1, 1}).value(3)), pad(x, {1, 1}, "constant", 3));
  const std::vector<int64_t> size{7, 9};
  testing::expect_tensors_close(
      F::interpolate(x, F::InterpolateFuncOptions().size(size).mode(kBilinear).align_corners(true)),
      interpolate(x, size, std::nullopt, "bilinear", true));
  testing::expect_tensors_close(F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2})),
                                interpolate(x, std::nullopt, std::vector<double>{2, 2}, "nearest"));
  testing::expect_error(
      [&] { F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8}).align_corners(false)); },
      {"interpolate", "align_corners", "kBilinear"});
}

}  // namespace
}  // namespace nnvm
