// nn::Module: registration, dotted names, counting, holders, modes, dtype
// conversion, zero_grad and state dicts.
#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace nn = nnvm::nn;

struct BlockImpl : nn::Module {
  BlockImpl() : Module("Block") {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding(1)));
    bn = register_module("bn", nn::BatchNorm2d(4));
    scale = register_parameter("scale", ones({1}));
    step = register_buffer("step", zeros({}, kInt64));
  }
  Tensor forward(const Tensor& x) { return bn->forward(conv->forward(x)) * scale; }
  nn::Conv2d conv = nullptr;
  nn::BatchNorm2d bn = nullptr;
  Tensor scale, step;
};
NNVM_MODULE(Block);

struct NetImpl : nn::Module {
  NetImpl() {
    features = register_module("features", nn::Sequential(Block(), nn::ReLU(), nn::Flatten()));
    head = register_module("head", nn::Linear(4 * 5 * 5, 3));
  }
  Tensor forward(const Tensor& x) { return head->forward(features->forward(x)); }
  nn::Sequential features = nullptr;
  nn::Linear head = nullptr;
};
NNVM_MODULE(Net);

TEST(ApiModule, NamesParametersRecursively) {
  Net net;
  const std::vector<std::string> expected = {"features.0.scale", "features.0.conv.weight", "features.0.conv.bias",
                                             "features.0.bn.weight", "features.0.bn.bias", "head.weight",
                                             "head.bias"};
  EXPECT_EQ(net->named_parameters().keys(), expected);
  EXPECT_EQ(net->parameters().size(), expected.size());
  EXPECT_EQ(net->named_buffers().keys(),
            (std::vector<std::string>{"features.0.step", "features.0.bn.running_mean", "features.0.bn.running_var",
                                      "features.0.bn.num_batches_tracked"}));
  EXPECT_EQ(net->named_parameters(/*recurse=*/false).size(), 0u);
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"features", "head"}));
  EXPECT_EQ(net->named_modules().keys(),
            (std::vector<std::string>{"", "features", "features.0", "features.0.conv", "features.0.bn", "features.1",
                                      "features.2", "head"}));
  const int64_t expected_count = 1 + (4 * 2 * 9 + 4) + (4 + 4) + (3 * 100 + 3);
  EXPECT_EQ(net->num_parameters(), expected_count);
  for (const Tensor& p : net->parameters()) EXPECT_TRUE(p.requires_grad() && p.is_leaf());
  // The holder's member and the registry hold the same tensor.
  EXPECT_TRUE(net->named_parameters()["head.weight"].is_same(net->head->weight));
  EXPECT_EQ(net->state_dict().size(), expected.size() + 4);
}

TEST(ApiModule, HolderAccessAndCall) {
  nn::Linear lin(3, 1);
  EXPECT_EQ(lin->weight.sizes(), IntArrayRef({1, 3}));
  EXPECT_EQ(lin->bias.sizes(), IntArrayRef({1}));
  const Tensor x = randn({4, 3});
  testing::expect_tensors_close(lin(x), lin->forward(x));
  nn::Linear copy = lin;
  EXPECT_EQ(copy.get(), lin.get());
  nn::Linear empty = nullptr;
  EXPECT_TRUE(empty.is_empty());
  testing::expect_error([&] { empty->forward(x); }, {"ModuleHolder", "empty"});
  nn::Linear no_bias(nn::LinearOptions(3, 2).bias(false));
  EXPECT_FALSE(no_bias->bias.defined());
  EXPECT_EQ(no_bias->parameters().size(), 1u);
  EXPECT_EQ(no_bias->num_parameters(), 6);
  std::shared_ptr<nn::Module> base = lin.ptr();
  EXPECT_EQ(base->as<nn::Linear>(), lin.get());
  EXPECT_EQ(base->as<nn::Conv2dImpl>(), nullptr);
}

TEST(ApiModule, RegistrationErrors) {
  struct Bad : nn::Module {
    void twice() {
      register_parameter("w", zeros({1}));
      register_parameter("w", zeros({1}));
    }
    void dotted() { register_buffer("a.b", zeros({1})); }
  };
  Bad bad;
  testing::expect_error([&] { bad.twice(); }, {"Parameter", "'w'", "already defined"});
  testing::expect_error([&] { bad.dotted(); }, {"register_buffer", "a.b"});
  nn::Sequential seq(nn::Linear(2, 2));
  testing::expect_error([&] { seq[3]; }, {"Sequential", "index 3", "1 modules"});
  testing::expect_error([&] { seq->at<nn::Conv2dImpl>(0); }, {"Sequential", "Linear"});
}

