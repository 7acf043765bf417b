// nnvm::save / nnvm::load (libtorch's torch::save / torch::load) for modules,
// optimizers, tensors and vectors of tensors: round trips, a resumed training
// run that matches an uninterrupted one bit for bit, and every refusal.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"
#include "regression_steps.h"

namespace nnvm {

// Declared in namespace nnvm itself, as tools/demo.cpp's model is: lookup by
// argument then finds nnvm::save beside nn::save, which must not be ambiguous.
struct CheckpointNetImpl : nn::Module {
  CheckpointNetImpl(int64_t hidden = 8)
      : fc1(register_module("fc1", nn::Linear(4, hidden))), fc2(register_module("fc2", nn::Linear(hidden, 2))) {}
  Tensor forward(const Tensor& x) { return fc2(fc1(x).tanh()); }
  nn::Linear fc1, fc2;
};
NNVM_MODULE(CheckpointNet);

namespace {

namespace optim = nnvm::optim;
using Net = CheckpointNet;
using NetImpl = CheckpointNetImpl;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("nnvm_ckpt_" + std::to_string(::getpid()) + "_" + name)).string();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  // An empty tensor may have no memory at all: memcmp must not see its null pointer.
  return ca.nbytes() == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

Net make_net(uint64_t seed, int64_t hidden = 8) {
  manual_seed(seed);
  return Net(hidden);
}

void train(const Net& net, optim::Optimizer& opt, int first, int steps, optim::LRScheduler* scheduler = nullptr) {
  testing::train_regression(net, opt, first, steps, scheduler);
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

struct OptimizerCase {
  std::string name;
  MakeOptimizer make;
};

const std::vector<OptimizerCase>& optimizer_cases() {
  static const std::vector<OptimizerCase> cases = {
      {"SGD", [](std::vector<Tensor> ps) {
         return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(0.9).dampening(0.1).weight_decay(1e-3));
       }},
      {"Adam", [](std::vector<Tensor> ps) {
         return std::make_unique<optim::Adam>(ps, optim::AdamOptions(1e-2).amsgrad(true).weight_decay(1e-3));
       }},
      {"AdamW", [](std::vector<Tensor> ps) { return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions(1e-2)); }},
      {"RMSprop", [](std::vector<Tensor> ps) {
         return std::make_unique<optim::RMSprop>(ps, optim::RMSpropOptions(1e-2).momentum(0.5).centered(true));
       }},
  };
  return cases;
}

// Traced, the resumed steps replay the plans the uninterrupted ones compiled (one process, one trace cache).
TEST(ApiCheckpoint, ResumedTrainingIsBitIdentical) {
  const std::string model_path = temp_path("resume_model.safetensors"), opt_path = temp_path("resume_opt.safetensors");
  constexpr int kBefore = 4, kAfter = 3;
  for (const OptimizerCase& c : optimizer_cases()) {
    SCOPED_TRACE(c.name);
    Net net = make_net(1);
    std::unique_ptr<optim::Optimizer> opt = c.make(net->parameters());
    optim::StepLR scheduler(*opt, 2, 0.3);  // the resumed run must get the changed rate back
    train(net, *opt, 0, kBefore, &scheduler);
    const double lr = opt->param_groups()[0].options().get_lr();
    EXPECT_NE(lr, opt->defaults().get_lr());
    nnvm::save(net, model_path);
    nnvm::save(*opt, opt_path);
    train(net, *opt, kBefore, kAfter);

    Net resumed = make_net(2);
    std::unique_ptr<optim::Optimizer> resumed_opt = c.make(resumed->parameters());
    nnvm::load(resumed, model_path);
    nnvm::load(*resumed_opt, opt_path);
    EXPECT_EQ(resumed_opt->param_groups()[0].options().get_lr(), lr);
    train(resumed, *resumed_opt, kBefore, kAfter);
    EXPECT_TRUE(same_bits(resumed->parameters(), net->parameters()));

    // Without the optimizer's checkpoint the run goes elsewhere: the comparison can fail.
    Net model_only = make_net(2);
    std::unique_ptr<optim::Optimizer> fresh_opt = c.make(model_only->parameters());
    nnvm::load(model_only, model_path);
    train(model_only, *fresh_opt, kBefore, kAfter);
    EXPECT_FALSE(same_bits(model_only->parameters(), net->parameters()));
  }
  std::filesystem::remove(model_path);
  std::filesystem::remove(opt_path);
}

