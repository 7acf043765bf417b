// libtorch's spellings: free functions for the ops nnvm has as methods, bare
// integers where libtorch's IntArrayRef takes one, tensor options, in-place
// initialisers, const in-place methods and devices. Each is written as a
// libtorch program writes it and checked against the method or a plain value.
#include <cmath>
#include <sstream>

#include "reference.h"

namespace nnvm {
namespace {

using indexing::Slice;

TEST(LibtorchSpelling, UnaryAndBinaryFreeFunctionsAreTheMethods) {
  const Tensor x = testing::random({3, 4}, kFloat32, 1, 0.1, 2.0);
  const Tensor y = testing::random({3, 4}, kFloat32, 2, 0.1, 2.0);
  const std::pair<Tensor, Tensor> pairs[] = {
      {nnvm::tanh(x), x.tanh()},     {nnvm::exp(x), x.exp()},         {nnvm::sin(x), x.sin()},
      {nnvm::sqrt(x), x.sqrt()},     {nnvm::relu(x - 1), (x - 1).relu()}, {nnvm::sigmoid(x), x.sigmoid()},
      {nnvm::abs(x - 1), (x - 1).abs()}, {nnvm::log(x), x.log()},     {nnvm::neg(x), -x},
      {nnvm::add(x, y, 2), x + y * 2}, {nnvm::sub(x, y), x - y},      {nnvm::mul(x, y), x * y},
      {nnvm::div(x, y), x / y},      {nnvm::pow(x, 2), x * x},        {nnvm::pow(x, y), x.pow(y)},
      {nnvm::clamp(x, 0.5, 1.5), x.clamp(0.5, 1.5)}, {nnvm::where(x > y, x, y), nnvm::maximum(x, y)},
      {nnvm::gt(x, y).to(kFloat32), (x > y).to(kFloat32)}, {nnvm::eq(x, x).to(kFloat32), ones({3, 4})},
  };
  for (const auto& [actual, expected] : pairs) testing::expect_tensors_close(actual, expected, 1e-6, 1e-6);
}

TEST(LibtorchSpelling, ReductionsAndShapesAsFreeFunctions) {
  const Tensor x = testing::random({2, 3, 4}, kFloat32, 3);
  testing::expect_tensors_close(nnvm::sum(x), x.sum());
  testing::expect_tensors_close(nnvm::sum(x, {1}, true), x.sum({1}, true));
  testing::expect_tensors_close(nnvm::sum(x, 1), x.sum({1}));
  testing::expect_tensors_close(nnvm::mean(x, 2, true), x.mean({2}, true));
  testing::expect_tensors_close(nnvm::amax(x, -1), x.amax({-1}));
  testing::expect_tensors_close(nnvm::argmax(x, 1), x.argmax(1));
  testing::expect_tensors_close(nnvm::norm(x, 2, 1), x.norm(2, {1}));
  testing::expect_tensors_close(x.norm(2, 1), x.norm(2, {1}));
  testing::expect_tensors_close(nnvm::logsumexp(x, 0), x.logsumexp({0}));
  testing::expect_tensors_close(std::get<0>(nnvm::max(x, 2)), x.amax({2}));
  EXPECT_EQ(nnvm::reshape(x, {6, 4}).sizes(), IntArrayRef({6, 4}));
  EXPECT_EQ(nnvm::transpose(x, 0, 2).sizes(), IntArrayRef({4, 3, 2}));
  EXPECT_EQ(nnvm::permute(x, {2, 0, 1}).sizes(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(nnvm::flatten(x, 1).sizes(), IntArrayRef({2, 12}));
  EXPECT_EQ(nnvm::unsqueeze(x, 0).sizes(), IntArrayRef({1, 2, 3, 4}));
  EXPECT_EQ(nnvm::squeeze(nnvm::unsqueeze(x, 0), 0).sizes(), x.sizes());
  EXPECT_EQ(nnvm::narrow(x, 2, 1, 2).sizes(), IntArrayRef({2, 3, 2}));
  EXPECT_EQ(nnvm::chunk(x, 2, 2).size(), 2u);
  EXPECT_EQ(nnvm::split(x, 1, 1).size(), 3u);
  EXPECT_EQ(x.view(-1).sizes(), IntArrayRef({24}));
  EXPECT_EQ(x.reshape(-1).sizes(), IntArrayRef({24}));
  testing::expect_tensors_close(x.flip(0), x.flip({0}));
}

// A bare integer is one size; a braced list, {} included, is still a list.
TEST(LibtorchSpelling, BareIntegersAreSizesAndBracedListsStayLists) {
  manual_seed(0);
  EXPECT_EQ(nnvm::randn(3).sizes(), IntArrayRef({3}));
  const int n = 5;
  EXPECT_EQ(nnvm::zeros(n).sizes(), IntArrayRef({5}));
  EXPECT_EQ(nnvm::ones(size_t(2)).sizes(), IntArrayRef({2}));
  EXPECT_EQ(nnvm::full(4, 2.5).sizes(), IntArrayRef({4}));
  EXPECT_EQ(nnvm::zeros({}).dim(), 0);
  EXPECT_EQ(nnvm::zeros({5}).sizes(), IntArrayRef({5}));
  EXPECT_EQ(nnvm::zeros({2, 3}).sizes(), IntArrayRef({2, 3}));
  const Tensor img = testing::random({1, 2, 6, 6}, kFloat32, 4);
  testing::expect_tensors_close(nnvm::max_pool2d(img, 2), nnvm::max_pool2d(img, {2, 2}));
  testing::expect_tensors_close(nnvm::max_pool2d(img, 3, 1), nnvm::max_pool2d(img, {3, 3}, {1, 1}));
  testing::expect_tensors_close(nnvm::avg_pool2d(img, 2), nnvm::avg_pool2d(img, {2, 2}));
  testing::expect_tensors_close(nnvm::adaptive_avg_pool2d(img, 1), img.mean({2, 3}, true));
}

TEST(LibtorchSpelling, TensorOptions) {
  const Tensor a = nnvm::tensor({1.0, 2.0, 3.0});
  EXPECT_EQ(a.dtype(), kFloat32);  // libtorch's default dtype, not double
  EXPECT_EQ(nnvm::tensor({1, 2}).dtype(), kInt64);
  EXPECT_EQ(nnvm::tensor({true}).dtype(), kBool);
  EXPECT_EQ(nnvm::tensor<int64_t>({0, 2}).dtype(), kInt64);
  const Tensor d = nnvm::tensor({1.5, 2.5}, nnvm::kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  testing::expect_values(d, {1.5, 2.5});
  const Tensor w = nnvm::randn({2, 3}, nnvm::requires_grad());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  const Tensor z = nnvm::zeros({2}, nnvm::TensorOptions().dtype(nnvm::kFloat64).device(nnvm::kCPU).requires_grad(true));
  EXPECT_EQ(z.dtype(), kFloat64);
  EXPECT_TRUE(z.requires_grad());
  EXPECT_TRUE(nnvm::tensor({1.0, 2.0}, nnvm::requires_grad()).requires_grad());
  EXPECT_TRUE(nnvm::ones_like(z, nnvm::TensorOptions(kFloat64).requires_grad(true)).requires_grad());
  EXPECT_EQ(nnvm::empty({3}, nnvm::dtype(nnvm::kInt32)).dtype(), kInt32);
  EXPECT_EQ(z.options().dtype(), kFloat64);
  testing::expect_error([] { nnvm::zeros({2}, nnvm::TensorOptions().device(nnvm::Device(nnvm::kCUDA, 0))); },
                        {"full", "cuda:0", "not available"});
  testing::expect_error([] { nnvm::zeros({2}, nnvm::TensorOptions(nnvm::kInt64).requires_grad(true)); },
                        {"requires_grad_", "floating"});
}

TEST(LibtorchSpelling, InPlaceInitialisersAndConstInPlaceMethods) {
  manual_seed(7);
  const Tensor x = nnvm::empty({4000});
  x.uniform_(-2, 3);
  EXPECT_GE(x.min().item<double>(), -2.0);
  EXPECT_LT(x.max().item<double>(), 3.0);
  EXPECT_NEAR(x.mean().item<double>(), 0.5, 0.1);
  x.normal_(1.0, 0.5);
  EXPECT_NEAR(x.mean().item<double>(), 1.0, 0.05);
  EXPECT_NEAR(x.std().item<double>(), 0.5, 0.05);
  x.bernoulli_(0.25);
  EXPECT_NEAR(x.mean().item<double>(), 0.25, 0.05);
  EXPECT_TRUE((x == 0).logical_or(x == 1).all().item<bool>());
  x.random_(3, 6);
  EXPECT_GE(x.min().item<double>(), 3.0);
  EXPECT_LE(x.max().item<double>(), 5.0);
  EXPECT_EQ(x.max().item<double>(), 5.0);
  // The same numbers as the out-of-place function from the same generator state.
  manual_seed(3);
  const Tensor u = nnvm::rand({10}) * 4 - 2;
  manual_seed(3);
  testing::expect_tensors_close(nnvm::empty({10}).uniform_(-2, 2), u, 1e-6, 1e-6);

  // libtorch's idiom: the gradient zeroed through the const reference grad() returns.
  const Tensor w = nnvm::ones({3}, nnvm::requires_grad());
  (w * w).sum().backward();
  testing::expect_values(w.grad(), {2, 2, 2});
  w.grad().zero_();
  testing::expect_values(w.grad(), {0, 0, 0});
  {
    NoGradGuard no_grad;
    w.grad() += 1;
    w.add_(w.grad(), -0.5);
  }
  testing::expect_values(w, {0.5, 0.5, 0.5});
  testing::expect_error([&] { w.uniform_(); }, {"leaf", "requires grad"});
  testing::expect_error([] { nnvm::empty({2}, kInt64).normal_(); }, {"normal_", "floating"});
}

// Assigning to a temporary (an element, a view) writes into its data; to a
// named tensor, re-points the handle.
TEST(LibtorchSpelling, AssignmentToAViewWritesIntoIt) {
  Tensor x = nnvm::zeros({2, 3});
  x[1][2] = nnvm::full({}, 4.0);
  x[0] = 1.5;
  x.index({Slice(), 0}) = nnvm::tensor({7.0, 8.0});
  testing::expect_values(x, {7, 1.5, 1.5, 8, 0, 4});
  Tensor y = x;
  y = nnvm::ones({1});  // re-points y; x keeps its values
  EXPECT_EQ(y.sizes(), IntArrayRef({1}));
  testing::expect_values(x, {7, 1.5, 1.5, 8, 0, 4});
  testing::expect_error([&] { x[0] = nnvm::ones({4}); }, {"copy_", "[3]", "[4]"});
}

// TORCH_CHECK / AT_ASSERT ported by rote, printed sizes, Scalar's accessors.
TEST(LibtorchSpelling, ChecksPrintedSizesAndScalars) {
  testing::expect_error([] { NNVM_CHECK(1 + 1 == 3); }, {"Expected 1 + 1 == 3 to be true, but got false"});
  testing::expect_error([] { NNVM_CHECK(false, "the loss is NaN"); }, {"the loss is NaN"});
  testing::expect_error([] { NNVM_CHECK(false, "train", "step ", 3, " failed"); }, {"train: step 3 failed"});
  testing::expect_error([] { NNVM_ASSERT(2 < 1); }, {"2 < 1"});
  testing::expect_error([] { NNVM_INTERNAL_ASSERT(false, "broken"); }, {"broken"});
  std::ostringstream os;
  os << nnvm::zeros({32, 3, 5}).sizes() << " " << nnvm::zeros({}).sizes();
  EXPECT_EQ(os.str(), "[32, 3, 5] []");
  const Tensor loss = nnvm::full({}, 2.5);
  EXPECT_EQ(loss.item().toFloat(), 2.5f);
  EXPECT_EQ(loss.item().toDouble(), 2.5);
  EXPECT_EQ(nnvm::full({}, 7, kInt64).item().toLong(), 7);
  EXPECT_EQ(nnvm::full({}, 7, kInt64).item().toInt(), 7);
  EXPECT_TRUE(nnvm::full({}, true).item().toBool());
}

TEST(LibtorchSpelling, Devices) {
  const nnvm::Device cpu(nnvm::kCPU);
  const Tensor x = nnvm::ones({2});
  EXPECT_EQ(x.device(), cpu);
  EXPECT_TRUE(x.is_cpu());
  EXPECT_FALSE(x.is_cuda());
  EXPECT_TRUE(x.to(cpu).is_same(x));
  EXPECT_EQ(x.to(nnvm::kCPU, nnvm::kFloat64).dtype(), kFloat64);
  EXPECT_EQ(x.cpu().device(), cpu);
  testing::expect_error([&] { x.to(nnvm::Device(nnvm::kCUDA, 1)); }, {"to", "cuda:1", "not available"});
  testing::expect_error([&] { x.cuda(); }, {"to", "cuda:0"});
  nnvm::nn::Linear layer(3, 2);
  layer->to(nnvm::kCPU);
  layer->to(cpu, nnvm::kFloat64);
  EXPECT_EQ(layer->weight.dtype(), kFloat64);
  testing::expect_error([&] { layer->to(nnvm::Device(nnvm::kCUDA)); }, {"to", "cuda:0", "not available"});
  // the tutorials' device choice picks the CPU
  EXPECT_FALSE(nnvm::cuda::is_available());
  EXPECT_EQ(nnvm::cuda::device_count(), 0u);
  EXPECT_EQ(nnvm::Device(nnvm::cuda::is_available() ? nnvm::kCUDA : nnvm::kCPU), cpu);
}

}  // namespace
}  // namespace nnvm
