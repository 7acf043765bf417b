// INT8 linear layers (nnvm/quantized.h): quantized::linear_dynamic against a
// scalar reference of the same arithmetic and against the float32 layer
// within docs/QUANTIZATION.md's bound; every ISA the CPU has bit for bit;
// traced against eager; quantize_dynamic's copy and in-place forms; the
// weight repacked when it changes; bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "jit/isa_scope.h"
#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace nn = nnvm::nn;

bool same(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && a.allclose(b, 0, 0); }

// y = x Wᵀ + b by the documented arithmetic, in scalar code: x's uint8
// parameters from its range, W's int8 per channel.
std::vector<float> reference(const Tensor& x2d, const quantized::LinearPackedParams& p) {
  const int64_t m = x2d.size(0), k = p.in_features, n = p.out_features;
  const std::vector<double> xv = testing::values(x2d), wv = testing::values(p.dequantized_weight()),
                            sv = testing::values(p.scales), bv = testing::values(p.bias);
  float lo = 0, hi = 0;
  for (double v : xv) lo = std::min(lo, float(v)), hi = std::max(hi, float(v));
  float scale = (hi - lo) / 255.f;
  if (!(scale > 1.17549435e-38f)) scale = 1.f;
  const float zp = std::clamp(std::nearbyint(-lo / scale), 0.f, 255.f), inverse = 1.f / scale;
  std::vector<float> y;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int32_t acc = 0, sum = 0;
      for (int64_t c = 0; c < k; ++c) {
        const int32_t q = int32_t(std::nearbyint(std::clamp(float(xv[size_t(i * k + c)]) * inverse + zp, 0.f, 255.f)));
        const int32_t w = int32_t(std::lround(wv[size_t(j * k + c)] / sv[size_t(j)]));
        acc += q * w;
        sum += w;
      }
      y.push_back(std::fma(float(acc - int32_t(zp) * sum), scale * float(sv[size_t(j)]), float(bv[size_t(j)])));
    }
  return y;
}

TEST(QuantizedLinear, MatchesTheScalarArithmetic) {
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 31, 3}, {5, 33, 64}, {13, 70, 130}, {0, 4, 5}, {3, 1, 257}};
  uint64_t seed = 1;
  for (const auto& s : shapes) {
    const Tensor x = testing::random({s[0], s[2]}, kFloat32, seed++, -1.5, 3);
    const Tensor w = testing::random({s[1], s[2]}, kFloat32, seed++), b = testing::random({s[1]}, kFloat32, seed++);
    const quantized::LinearPackedParams p = quantized::linear_prepack(w, b);
    const Tensor y = quantized::linear_dynamic(x, p);
    ASSERT_EQ(y.sizes(), (DimVector{s[0], s[1]}));
    // the same arithmetic: equal but for the last bit where x's quantization rounds a tie differently
    testing::expect_values(y, [&] {
      const std::vector<float> r = reference(x, p);
      return std::vector<double>(r.begin(), r.end());
    }(), 1e-6, 1e-6);
  }
}

TEST(QuantizedLinear, WithinTheBoundOfTheFloatLayer) {
  const int64_t m = 9, n = 40, k = 300;
  const Tensor x = testing::random({m, k}, kFloat32, 11, -1, 2), w = testing::random({n, k}, kFloat32, 12, -0.3, 0.3);
  const Tensor b = testing::random({n}, kFloat32, 13);
  const quantized::LinearPackedParams p = quantized::linear_prepack(w, b);
  const std::vector<double> got = testing::values(quantized::linear_dynamic(x, p));
  const std::vector<double> want = testing::values(linear(x, w, b)), xv = testing::values(x), wv = testing::values(w);
  const double sx = (xv.empty() ? 0 : (*std::max_element(xv.begin(), xv.end()) - std::min(0.0, *std::min_element(xv.begin(), xv.end())))) / 255;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double sw = testing::values(p.scales)[size_t(j)];
      double bound = 0;
      for (int64_t c = 0; c < k; ++c)
        bound += std::fabs(xv[size_t(i * k + c)]) * sw / 2 + std::fabs(wv[size_t(j * k + c)]) * sx / 2 + sx * sw / 4;
      EXPECT_LE(std::fabs(got[size_t(i * n + j)] - want[size_t(i * n + j)]), bound * 1.001 + 1e-5) << i << "," << j;
    }
}