TEST(ApiCheckpoint, OptimizerOptionsComeBack) {
  const std::string path = temp_path("options.safetensors");
  Net net = make_net(1);
  const auto options = optim::AdamOptions(3e-4).betas({0.8, 0.95}).eps(1e-7).weight_decay(0.1).amsgrad(true);
  optim::Adam opt({optim::OptimizerParamGroup(net->fc1->parameters()),
                   optim::OptimizerParamGroup(net->fc2->parameters(), optim::AdamOptions(0.1).clone())},
                  options);
  opt.param_groups()[1].options().set_lr(0.1 * 0.1 * 3);  // a rate with every mantissa bit in use
  nnvm::save(opt, path);

  Net other = make_net(2);
  optim::Adam fresh({optim::OptimizerParamGroup(other->fc1->parameters()),
                     optim::OptimizerParamGroup(other->fc2->parameters())},
                    optim::AdamOptions());
  nnvm::load(fresh, path);
  const auto& g0 = static_cast<const optim::AdamOptions&>(fresh.param_groups()[0].options());
  const auto& g1 = static_cast<const optim::AdamOptions&>(fresh.param_groups()[1].options());
  EXPECT_EQ(g0.lr(), 3e-4);
  EXPECT_EQ(g0.betas(), optim::Betas(0.8, 0.95));
  EXPECT_EQ(g0.eps(), 1e-7);
  EXPECT_EQ(g0.weight_decay(), 0.1);
  EXPECT_TRUE(g0.amsgrad());
  EXPECT_EQ(g1.lr(), 0.1 * 0.1 * 3);
  EXPECT_FALSE(g1.amsgrad());
  const nn::SafetensorsFile file = nn::read_safetensors(path);
  EXPECT_EQ(file.metadata.at("nnvm"), "optimizer");
  EXPECT_EQ(file.metadata.at("optimizer"), "Adam");
  EXPECT_EQ(file.metadata.at("param_groups.1.params"), "2");
  EXPECT_TRUE(file.tensors.empty());  // no step taken: no state
  std::filesystem::remove(path);
}

TEST(ApiCheckpoint, OptimizerStateEntries) {
  const std::string path = temp_path("state.safetensors");
  Net net = make_net(1);
  optim::Adam opt(net->parameters(), optim::AdamOptions(1e-2));
  train(net, opt, 0, 2);
  nnvm::save(opt, path);
  const nn::SafetensorsFile file = nn::read_safetensors(path);
  EXPECT_EQ(file.tensors.size(), 4u * 3);  // step, exp_avg, exp_avg_sq for each of 4 parameters; no AMSGrad maximum
  EXPECT_EQ(file.tensors.at("state.3.step").dtype(), kInt64);
  EXPECT_EQ(file.tensors.at("state.3.step").item<int64_t>(), 2);
  EXPECT_EQ(file.tensors.at("state.0.exp_avg").sizes(), IntArrayRef({8, 4}));
  EXPECT_EQ(file.tensors.at("state.3.exp_avg_sq").sizes(), IntArrayRef({2}));
  EXPECT_FALSE(file.tensors.contains("state.0.max_exp_avg_sq"));
  std::filesystem::remove(path);
}

