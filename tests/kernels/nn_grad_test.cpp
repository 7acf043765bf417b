// Gradients of the normalisation and dropout ops (core/ops/nn.cpp) and the
// losses (core/ops/loss.cpp) against finite differences, through their fused
// backward kernels (layer_norm_backward, cross_entropy_backward) and their
// compositions; second derivatives of mse_loss and l1_loss.
#include "reference.h"

namespace nnvm {
namespace {

using testing::DiffFn;
using testing::gradcheck;
using testing::gradgradcheck;
using testing::leaf;

constexpr Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

Tensor longs(std::vector<int64_t> v, IntArrayRef shape) { return tensor<int64_t>(v, shape); }

TEST(NormGrad, LayerNorm) {
  const Tensor x = leaf({2, 3, 5}, 1), w = leaf({5}, 2), b = leaf({5}, 3), w2 = leaf({3, 5}, 4), b2 = leaf({3, 5}, 5);
  const Tensor one = leaf({1, 1}, 6), w1 = leaf({1}, 7);
  const DiffFn fns[] = {
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}); },
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, in[1], in[2]); },
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, in[1]); },
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, {}, in[2], 0.1); },
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], {3, 5}, in[3], in[4]); },
      // non-contiguous input and weight
      [](const std::vector<Tensor>& in) { return layer_norm(in[0].transpose(0, 2), {2}, in[1].narrow(0, 1, 2)); },
      [](const std::vector<Tensor>& in) { return layer_norm(in[0].transpose(1, 2), {5, 3}, in[3].t(), in[4].t()); },
  };
  for (const auto& fn : fns) gradcheck(fn, {x, w, b, w2, b2});
  gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {1}, in[1], in[1]); }, {one, w1});
}

TEST(NormGrad, LayerNormBackwardReturnsOnlyRequestedGradients) {
  const Tensor x = leaf({4, 3}, 8), w = leaf({3}, 9), b = leaf({3}, 10);
  const Tensor y = layer_norm(x, {3}, w, b);
  const std::vector<Tensor> grads = autograd::grad({(y * y).sum()}, {w});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].sizes(), w.sizes());
}

// Many rows (several blocks of partial parameter sums) and float32: the fused
// kernel against the same normalisation built from differentiable ops.
TEST(NormGrad, LayerNormBackwardMatchesTheComposition) {
  for (DType dtype : {kFloat64, kFloat32}) {
    const Tensor x = testing::random({9001, 8}, dtype, 50).requires_grad_();
    const Tensor w = testing::random({8}, dtype, 51).requires_grad_();
    const Tensor b = testing::random({8}, dtype, 52).requires_grad_();
    const Tensor g = testing::random({9001, 8}, dtype, 53);
    const std::vector<Tensor> fused = autograd::grad({layer_norm(x, {8}, w, b)}, {x, w, b}, {g});
    const Tensor centred = x - x.mean({1}, true);
    const Tensor composed_y = centred * (centred.square().mean({1}, true) + 1e-5).rsqrt() * w + b;
    const std::vector<Tensor> composed = autograd::grad({composed_y}, {x, w, b}, {g});
    for (size_t k = 0; k < 3; ++k)
      testing::expect_tensors_close(fused[k], composed[k], testing::rtol_for(dtype), 10 * testing::rtol_for(dtype));
  }
}

TEST(NormGrad, GroupNorm) {
  const Tensor x = leaf({2, 6, 3}, 11), w = leaf({6}, 12), b = leaf({6}, 13), flat = leaf({3, 4}, 14);
  for (int64_t groups : {1, 2, 3, 6}) {
    gradcheck([groups](const std::vector<Tensor>& in) { return group_norm(in[0], groups, in[1], in[2]); },
              {x, w, b});
    gradcheck([groups](const std::vector<Tensor>& in) { return group_norm(in[0], groups); }, {x});
  }
  gradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0].t(), 3, in[1].narrow(0, 0, 3), {}, 0.1); },
            {flat, w});
  gradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0], 2, {}, in[1].narrow(0, 0, 4)); },
            {flat, b});
  gradgradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0], 3, in[1], in[2]); }, {x, w, b});
}