TEST(QuantizedLinear, EveryIsaGivesTheSameResult) {
  const Tensor x = testing::random({37, 150}, kFloat32, 21), w = testing::random({65, 150}, kFloat32, 22);
  const quantized::LinearPackedParams p = quantized::linear_prepack(w);
  const EagerGuard eager;
  const Tensor first = quantized::linear_dynamic(x, p);
  for (jit::Isa isa : jit::jit_isas()) {
    const jit::IsaGuard forced(isa);
    EXPECT_TRUE(same(quantized::linear_dynamic(x, p), first)) << jit::isa_name(isa);
  }
  const jit::IsaGuard portable(jit::Isa::kPortable);
  EXPECT_TRUE(same(quantized::linear_dynamic(x, p), first)) << "portable";
}

TEST(QuantizedLinear, BatchedAndStridedInputs) {
  const Tensor w = testing::random({6, 10}, kFloat32, 31), b = testing::random({6}, kFloat32, 32);
  const quantized::LinearPackedParams p = quantized::linear_prepack(w, b);
  const Tensor x = testing::random({2, 3, 10}, kFloat32, 33);
  const Tensor y = quantized::linear_dynamic(x, p);
  ASSERT_EQ(y.sizes(), (DimVector{2, 3, 6}));
  testing::expect_tensors_close(y.reshape({6, 6}), quantized::linear_dynamic(x.reshape({6, 10}), p), 0, 0);
  const Tensor xt = testing::random({10, 4}, kFloat32, 34).t();  // a transposed view
  testing::expect_tensors_close(quantized::linear_dynamic(xt, p), quantized::linear_dynamic(xt.contiguous(), p), 0, 0);
  testing::expect_tensors_close(quantized::linear_dynamic(xt.to(kFloat64), p), quantized::linear_dynamic(xt, p), 0, 0);
}

TEST(QuantizedLinear, TracedEqualsEager) {
  const Tensor w = testing::random({20, 33}, kFloat32, 41), b = testing::random({20}, kFloat32, 42);
  const quantized::LinearPackedParams p = quantized::linear_prepack(w, b);
  testing::expect_traced_equals_eager(
      [] { return std::vector<Tensor>{testing::random({5, 33}, kFloat32, 43)}; },
      [&](std::vector<Tensor>& in) { return std::vector<Tensor>{relu(quantized::linear_dynamic(in[0] * 2, p)) + 1}; });
}

TEST(QuantizedLinear, BadInput) {
  const quantized::LinearPackedParams p = quantized::linear_prepack(randn({4, 6}), randn({4}));
  SCOPED_TRACE(1);
  testing::expect_error([&] { quantized::linear_dynamic(randn({3, 5}), p); },
                        {"quantized_linear_dynamic", "[3, 5]", "6 input features"});
  SCOPED_TRACE(2);
  testing::expect_error([&] { quantized::linear_dynamic(ones({3, 6}, kInt64), p).sum().item<float>(); },
                        {"quantized_linear_dynamic", "float32", "int64"});
  SCOPED_TRACE(3);
  testing::expect_error([&] { quantized::linear_dynamic(full({2, 6}, NAN), p).sum().item<float>(); },
                        {"quantized_linear_dynamic", "NaN"});
  SCOPED_TRACE(4);
  testing::expect_error([] { quantized::linear_prepack(randn({4})); }, {"linear_prepack", "[4]"});
  SCOPED_TRACE(5);
  testing::expect_error([] { quantized::linear_prepack(randn({4, 3}), randn({3})); }, {"linear_prepack", "bias [4]"});
  SCOPED_TRACE(6);
  testing::expect_error([] { quantized::linear_prepack(ones({4, 3}, kInt64)); }, {"linear_prepack", "int64"});
  SCOPED_TRACE(7);
  testing::expect_error([] { quantized::linear_dynamic(randn({2, 2}), quantized::LinearPackedParams{}); },
                        {"linear_dynamic", "empty"});
}

// x's windows as rows (output pixel-major), in the packed weight's (i, j, c) order, zero padding.
Tensor window_rows(const Tensor& x, int64_t kh, int64_t kw, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation) {
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
  const int64_t ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
  const std::vector<double> xv = testing::values(x);
  std::vector<float> rows;
  for (int64_t n = 0; n < b; ++n)
    for (int64_t py = 0; py < oh; ++py)
      for (int64_t px = 0; px < ow; ++px)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j)
            for (int64_t ch = 0; ch < c; ++ch) {
              const int64_t yy = py * stride[0] - padding[0] + i * dilation[0];
              const int64_t xx = px * stride[1] - padding[1] + j * dilation[1];
              const bool in = yy >= 0 && yy < h && xx >= 0 && xx < w;
              rows.push_back(in ? float(xv[size_t(((n * c + ch) * h + yy) * w + xx)]) : 0.f);
            }
  return tensor(rows).reshape({b, oh * ow, c * kh * kw});
}

