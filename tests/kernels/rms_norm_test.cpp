// rms_norm and rms_norm_backward against naive double loops, finite
// differences and the decomposed form; the default eps; bad inputs; nn::RMSNorm.
#include <cmath>
#include <limits>

#include "nnvm/nn/normalization.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::gradcheck;
using testing::leaf;
using testing::random;
using testing::values;

double atol_for(DType t) { return t == kFloat16 || t == kBFloat16 ? 1e-2 : t == kFloat32 ? 1e-5 : 1e-10; }

// y = x / sqrt(mean(x^2) + eps) * w over rows of `cols`, in double.
std::vector<double> naive_rms_norm(const std::vector<double>& x, const std::vector<double>& w, int64_t cols,
                                   double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; cols > 0 && r < x.size() / size_t(cols); ++r) {
    double squares = 0;
    for (int64_t j = 0; j < cols; ++j) squares += x[r * size_t(cols) + size_t(j)] * x[r * size_t(cols) + size_t(j)];
    const double rstd = 1 / std::sqrt(squares / double(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = r * size_t(cols) + size_t(j);
      y[k] = x[k] * rstd * (w.empty() ? 1.0 : w[size_t(j)]);
    }
  }
  return y;
}

TEST(RmsNormTest, MatchesReference) {
  struct Case {
    DimVector shape;
    DimVector normalized;
  };
  const Case cases[] = {{{1, 1}, {1}},      {{3, 5}, {5}},    {{4, 7, 9}, {9}}, {{4, 7, 9}, {7, 9}},
                        {{2, 3, 1}, {3, 1}}, {{0, 4}, {4}},    {{65, 33}, {33}}, {{5}, {5}},
                        {{300, 257}, {257}}, {{3, 0}, {0}}};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const Case& c : cases)
      for (bool affine : {false, true})
        for (testing::Layout layout : testing::kLayouts) {
          SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " " << testing::layout_name(layout) << " "
                                            << shape_str(c.shape) << (affine ? " affine" : ""));
          const Tensor x = testing::with_layout(random(c.shape, dt, 1, -3, 5), layout);
          const Tensor w = affine ? random(c.normalized, dt, 2) : Tensor();
          const Tensor y = rms_norm(x, c.normalized, w, 1e-4);
          ASSERT_EQ(y.dtype(), dt);
          ASSERT_EQ(shape_str(y.sizes()), shape_str(c.shape));
          const std::vector<double> wv = affine ? values(w) : std::vector<double>{};
          testing::expect_values(y, naive_rms_norm(values(x), wv, numel_of(c.normalized), 1e-4),
                                 testing::rtol_for(dt), atol_for(dt));
        }
}

// torch's eps=None: the dtype's machine epsilon, visible on an all-zero row
// (0 / sqrt(eps)) and on a row whose mean square is comparable to eps.
TEST(RmsNormTest, DefaultEpsIsTheMachineEpsilon) {
  for (DType dt : {kFloat32, kFloat64}) {
    const double eps = dt == kFloat32 ? double(std::numeric_limits<float>::epsilon())
                                      : std::numeric_limits<double>::epsilon();
    const Tensor x = full({2, 3}, Scalar(std::sqrt(eps)), dt);
    const double expected = std::sqrt(eps) / std::sqrt(eps + eps);
    testing::expect_values(rms_norm(x, {3}), std::vector<double>(6, expected), testing::rtol_for(dt), 0);
  }
}

TEST(RmsNormTest, BadInputs) {
  const Tensor x = ones({2, 3});
  testing::expect_error([&] { rms_norm(x, {4}); }, {"rms_norm", "[4]", "[2, 3]"});
  testing::expect_error([&] { rms_norm(x, {2, 3, 1}); }, {"rms_norm", "[2, 3, 1]"});
  testing::expect_error([&] { rms_norm(x, {}); }, {"rms_norm", "at least one dim"});
  testing::expect_error([&] { rms_norm(x, {3}, ones({4})); }, {"rms_norm", "weight", "[4]", "expected shape [3]"});
  testing::expect_error([&] { rms_norm(ones({2, 3}, kInt64), {3}); }, {"rms_norm", "int64"});
  testing::expect_error([&] { rms_norm(x, {3}, ones({3}, kInt32)); }, {"rms_norm", "weight", "int32"});
}

