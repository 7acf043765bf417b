// nnvm::Model, GraphBuilder and the ONNX reader: checking, running in both
// modes, fine-tuning, and errors for bad graphs, inputs and files.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "model_node.h"
#include "nnvm/trace/recorder.h"

namespace nnvm {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

using testing::mlp;

TEST(Model, RunsLikeTheEagerCodeItRecords) {
  manual_seed(1);
  Tensor w = randn({4, 3}), b = randn({3});
  Model m = mlp(w, b);
  for (int64_t batch : {1, 5, 0, 5, 5}) {  // repeats: the trace turns hot and compiles
    Tensor x = randn({batch, 4});
    Tensor want = (x.matmul(w) + b).relu();
    std::vector<Tensor> out = m({x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].sizes(), want.sizes());
    EXPECT_TRUE(allclose(out[0], want, 1e-5, 1e-6));
  }
  // named inputs
  Tensor x = randn({2, 4});
  EXPECT_TRUE(allclose(m({{"x", x}})[0], (x.matmul(w) + b).relu()));
}

TEST(Model, ParametersFineTuneWithAutogradAndAnOptimizer) {
  manual_seed(2);
  Model m = mlp(randn({4, 3}), zeros({3}));
  std::vector<Tensor> params = m.parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(m.named_parameters()[0].first, "w");
  for (Tensor& p : params) p.requires_grad_(true);
  // A loaded backbone under a hand-written head.
  Tensor head = randn({3, 1}).requires_grad_(true);
  std::vector<Tensor> all = params;
  all.push_back(head);
  optim::SGD opt(all, optim::SGDOptions(0.05));
  Tensor x = randn({16, 4}), y = randn({16, 1});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor loss = (m({x})[0].matmul(head) - y).square().mean();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first);
  // The gradient reaches the graph's weights as it would reach eager code's.
  opt.zero_grad();
  Tensor w = params[0].detach().clone().requires_grad_(true), b = params[1].detach().clone().requires_grad_(true);
  (m({x})[0].matmul(head) - y).square().mean().backward();
  Tensor gw = params[0].grad().clone();
  (((x.matmul(w) + b).relu()).matmul(head) - y).square().mean().backward();
  EXPECT_TRUE(allclose(gw, w.grad(), 1e-4, 1e-6));
}

TEST(Model, ShapeArithmeticRunsAtOnceAndReshapes) {
  // Shape -> Gather-free arithmetic -> Reshape, as exporters write flatten.
  GraphBuilder g;
  auto x = g.input("x", kFloat32, {"n", 2, 3});
  auto shape = g.op("Shape", {x}, {{"end", int64_t(1)}});
  auto minus_one = g.initializer("minus_one", tensor({int64_t(-1)}));
  auto target = g.op("Concat", {shape, minus_one}, {{"axis", int64_t(0)}});
  g.output(g.op("Reshape", {g.op("Exp", {x}), target}));
  Model m = g.build();
  Tensor in = randn({4, 2, 3});
  Tensor out = m({in})[0];
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{4, 6}));
  EXPECT_TRUE(allclose(out, in.exp().reshape({4, 6})));
}

TEST(Model, CustomOpsRegisterLikeBuiltIns) {
  register_model_op("TimesThree", [](const OpContext& ctx) { return std::vector<Tensor>{ctx.input(0) * 3.0}; });
  EXPECT_TRUE(has_model_op("TimesThree"));
  GraphBuilder g;
  g.output(g.op("TimesThree", {g.input("x", kFloat32, {2})}));
  Tensor x = tensor({1.0f, 2.0f});
  EXPECT_TRUE(allclose(g.build()({x})[0], x * 3.0));
}

void expect_error(const std::function<void()>& fn, const std::vector<std::string>& pieces) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const auto& p : pieces) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(Model, InputsThatDoNotFitAreErrors) {
  Model m = mlp(randn({4, 3}), randn({3}));
  expect_error([&] { m(std::vector<Tensor>{}); }, {"takes 1 inputs, given 0"});
  expect_error([&] { m({randn({2, 5})}); }, {"input 'x' expects float32[batch,4], got float32[2, 5]"});
  expect_error([&] { m({randn({2, 4}).to(kFloat64)}); }, {"float64"});
  expect_error([&] { m({{"y", randn({2, 4})}}); }, {"no input named 'y'"});
  GraphBuilder g;
  auto a = g.input("a", kFloat32, {"n"});
  auto b = g.input("b", kFloat32, {"n"});
  g.output(g.op("Add", {a, b}));
  Model add = g.build();
  expect_error([&] { add({randn({2}), randn({3})}); }, {"input 'b'", "n is 2 in an earlier input"});
}

