// Gradients of the convolutions (core/ops/conv.cpp) and of the pooling and
// resampling ops (core/ops/pool.cpp) against finite differences; the weight
// gradient's blocked GEMM against a naive sum over images.
#include <utility>

#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_tensors_close;
using testing::expect_values;
using testing::gradcheck;
using testing::leaf;
using testing::values;

struct ConvCase {
  DimVector x, w;  // x is stored with H and W swapped: the op reads a transposed view
  DimVector stride, padding, dilation;
  int64_t groups;
};

TEST(ConvGrad, Conv2dInputWeightAndBias) {
  const ConvCase cases[] = {
      {{2, 3, 5, 4}, {2, 3, 3, 3}, {1}, {0}, {1}, 1},
      {{1, 4, 6, 5}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2},
      {{2, 2, 7, 6}, {3, 2, 2, 3}, {2}, {1}, {2}, 1},
      {{1, 1, 3, 3}, {1, 1, 1, 1}, {1}, {0}, {1}, 1},
  };
  for (const ConvCase& c : cases) {
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w) + " groups " + std::to_string(c.groups));
      std::vector<Tensor> in = {leaf(c.x, 1), leaf(c.w, 2)};
      if (with_bias) in.push_back(leaf({c.w[0]}, 3));
      gradcheck(
          [&](const std::vector<Tensor>& t) {
            return conv2d(t[0].transpose(2, 3), t[1], with_bias ? t[2] : Tensor(), c.stride, c.padding, c.dilation,
                          c.groups);
          },
          in);
    }
  }
}

TEST(ConvGrad, ConvTranspose2dAndConv1d) {
  struct Case {
    DimVector x, w, stride, padding, output_padding, dilation;  // x as the op sees it
    int64_t groups;
  };
  const Case cases[] = {
      {{2, 3, 3, 4}, {3, 2, 3, 3}, {1}, {0}, {0}, {1}, 1},
      {{1, 4, 3, 3}, {4, 3, 3, 2}, {2}, {1}, {1}, {1}, 2},
      {{1, 2, 3, 4}, {2, 2, 2, 3}, {1, 2}, {0, 1}, {1, 1}, {2, 1}, 1},  // output_padding >= stride along h
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
    gradcheck(
        [&](const std::vector<Tensor>& t) {
          return conv_transpose2d(t[0].transpose(2, 3), t[1], t[2], c.stride, c.padding, c.output_padding,
                                  c.groups, c.dilation);
        },
        {leaf({c.x[0], c.x[1], c.x[3], c.x[2]}, 4), leaf(c.w, 5), leaf({c.w[1] * c.groups}, 6)});
  }
  gradcheck([](const std::vector<Tensor>& t) { return conv1d(t[0], t[1], t[2], {2}, {1}); },
            {leaf({2, 3, 7}, 7), leaf({4, 3, 3}, 8), leaf({4}, 9)});
  gradcheck([](const std::vector<Tensor>& t) { return conv2d(t[0], t[1], Tensor(), {1}, {1}); },
            {leaf({2, 4, 4}, 10), leaf({3, 2, 3, 3}, 11)});
}

// Enough images that the weight gradient's column buffer takes several
// blocks; 16 input channels against 8 output channels (dW = grad · colᵀ),
// and 2 against 24 (more output channels than the 18 columns: dWᵀ).
TEST(ConvGrad, WeightGradientOverManyImagesMatchesNaiveSum) {
  for (const auto& [c, o] : {std::pair<int64_t, int64_t>{16, 8}, {2, 24}}) {
    SCOPED_TRACE(::testing::Message() << c << " input channels, " << o << " output channels");
    const int64_t n = 40, h = 30, w = 30, k = 3;
    const Tensor x = testing::random({n, c, h, w}, kFloat64, 12);
    const Tensor weight = testing::random({o, c, k, k}, kFloat64, 13).requires_grad_();
    const Tensor y = conv2d(x, weight);
    const Tensor g = testing::random(y.sizes(), kFloat64, 14);
    const Tensor dw = autograd::grad({y}, {weight}, {g})[0];
    const std::vector<double> xv = values(x), gv = values(g);
    const int64_t oh = h - k + 1, ow = w - k + 1;
    std::vector<double> expect(size_t(o * c * k * k), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t q = 0; q < o; ++q)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t i = 0; i < k; ++i)
            for (int64_t j = 0; j < k; ++j) {
              double sum = 0;
              for (int64_t r = 0; r < oh; ++r)
                for (int64_t s = 0; s < ow; ++s)
                  sum += gv[size_t(((b * o + q) * oh + r) * ow + s)] *
                         xv[size_t(((b * c + ch) * h + r + i) * w + s + j)];
              expect[size_t(((q * c + ch) * k + i) * k + j)] += sum;
            }
    expect_values(dw, expect, 1e-10, 1e-9);
    // float32 and float16 compute in float and agree with float64
    for (DType dt : {kFloat32, kFloat16}) {
      const Tensor w32 = weight.detach().to(dt).requires_grad_();
      const Tensor y32 = conv2d(x.slice(0, 0, 3).to(dt), w32);
      const Tensor dw32 = autograd::grad({y32}, {w32}, {g.slice(0, 0, 3).to(dt)})[0];
      const Tensor y64 = conv2d(x.slice(0, 0, 3), weight);
      const Tensor dw64 = autograd::grad({y64}, {weight}, {g.slice(0, 0, 3)})[0];
      expect_tensors_close(dw32.to(kFloat64), dw64, dt == kFloat16 ? 2e-2 : 1e-4, dt == kFloat16 ? 0.5 : 1e-3);
    }
  }
}

