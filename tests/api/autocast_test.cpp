// Mixed precision: AutocastGuard's op policies (products in bfloat16 or
// float16, reductions, norms, softmax and losses in float32, the rest in
// their inputs' types), float32 parameters and gradients, backward passes
// in the forward's types, traced mode equal to eager mode, and GradScaler's
// scaling, skipped steps and scale schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "bits.h"
#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::same_bits;

TEST(Autocast, EveryListedOpExists) {
  const std::vector<std::string> names = op_names();
  for (autocast::Policy p : {autocast::Policy::kLowerPrecision, autocast::Policy::kFloat32})
    for (const std::string& op : autocast::ops_with(p)) {
      EXPECT_NE(std::find(names.begin(), names.end(), op), names.end()) << op;
      EXPECT_EQ(autocast::policy(op), p) << op;
    }
  EXPECT_EQ(autocast::policy("add"), autocast::Policy::kNone);
  EXPECT_EQ(autocast::policy("no such op"), autocast::Policy::kNone);
}

TEST(Autocast, ProductsRunInTheLowerPrecisionAndReductionsInFloat32) {
  const Tensor a = testing::random({5, 7}, kFloat32, 1), b = testing::random({7, 3}, kFloat32, 2);
  const Tensor w = testing::random({4, 2, 3, 3}, kFloat32, 3), img = testing::random({2, 2, 6, 6}, kFloat32, 4);
  const Tensor h = testing::random({5, 7}, kFloat32, 5).to(kBFloat16);
  EXPECT_FALSE(is_autocast_enabled());
  for (DType low : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(low));
    Tensor product, conv, probs, total, sum_of_product, mixed;
    {
      AutocastGuard guard(low);
      EXPECT_TRUE(is_autocast_enabled());
      EXPECT_EQ(get_autocast_dtype(), low);
      product = a.matmul(b);
      conv = conv2d(img, w, {}, {1, 1}, {1, 1});
      probs = softmax(h.to(low), -1);
      total = h.to(low).sum();
      sum_of_product = a.matmul(b).sum();
      mixed = a.matmul(b) + a.matmul(b).to(kFloat32);  // promotion, as outside autocast
    }
    EXPECT_FALSE(is_autocast_enabled());
    EXPECT_EQ(product.dtype(), low);
    EXPECT_TRUE(same_bits(product, a.to(low).matmul(b.to(low))));
    EXPECT_EQ(conv.dtype(), low);
    EXPECT_TRUE(same_bits(conv, conv2d(img.to(low), w.to(low), {}, {1, 1}, {1, 1})));
    EXPECT_EQ(probs.dtype(), kFloat32);
    EXPECT_TRUE(same_bits(probs, softmax(h.to(low).to(kFloat32), -1)));
    EXPECT_EQ(total.dtype(), kFloat32);
    EXPECT_EQ(sum_of_product.dtype(), kFloat32);
    EXPECT_EQ(mixed.dtype(), kFloat32);
    // against float32, within the format's rounding of the inputs (8 or 11 bits)
    const double tol = low == kBFloat16 ? 3e-2 : 4e-3;
    testing::expect_tensors_close(product.to(kFloat32), a.matmul(b), tol, tol);
    testing::expect_tensors_close(conv.to(kFloat32), conv2d(img, w, {}, {1, 1}, {1, 1}), tol, tol);
  }
  EXPECT_EQ(a.matmul(b).dtype(), kFloat32);  // off again
}

