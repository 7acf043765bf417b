// A training run saved and resumed in a fresh process (nnvm::save /
// nnvm::load of a module and its optimizer) against the run that went
// straight through. The fresh process starts with an empty trace cache: its
// first steps after the load run cold (the interpreter, each op's reference
// kernel) where the uninterrupted run replays the fused JIT plans it compiled.
// Bit-identical resumption therefore needs every fused kernel of a training
// step to compute what the reference kernels compute. Add with alpha (every
// optimizer's update) is one fused multiply-add in both (kernels/cpu/binary.cpp,
// jit/loop_ir.cpp), exp, sigmoid, tanh and erf are one algorithm in both
// (kernels/cpu/exp.h), sums are the reductions' order in both, and the row
// kernels (softmax, log_softmax, cross_entropy, layer_norm, rms_norm and
// their backwards) are the reference's arithmetic (kernels/cpu/row_sums.h).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "bits.h"
#include "nnvm/nnvm.h"
#include "reference.h"
#include "regression_steps.h"

namespace nnvm {

// The hidden layer's activation (or a LayerNorm or RMSNorm before a ReLU; in
// place of fc1, a padded convolution averaged over its positions or two steps
// of an LSTM cell); softmax or log_softmax over the outputs, or the outputs as
// logits of cross_entropy (with label smoothing).
enum class Act { kRelu, kTanh, kSigmoid, kLayerNorm, kRmsNorm, kConv, kLstm, kSoftmax, kLogSoftmax, kCrossEntropy };

struct ResumeNetImpl : nn::Module {
  explicit ResumeNetImpl(Act act)
      : act(act), fc1(register_module("fc1", nn::Linear(4, 8))), fc2(register_module("fc2", nn::Linear(8, 2))) {
    if (act == Act::kLayerNorm) norm = register_module("norm", nn::LayerNorm(std::vector<int64_t>{8}));
    if (act == Act::kRmsNorm) rms = register_module("rms", nn::RMSNorm(std::vector<int64_t>{8}));
    if (act == Act::kConv) conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 8, 2).padding(1)));
    if (act == Act::kLstm) lstm = register_module("lstm", nn::LSTMCell(4, 8));
  }
  Tensor forward(const Tensor& x) {
    Tensor h = conv ? conv(x.reshape({-1, 1, 2, 2})).mean({2, 3}) : fc1(x);
    if (lstm) h = std::get<0>(lstm(x * 0.5, lstm(x)));
    if (norm) h = norm(h);
    if (rms) h = rms(h);
    const Tensor y = fc2(act == Act::kTanh ? h.tanh() : act == Act::kSigmoid ? h.sigmoid() : h.relu());
    return act == Act::kSoftmax ? y.softmax(-1) : act == Act::kLogSoftmax ? y.log_softmax(-1) : y;
  }
  Act act;
  nn::Linear fc1, fc2;
  nn::LayerNorm norm{nullptr};
  nn::RMSNorm rms{nullptr};
  nn::Conv2d conv{nullptr};
  nn::LSTMCell lstm{nullptr};
};
NNVM_MODULE(ResumeNet);

namespace {

constexpr int kBefore = 4, kAfter = 4;  // kBefore >= NNVM_HOT: the saving run's step is hot by then

struct Case {
  std::string name;
  Act act;
  std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    std::vector<Case> c;
    const std::pair<Act, std::string> acts[] = {
        {Act::kRelu, "relu_"},           {Act::kTanh, "tanh_"},
        {Act::kSigmoid, "sigmoid_"},     {Act::kLayerNorm, "layer_norm_"},
        {Act::kRmsNorm, "rms_norm_"},    {Act::kConv, "conv_"},
        {Act::kLstm, "lstm_"},           {Act::kSoftmax, "softmax_"},
        {Act::kLogSoftmax, "log_softmax_"}, {Act::kCrossEntropy, "cross_entropy_"}};
    for (const auto& [act, prefix] : acts) {
      c.push_back({prefix + "SGD", act, [](std::vector<Tensor> ps) {
                     return std::make_unique<optim::SGD>(
                         ps, optim::SGDOptions(0.05).momentum(0.9).dampening(0.1).weight_decay(1e-3).nesterov(false));
                   }});
      c.push_back({prefix + "Adam", act, [](std::vector<Tensor> ps) {
                     return std::make_unique<optim::Adam>(ps,
                                                          optim::AdamOptions(1e-2).amsgrad(true).weight_decay(1e-3));
                   }});
      c.push_back({prefix + "AdamW", act, [](std::vector<Tensor> ps) {
                     return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions(1e-2));
                   }});
      c.push_back({prefix + "RMSprop", act, [](std::vector<Tensor> ps) {
                     return std::make_unique<optim::RMSprop>(ps,
                                                             optim::RMSpropOptions(1e-2).momentum(0.5).centered(true));
                   }});
    }
    return c;
  }();
  return all;
}