// A weight gradient with few columns per output channel (one input channel,
// 3x3: 9) takes the dot-product path: against the naive sum over images with
// padding (19 images: the fixed blocks of images end with a partial one), and
// the same bits on one thread and on several.
TEST(ConvGrad, FewColumnWeightGradientMatchesNaiveSumOnAnyThreadCount) {
  const int64_t n = 19, o = 5, h = 9, w = 11, k = 3;
  const Tensor x = testing::random({n, 1, h, w}, kFloat64, 15);
  const Tensor weight = testing::random({o, 1, k, k}, kFloat64, 16).requires_grad_();
  const Tensor y = conv2d(x, weight, Tensor(), {1}, {1});
  const Tensor g = testing::random(y.sizes(), kFloat64, 17);
  const Tensor dw = autograd::grad({y}, {weight}, {g})[0];
  const std::vector<double> xv = values(x), gv = values(g);
  std::vector<double> expect(size_t(o * k * k), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t q = 0; q < o; ++q)
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j)
          for (int64_t r = 0; r < h; ++r)
            for (int64_t s = 0; s < w; ++s) {
              const int64_t ih = r + i - 1, iw = s + j - 1;
              if (ih >= 0 && ih < h && iw >= 0 && iw < w)
                expect[size_t((q * k + i) * k + j)] +=
                    gv[size_t(((b * o + q) * h + r) * w + s)] * xv[size_t((b * h + ih) * w + iw)];
            }
  expect_values(dw, expect, 1e-10, 1e-9);
  const int threads = get_num_threads();
  std::vector<std::vector<double>> runs;
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    const Tensor w32 = weight.detach().to(kFloat32).requires_grad_();
    const Tensor y32 = conv2d(x.to(kFloat32), w32, Tensor(), {1}, {1});
    runs.push_back(values(autograd::grad({y32}, {w32}, {g.to(kFloat32)})[0]));
  }
  set_num_threads(threads);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
  expect_values(Tensor(tensor<double>(runs[0])).reshape({o, 1, k, k}), expect, 1e-4, 1e-3);
}