TEST(ApiCheckpoint, OptimizerRefusesCheckpointsThatDoNotFit) {
  const std::string path = temp_path("refuse_opt.safetensors"), model_path = temp_path("refuse_model.safetensors");
  Net net = make_net(1);
  optim::Adam adam(net->parameters(), optim::AdamOptions(1e-2));
  train(net, adam, 0, 2);
  nnvm::save(adam, path);
  nnvm::save(net, model_path);

  Net same = make_net(2);
  optim::SGD sgd(same->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  testing::expect_error([&] { nnvm::load(sgd, path); },
                        {"Optimizer::load", path, "holds the state of Adam", "this optimizer is SGD"});
  optim::AdamW adamw(same->parameters());
  testing::expect_error([&] { nnvm::load(adamw, path); }, {"Adam", "this optimizer is AdamW"});

  nn::Linear smaller(4, 2);
  optim::Adam fewer(smaller->parameters());
  testing::expect_error([&] { nnvm::load(fewer, path); },
                        {path, "parameter group 0 holds 4 parameters", "has 2"});
  optim::Adam two_groups({optim::OptimizerParamGroup(same->fc1->parameters()),
                          optim::OptimizerParamGroup(same->fc2->parameters())},
                         optim::AdamOptions());
  testing::expect_error([&] { nnvm::load(two_groups, path); }, {path, "1 parameter groups", "has 2"});

  // Same count, other shapes: nothing changes, not even the options read before the bad tensor.
  Net narrow = make_net(3, 6);
  optim::Adam narrow_opt(narrow->parameters(), optim::AdamOptions(0.5));
  testing::expect_error([&] { nnvm::load(narrow_opt, path); },
                        {path, "'state.0.exp_avg'", "shape [8, 4]", "parameter 0", "shape [6, 4]"});
  EXPECT_EQ(narrow_opt.param_groups()[0].options().get_lr(), 0.5);
  Net doubled = make_net(3);
  doubled->to(kFloat64);
  optim::Adam doubled_opt(doubled->parameters());
  testing::expect_error([&] { nnvm::load(doubled_opt, path); }, {"'state.0.exp_avg'", "float32", "float64"});

  testing::expect_error([&] { nnvm::load(adam, model_path); },
                        {"Optimizer::load", model_path, "a module's state dict", "expected an optimizer's state"});
  testing::expect_error([&] { nnvm::load(same, path); },
                        {"nn::load", path, "an optimizer's state", "expected a module's state dict"});
  std::filesystem::remove(path);
  std::filesystem::remove(model_path);
}

TEST(ApiCheckpoint, OptimizerRefusesDamagedCheckpoints) {
  const std::string path = temp_path("damaged.safetensors");
  Net net = make_net(1);
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  train(net, sgd, 0, 1);
  auto expect_refused = [&](std::map<std::string, Tensor> tensors, std::map<std::string, std::string> metadata,
                            std::initializer_list<std::string_view> pieces) {
    nn::save_checkpoint(tensors, path, "optimizer", metadata);
    testing::expect_error([&] { nnvm::load(sgd, path); }, pieces);
  };
  std::map<std::string, std::string> metadata = {{"optimizer", "SGD"}, {"param_groups", "1"},
                                                 {"param_groups.0.params", "4"}, {"param_groups.0.lr", "0.1"},
                                                 {"param_groups.0.momentum", "0.9"},
                                                 {"param_groups.0.dampening", "0"},
                                                 {"param_groups.0.weight_decay", "0"},
                                                 {"param_groups.0.nesterov", "false"}};
  const Tensor buffer = zeros({2});  // parameter 3 is fc2's bias, of shape [2]
  expect_refused({{"state.3.momentum_buffer", buffer}, {"state.4.momentum_buffer", buffer}}, metadata,
                 {"unexpected entry 'state.4.momentum_buffer'", "4 parameters"});
  expect_refused({{"state.3.exp_avg", buffer}}, metadata, {"unexpected entry 'state.3.exp_avg'"});
  auto bad = metadata;
  bad["param_groups.0.lr"] = "fast";
  expect_refused({}, bad, {"'param_groups.0.lr'", "\"fast\"", "not a number"});
  bad = metadata;
  bad["param_groups.0.nesterov"] = "1";
  expect_refused({}, bad, {"'param_groups.0.nesterov'", "not true or false"});
  bad = metadata;
  bad.erase("param_groups.0.momentum");
  expect_refused({}, bad, {"missing metadata entry 'param_groups.0.momentum'"});
  bad = metadata;
  bad["param_groups.0.betas"] = "0.9";
  expect_refused({}, bad, {"unexpected metadata entry 'param_groups.0.betas'"});

  Net adam_net = make_net(1);
  optim::Adam adam(adam_net->parameters());
  nn::save_checkpoint({{"state.0.exp_avg", zeros({8, 4})}}, path, "optimizer",
                      {{"optimizer", "Adam"}, {"param_groups", "1"}, {"param_groups.0.params", "4"},
                       {"param_groups.0.lr", "0.1"}, {"param_groups.0.beta1", "0.9"},
                       {"param_groups.0.beta2", "0.99"}, {"param_groups.0.eps", "1e-8"},
                       {"param_groups.0.weight_decay", "0"}, {"param_groups.0.amsgrad", "false"}});
  testing::expect_error([&] { nnvm::load(adam, path); }, {"missing entry 'state.0.step'"});
  nn::save_checkpoint({{"state.0.step", zeros({1})}}, path, "optimizer", nn::read_safetensors(path).metadata);
  testing::expect_error([&] { nnvm::load(adam, path); }, {"'state.0.step'", "float32", "0-dim int64 count"});

  const std::string missing = temp_path("no_such_optimizer.safetensors");
  testing::expect_error([&] { nnvm::load(sgd, missing); }, {"cannot open", missing});
  nnvm::save(sgd, path);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size() - 4));
  }
  testing::expect_error([&] { nnvm::load(sgd, path); }, {path, "truncated"});
  std::filesystem::remove(path);
}