TEST(ApiModule, TrainEvalRecursesAndZeroGrad) {
  Net net;
  EXPECT_TRUE(net->is_training());
  net->eval();
  for (const auto& m : net->modules()) EXPECT_FALSE(m->is_training());
  net->train();
  for (const auto& m : net->modules()) EXPECT_TRUE(m->is_training());

  nn::Linear lin(3, 2);
  lin(randn({5, 3})).sum().backward();
  EXPECT_TRUE(lin->weight.grad().defined());
  lin->zero_grad(/*set_to_none=*/false);
  testing::expect_values(lin->weight.grad(), std::vector<double>(6, 0.0));
  lin->zero_grad();
  EXPECT_FALSE(lin->weight.grad().defined());
}

TEST(ApiModule, ToDtypeConvertsEveryHandle) {
  Block block;
  const Tensor held = block->conv->weight;
  const std::vector<double> before = testing::values(held);
  block->to(kFloat64);
  EXPECT_EQ(held.dtype(), kFloat64);
  EXPECT_EQ(block->named_parameters()["conv.weight"].dtype(), kFloat64);
  EXPECT_EQ(block->bn->running_var.dtype(), kFloat64);
  EXPECT_EQ(block->bn->num_batches_tracked.dtype(), kInt64);  // integral buffers keep their dtype
  EXPECT_TRUE(held.requires_grad());
  testing::expect_values(held, before, 0, 0);
  const Tensor y = block(randn({2, 2, 5, 5}, kFloat64));
  EXPECT_EQ(y.dtype(), kFloat64);
}

TEST(ApiModule, StateDictRoundTripAndMismatch) {
  manual_seed(1);
  Net a;
  manual_seed(2);
  Net b;
  EXPECT_FALSE(a->head->weight.to_vector<float>() == b->head->weight.to_vector<float>());
  b->load_state_dict(a->state_dict());
  for (const auto& item : a->state_dict())
    testing::expect_tensors_close(b->state_dict()[item.key()], item.value(), 0, 0);

  nn::Linear small(3, 1), other(4, 1);
  testing::expect_error([&] { small->load_state_dict(other->state_dict()); },
                        {"load_state_dict", "'weight'", "[1, 4]", "[1, 3]"});
  OrderedDict<std::string, Tensor> partial;
  partial.insert("weight", zeros({1, 3}));
  testing::expect_error([&] { small->load_state_dict(partial); }, {"load_state_dict", "missing", "'bias'"});
  partial.insert("bias", zeros({1}));
  partial.insert("extra", zeros({2}));
  testing::expect_error([&] { small->load_state_dict(partial); }, {"load_state_dict", "unexpected", "'extra'"});
  OrderedDict<std::string, Tensor> wrong_dtype;
  wrong_dtype.insert("weight", zeros({1, 3}, kFloat64));
  wrong_dtype.insert("bias", zeros({1}));
  testing::expect_error([&] { small->load_state_dict(wrong_dtype); }, {"load_state_dict", "float64", "float32"});
}

TEST(ApiModule, SeededInitialisationIsReproducibleAndBounded) {
  manual_seed(7);
  nn::Linear a(20, 10);
  manual_seed(7);
  nn::Linear b(20, 10);
  EXPECT_EQ(a->weight.to_vector<float>(), b->weight.to_vector<float>());
  // kaiming-uniform with a = √5 and the bias both use the bound 1/√fan_in.
  const double bound = 1.0 / std::sqrt(20.0);
  for (const double v : testing::values(a->weight)) EXPECT_LE(std::abs(v), bound);
  for (const double v : testing::values(a->bias)) EXPECT_LE(std::abs(v), bound);
  EXPECT_GT(a->weight.abs().max().item<double>(), 0.8 * bound);  // spread over the whole range
  nn::Conv2d conv(nn::Conv2dOptions(4, 2, 3).groups(2));
  EXPECT_EQ(conv->weight.sizes(), IntArrayRef({2, 2, 3, 3}));
  EXPECT_LE(conv->weight.abs().max().item<double>(), 1.0 / std::sqrt(18.0));
}

