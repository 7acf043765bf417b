// Optimizers against their update rules written out in doubles (PyTorch's
// documented algorithms), schedulers, clip_grad_norm_, and a short training run.
#include <cmath>
#include <functional>
#include <numbers>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace nn = nnvm::nn;
namespace optim = nnvm::optim;

// Fixed gradients for three steps of a 3-element parameter starting at kStart.
const std::vector<double> kStart = {0.5, -1.0, 2.0};
const std::vector<std::vector<double>> kGrads = {{0.1, -0.2, 0.3}, {-0.4, 0.5, 0.05}, {0.2, 0.2, -0.6}};

// One element's update: (param, grad, step index from 1) -> new param, with state captured by the closure.
using ElementRule = std::function<double(double p, double g, int t, size_t i)>;

// Runs `opt` for the three steps and compares with `rule` after each step.
void check_steps(const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make,
                 const ElementRule& rule) {
  Tensor p = tensor(kStart).requires_grad_();
  std::unique_ptr<optim::Optimizer> opt = make({p});
  std::vector<double> expected = kStart;
  for (int t = 1; t <= 3; ++t) {
    opt->zero_grad();
    p.mutable_grad() = tensor(kGrads[size_t(t - 1)]);
    opt->step();
    for (size_t i = 0; i < 3; ++i) expected[i] = rule(expected[i], kGrads[size_t(t - 1)][i], t, i);
    SCOPED_TRACE("step " + std::to_string(t));
    testing::expect_values(p, expected, 1e-12, 1e-12);
  }
}

TEST(ApiOptim, SGDPlainAndWeightDecay) {
  for (const double wd : {0.0, 0.1}) {
    check_steps([&](std::vector<Tensor> ps) {
      return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1).weight_decay(wd));
    }, [&](double p, double g, int, size_t) { return p - 0.1 * (g + wd * p); });
  }
}

TEST(ApiOptim, SGDMomentumDampeningNesterov) {
  struct Case { double momentum, dampening; bool nesterov; double wd; };
  for (const Case c : {Case{0.9, 0.0, false, 0.0}, Case{0.9, 0.3, false, 0.01}, Case{0.8, 0.0, true, 0.05}}) {
    std::vector<double> buf(3, 0.0);
    check_steps([&](std::vector<Tensor> ps) {
      return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(c.momentum).dampening(c.dampening)
                                                  .nesterov(c.nesterov).weight_decay(c.wd));
    }, [&](double p, double g, int t, size_t i) {
      const double d = g + c.wd * p;
      buf[i] = t == 1 ? d : c.momentum * buf[i] + (1 - c.dampening) * d;
      return p - 0.05 * (c.nesterov ? d + c.momentum * buf[i] : buf[i]);
    });
  }
  Tensor p = zeros({1}).requires_grad_();
  testing::expect_error([&] { optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)); }, {"SGD", "Nesterov"});
  testing::expect_error([&] { optim::SGD({p}, optim::SGDOptions(-1)); }, {"SGD", "-1"});
}

// Adam's rule for one element; decoupled: AdamW's weight decay.
ElementRule adam_rule(double lr, double b1, double b2, double eps, double wd, bool amsgrad, bool decoupled) {
  auto m = std::make_shared<std::vector<double>>(3, 0.0), v = std::make_shared<std::vector<double>>(3, 0.0),
       vmax = std::make_shared<std::vector<double>>(3, 0.0);
  return [=](double p, double g, int t, size_t i) {
    if (decoupled)
      p *= 1 - lr * wd;
    else
      g += wd * p;
    (*m)[i] = b1 * (*m)[i] + (1 - b1) * g;
    (*v)[i] = b2 * (*v)[i] + (1 - b2) * g * g;
    (*vmax)[i] = std::max((*vmax)[i], (*v)[i]);
    const double second = amsgrad ? (*vmax)[i] : (*v)[i];
    const double m_hat = (*m)[i] / (1 - std::pow(b1, t));
    const double v_hat = second / (1 - std::pow(b2, t));
    return p - lr * m_hat / (std::sqrt(v_hat) + eps);
  };
}