std::string dir() {
  return (std::filesystem::temp_directory_path() / ("nnvm_resume_" + std::to_string(::getpid()))).string();
}

using testing::same_bits;

// Steps [first, first + steps): the regression's (tests/api/regression_steps.h)
// or, for kCrossEntropy, a classification of the same inputs into two classes.
void train(const Case& c, ResumeNet& net, optim::Optimizer& opt, int first, int steps) {
  if (c.act != Act::kCrossEntropy) return testing::train_regression(net, opt, first, steps);
  for (int s = first; s < first + steps; ++s) {
    const Tensor x = testing::random({8, 4}, kFloat32, uint64_t(100 + s));
    const Tensor target = (testing::random({8}, kFloat32, uint64_t(300 + s)) > 0).to(kInt64);
    opt.zero_grad();
    cross_entropy(net(x), target, {}, Reduction::Mean, -100, 0.1).backward();
    opt.step();
  }
}

// Steps [0, kBefore) then a checkpoint in `base`, then [kBefore, kBefore + kAfter):
// the parameters it ends with.
std::vector<Tensor> run_through(const Case& c, const std::string& base) {
  manual_seed(1);
  ResumeNet net(c.act);
  std::unique_ptr<optim::Optimizer> opt = c.make(net->parameters());
  train(c, net, *opt, 0, kBefore);
  nnvm::save(net, base + ".model");
  nnvm::save(*opt, base + ".optim");
  train(c, net, *opt, kBefore, kAfter);
  return net->parameters();
}

// A fresh model and optimizer loaded from the checkpoint in `base`, trained on.
std::vector<Tensor> resume(const Case& c, const std::string& base) {
  manual_seed(2);
  ResumeNet net(c.act);
  std::unique_ptr<optim::Optimizer> opt = c.make(net->parameters());
  nnvm::load(net, base + ".model");
  nnvm::load(*opt, base + ".optim");
  train(c, net, *opt, kBefore, kAfter);
  return net->parameters();
}

// The child half of the tests below, a fresh process: runs the case named
// by NNVM_TEST_RESUME_CASE through (NNVM_TEST_RESUME=through) or resumes it
// from its checkpoint, and saves the parameters it ends with.
TEST(ApiCheckpointResume, RunsOneHalfInThisProcess) {
  const char* from = std::getenv("NNVM_TEST_RESUME_DIR");
  const char* name = std::getenv("NNVM_TEST_RESUME_CASE");
  const char* half = std::getenv("NNVM_TEST_RESUME");
  if (!from || !name || !half) GTEST_SKIP() << "run by the ApiCheckpointResume tests in a child process";
  for (const Case& c : cases()) {
    if (c.name != name) continue;
    const std::string base = std::string(from) + "/" + c.name;
    nnvm::save(std::string(half) == "through" ? run_through(c, base) : resume(c, base), base + "." + half);
  }
}

// Runs one half of `c` in a fresh process, checkpoint files under `d`.
void run_child(const Case& c, const std::string& d, const std::string& half) {
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const std::string command = "NNVM_TEST_RESUME_DIR='" + d + "' NNVM_TEST_RESUME_CASE=" + c.name +
                              " NNVM_TEST_RESUME=" + half + " '" + self +
                              "' --gtest_filter=ApiCheckpointResume.RunsOneHalfInThisProcess > /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

std::vector<Tensor> saved(const std::string& path) {
  std::vector<Tensor> tensors;
  nnvm::load(tensors, path);
  return tensors;
}

// The resumed process runs its first steps cold, the uninterrupted one hot:
// a step of linear layers, relu, tanh, sigmoid, layer_norm, rms_norm, a
// convolution, an LSTM cell, softmax or log_softmax, mse_loss or
// cross_entropy and every optimizer's update computes the same bits either way.
TEST(ApiCheckpointResume, FreshProcessResumesBitIdentically) {
  const std::string d = dir();
  std::filesystem::create_directories(d);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> through = run_through(c, d + "/" + c.name);
    run_child(c, d, "resumed");
    EXPECT_TRUE(same_bits(saved(d + "/" + c.name + ".resumed"), through));
  }
  std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace nnvm