TEST(QuantizedConv2d, IsTheLinearLayerOverItsWindows) {
  struct Shape {
    DimVector x;
    int64_t out, kh, kw;
    DimVector stride, padding, dilation;
  };
  const Shape shapes[] = {{{2, 3, 9, 8}, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}},
                          {{1, 4, 7, 10}, 33, 2, 3, {2, 1}, {0, 2}, {1, 2}},
                          {{3, 1, 5, 5}, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}},
                          {{1, 2, 4, 4}, 3, 4, 4, {1, 1}, {0, 0}, {1, 1}}};
  uint64_t seed = 80;
  for (const Shape& s : shapes) {
    const Tensor x = testing::random(s.x, kFloat32, seed++, -1, 3);
    const Tensor w = testing::random({s.out, s.x[1], s.kh, s.kw}, kFloat32, seed++), b = testing::random({s.out}, kFloat32, seed++);
    const quantized::Conv2dPackedParams p = quantized::conv2d_prepack(w, b);
    const Tensor y = quantized::conv2d_dynamic(x, p, s.stride, s.padding, s.dilation);
    const Tensor rows = window_rows(x, s.kh, s.kw, s.stride, s.padding, s.dilation);
    const Tensor want = quantized::linear_dynamic(rows, p.linear).transpose(1, 2).reshape(y.sizes());
    EXPECT_TRUE(same(y, want)) << shape_str(s.x);
    // docs/QUANTIZATION.md's bound, each term at its largest: x in [-1, 3), |w| < 2
    const double k = double(s.x[1] * s.kh * s.kw), sx = 4.0 / 255, sw = 2.0 / 127.5;
    testing::expect_tensors_close(y, conv2d(x, w, b, s.stride, s.padding, s.dilation, 1), 0,
                                  k * (3 * sw / 2 + 2 * sx / 2 + sx * sw / 4) + 1e-5);
  }
}

TEST(QuantizedConv2d, LayersInEveryPaddingModeAndBadInput) {
  manual_seed(9);
  const Tensor x = testing::random({2, 3, 8, 8}, kFloat32, 91);
  for (PadMode mode : {kZeros, kReflect, kCircular}) {
    nn::Conv2d conv(nn::Conv2dOptions(3, 6, 3).padding(1).stride(2).padding_mode(mode));
    const Tensor want = conv(x);
    conv->use_int8();
    testing::expect_tensors_close(conv(x), want, 0.05, 0.1);
  }
  nn::Conv2d grouped(nn::Conv2dOptions(4, 4, 3).groups(2));
  testing::expect_error([&] { grouped->use_int8(); }, {"Conv2d", "groups 1", "2"});
  nn::Sequential model(nn::Conv2d(4, 4, 1), grouped);
  testing::expect_error([&] { quantize_dynamic(model, QuantizeDynamicOptions().conv2d(true).inplace(true)); },
                        {"quantize_dynamic", "groups 2"});
  EXPECT_FALSE(model->at<nn::Conv2dImpl>(0)->uses_int8());  // nothing half-switched
  const quantized::Conv2dPackedParams p = quantized::conv2d_prepack(randn({2, 3, 3, 3}));
  testing::expect_error([&] { quantized::conv2d_dynamic(randn({1, 4, 5, 5}), p); }, {"conv2d_dynamic", "[1, 4, 5, 5]", "3 input channels"});
  testing::expect_error([&] { quantized::conv2d_dynamic(randn({1, 3, 2, 2}), p); }, {"quantized_conv2d_dynamic", "smaller than the kernel"});
  testing::expect_error([] { quantized::conv2d_prepack(randn({2, 3})); }, {"conv2d_prepack", "[2, 3]"});
}

TEST(QuantizedConv2d, TracedEqualsEager) {
  const quantized::Conv2dPackedParams p = quantized::conv2d_prepack(testing::random({4, 2, 3, 3}, kFloat32, 95));
  testing::expect_traced_equals_eager(
      [] { return std::vector<Tensor>{testing::random({2, 2, 6, 7}, kFloat32, 96)}; },
      [&](std::vector<Tensor>& in) {
        return std::vector<Tensor>{relu(quantized::conv2d_dynamic(in[0] + 1, p, {1, 1}, {1, 1})).sum({1})};
      });
}

