// A training run saved and resumed in a fresh process (nnvm::save /
// nnvm::load of a module and its optimizer) against the run that went
// straight through. The fresh process starts with an empty trace cache: its
// first steps after the load run cold (the interpreter, each op's reference
// kernel) where the uninterrupted run replays the fused JIT plans it compiled.
// Bit-identical resumption therefore needs every fused kernel of a training
// step to compute what the reference kernels compute. Add with alpha (every
// optimizer's update) is one fused multiply-add in both (kernels/cpu/binary.cpp,
// jit/loop_ir.cpp), exp, sigmoid, tanh and erf are one algorithm in both
// (kernels/cpu/exp.h); the JIT's row-wise softmax trades the reference's bits
// for speed within stated bounds (docs/NN.md, "Checkpoint files").
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "nnvm/nnvm.h"
#include "reference.h"
#include "regression_steps.h"

namespace nnvm {

// The hidden layer's activation, and softmax over the outputs for kSoftmax.
enum class Act { kRelu, kTanh, kSigmoid, kSoftmax };

struct ResumeNetImpl : nn::Module {
  explicit ResumeNetImpl(Act act)
      : act(act), fc1(register_module("fc1", nn::Linear(4, 8))), fc2(register_module("fc2", nn::Linear(8, 2))) {}
  Tensor forward(const Tensor& x) {
    const Tensor h = fc1(x);
    const Tensor y = fc2(act == Act::kTanh ? h.tanh() : act == Act::kSigmoid ? h.sigmoid() : h.relu());
    return act == Act::kSoftmax ? y.softmax(-1) : y;
  }
  Act act;
  nn::Linear fc1, fc2;
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
        {Act::kRelu, "relu_"}, {Act::kTanh, "tanh_"}, {Act::kSigmoid, "sigmoid_"}, {Act::kSoftmax, "softmax_"}};
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

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor x = a[i].contiguous(), y = b[i].contiguous();
    if (x.sizes() != y.sizes() || x.dtype() != y.dtype() || std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) != 0)
      return false;
  }
  return true;
}

// Steps [0, kBefore) then a checkpoint in `base`, then [kBefore, kBefore + kAfter):
// the parameters it ends with.
std::vector<Tensor> run_through(const Case& c, const std::string& base) {
  manual_seed(1);
  ResumeNet net(c.act);
  std::unique_ptr<optim::Optimizer> opt = c.make(net->parameters());
  testing::train_regression(net, *opt, 0, kBefore);
  nnvm::save(net, base + ".model");
  nnvm::save(*opt, base + ".optim");
  testing::train_regression(net, *opt, kBefore, kAfter);
  return net->parameters();
}

// A fresh model and optimizer loaded from the checkpoint in `base`, trained on.
std::vector<Tensor> resume(const Case& c, const std::string& base) {
  manual_seed(2);
  ResumeNet net(c.act);
  std::unique_ptr<optim::Optimizer> opt = c.make(net->parameters());
  nnvm::load(net, base + ".model");
  nnvm::load(*opt, base + ".optim");
  testing::train_regression(net, *opt, kBefore, kAfter);
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

// Runs one half of `c` in a fresh process (with `env` set), checkpoint files under `d`.
void run_child(const Case& c, const std::string& d, const std::string& half, const std::string& env = "") {
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const std::string command = env + " NNVM_TEST_RESUME_DIR='" + d + "' NNVM_TEST_RESUME_CASE=" + c.name +
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
// a step of linear layers, relu, tanh or sigmoid, mse_loss and every
// optimizer's update computes the same bits either way.
TEST(ApiCheckpointResume, FreshProcessResumesBitIdentically) {
  const std::string d = dir();
  std::filesystem::create_directories(d);
  for (const Case& c : cases()) {
    if (c.act == Act::kSoftmax) continue;
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> through = run_through(c, d + "/" + c.name);
    run_child(c, d, "resumed");
    EXPECT_TRUE(same_bits(saved(d + "/" + c.name + ".resumed"), through));
  }
  std::filesystem::remove_all(d);
}

// The JIT's row-wise softmax sums its exps in float vector lanes where the
// reference kernel sums in double, so a softmax network's cold steps may round
// differently from its hot ones: resumed in a fresh process it stays within a
// few ulps of the uninterrupted run, and with NNVM_HOT=1 in both processes
// (every step compiled, none cold) it is bit-identical.
TEST(ApiCheckpointResume, RowwiseKernelsNeedEveryStepHot) {
  const std::string d = dir();
  std::filesystem::create_directories(d);
  for (const Case& c : cases()) {
    if (c.act != Act::kSoftmax) continue;
    SCOPED_TRACE(c.name);
    const std::string base = d + "/" + c.name;
    const std::vector<Tensor> through = run_through(c, base);
    run_child(c, d, "resumed");
    const std::vector<Tensor> resumed = saved(base + ".resumed");
    ASSERT_EQ(resumed.size(), through.size());
    for (size_t i = 0; i < through.size(); ++i) testing::expect_tensors_close(resumed[i], through[i], 1e-5, 1e-6);
    run_child(c, d, "through", "NNVM_HOT=1");
    run_child(c, d, "resumed", "NNVM_HOT=1");
    EXPECT_TRUE(same_bits(saved(base + ".resumed"), saved(base + ".through")));
  }
  std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace nnvm
