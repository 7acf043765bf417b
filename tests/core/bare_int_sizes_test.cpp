// A bare integer wherever libtorch's IntArrayRef takes one (core/shape.h):
// each call below is written as a libtorch program writes it and must give
// what the braced list gives. That the file compiles is half the test: the
// overloads that take a dim, a dtype or a Scalar beside a size stay unambiguous.
#include "reference.h"

namespace nnvm {
namespace {

void same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(shape_str(a.sizes()), shape_str(b.sizes()));
  testing::expect_tensors_close(a, b, 0, 0);
}

TEST(BareIntSizes, CreationTakesOneSize) {
  const int n = 3;
  const int64_t m = 4;
  EXPECT_EQ(shape_str(zeros(n).sizes()), "[3]");
  EXPECT_EQ(shape_str(ones(5).sizes()), "[5]");
  EXPECT_EQ(shape_str(empty(m).sizes()), "[4]");
  EXPECT_EQ(shape_str(randn(3).sizes()), "[3]");
  EXPECT_EQ(shape_str(rand(2, kFloat64).sizes()), "[2]");
  EXPECT_EQ(shape_str(randint(10, 6).sizes()), "[6]");
  EXPECT_EQ(shape_str(randint(0, 10, 7).sizes()), "[7]");
  EXPECT_EQ(shape_str(bernoulli(5, 0.5).sizes()), "[5]");
  same(full(3, 1.5), full({3}, 1.5));
  same(ones(n, kInt64), ones({n}, kInt64));
  EXPECT_EQ(zeros({}).dim(), 0);  // a braced list stays a list: {} is a 0-dim shape
  EXPECT_EQ(shape_str(zeros({n}).sizes()), "[3]");
}

TEST(BareIntSizes, DimsAndShapesTakeOneValue) {
  const Tensor x = testing::random({2, 3, 4, 5}, kFloat32, 700);
  same(x.sum(1), x.sum({1}));
  same(x.sum(1, true), x.sum({1}, true));
  same(x.sum(-1, false, kFloat64), x.sum({-1}, false, kFloat64));
  same(x.sum(kFloat64), x.sum(std::optional<DType>(kFloat64)));
  same(x.mean(2), x.mean({2}));
  same(x.norm(2, 1), x.norm(2, {1}));
  same(x.norm(1, 3, true), x.norm(1, {3}, true));
  same(x.amax(0), x.amax({0}));
  same(x.amin(2, true), x.amin({2}, true));
  same(x.logsumexp(3), x.logsumexp({3}));
  same(x.var(1), x.var({1}));
  same(x.std(2), x.std({2}));
  same(x.flip(1), x.flip({1}));
  same(x.roll(2, 3), x.roll({2}, {3}));
  same(x.view(-1), x.view({-1}));
  same(x.reshape(120), x.reshape({120}));
  same(x.flatten().view(120), x.reshape({-1}));
  same(x[0][0][0].repeat(2), x[0][0][0].repeat({2}));
  same(x[0][0][0].expand(5), x[0][0][0].expand({5}));
  same(x[0][0][0].permute(0), x[0][0][0]);
  same(x.unflatten(3, 5), x);
  same(sum(x, 1), x.sum({1}));
  same(mean(x, 1, true), x.mean({1}, true));
  same(norm(x, 2, 1), x.norm(2, {1}));
  same(amax(x, 1), x.amax({1}));
  same(logsumexp(x, 1), x.logsumexp({1}));
  same(var(x, 2), x.var({2}));
  same(permute(x[0][0][0], 0), x[0][0][0]);
  same(reshape(x, -1), x.reshape({-1}));
  same(x.split(2, 1)[0], x.split(std::vector<int64_t>{2, 1}, 1)[0]);  // an int is still a split size
}

TEST(BareIntSizes, NnFunctionsTakeOneSize) {
  const Tensor x = testing::random({2, 3, 6, 6}, kFloat32, 710), w = testing::random({4, 3, 3, 3}, kFloat32, 711);
  same(max_pool2d(x, 2), max_pool2d(x, {2, 2}));
  same(max_pool2d(x, 3, 2), max_pool2d(x, {3, 3}, {2, 2}));
  same(max_pool2d(x, 3, 1, 1), max_pool2d(x, {3, 3}, {1, 1}, {1, 1}));
  same(avg_pool2d(x, 3), avg_pool2d(x, {3, 3}));
  same(avg_pool2d(x, 3, 1, 1), avg_pool2d(x, {3, 3}, {1, 1}, {1, 1}));
  same(adaptive_avg_pool2d(x, 2), adaptive_avg_pool2d(x, {2, 2}));
  same(conv2d(x, w, {}, 2, 1), conv2d(x, w, {}, {2, 2}, {1, 1}));
  const Tensor line = testing::random({2, 3, 8}, kFloat32, 712), w1 = testing::random({4, 3, 3}, kFloat32, 713);
  same(conv1d(line, w1, {}, 2, 1), conv1d(line, w1, {}, {2}, {1}));
  same(layer_norm(x, 6), layer_norm(x, {6}));
  same(rms_norm(x, 6), rms_norm(x, {6}));
  same(std::get<0>(var_mean(x, 1)), var(x, {1}));
}

}  // namespace
}  // namespace nnvm