TEST(Model, MalformedGraphsAreErrorsNamingTheNode) {
  Graph g;
  g.inputs.push_back({"x", kFloat32, std::nullopt});
  g.nodes.push_back(Node{"Relu", "r1", {"later"}, {"y"}, {}});
  g.nodes.push_back(Node{"Relu", "r2", {"y"}, {"later"}, {}});
  g.outputs.push_back({"later", std::nullopt, std::nullopt});
  expect_error([&] { Model m(g); }, {"Relu node 'r1' reads 'later'", "cycle"});

  g.nodes = {Node{"Relu", "r", {"nowhere"}, {"y"}, {}}};
  expect_error([&] { Model m(g); }, {"'r' reads 'nowhere'", "no input, initializer or earlier node"});

  g.nodes = {Node{"Relu", "r", {"x"}, {"x"}, {}}};
  expect_error([&] { Model m(g); }, {"defines 'x', which is already defined"});

  g.nodes = {Node{"FancyOp", "f", {"x"}, {"y"}, {}}};
  g.outputs = {{"y", std::nullopt, std::nullopt}};
  expect_error([&] { Model m(g); }, {"FancyOp node 'f'", "not supported"});
  EXPECT_EQ(unsupported_ops(g), std::vector<std::string>{"FancyOp"});

  g.nodes = {Node{"LeakyRelu", "l", {"x"}, {"y"}, {{"alpha", std::string("big")}}}};
  Model m(g);  // attribute types are checked by the op when it runs
  expect_error([&] { m({randn({2})}); }, {"LeakyRelu node 'l'", "attribute 'alpha' must be float, got string"});
}

TEST(Onnx, LoadsAndRunsANodeTest) {
  fs::path dir = kNodeTests / "test_add_bcast";
  if (!fs::exists(dir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  Model m = load_model((dir / "model.onnx").string());
  ASSERT_EQ(m.inputs().size(), 2u);
  Tensor a = load_onnx_tensor((dir / "test_data_set_0/input_0.pb").string());
  Tensor b = load_onnx_tensor((dir / "test_data_set_0/input_1.pb").string());
  Tensor want = load_onnx_tensor((dir / "test_data_set_0/output_0.pb").string());
  EXPECT_TRUE(allclose(m({a, b})[0], want));
  // a tensor file round-trips
  fs::path tmp = fs::temp_directory_path() / "nnvm_model_test_tensor.pb";
  save_onnx_tensor(want, tmp.string(), "y");
  EXPECT_TRUE(allclose(load_onnx_tensor(tmp.string()), want, 0.0, 0.0));
  fs::remove(tmp);
}

TEST(Onnx, SavedModelsLoadBackWithTheSameOutputs) {
  manual_seed(3);
  Model m = mlp(randn({4, 3}), randn({3}));
  Tensor x = randn({2, 4});
  fs::path file = fs::temp_directory_path() / "nnvm_model_test_mlp.onnx";
  save_onnx(m, {x}, file.string());
  Model back = load_model(file.string());
  EXPECT_EQ(back.inputs()[0].shape->at(0).symbol, "batch");
  EXPECT_EQ(back.outputs()[0].dtype, kFloat32);
  EXPECT_TRUE(allclose(back({x})[0], m({x})[0], 0.0, 0.0));
  // A fine-tuned parameter is saved with its new value.
  { NoGradGuard g; m.parameters()[1].add_(1.0); }
  save_onnx(m, {x}, file.string());
  EXPECT_TRUE(allclose(load_model(file.string())({x})[0], m({x})[0], 0.0, 0.0));
  fs::remove(file);

  for (const char* test : {"test_gemm_all_attributes", "test_clip_default_inbounds", "test_softmax_axis_0"}) {
    fs::path dir = kNodeTests / test;
    if (!fs::exists(dir)) GTEST_SKIP() << "libonnx-testdata is not installed";
    Model loaded = load_model((dir / "model.onnx").string());
    std::vector<Tensor> ins;
    for (size_t i = 0; i < loaded.inputs().size(); ++i)
      ins.push_back(load_onnx_tensor((dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb")).string()));
    save_onnx(loaded, ins, file.string());
    std::vector<Tensor> a = loaded(ins), b = load_model(file.string())(ins);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(allclose(a[i], b[i], 0.0, 0.0)) << test;
    fs::remove(file);
  }

  GraphBuilder bad;
  bad.output(bad.op("FancyOp", {bad.input("x", kFloat32, {2})}));
  register_model_op("FancyOp", [](const OpContext& ctx) { return std::vector<Tensor>{ctx.input(0)}; });
  expect_error([&] { save_onnx(bad.build(), {randn({2})}, file.string()); }, {"ONNX's checker", "FancyOp"});
}

TEST(Onnx, DamagedFilesAreErrorsNeverCrashes) {
  fs::path file = kNodeTests / "test_gemm_all_attributes/model.onnx";
  if (!fs::exists(file)) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int errors = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {  // every truncation
    try {
      Model m(read_onnx(bytes.substr(0, n), "truncated"));
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  for (size_t i = 0; i < bytes.size(); ++i) {  // every byte flipped
    std::string damaged = bytes;
    damaged[i] = char(damaged[i] ^ 0x5a);
    try {
      Model m(read_onnx(damaged, "damaged"));
      std::vector<Tensor> ins;
      for (size_t i = 0; i < m.inputs().size(); ++i) ins.push_back(zeros({3, 5}));
      m(ins);
    } catch (const Error&) {
    }
  }
  expect_error([] { load_model("/nonexistent/model.onnx"); }, {"cannot open '/nonexistent/model.onnx'"});
  expect_error([] { read_onnx("not a model at all", "junk"); }, {"'junk' is not a valid ONNX model"});
}

}  // namespace
}  // namespace nnvm