TEST(ApiOptim, AdamAndAmsgrad) {
  for (const bool amsgrad : {false, true})
    for (const double wd : {0.0, 0.1}) {
      check_steps([&](std::vector<Tensor> ps) {
        return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.01).betas({0.8, 0.9}).eps(1e-3)
                                                     .weight_decay(wd).amsgrad(amsgrad));
      }, adam_rule(0.01, 0.8, 0.9, 1e-3, wd, amsgrad, false));
    }
}

TEST(ApiOptim, AdamW) {
  for (const bool amsgrad : {false, true})
    check_steps([&](std::vector<Tensor> ps) {
      return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions(0.02).weight_decay(0.5).amsgrad(amsgrad));
    }, adam_rule(0.02, 0.9, 0.999, 1e-8, 0.5, amsgrad, true));
}

TEST(ApiOptim, RMSpropVariants) {
  struct Case { double momentum; bool centered; double wd; };
  for (const Case c : {Case{0, false, 0}, Case{0.9, false, 0.1}, Case{0, true, 0}, Case{0.5, true, 0.2}}) {
    std::vector<double> sq(3, 0.0), avg(3, 0.0), buf(3, 0.0);
    check_steps([&](std::vector<Tensor> ps) {
      return std::make_unique<optim::RMSprop>(ps, optim::RMSpropOptions(0.01).alpha(0.9).eps(1e-4)
                                                      .momentum(c.momentum).centered(c.centered).weight_decay(c.wd));
    }, [&](double p, double g, int, size_t i) {
      g += c.wd * p;
      sq[i] = 0.9 * sq[i] + 0.1 * g * g;
      double denom = std::sqrt(sq[i]) + 1e-4;
      if (c.centered) {
        avg[i] = 0.9 * avg[i] + 0.1 * g;
        denom = std::sqrt(sq[i] - avg[i] * avg[i]) + 1e-4;
      }
      if (c.momentum > 0) {
        buf[i] = c.momentum * buf[i] + g / denom;
        return p - 0.01 * buf[i];
      }
      return p - 0.01 * g / denom;
    });
  }
}

TEST(ApiOptim, ParamGroupsLearningRateAndZeroGrad) {
  Tensor a = ones({2}, kFloat64).requires_grad_(), b = ones({2}, kFloat64).requires_grad_();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(0.5));
  optim::SGD opt(std::move(groups), optim::SGDOptions(0.1));
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.5);
  static_cast<optim::SGDOptions&>(opt.param_groups()[0].options()).lr(0.2);
  (a.sum() + b.sum()).backward();
  opt.step();
  testing::expect_values(a, {0.8, 0.8});
  testing::expect_values(b, {0.5, 0.5});
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  // A parameter without a gradient is left alone.
  opt.step();
  testing::expect_values(a, {0.8, 0.8});
  testing::expect_error([&] { opt.add_param_group(optim::OptimizerParamGroup({a})); }, {"Optimizer", "more than one"});
  testing::expect_error([&] { optim::SGD({ones({2})}, 0.1); }, {"Optimizer", "require grad"});
  // A closure's loss is returned, computed with gradients on.
  const Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = (a * a).sum();
    l.backward();
    return l;
  });
  EXPECT_NEAR(loss.item<double>(), 2 * 0.64, 1e-12);
  testing::expect_values(a, {0.8 - 0.2 * 1.6, 0.8 - 0.2 * 1.6});
}

TEST(ApiOptim, StepLR) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, 1.0);
  optim::StepLR sched(opt, 3, 0.5);
  std::vector<double> lrs;
  for (int i = 0; i < 7; ++i) {
    lrs.push_back(opt.param_groups()[0].options().get_lr());
    sched.step();
  }
  EXPECT_EQ(lrs, (std::vector<double>{1, 1, 1, 0.5, 0.5, 0.5, 0.25}));
  EXPECT_EQ(sched.get_last_lr(), std::vector<double>{0.25});
}