TEST(ApiCheckpoint, ModuleLoadKeepsParameterIdentity) {
  const std::string path = temp_path("identity.safetensors");
  const Net saved = make_net(1);
  nnvm::save(saved, path);
  Net net = make_net(2);
  const std::vector<Tensor> before = net->parameters();
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1));
  nnvm::load(net, path);
  const std::vector<Tensor> after = net->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].is_same(before[i])) << i;
  EXPECT_TRUE(same_bits(after, saved->parameters()));
  train(net, opt, 0, 1);  // the optimizer built before the load updates the loaded values
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_TRUE(opt.parameters()[i].is_same(after[i])) << i;
    EXPECT_FALSE(same_bits(after[i], saved->parameters()[i])) << i;
  }
  std::filesystem::remove(path);
}

TEST(ApiCheckpoint, ModulesAsHolderSharedPointerAndReference) {
  const std::string path = temp_path("spellings.safetensors");
  const Tensor x = testing::random({3, 4}, kFloat32, 7);
  const Net holder = make_net(1);
  nnvm::save(holder, path);
  auto shared = std::make_shared<NetImpl>();  // libtorch's `auto model = std::make_shared<Net>()`
  nnvm::load(shared, path);
  EXPECT_TRUE(same_bits(shared->forward(x), holder(x)));
  manual_seed(3);
  nnvm::save(std::make_shared<NetImpl>(), path);
  NetImpl& plain = *shared;
  nnvm::load(plain, path);
  EXPECT_FALSE(same_bits(plain.forward(x), holder(x)));
  nn::save(plain, path);
  nn::load(holder, path);
  EXPECT_TRUE(same_bits(plain.forward(x), holder(x)));
  EXPECT_EQ(nn::read_safetensors(path).metadata.at("nnvm"), "module");
  std::filesystem::remove(path);
}