TEST(Autocast, GuardsNestAndRestore) {
  {
    AutocastGuard outer(kFloat16);
    {
      AutocastGuard inner(kBFloat16, /*enabled=*/false);
      EXPECT_FALSE(is_autocast_enabled());
      EXPECT_EQ(testing::random({2, 2}, kFloat32, 1).matmul(testing::random({2, 2}, kFloat32, 2)).dtype(), kFloat32);
    }
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_EQ(get_autocast_dtype(), kFloat16);
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_EQ(get_autocast_dtype(), kBFloat16);
  testing::expect_error([] { AutocastGuard bad(kFloat32); }, {"AutocastGuard", "bfloat16 or float16", "float32"});
  testing::expect_error([] { set_autocast_dtype(kInt8); }, {"autocast", "bfloat16 or float16"});
}

// In traced mode the ops recorded before a guard, flushed inside it, run as recorded.
TEST(Autocast, AFlushInsideTheGuardRunsWhatWasRecordedBeforeAsRecorded) {
  const Tensor a = testing::random({6, 5}, kFloat32, 41), b = testing::random({5, 4}, kFloat32, 42);
  const Tensor before = a.matmul(b).relu();
  Tensor inside;
  {
    AutocastGuard guard(kBFloat16);
    inside = a.matmul(b);
    (void)(before.sum() + inside.sum()).item<double>();  // the flush, inside the guard
  }
  Tensor want;
  {
    EagerGuard eager;
    want = a.matmul(b).relu();
  }
  EXPECT_EQ(before.dtype(), kFloat32);
  EXPECT_TRUE(same_bits(before, want));
  EXPECT_EQ(inside.dtype(), kBFloat16);
}

// A loaded model's ops go through the same dispatcher: under autocast its
// products run in bfloat16, its first and later (cached) calls alike.
TEST(Autocast, ALoadedModelRunsUnderAutocast) {
  Model m = load_model((std::filesystem::path(NNVM_TEST_DATA_DIR) / "tensorflow/mlp/model.pb").string());
  const Tensor x = testing::random({5, 8}, kFloat32, 51);
  const Tensor want = m({x})[0];
  for (int call = 0; call < 2; ++call) {
    Tensor got;
    {
      AutocastGuard guard(kBFloat16);
      got = m({x})[0];
    }
    SCOPED_TRACE(call);
    EXPECT_EQ(got.sizes(), want.sizes());
    testing::expect_tensors_close(got.to(kFloat32), want, 5e-2, 5e-2);
    EXPECT_FALSE(same_bits(got.to(kFloat32), want)) << "the products ran in float32";
  }
  testing::expect_tensors_close(m({x})[0], want, 0, 0);  // off again: float32
}

struct Mlp : nn::Module {
  Mlp() : fc1(register_module("fc1", nn::Linear(6, 16))), fc2(register_module("fc2", nn::Linear(16, 3))) {}
  Tensor forward(const Tensor& x) { return fc2(fc1(x).relu()); }
  nn::Linear fc1, fc2;
};

// One step's loss and gradients under autocast (backward inside or after the scope).
std::vector<Tensor> autocast_step(Mlp& net, const Tensor& x, const Tensor& y, DType low, bool backward_inside) {
  for (Tensor& p : net.parameters()) p.mutable_grad() = Tensor();
  Tensor loss;
  {
    AutocastGuard guard(low);
    loss = cross_entropy(net.forward(x), y);
    if (backward_inside) loss.backward();
  }
  if (!backward_inside) loss.backward();
  std::vector<Tensor> out = {loss};
  for (const Tensor& p : net.parameters()) out.push_back(p.grad());
  return out;
}

TEST(Autocast, ParametersAndGradientsStayFloat32AndBackwardRunsInTheForwardsTypes) {
  manual_seed(3);
  Mlp net;
  const Tensor x = testing::random({8, 6}, kFloat32, 7);
  const Tensor y = (testing::random({8}, kFloat32, 8) > 0).to(kInt64);
  for (Tensor& p : net.parameters()) p.mutable_grad() = Tensor();
  cross_entropy(net.forward(x), y).backward();
  std::vector<Tensor> full;
  for (const Tensor& p : net.parameters()) full.push_back(p.grad().clone());
  for (DType low : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(low));
    const std::vector<Tensor> after = autocast_step(net, x, y, low, false);
    const std::vector<Tensor> inside = autocast_step(net, x, y, low, true);
    EXPECT_EQ(after[0].dtype(), kFloat32);  // the loss
    for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(same_bits(after[i], inside[i])) << i;
    const double tol = low == kBFloat16 ? 5e-2 : 1e-2;
    for (size_t i = 1; i < after.size(); ++i) {
      EXPECT_EQ(after[i].dtype(), kFloat32) << i;
      testing::expect_tensors_close(after[i], full[i - 1], tol, tol);
    }
  }
  for (const Tensor& p : net.parameters()) EXPECT_EQ(p.dtype(), kFloat32);
}

TEST(Autocast, TracedEqualsEager) {
  testing::expect_traced_equals_eager(
      [] {
        return std::vector<Tensor>{testing::random({9, 5}, kFloat32, 11), testing::random({5, 4}, kFloat32, 12),
                                   testing::random({4}, kFloat32, 13)};
      },
      [](std::vector<Tensor>& in) {
        AutocastGuard guard(kBFloat16);
        const Tensor h = (in[0].matmul(in[1]) + in[2]).relu();
        return std::vector<Tensor>{h, log_softmax(h, -1), h.mean()};
      });
}