TEST(ApiModule, ModuleListHoldsByIndex) {
  nn::ModuleList list(nn::Linear(2, 3), nn::ReLU());
  list->push_back(nn::Linear(3, 1));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = randn({4, 2});
  for (const auto& m : *list) {
    if (auto* lin = m->as<nn::Linear>()) x = lin->forward(x);
    if (auto* relu = m->as<nn::ReLU>()) x = relu->forward(x);
  }
  EXPECT_EQ(x.sizes(), IntArrayRef({4, 1}));
  testing::expect_error([&] { list->at<nn::Linear>(1); }, {"ModuleList", "ReLU"});
}

TEST(ApiModule, ModuleDictHoldsByKey) {
  const std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> modules{{"encoder", nn::Linear(3, 4).ptr()},
                                                                                {"act", nn::ReLU().ptr()}};
  nn::ModuleDict dict(modules);
  dict->insert("decoder", nn::Linear(4, 2));
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"encoder", "act", "decoder"}));
  EXPECT_EQ(dict->named_parameters().keys(),
            (std::vector<std::string>{"encoder.weight", "encoder.bias", "decoder.weight", "decoder.bias"}));
  EXPECT_TRUE(dict->contains("act"));
  const Tensor x = randn({2, 3});
  const Tensor y = dict->at<nn::Linear>("decoder")->forward(dict->at<nn::Linear>("encoder")->forward(x));
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 2}));
  // inserting under a held key replaces the module, keeping its place
  dict->insert("encoder", nn::Linear(3, 5));
  EXPECT_EQ(dict->at<nn::Linear>("encoder")->options.out_features(), 5);
  EXPECT_EQ(dict->keys().front(), "encoder");
  EXPECT_EQ(dict->named_parameters().size(), 4u);
  dict->pop("decoder");
  EXPECT_EQ(dict->named_parameters().keys(), (std::vector<std::string>{"encoder.weight", "encoder.bias"}));
  testing::expect_error([&] { dict->pop("decoder"); }, {"ModuleDict", "decoder"});
  testing::expect_error([&] { (*dict)["missing"]; }, {"ModuleDict", "missing"});
  testing::expect_error([&] { dict->at<nn::Linear>("act"); }, {"ModuleDict", "ReLU"});
  dict->clear();
  EXPECT_TRUE(dict->empty());
  EXPECT_TRUE(dict->children().empty());
}

TEST(ApiModule, ParameterListNamesByIndex) {
  struct HeadImpl : nn::Module {
    HeadImpl() : Module("Head") { scales = register_module("scales", nn::ParameterList(ones({2}), zeros({3}))); }
    nn::ParameterList scales = nullptr;
  };
  auto head = std::make_shared<HeadImpl>();
  head->scales->append(full({1}, 2.0));
  EXPECT_EQ(head->named_parameters().keys(), (std::vector<std::string>{"scales.0", "scales.1", "scales.2"}));
  EXPECT_EQ(head->scales->size(), 3u);
  EXPECT_TRUE(head->scales[2].requires_grad());
  EXPECT_EQ(head->scales->at(1).sizes(), IntArrayRef({3}));
  int64_t count = 0;
  for (const Tensor& p : *head->scales) count += p.numel();
  EXPECT_EQ(count, 6);
  testing::expect_error([&] { head->scales->at(3); }, {"ParameterList", "index 3", "3 parameters"});
}

TEST(ApiModule, FunctionalWrapsAFunction) {
  const Tensor x = testing::random({3, 4}, kFloat32, 7);
  nn::Sequential seq(nn::Functional(nnvm::relu), nn::Functional(nnvm::leaky_relu, 0.5),
                     nn::Functional([](Tensor t) { return t * 3; }), nn::Functional(nnvm::softmax, 1, std::nullopt));
  testing::expect_tensors_close(seq(x), softmax(leaky_relu(x.relu(), 0.5) * 3, 1));
  testing::expect_tensors_close(nn::Functional(nnvm::tanh)(x), x.tanh());
  EXPECT_TRUE(seq->parameters().empty());
  testing::expect_error([] { (void)nn::Functional(nn::FunctionalImpl::Function()); }, {"Functional", "empty"});
}

}  // namespace
}  // namespace nnvm