TEST(QuantizeDynamic, CopiesASequentialAndLeavesTheOriginalFloat) {
  manual_seed(5);
  nn::Sequential model(nn::Linear(12, 30), nn::ReLU(), nn::Linear(30, 4));
  const Tensor x = testing::random({8, 12}, kFloat32, 51);
  const Tensor want = model->forward(x);
  nn::Sequential q = quantize_dynamic(model);
  EXPECT_FALSE(model->at<nn::LinearImpl>(0)->uses_int8());
  EXPECT_TRUE(q->at<nn::LinearImpl>(0)->uses_int8());
  EXPECT_TRUE(q->at<nn::LinearImpl>(2)->uses_int8());
  EXPECT_NE(q->at<nn::LinearImpl>(0)->weight.data_ptr<float>(), model->at<nn::LinearImpl>(0)->weight.data_ptr<float>());
  testing::expect_tensors_close(q->forward(x), want, 0.05, 0.05);
  EXPECT_FALSE(same(q->forward(x), want));  // it did run in INT8
  testing::expect_tensors_close(model->forward(x), want, 0, 0);
}

struct NetImpl : nn::Module {
  NetImpl() : fc1(register_module("fc1", nn::Linear(5, 7))), fc2(register_module("fc2", nn::Linear(7, 2))) {}
  Tensor forward(const Tensor& x) { return fc2(tanh(fc1(x))); }
  nn::Linear fc1, fc2;
};
NNVM_MODULE(Net);

TEST(QuantizeDynamic, AUserModuleByItsDefaultConstructorOrInPlace) {
  Net net;
  const Tensor x = testing::random({3, 5}, kFloat32, 61);
  const Tensor want = net->forward(x);
  Net copy = quantize_dynamic(net);
  EXPECT_TRUE(copy->fc1->uses_int8() && copy->fc2->uses_int8());
  EXPECT_FALSE(net->fc1->uses_int8());
  testing::expect_tensors_close(copy->forward(x), want, 0.05, 0.05);
  Net same = quantize_dynamic(net, QuantizeDynamicOptions().inplace(true));
  EXPECT_EQ(same.get(), net.get());
  EXPECT_TRUE(net->fc1->uses_int8());
  net->fc1->use_int8(false);
  net->fc2->use_int8(false);
  testing::expect_tensors_close(net->forward(x), want, 0, 0);
}

TEST(QuantizeDynamic, RepacksAWeightThatChanged) {
  nn::Linear lin(8, 3);
  const Tensor x = testing::random({4, 8}, kFloat32, 71);
  lin->use_int8();
  const Tensor before = lin(x);
  {
    const NoGradGuard no_grad;
    lin->weight.mul_(-2);
  }
  testing::expect_tensors_close(lin(x), linear(x, lin->weight, lin->bias), 0.05, 0.05);
  EXPECT_FALSE(same(lin(x), before));
  lin->weight = lin->weight.detach().clone();  // a new tensor under the same name
  testing::expect_tensors_close(lin(x), linear(x, lin->weight, lin->bias), 0.05, 0.05);
}

}  // namespace
}  // namespace nnvm