TEST(Autocast, TrainingUnderAutocastLearnsWithFloat32MasterWeights) {
  for (DType low : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(low));
    manual_seed(5);
    Mlp net;
    optim::Adam opt(net.parameters(), optim::AdamOptions(1e-2));
    GradScaler scaler(GradScalerOptions().enabled(low == kFloat16));
    const Tensor x = testing::random({32, 6}, kFloat32, 21);
    const Tensor y = (x.narrow(1, 0, 1).squeeze(1) > 0).to(kInt64) + (x.narrow(1, 1, 1).squeeze(1) > 0).to(kInt64);
    double first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
      opt.zero_grad();
      Tensor loss;
      {
        AutocastGuard guard(low);
        loss = cross_entropy(net.forward(x), y);
      }
      scaler.scale(loss).backward();
      EXPECT_TRUE(scaler.step(opt));
      scaler.update();
      (step == 0 ? first : last) = loss.item<double>();
    }
    EXPECT_LT(last, 0.5 * first) << "from " << first << " to " << last;
    for (const Tensor& p : net.parameters()) EXPECT_EQ(p.dtype(), kFloat32);
  }
}

TEST(GradScaler, ScalesUnscalesAndSkipsStepsWithInfiniteGradients) {
  Tensor w = testing::random({3}, kFloat32, 31).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  GradScaler scaler(GradScalerOptions().init_scale(1024).growth_interval(2));
  EXPECT_EQ(scaler.get_scale(), 1024);
  const Tensor loss = (w * w).sum();
  const Tensor scaled = scaler.scale(loss);
  EXPECT_FLOAT_EQ(scaled.item<float>(), loss.item<float>() * 1024);
  scaled.backward();
  scaler.unscale_(opt);
  testing::expect_tensors_close(w.grad(), w.detach() * 2, 1e-6, 1e-6);  // back to the unscaled gradient
  testing::expect_error([&] { scaler.unscale_(opt); }, {"GradScaler::unscale_", "already called"});
  const Tensor before = w.detach().clone();
  EXPECT_TRUE(scaler.step(opt));
  testing::expect_tensors_close(w.detach(), before - w.grad() * 0.1, 1e-6, 1e-6);
  testing::expect_error([&] { scaler.step(opt); }, {"GradScaler::step", "already called"});
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024);
  EXPECT_EQ(scaler.growth_tracker(), 1);

  // the scaled gradients of w·w, one element of them replaced by `bad` unless it is 0
  auto backward = [&](int64_t at, float bad) {
    opt.zero_grad();
    scaler.scale((w * w).sum()).backward();
    if (bad != 0) w.grad().data_ptr<float>()[at] = bad;
  };
  // an inf gradient: no step, the scale backs off, the count restarts
  backward(1, INFINITY);
  const Tensor kept = w.detach().clone();
  EXPECT_FALSE(scaler.step(opt));
  EXPECT_TRUE(same_bits(w.detach(), kept));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 512);
  EXPECT_EQ(scaler.growth_tracker(), 0);

  // a NaN likewise; then two clean steps double the scale
  backward(0, NAN);
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 256);
  for (int i = 0; i < 2; ++i) {
    backward(0, 0);
    EXPECT_TRUE(scaler.step(opt));
    scaler.update();
  }
  EXPECT_EQ(scaler.get_scale(), 512);
  scaler.update(8.0);
  EXPECT_EQ(scaler.get_scale(), 8);

  GradScaler off(GradScalerOptions().enabled(false));
  EXPECT_TRUE(same_bits(off.scale(loss), loss));
  EXPECT_EQ(off.get_scale(), 1);
}

TEST(GradScaler, RefusesBadOptions) {
  testing::expect_error([] { GradScaler s(GradScalerOptions().init_scale(0)); }, {"GradScaler", "init_scale"});
  testing::expect_error([] { GradScaler s(GradScalerOptions().init_scale(INFINITY)); }, {"GradScaler", "init_scale"});
  testing::expect_error([] { GradScaler s(GradScalerOptions().growth_factor(1)); }, {"GradScaler", "growth_factor"});
  testing::expect_error([] { GradScaler s(GradScalerOptions().backoff_factor(1)); }, {"GradScaler", "backoff_factor"});
  testing::expect_error([] { GradScaler s(GradScalerOptions().growth_interval(0)); }, {"GradScaler", "growth_interval"});
  GradScaler s;
  testing::expect_error([&] { s.scale(tensor(std::vector<int64_t>{1, 2})); }, {"GradScaler::scale", "floating", "int64"});
  testing::expect_error([&] { s.update(-1.0); }, {"GradScaler::update", "positive"});
}

}  // namespace
}  // namespace nnvm