// The float32 weight gradient on the direct convolution's windows
// (conv.cpp conv2d_backward_weight_direct): images in fixed blocks (19: two
// blocks of 8 and a partial one), images in several bands of rows (64×64
// over 32 channels), strides, dilations, groups, padding. Against float64
// (im2col on the C++ GEMM), and the same bits on 1, 2 and 3 threads.
TEST(ConvGrad, DirectWeightGradientMatchesFloat64OnAnyThreadCount) {
  struct Case {
    DimVector x, w, stride, pad, dil;
    int64_t groups;
  };
  const Case cases[] = {
      {{19, 32, 64, 64}, {16, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {{5, 12, 23, 17}, {8, 6, 3, 5}, {2, 1}, {1, 2}, {1, 2}, 2},
      {{3, 8, 31, 29}, {24, 8, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1},
      {{9, 20, 9, 9}, {10, 20, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1},
  };
  uint64_t seed = 70;
  const int threads = get_num_threads();
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + shape_str(c.w));
    const Tensor x = testing::random(c.x, kFloat64, seed++);
    const Tensor w = testing::random(c.w, kFloat64, seed++).requires_grad_();
    const Tensor y = conv2d(x, w, Tensor(), c.stride, c.pad, c.dil, c.groups);
    const Tensor g = testing::random(y.sizes(), kFloat64, seed++);
    const Tensor dw64 = autograd::grad({y}, {w}, {g})[0];
    std::vector<std::vector<double>> runs;
    for (int t : {1, 2, 3}) {
      set_num_threads(t);
      const Tensor w32 = w.detach().to(kFloat32).requires_grad_();
      const Tensor y32 = conv2d(x.to(kFloat32), w32, Tensor(), c.stride, c.pad, c.dil, c.groups);
      runs.push_back(values(autograd::grad({y32}, {w32}, {g.to(kFloat32)})[0]));
    }
    set_num_threads(threads);
    EXPECT_EQ(runs[0], runs[1]);
    EXPECT_EQ(runs[0], runs[2]);
    expect_values(dw64, runs[0], 1e-4, 1e-3);
  }
}

TEST(PoolGrad, MaxPool2d) {
  struct Case {
    DimVector x, kernel, stride, padding, dilation;
    bool ceil_mode;
  };
  const Case cases[] = {
      {{2, 2, 5, 6}, {2}, {}, {0}, {1}, false},
      {{1, 3, 7, 5}, {3}, {2}, {1}, {1}, false},
      {{1, 2, 6, 7}, {3, 2}, {2, 3}, {1, 0}, {1, 2}, true},
      {{2, 1, 5, 5}, {2}, {2}, {0}, {1}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " kernel " + shape_str(c.kernel));
    gradcheck(
        [&](const std::vector<Tensor>& t) {
          return max_pool2d(t[0].transpose(2, 3), c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
        },
        {leaf(c.x, 20)});
  }
  // ties: each window's gradient goes to its first maximum
  Tensor x = tensor<double>({5, 5, 5, 5, 5, 5, 1, 7, 7}, IntArrayRef{1, 1, 3, 3}).requires_grad_();
  max_pool2d(x, {2}, {1}).sum().backward();
  expect_values(x.grad(), {1, 1, 0, 0, 0, 0, 0, 2, 0});
  // float32 takes the same path
  Tensor f = tensor<float>({1, 5, 3, 2}, IntArrayRef{1, 2, 2}).requires_grad_();
  max_pool2d(f, {2}).sum().backward();
  expect_values(f.grad(), {0, 1, 0, 0});
}

TEST(PoolGrad, AveragePoolingAndResampling) {
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::pair<const char*, Fn> ops[] = {
      {"avg", [](const Tensor& x) { return avg_pool2d(x, {2}); }},
      {"avg pad", [](const Tensor& x) { return avg_pool2d(x, {3}, {2}, {1}, false, true); }},
      {"avg pad exclude", [](const Tensor& x) { return avg_pool2d(x, {3}, {2}, {1}, false, false); }},
      {"avg ceil", [](const Tensor& x) { return avg_pool2d(x, {2, 3}, {2}, {1}, true, true); }},
      {"avg ceil exclude", [](const Tensor& x) { return avg_pool2d(x, {3, 2}, {2}, {1}, true, false); }},
      {"adaptive", [](const Tensor& x) { return adaptive_avg_pool2d(x, {3, 2}); }},
      {"adaptive up", [](const Tensor& x) { return adaptive_avg_pool2d(x, {7, 8}); }},
      {"nearest size", [](const Tensor& x) { return interpolate(x, std::vector<int64_t>{7, 4}); }},
      {"nearest scale", [](const Tensor& x) { return interpolate(x, std::nullopt, std::vector<double>{1.5, 2}); }},
      {"bilinear",
       [](const Tensor& x) { return interpolate(x, std::vector<int64_t>{8, 3}, std::nullopt, "bilinear"); }},
      {"bilinear corners",
       [](const Tensor& x) { return interpolate(x, std::vector<int64_t>{9, 7}, std::nullopt, "bilinear", true); }},
      {"bilinear scale",
       [](const Tensor& x) { return interpolate(x, std::nullopt, std::vector<double>{2.5}, "bilinear"); }},
  };
  for (const auto& [name, fn] : ops) {
    SCOPED_TRACE(name);
    // init-captures: clang 14 cannot capture a structured binding
    gradcheck([&fn = fn](const std::vector<Tensor>& t) { return fn(t[0].transpose(2, 3)); }, {leaf({2, 2, 5, 4}, 30)});
    // the backward is linear: its own gradient is the forward op again
    testing::gradgradcheck([&fn = fn](const std::vector<Tensor>& t) { return fn(t[0]).square(); },
                           {leaf({1, 2, 4, 5}, 31)});
  }
}

}  // namespace
}  // namespace nnvm
