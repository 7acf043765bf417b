// The loss modules: forward equal to the functional form with the module's
// options, class weights held as buffers under libtorch's names, errors named.
#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace nn = nnvm::nn;
namespace F = nnvm::nn::functional;

TEST(ApiLossModules, PointwiseLossesEqualTheFunctionalForm) {
  const Tensor x = testing::random({4, 3}, kFloat32, 1, 0.05, 0.95), y = testing::random({4, 3}, kFloat32, 2, 0, 1);
  for (Reduction r : {kNone, kMean, kSum}) {
    SCOPED_TRACE(::testing::Message() << "reduction " << int(r));
    testing::expect_tensors_close(nn::L1Loss(r)(x, y), l1_loss(x, y, r));
    testing::expect_tensors_close(nn::MSELoss(nn::MSELossOptions(r))(x, y), mse_loss(x, y, r));
    testing::expect_tensors_close(nn::SmoothL1Loss(nn::SmoothL1LossOptions(r).beta(0.3))(x, y),
                                  smooth_l1_loss(x, y, r, 0.3));
    testing::expect_tensors_close(nn::HuberLoss(nn::HuberLossOptions().reduction(r).delta(0.2))(x, y),
                                  huber_loss(x, y, r, 0.2));
    testing::expect_tensors_close(nn::BCELoss(nn::BCELossOptions().reduction(r))(x, y),
                                  binary_cross_entropy(x, y, {}, r));
    testing::expect_tensors_close(nn::KLDivLoss(nn::KLDivLossOptions(r).log_target(true))(x.log(), y),
                                  kl_div(x.log(), y, r, true));
  }
  // default reductions are the mean; kl_div's batch mean divides by the batch size
  EXPECT_EQ(nn::MSELoss()(x, y).dim(), 0);
  testing::expect_tensors_close(nn::KLDivLoss(kBatchMean)(x.log(), y), kl_div(x.log(), y, kSum) / 4.0);
  testing::expect_tensors_close(nn::SmoothL1Loss()(x, y),
                                F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(1.0)));
}

TEST(ApiLossModules, ClassLossesEqualTheFunctionalForm) {
  const Tensor logits = testing::random({5, 4}, kFloat32, 3), target = tensor<int64_t>({0, 3, 1, 3, 2});
  const Tensor weight = tensor<float>({1.0f, 0.5f, 2.0f, 1.5f});
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(weight).ignore_index(1).label_smoothing(0.1));
  testing::expect_tensors_close(ce(logits, target), cross_entropy(logits, target, weight, kMean, 1, 0.1));
  nn::NLLLoss nll(nn::NLLLossOptions().weight(weight).reduction(kSum));
  const Tensor log_probs = log_softmax(logits, 1);
  testing::expect_tensors_close(nll(log_probs, target), nll_loss(log_probs, target, weight, kSum));
  testing::expect_tensors_close(nn::CrossEntropyLoss()(logits, target), nn::NLLLoss()(log_probs, target));

  const Tensor x = testing::random({2, 4}, kFloat32, 4), y = testing::random({2, 4}, kFloat32, 5, 0, 1);
  const Tensor pos_weight = tensor<float>({1.0f, 2.0f, 3.0f, 0.5f}), w = tensor<float>({2.0f, 1.0f, 1.0f, 1.0f});
  nn::BCEWithLogitsLoss bce(nn::BCEWithLogitsLossOptions().weight(w).pos_weight(pos_weight).reduction(kNone));
  testing::expect_tensors_close(bce(x, y), binary_cross_entropy_with_logits(x, y, w, kNone, pos_weight));
  nn::BCELoss weighted(nn::BCELossOptions().weight(w));
  testing::expect_tensors_close(weighted(x.sigmoid(), y), binary_cross_entropy(x.sigmoid(), y, w));
}

TEST(ApiLossModules, WeightsAreBuffersNamedAsLibtorch) {
  nn::BCEWithLogitsLoss bce(nn::BCEWithLogitsLossOptions().pos_weight(ones({3})));
  EXPECT_EQ(bce->named_buffers().keys(), std::vector<std::string>{"pos_weight"});
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(tensor<float>({1.0f, 2.0f})));
  EXPECT_EQ(ce->state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_TRUE(ce->parameters().empty());
  EXPECT_TRUE(nn::MSELoss()->state_dict().is_empty());
  ce->to(kFloat64);
  EXPECT_EQ(ce->weight.dtype(), kFloat64);
  const Tensor logits = testing::random({3, 2}, kFloat64, 6), target = tensor<int64_t>({1, 0, 1});
  testing::expect_tensors_close(ce(logits, target),
                                cross_entropy(logits, target, tensor<double>({1.0, 2.0})));
}

TEST(ApiLossModules, GradientsReachTheInput) {
  testing::gradcheck(
      [](const std::vector<Tensor>& in) { return nn::HuberLoss(nn::HuberLossOptions(kSum).delta(0.5))(in[0], in[1]); },
      {testing::leaf({3, 3}, 7), testing::leaf({3, 3}, 8)});
  testing::gradcheck([](const std::vector<Tensor>& in) { return nn::BCELoss()(in[0], in[1]); },
                     {testing::leaf({6}, 9, 0.1, 0.9), testing::leaf({6}, 10, 0, 1)});
  testing::gradcheck([](const std::vector<Tensor>& in) { return nn::KLDivLoss(kBatchMean)(in[0], in[1]); },
                     {testing::leaf({2, 3}, 11, -2, 0), testing::leaf({2, 3}, 12, 0.1, 1)});
}

TEST(ApiLossModules, ErrorsNameTheOpAndShapes) {
  const Tensor a = randn({4, 3}), b = randn({4});
  testing::expect_error([&] { nn::SmoothL1Loss()(a, b); }, {"smooth_l1_loss", "[4, 3]", "[4]"});
  testing::expect_error([&] { nn::MSELoss()(a, b); }, {"mse_loss", "[4, 3]", "[4]"});
  testing::expect_error([&] { nn::KLDivLoss()(a, b); }, {"kl_div", "[4, 3]", "[4]"});
  testing::expect_error([&] { nn::HuberLoss(nn::HuberLossOptions().delta(-1))(a, a); }, {"huber_loss", "delta", "-1"});
  testing::expect_error([&] { nn::CrossEntropyLoss()(a, tensor<int64_t>({0, 1})); },
                        {"cross_entropy", "[2]", "[4, 3]"});
  testing::expect_error([&] { nn::BCELoss(nn::BCELossOptions().weight(ones({2})))(a.sigmoid(), a.sigmoid()); },
                        {"binary_cross_entropy", "weight of shape [2]", "[4, 3]"});
}

}  // namespace
}  // namespace nnvm