TEST(ApiCheckpoint, TensorsRoundTrip) {
  const std::string path = temp_path("tensor.safetensors");
  const Tensor t = testing::random({3, 5}, kFloat32, 1).t();  // not contiguous
  nnvm::save(t, path);
  Tensor back;
  nnvm::load(back, path);
  EXPECT_TRUE(same_bits(back, t));
  Tensor replaced = zeros({7}, kInt64);
  nnvm::load(replaced, path);
  EXPECT_TRUE(same_bits(replaced, t));
  nnvm::save(scalar_tensor(-3, kInt64), path);
  nnvm::load(back, path);
  EXPECT_EQ(back.dim(), 0);
  EXPECT_EQ(back.item<int64_t>(), -3);

  const std::vector<Tensor> tensors = {testing::random({2, 3}, kFloat64, 2), arange(12, kInt64),
                                       testing::random({4}, kFloat16, 3), zeros({0, 2})};
  std::vector<Tensor> many;  // 11 entries: their names sort "10" before "2"
  for (int i = 0; i < 11; ++i) many.push_back(testing::random({i + 1}, kFloat32, uint64_t(10 + i)));
  for (const std::vector<Tensor>& saved : {tensors, many, std::vector<Tensor>{}}) {
    nnvm::save(saved, path);
    std::vector<Tensor> loaded = {zeros({1})};
    nnvm::load(loaded, path);
    EXPECT_TRUE(same_bits(loaded, saved)) << saved.size();
  }
  std::filesystem::remove(path);
}

TEST(ApiCheckpoint, TensorsRefuseOtherKindsAndDamagedFiles) {
  const std::string path = temp_path("kinds.safetensors");
  Tensor one;
  std::vector<Tensor> many;
  nnvm::save(std::vector<Tensor>{zeros({2}), ones({3})}, path);
  testing::expect_error([&] { nnvm::load(one, path); },
                        {"nnvm::load", path, "holds a vector of tensors", "expected one tensor"});
  EXPECT_FALSE(one.defined());
  nnvm::save(zeros({2}), path);
  testing::expect_error([&] { nnvm::load(many, path); },
                        {"nnvm::load", path, "holds one tensor", "expected a vector of tensors"});
  nnvm::save(make_net(1), path);
  testing::expect_error([&] { nnvm::load(one, path); }, {path, "holds a module's state dict", "expected one tensor"});
  nn::save_safetensors({{"w", zeros({2})}}, path);  // another tool's file: no kind
  testing::expect_error([&] { nnvm::load(one, path); }, {path, "no \"nnvm\" metadata entry", "expected one tensor"});
  nn::save_checkpoint({{"w", zeros({2})}}, path, "tensor");
  testing::expect_error([&] { nnvm::load(one, path); }, {path, "expected one entry named \"tensor\""});
  nn::save_checkpoint({{"0", zeros({2})}, {"2", zeros({2})}}, path, "tensors");
  testing::expect_error([&] { nnvm::load(many, path); }, {path, "entry \"1\" of 2 is missing"});

  const std::string missing = temp_path("no_such_tensor.safetensors");
  testing::expect_error([&] { nnvm::load(one, missing); }, {"cannot open", missing});
  nnvm::save(ones({64}), path);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  testing::expect_error([&] { nnvm::load(one, path); }, {path, "truncated"});
  std::filesystem::remove(path);
}

TEST(ApiCheckpoint, StrConcatenatesStreamables) {
  EXPECT_EQ(str(), "");
  EXPECT_EQ(str("step ", 3, ": loss ", 0.25, ' ', kFloat32), "step 3: loss 0.25 float32");
  const std::string name = "fc1";
  EXPECT_EQ(nnvm::str(name, ".weight"), "fc1.weight");
  const Tensor t = arange(3, kInt64);
  std::ostringstream expected;
  expected << "t = " << t;
  EXPECT_EQ(nnvm::str("t = ", t), expected.str());
}

}  // namespace
}  // namespace nnvm