namespace nnvm {
namespace {

namespace nn = nnvm::nn;

TEST(QuantizeStatic, GivenTheInputsOwnParametersItIsTheDynamicLayer) {
  const Tensor x = testing::random({6, 40}, kFloat32, 101, -1, 3);
  const quantized::LinearPackedParams p = quantized::linear_prepack(testing::random({9, 40}, kFloat32, 102));
  const float lo = std::min(0.f, x.min().item<float>()), hi = std::max(0.f, x.max().item<float>());
  const double scale = (hi - lo) / 255.f;
  const auto zero_point = int64_t(std::nearbyint(-lo / float(scale)));
  EXPECT_TRUE(quantized::linear(x, p, {scale, zero_point}).allclose(quantized::linear_dynamic(x, p), 0, 0));
  // past the calibrated range the input saturates: x + 100 and x + 200 quantize alike
  const quantized::InputQParams narrow{scale, zero_point};
  EXPECT_TRUE(quantized::linear(x + 100, p, narrow).allclose(quantized::linear(x + 200, p, narrow), 0, 0));
  testing::expect_error([&] { quantized::linear(x, p, {0.0, 3}); }, {"quantized::linear", "scale 0"});
  testing::expect_error([&] { quantized::linear(x, p, {0.1, 300}); }, {"quantized::linear", "zero point 300"});
}

TEST(QuantizeStatic, TracedEqualsEager) {
  const quantized::Conv2dPackedParams p = quantized::conv2d_prepack(testing::random({3, 2, 3, 3}, kFloat32, 111));
  testing::expect_traced_equals_eager(
      [] { return std::vector<Tensor>{testing::random({1, 2, 5, 5}, kFloat32, 112)}; },
      [&](std::vector<Tensor>& in) {
        return std::vector<Tensor>{quantized::conv2d(in[0] * 0.5, p, {0.02, 100}, {1, 1}, {1, 1}).relu()};
      });
}

TEST(QuantizeStatic, PrepareCalibrateConvert) {
  manual_seed(12);
  // the last convolution (9 products per output) is left float32; it is never called
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(1)), nn::ReLU(), nn::Flatten(),
                       nn::Linear(4 * 6 * 6, 5), nn::Conv2d(nn::Conv2dOptions(1, 2, 3)));
  const auto head = [](nn::Sequential& s, const Tensor& x) {  // the first four layers
    Tensor h = x;
    for (size_t i = 0; i < 4; ++i) h = s[i]->as<nn::Conv2dImpl>()  ? s->at<nn::Conv2dImpl>(i)->forward(h)
                                       : s[i]->as<nn::LinearImpl>() ? s->at<nn::LinearImpl>(i)->forward(h)
                                       : i == 1                     ? relu(h)
                                                                    : h.flatten(1);
    return h;
  };
  std::vector<Tensor> batches;
  for (uint64_t i = 0; i < 4; ++i) batches.push_back(testing::random({3, 4, 6, 6}, kFloat32, 120 + i));
  nn::Sequential prepared = quantization::prepare(model);
  EXPECT_TRUE(prepared->at<nn::Conv2dImpl>(0)->observes_inputs());
  EXPECT_FALSE(prepared->at<nn::Conv2dImpl>(4)->observes_inputs());  // memory-bound: left float32
  EXPECT_FALSE(model->at<nn::Conv2dImpl>(0)->observes_inputs());
  testing::expect_error([&] { quantization::convert(prepared); }, {"convert", "layer '0'", "no input"});
  EXPECT_FALSE(prepared->at<nn::Conv2dImpl>(0)->uses_int8());  // nothing half-converted
  for (const Tensor& b : batches)  // calibration computes in float32
    EXPECT_TRUE(head(prepared, b).allclose(head(model, b), 0, 0));
  EXPECT_EQ(prepared->at<nn::LinearImpl>(3)->inputs_observed(), 4);
  quantization::convert(prepared);
  EXPECT_TRUE(prepared->at<nn::Conv2dImpl>(0)->uses_int8() && prepared->at<nn::LinearImpl>(3)->uses_int8());
  for (const Tensor& b : batches) testing::expect_tensors_close(head(prepared, b), head(model, b), 0.05, 0.05);
  EXPECT_FALSE(head(prepared, batches[0]).allclose(head(model, batches[0]), 0, 0));  // it did run in INT8
}

TEST(QuantizeStatic, ObserversAndBadOptions) {
  nn::Linear lin(4, 2);
  testing::expect_error([&] { lin->observe_inputs(std::make_shared<quantization::MinMaxObserver>(kQInt8)); },
                        {"observe_inputs", "quint8", "qint8"});
  testing::expect_error([&] { lin->use_int8(-1.0, 0); }, {"use_int8", "scale -1"});
  nn::Sequential model(nn::Linear(8, 8));
  nn::Sequential prepared = quantization::prepare(
      model, quantization::PrepareOptions().observer([] { return std::make_shared<quantization::PercentileObserver>(99.0); }));
  prepared->forward(testing::random({50, 8}, kFloat32, 131));
  quantization::convert(prepared);
  EXPECT_TRUE(prepared->at<nn::LinearImpl>(0)->uses_int8());
  nn::Sequential grouped(nn::Conv2d(nn::Conv2dOptions(2, 2, 1).groups(2)));
  testing::expect_error([&] { quantization::prepare(grouped); }, {"prepare", "groups 2"});
}

}  // namespace
}  // namespace nnvm