TEST(ApiOptim, CosineWarmupLR) {
  Tensor p = ones({1}).requires_grad_(), q = ones({1}).requires_grad_();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{p});
  groups.emplace_back(std::vector<Tensor>{q}, std::make_unique<optim::AdamOptions>(0.5));
  optim::Adam opt(std::move(groups), optim::AdamOptions(1.0));
  const int64_t warmup = 4, total = 12;
  const double min_lr = 0.1;
  optim::CosineWarmupLR sched(opt, warmup, total, min_lr);
  for (int64_t t = 0; t <= 14; ++t) {
    for (size_t g = 0; g < 2; ++g) {
      const double base = g == 0 ? 1.0 : 0.5;
      double expected;
      if (t < warmup)
        expected = base * double(t) / double(warmup);
      else if (t >= total)
        expected = min_lr;
      else
        expected = min_lr + (base - min_lr) * 0.5 *
                                (1 + std::cos(std::numbers::pi * double(t - warmup) / double(total - warmup)));
      EXPECT_NEAR(opt.param_groups()[g].options().get_lr(), expected, 1e-12) << "step " << t << " group " << g;
    }
    sched.step();
  }
  testing::expect_error([&] { optim::CosineWarmupLR(opt, 5, 5); }, {"CosineWarmupLR", "warmup_steps 5"});
}

TEST(ApiOptim, ClipGradNorm) {
  Tensor a = zeros({2}, kFloat64).requires_grad_(), b = zeros({2, 1}, kFloat64).requires_grad_(),
         unused = zeros({3}).requires_grad_();
  auto set = [&] {
    a.mutable_grad() = tensor<double>({3.0, 0.0});
    b.mutable_grad() = tensor<double>({0.0, -4.0}, IntArrayRef({2, 1}));
  };
  set();
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b, unused}, 10.0), 5.0, 1e-12);
  testing::expect_values(a.grad(), {3.0, 0.0});  // under the limit: unchanged
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b, unused}, 1.0), 5.0, 1e-12);
  const double scale = 1.0 / (5.0 + 1e-6);
  testing::expect_values(a.grad(), {3.0 * scale, 0.0}, 1e-12);
  testing::expect_values(b.grad(), {0.0, -4.0 * scale}, 1e-12);
  set();
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 2.0, INFINITY), 4.0, 1e-12);
  testing::expect_values(b.grad(), {0.0, -4.0 * 2.0 / (4.0 + 1e-6)}, 1e-12);
  set();
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 100.0, 1.0), 7.0, 1e-12);
  EXPECT_EQ(nn::utils::clip_grad_norm_({unused}, 1.0), 0.0);
  a.mutable_grad() = tensor<double>({NAN, 1.0});
  testing::expect_error([&] { nn::utils::clip_grad_norm_(a, 1.0, 2.0, true); }, {"clip_grad_norm_", "non-finite"});
}

// y = sin(2x) on [-1, 1] with a small MLP: the loss must fall well below its start.
void train_regression(const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make) {
  manual_seed(0);
  nn::Sequential mlp(nn::Linear(1, 32), nn::Tanh(), nn::Linear(32, 1));
  const Tensor x = linspace(-1, 1, 64).view({64, 1});
  const Tensor y = (x * 2).sin();
  std::unique_ptr<optim::Optimizer> opt = make(mlp->parameters());
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    opt->zero_grad();
    const Tensor loss = (mlp(x) - y).square().mean();
    loss.backward();
    nn::utils::clip_grad_norm_(mlp->parameters(), 10.0);
    opt->step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.05 * first) << "first " << first << " last " << last;
}

TEST(ApiOptim, TrainingRunLossFalls) {
  train_regression([](std::vector<Tensor> ps) {
    return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1).momentum(0.9));
  });
  train_regression([](std::vector<Tensor> ps) { return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.01)); });
}

}  // namespace
}  // namespace nnvm