TEST(NormGrad, BatchNormTraining) {
  const Tensor x = leaf({4, 3, 2}, 15), w = leaf({3}, 16), b = leaf({3}, 17), flat = leaf({5, 3}, 18);
  Tensor rm = testing::random({3}, kFloat64, 19), rv = testing::random({3}, kFloat64, 20, 0.5, 2.0);
  gradcheck([&](const std::vector<Tensor>& in) { return batch_norm(in[0], rm, rv, in[1], in[2], true); },
            {x, w, b});
  gradcheck([](const std::vector<Tensor>& in) { return batch_norm(in[0], {}, {}, {}, {}, true, 0.1, 0.01); },
            {x});
  gradcheck([](const std::vector<Tensor>& in) { return batch_norm(in[0].t().t(), {}, {}, in[1], {}, true); },
            {flat, w});
  gradcheck([](const std::vector<Tensor>& in) {
    return batch_norm(in[0].transpose(0, 2), {}, {}, {}, in[1].narrow(0, 0, 3), true);
  }, {leaf({3, 3, 2}, 21), b});
  gradgradcheck([](const std::vector<Tensor>& in) { return batch_norm(in[0], {}, {}, in[1], in[2], true); },
                {x, w, b});
}

TEST(NormGrad, BatchNormTrainingUpdatesRunningStatsAndStillDifferentiates) {
  const Tensor x = leaf({4, 3}, 22);
  Tensor rm = zeros({3}, kFloat64), rv = ones({3}, kFloat64);
  batch_norm(x, rm, rv, {}, {}, true).square().sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(rm.requires_grad());
  EXPECT_NE(testing::values(rm), std::vector<double>(3, 0.0));  // updated in place
}

TEST(NormGrad, BatchNormEvaluationUsesRunningStatsAsConstants) {
  const Tensor x = leaf({4, 3, 2}, 23), w = leaf({3}, 24), b = leaf({3}, 25);
  const Tensor rm = testing::random({3}, kFloat64, 26), rv = testing::random({3}, kFloat64, 27, 0.5, 2.0);
  gradcheck([&](const std::vector<Tensor>& in) { return batch_norm(in[0], rm, rv, in[1], in[2], false); },
            {x, w, b});
  gradcheck([&](const std::vector<Tensor>& in) {
    return batch_norm(in[0].transpose(0, 2).transpose(0, 2), rm, rv, {}, {}, false);
  }, {x});
  gradgradcheck([&](const std::vector<Tensor>& in) { return batch_norm(in[0], rm, rv, in[1], in[2], false); },
                {x, w, b});
}

TEST(DropoutGrad, ReusesTheForwardMask) {
  const Tensor x = leaf({3, 7}, 28, 0.5, 2.0);
  for (double p : {0.0, 0.3, 0.8, 1.0}) {
    // A fresh generator per call draws the same mask each time the check runs the function.
    gradcheck([p](const std::vector<Tensor>& in) {
      Generator gen(99);
      return dropout(in[0], p, true, &gen);
    }, {x});
    gradcheck([p](const std::vector<Tensor>& in) {
      Generator gen(7);
      return dropout(in[0].t(), p, true, &gen) * in[0].t();
    }, {x});
  }
  Tensor y = leaf({50}, 29, 0.5, 2.0);
  const Tensor out = dropout(y, 0.5, true);
  out.sum().backward();
  const std::vector<double> g = testing::values(y.grad()), kept = testing::values(out);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], kept[i] != 0 ? 2.0 : 0.0) << i;
  gradgradcheck([](const std::vector<Tensor>& in) {
    Generator gen(3);
    return dropout(in[0], 0.4, true, &gen).square();
  }, {x});
}

TEST(LossGrad, MseAndL1WithSecondDerivatives) {
  const Tensor x = leaf({3, 4}, 30), y = leaf({4, 3}, 31), one = leaf({1}, 32), one_t = leaf({1}, 33);
  for (Reduction r : kReductions) {
    const DiffFn fns[] = {
        [r](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1].t(), r); },
        [r](const std::vector<Tensor>& in) { return l1_loss(in[0], in[1].t(), r); },
        [r](const std::vector<Tensor>& in) { return mse_loss(in[0].exp(), in[1].t(), r) * 2; },
        [r](const std::vector<Tensor>& in) { return l1_loss(in[2], in[3], r); },
        [r](const std::vector<Tensor>& in) { return mse_loss(in[2], in[3], r); },
    };
    for (const auto& fn : fns) {
      gradcheck(fn, {x, y, one, one_t});
      gradgradcheck(fn, {x, y, one, one_t});
    }
  }
}