TEST(RmsNormGrad, FiniteDifferences) {
  const Tensor x = leaf({2, 3, 5}, 1), w = leaf({5}, 2), w2 = leaf({3, 5}, 3), one = leaf({1, 1}, 4),
               w1 = leaf({1}, 5);
  const testing::DiffFn fns[] = {
      [](const std::vector<Tensor>& in) { return rms_norm(in[0], {5}); },
      [](const std::vector<Tensor>& in) { return rms_norm(in[0], {5}, in[1]); },
      [](const std::vector<Tensor>& in) { return rms_norm(in[0], {5}, in[1], 0.5); },
      [](const std::vector<Tensor>& in) { return rms_norm(in[0], {3, 5}, in[2]); },
      // non-contiguous input and weight
      [](const std::vector<Tensor>& in) { return rms_norm(in[0].transpose(0, 2), {2}, in[1].narrow(0, 1, 2)); },
      [](const std::vector<Tensor>& in) { return rms_norm(in[0].transpose(1, 2), {5, 3}, in[2].t()); },
  };
  for (const auto& fn : fns) gradcheck(fn, {x, w, w2});
  gradcheck([](const std::vector<Tensor>& in) { return rms_norm(in[0], {1}, in[1]); }, {one, w1});
}

TEST(RmsNormGrad, ReturnsOnlyRequestedGradients) {
  const Tensor x = leaf({4, 3}, 8), w = leaf({3}, 9);
  const std::vector<Tensor> grads = autograd::grad({rms_norm(x, {3}, w).square().sum()}, {w});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].sizes(), w.sizes());
}

// Many rows (several blocks of partial weight sums): the fused backward
// against the same normalisation built from differentiable ops.
TEST(RmsNormGrad, MatchesTheComposition) {
  for (DType dtype : {kFloat64, kFloat32}) {
    const Tensor x = random({9001, 8}, dtype, 50).requires_grad_();
    const Tensor w = random({8}, dtype, 51).requires_grad_();
    const Tensor g = random({9001, 8}, dtype, 53);
    const std::vector<Tensor> fused = autograd::grad({rms_norm(x, {8}, w, 1e-5)}, {x, w}, {g});
    const Tensor composed_y = x * (x.square().mean({1}, true) + 1e-5).rsqrt() * w;
    const std::vector<Tensor> composed = autograd::grad({composed_y}, {x, w}, {g});
    for (size_t k = 0; k < 2; ++k)
      testing::expect_tensors_close(fused[k], composed[k], testing::rtol_for(dtype), 10 * testing::rtol_for(dtype));
  }
}

TEST(RmsNormModule, MirrorsTorch) {
  nn::RMSNorm norm(nn::RMSNormOptions({4}).eps(1e-3));
  ASSERT_TRUE(norm->weight.defined());
  testing::expect_values(norm->weight, {1, 1, 1, 1});
  EXPECT_EQ(norm->parameters().size(), 1u);
  const Tensor x = random({3, 4}, kFloat32, 6);
  {
    NoGradGuard no_grad;
    norm->weight.copy_(random({4}, kFloat32, 7));
  }
  testing::expect_tensors_close(norm(x), rms_norm(x, {4}, norm->weight, 1e-3));
  nn::RMSNorm plain(nn::RMSNormOptions({4}).elementwise_affine(false));
  EXPECT_FALSE(plain->weight.defined());
  EXPECT_EQ(plain->parameters().size(), 0u);
  testing::expect_tensors_close(plain(x), rms_norm(x, {4}));
}

}  // namespace
}  // namespace nnvm