TEST(LossGrad, NllLoss) {
  // Class weights are constants: the class losses differentiate their scores only.
  const Tensor x = leaf({4, 5}, 34), x1 = leaf({5}, 35), spatial = leaf({2, 3, 2, 2}, 36);
  const Tensor w = testing::random({5}, kFloat64, 37, 0.5, 2);
  const Tensor t = longs({4, 0, 2, 4}, {4}), t_ignored = longs({4, 1, 2, 1}, {4}), t1 = longs({3}, {});
  const Tensor t_spatial = longs({0, 2, 1, 1, 2, 0, 0, 0}, {2, 2, 2});
  for (Reduction r : kReductions) {
    gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0], t, {}, r); }, {x});
    gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0], t, w, r); }, {x, x1, spatial});
    gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0], t_ignored, w, r, 1); }, {x});
    gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0].t().t(), t_ignored, {}, r, 1); }, {x});
    gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[1], t1, w, r); }, {x, x1, spatial});
    gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[2], t_spatial, {}, r, 0); },
              {x, x1, spatial});
    gradcheck([&](const std::vector<Tensor>& in) {
      return nll_loss(in[2].transpose(2, 3), t_spatial, w.narrow(0, 0, 3), r);
    }, {x, x1, spatial});
  }
  gradgradcheck(
      [&](const std::vector<Tensor>& in) { return nll_loss(in[0].square(), t_ignored, w, Reduction::Mean, 1); }, {x});
}

TEST(LossGrad, CrossEntropy) {
  const Tensor x = leaf({4, 5}, 38), x1 = leaf({5}, 39), spatial = leaf({2, 3, 2, 2}, 40);
  const Tensor w = testing::random({5}, kFloat64, 41, 0.5, 2);
  const Tensor t = longs({4, 0, 2, 4}, {4}), t_ignored = longs({4, 1, 2, 1}, {4}), t1 = longs({3}, {});
  const Tensor t_spatial = longs({0, 2, 1, 1, 2, 0, 0, 0}, {2, 2, 2});
  const Tensor single = leaf({1, 1}, 42);
  for (Reduction r : kReductions) {
    for (double smoothing : {0.0, 0.2, 1.0}) {
      gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t, {}, r, -100, smoothing); },
                {x});
      gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t, w, r, -100, smoothing); },
                {x});
      gradcheck([&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0].t().t(), t_ignored, w, r, 1, smoothing);
      }, {x});
      gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t1, {}, r, -100, smoothing); },
                {x1});
      gradcheck([&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0].transpose(2, 3), t_spatial, w.narrow(0, 0, 3), r, 2, smoothing);
      }, {spatial});
      gradcheck([&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0], longs({0}, {1}), {}, r, -100, smoothing);
      }, {single});
    }
  }
}

TEST(LossGrad, CrossEntropyWithEveryRowIgnoredHasNoGradient) {
  const Tensor x = leaf({3, 4}, 43);
  cross_entropy(x, longs({-100, -100, -100}, {3}), {}, Reduction::Sum).backward();
  EXPECT_EQ(testing::values(x.grad()), std::vector<double>(12, 0.0));
}

TEST(LossGrad, BinaryCrossEntropyWithLogits) {
  const Tensor x = leaf({3, 4}, 44), y = leaf({3, 4}, 45, 0, 1), w = leaf({4}, 46, 0.5, 2),
               pw = leaf({4}, 47, 0.5, 3), w_full = leaf({3, 1}, 48, 0.5, 2);
  for (Reduction r : kReductions) {
    const DiffFn fns[] = {
        [r](const std::vector<Tensor>& in) { return binary_cross_entropy_with_logits(in[0], in[1], {}, r); },
        [r](const std::vector<Tensor>& in) { return binary_cross_entropy_with_logits(in[0], in[1], in[2], r); },
        [r](const std::vector<Tensor>& in) {
          return binary_cross_entropy_with_logits(in[0], in[1], {}, r, in[3]);
        },
        [r](const std::vector<Tensor>& in) {
          return binary_cross_entropy_with_logits(in[0].t().t(), in[1], in[4], r, in[3]);
        },
        [r](const std::vector<Tensor>& in) {
          return binary_cross_entropy_with_logits(in[0].t(), in[1].t(), in[2].narrow(0, 1, 3), r);
        },
    };
    for (const auto& fn : fns) gradcheck(fn, {x, y, w, pw, w_full});
  }
  const Tensor big = tensor<double>({-40.0, 35.0}).requires_grad_(), target = tensor<double>({0.25, 1.0});
  gradcheck([&](const std::vector<Tensor>& in) { return binary_cross_entropy_with_logits(in[0], target); }, {big});
}

}  // namespace
}  // namespace nnvm
