// Quantized tensors (core/quantize.h): quantize and dequantize against a
// scalar reference, per channel, int_repr, views, the errors, eager against traced.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_error;
using testing::random;

// PyTorch's quantize_val, element by element.
int64_t quantize_ref(float x, double scale, int64_t zero_point, DType dtype) {
  const float v = float(zero_point) + std::nearbyint(x * (1.0f / float(scale)));
  if (std::isnan(v) || v <= float(quant_min(dtype))) return quant_min(dtype);
  if (v >= float(quant_max(dtype))) return quant_max(dtype);
  return int64_t(v);
}

std::vector<int64_t> ints(const Tensor& q) { return q.int_repr().to(kInt64).to_vector<int64_t>(); }

TEST(QuantizedDType, Basics) {
  EXPECT_EQ(itemsize(kQInt8), 1u);
  EXPECT_EQ(itemsize(kQUInt8), 1u);
  EXPECT_EQ(itemsize(kQInt32), 4u);
  EXPECT_EQ(dtype_name(kQInt8), "qint8");
  EXPECT_EQ(dtype_name(kQUInt8), "quint8");
  EXPECT_EQ(dtype_name(kQInt32), "qint32");
  EXPECT_TRUE(is_quantized(kQUInt8));
  EXPECT_FALSE(is_quantized(kInt8));
  EXPECT_FALSE(is_floating(kQInt8) || is_integral(kQInt8));
  EXPECT_EQ(underlying(kQUInt8), kUInt8);
  expect_error([] { promote_types(kQInt8, kFloat32); }, {"promote_types", "qint8", "dequantize"});
  EXPECT_EQ(quant_min(kQInt32), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(quant_max(kQUInt8), 255);
}

TEST(Quantize, PerTensorMatchesReference) {
  struct Case {
    DType dtype;
    double scale;
    int64_t zero_point;
  };
  for (const Case c : {Case{kQInt8, 0.05, 3}, Case{kQUInt8, 0.02, 128}, Case{kQInt32, 1e-3, -7}}) {
    for (int64_t n : {0, 1, 7, 1000}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(c.dtype) << " n=" << n);
      const Tensor x = random({n}, kFloat32, uint64_t(n) + 1, -4.0, 4.0);
      const Tensor q = quantize_per_tensor(x, c.scale, c.zero_point, c.dtype);
      EXPECT_EQ(q.dtype(), c.dtype);
      EXPECT_TRUE(q.is_quantized());
      EXPECT_EQ(q.qscheme(), kPerTensorAffine);
      EXPECT_EQ(q.q_scale(), c.scale);
      EXPECT_EQ(q.q_zero_point(), c.zero_point);
      EXPECT_EQ(q.int_repr().dtype(), underlying(c.dtype));
      const std::vector<float> xs = x.to_vector<float>();
      const std::vector<int64_t> qs = ints(q);
      const std::vector<float> dq = q.dequantize().to_vector<float>();
      ASSERT_EQ(qs.size(), xs.size());
      for (size_t i = 0; i < xs.size(); ++i) {
        const int64_t want = quantize_ref(xs[i], c.scale, c.zero_point, c.dtype);
        ASSERT_EQ(qs[i], want) << "x = " << xs[i];
        EXPECT_EQ(dq[i], float(c.scale) * float(want - c.zero_point));
        const double lo = (double(quant_min(c.dtype)) - double(c.zero_point)) * c.scale;
        const double hi = (double(quant_max(c.dtype)) - double(c.zero_point)) * c.scale;
        if (xs[i] >= lo && xs[i] <= hi) {
          EXPECT_LE(std::fabs(dq[i] - xs[i]), c.scale / 2 * (1 + 1e-5)) << xs[i];
        }
      }
    }
  }
}

TEST(Quantize, TiesRoundHalfToEven) {
  const Tensor x = tensor({0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5});
  EXPECT_EQ(ints(quantize_per_tensor(x, 1.0, 0, kQInt8)), (std::vector<int64_t>{0, 2, 2, 4, 0, -2, -2}));
  // x / 0.5 = 2x exactly: 0.25 -> 0.5 -> 0, 0.75 -> 1.5 -> 2, plus the zero point
  EXPECT_EQ(ints(quantize_per_tensor(tensor({0.25, 0.75, 1.25}), 0.5, 10, kQUInt8)),
            (std::vector<int64_t>{10, 12, 12}));
}

TEST(Quantize, Saturates) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = tensor(std::vector<float>{100.f, -100.f, inf, -inf, nan, 12.7f, -12.8f});
  EXPECT_EQ(ints(quantize_per_tensor(x, 0.1, 0, kQInt8)),
            (std::vector<int64_t>{127, -128, 127, -128, -128, 127, -128}));
  EXPECT_EQ(ints(quantize_per_tensor(x, 0.1, 10, kQUInt8)), (std::vector<int64_t>{255, 0, 255, 0, 0, 137, 0}));
  const Tensor big = tensor(std::vector<float>{3e9f, -3e9f, inf, nan});
  EXPECT_EQ(ints(quantize_per_tensor(big, 1.0, 0, kQInt32)),
            (std::vector<int64_t>{INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN}));
}

TEST(Quantize, OtherFloatInputsAreConvertedToFloat32) {
  const Tensor x = random({33}, kFloat32, 5);
  const std::vector<int64_t> want = ints(quantize_per_tensor(x, 0.03, 1, kQInt8));
  for (DType t : {kFloat64, kFloat16, kBFloat16}) {
    Tensor xt;
    {
      EagerGuard eager;  // stored in t: a fused x.to(t).to(kFloat32) need not round through t
      xt = x.to(t);
    }
    EXPECT_EQ(ints(quantize_per_tensor(xt, 0.03, 1, kQInt8)),
              ints(quantize_per_tensor(xt.to(kFloat32), 0.03, 1, kQInt8)));
  }
  EXPECT_EQ(ints(quantize_per_tensor(x.to(kFloat64), 0.03, 1, kQInt8)), want);
}

TEST(Quantize, NonContiguousInputs) {
  const Tensor x = random({6, 8}, kFloat32, 9);
  for (const Tensor& v : {x.t(), x.slice(1, 0, 8, 3), x.select(1, 2), x.expand({2, 6, 8})}) {
    EXPECT_EQ(ints(quantize_per_tensor(v, 0.04, -2, kQInt8)),
              ints(quantize_per_tensor(v.contiguous(), 0.04, -2, kQInt8)));
  }
}

TEST(Quantize, PerChannel) {
  const Tensor x = random({3, 4, 2}, kFloat32, 11, -3.0, 3.0);
  const std::vector<float> xs = x.to_vector<float>();
  for (int64_t axis : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "axis " << axis);
    const int64_t channels = x.size(axis);
    std::vector<double> scales;
    std::vector<int64_t> zps;
    for (int64_t c = 0; c < channels; ++c) {
      scales.push_back(0.01 * double(c + 1));
      zps.push_back(c - 1);
    }
    const Tensor q = quantize_per_channel(x, tensor(scales), tensor(zps), axis, kQInt8);
    EXPECT_EQ(q.qscheme(), kPerChannelAffine);
    EXPECT_EQ(q.q_per_channel_axis(), axis);
    EXPECT_EQ(q.q_per_channel_scales().dtype(), kFloat64);
    EXPECT_EQ(q.q_per_channel_scales().to_vector<double>(), scales);
    EXPECT_EQ(q.q_per_channel_zero_points().dtype(), kInt64);
    EXPECT_EQ(q.q_per_channel_zero_points().to_vector<int64_t>(), zps);
    const std::vector<int64_t> qs = ints(q);
    const std::vector<float> dq = q.dequantize().to_vector<float>();
    const int64_t inner = axis == 0 ? 8 : 2;
    for (size_t i = 0; i < xs.size(); ++i) {
      const size_t c = size_t((int64_t(i) / inner) % channels);
      ASSERT_EQ(qs[i], quantize_ref(xs[i], scales[c], zps[c], kQInt8)) << i;
      EXPECT_EQ(dq[i], float(double(qs[i] - zps[c]) * scales[c]));
    }
    // float32 scales and int32 zero points are accepted, as float64 and int64
    EXPECT_EQ(ints(quantize_per_channel(x, tensor(scales).to(kFloat32), tensor(zps).to(kInt32), axis, kQInt8)),
              ints(quantize_per_channel(x, tensor(scales).to(kFloat32).to(kFloat64), tensor(zps), axis, kQInt8)));
    // clone keeps the quantizer; views are refused (their axis would move)
    const Tensor c = q.clone();
    EXPECT_EQ(c.q_per_channel_axis(), axis);
    EXPECT_EQ(ints(c), qs);
    expect_error([&] { (void)q.transpose(0, 1); },
                 {"transpose: input 0 is a quantized tensor (qint8, per-channel",
                  "takes per-tensor quantized tensors only", "dequantize() it first"});
  }
}

TEST(Quantize, IntRepr) {
  const Tensor q = quantize_per_tensor(tensor({-1.0, 0.0, 0.5, 2.0}), 0.5, 3, kQUInt8);
  const Tensor r = q.int_repr();
  EXPECT_EQ(r.dtype(), kUInt8);
  EXPECT_FALSE(r.is_quantized());
  EXPECT_EQ(r.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 4, 7}));
  r.fill_(0);  // a copy: the quantized tensor keeps its integers
  EXPECT_EQ(ints(q), (std::vector<int64_t>{1, 3, 4, 7}));
}

TEST(Quantize, MakeQuantizedTensorFromIntegers) {
  const Tensor i8 = tensor(std::vector<int8_t>{-3, 0, 5, 127});
  const Tensor q = _make_per_tensor_quantized_tensor(i8, 0.25, -1);
  EXPECT_EQ(q.dtype(), kQInt8);
  EXPECT_EQ(q.q_scale(), 0.25);
  EXPECT_EQ(q.q_zero_point(), -1);
  EXPECT_EQ(q.dequantize().to_vector<float>(), (std::vector<float>{-0.5f, 0.25f, 1.5f, 32.0f}));
  i8.fill_(0);  // a copy
  EXPECT_EQ(ints(q), (std::vector<int64_t>{-3, 0, 5, 127}));
  EXPECT_EQ(_make_per_tensor_quantized_tensor(tensor(std::vector<uint8_t>{1}), 1.0, 0).dtype(), kQUInt8);
  EXPECT_EQ(_make_per_tensor_quantized_tensor(tensor(std::vector<int32_t>{1}), 1.0, 0).dtype(), kQInt32);
  const Tensor pc = _make_per_channel_quantized_tensor(tensor(std::vector<int8_t>{1, 2, 3, 4}).view({2, 2}),
                                                       tensor({0.5, 2.0}), tensor({0, 1}), 1);
  EXPECT_EQ(pc.dequantize().to_vector<float>(), (std::vector<float>{0.5f, 2.0f, 1.5f, 6.0f}));
}

TEST(Quantize, ViewsKeepThePerTensorQuantizer) {
  const Tensor x = random({4, 6}, kFloat32, 13);
  const Tensor q = quantize_per_tensor(x, 0.02, 5, kQInt8);
  const Tensor dq = q.dequantize();
  const auto same = [&](const Tensor& v, const Tensor& want) {
    EXPECT_EQ(v.dtype(), kQInt8);
    EXPECT_EQ(v.q_scale(), 0.02);
    EXPECT_EQ(v.q_zero_point(), 5);
    EXPECT_EQ(v.dequantize().to_vector<float>(), want.contiguous().to_vector<float>());
  };
  same(q.view({24}), dq.view({24}));
  same(q.reshape({3, 8}), dq.reshape({3, 8}));
  same(q.transpose(0, 1), dq.transpose(0, 1));
  same(q.t().contiguous(), dq.t());
  same(q.permute({1, 0}), dq.permute({1, 0}));
  same(q.slice(1, 1, 5, 2), dq.slice(1, 1, 5, 2));
  same(q.select(0, 2), dq.select(0, 2));
  same(q[1], dq[1]);
  same(q.unsqueeze(0).squeeze(0), dq);
  same(q.clone(), dq);
  same(q.detach(), dq);
  same(q.t().reshape({24}), dq.t().reshape({24}));  // reshape of a non-contiguous view copies
}

TEST(Quantize, OtherOpsRefuseQuantizedInputs) {
  const Tensor q = quantize_per_tensor(tensor({1.0, 2.0}), 0.1, 3, kQInt8);
  const Tensor x = tensor({1.0f, 2.0f});
  expect_error([&] { (void)(q + x); },
               {"add: input 0 is a quantized tensor (qint8, per-tensor scale 0.1 zero point 3); "
                "dequantize() it first"});
  expect_error([&] { (void)(x * q); }, {"mul: input 1 is a quantized tensor (qint8"});
  expect_error([&] { (void)q.sum(); }, {"input 0 is a quantized tensor", "dequantize() it first"});
  expect_error([&] { (void)q.relu(); }, {"input 0 is a quantized tensor"});
  expect_error([&] { (void)q.to(kFloat32); }, {"to", "qint8", "dequantize()"});
  expect_error([&] { (void)x.to(kQInt8); }, {"to", "quantize_per_tensor()"});
  expect_error([&] { x.copy_(q); }, {"copy_", "quantized", "dequantize()"});
  expect_error([&] { q.fill_(1); }, {"cannot write into a quantized tensor (qint8, per-tensor scale 0.1"});
  expect_error([&] { q.add_(1); }, {"input 0 is a quantized tensor"});
  expect_error([&] { (void)q[0].item<float>(); }, {"item", "qint8"});
  std::ostringstream printed;
  printed << q;  // dequantized values, then the quantizer
  EXPECT_NE(printed.str().find("CPUQInt8Type{2}, qint8, per-tensor scale 0.1 zero point 3"), std::string::npos)
      << printed.str();
}

TEST(Quantize, Errors) {
  const Tensor x = tensor({1.0f, 2.0f, 3.0f});
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()})
    expect_error([&] { (void)quantize_per_tensor(x, bad, 0, kQInt8); },
                 {"quantize_per_tensor", "scale must be positive and finite"});
  expect_error([&] { (void)quantize_per_tensor(x, 0.1, 128, kQInt8); },
               {"quantize_per_tensor", "zero point 128 is outside the range [-128, 127] of qint8"});
  expect_error([&] { (void)quantize_per_tensor(x, 0.1, -1, kQUInt8); }, {"zero point -1", "[0, 255] of quint8"});
  expect_error([&] { (void)quantize_per_tensor(x, 0.1, 0, kInt8); },
               {"quantize_per_tensor", "expected a quantized dtype", "int8"});
  expect_error([&] { (void)quantize_per_tensor(x, 0.1, 0, kFloat32); }, {"expected a quantized dtype"});
  expect_error([&] { (void)quantize_per_tensor(tensor({1, 2}), 0.1, 0, kQInt8); },
               {"quantize_per_tensor", "expected a floating-point tensor but got int64"});
  expect_error([&] { (void)quantize_per_tensor(Tensor(), 0.1, 0, kQInt8); }, {"quantize_per_tensor", "undefined"});
  const Tensor q = quantize_per_tensor(x, 0.1, 0, kQInt8);
  expect_error([&] { (void)quantize_per_tensor(q, 0.1, 0, kQInt8); },
               {"expected a floating-point tensor but got qint8"});

  const Tensor m = tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}).view({2, 3});
  const Tensor s2 = tensor({0.1, 0.2}), z2 = tensor({0, 0});
  expect_error([&] { (void)quantize_per_channel(m, tensor({0.1, 0.2, 0.3}), z2, 0, kQInt8); },
               {"quantize_per_channel", "expected floating-point scales of shape [2]", "float32 of shape [3]"});
  expect_error([&] { (void)quantize_per_channel(m, s2, tensor({0, 0, 0}), 0, kQInt8); },
               {"expected integer zero points of shape [2]", "of shape [3]"});
  expect_error([&] { (void)quantize_per_channel(m, tensor({1, 2}), z2, 0, kQInt8); },
               {"expected floating-point scales", "int64"});
  expect_error([&] { (void)quantize_per_channel(m, s2, tensor({0.0, 0.0}), 0, kQInt8); },
               {"expected integer zero points", "float32"});
  for (int64_t axis : {2, -1})
    expect_error([&] { (void)quantize_per_channel(m, s2, z2, axis, kQInt8); },
                 {"quantize_per_channel", "is out of range for a tensor of shape [2, 3]"});
  expect_error([&] { (void)quantize_per_channel(m, tensor({0.1, -0.2}), z2, 0, kQInt8); },
               {"scale -0.2 of channel 1 must be positive and finite"});
  expect_error([&] { (void)quantize_per_channel(m, s2, tensor({0, 300}), 0, kQUInt8); },
               {"zero point 300 of channel 1 is outside the range [0, 255] of quint8"});
  expect_error([&] { (void)quantize_per_channel(m, s2, z2, 0, kInt32); }, {"expected a quantized dtype"});

  const Tensor pc = quantize_per_channel(m, s2, z2, 0, kQInt8);
  expect_error([&] { (void)pc.q_scale(); },
               {"q_scale", "quantized per channel (qint8, per-channel along axis 0 (2 channels))"});
  expect_error([&] { (void)pc.q_zero_point(); }, {"q_zero_point", "q_per_channel_zero_points()"});
  expect_error([&] { (void)q.q_per_channel_scales(); }, {"q_per_channel_scales", "quantized per tensor"});
  expect_error([&] { (void)x.int_repr(); }, {"int_repr", "expected a quantized tensor but got float32 of shape [3]"});
  expect_error([&] { (void)x.dequantize(); }, {"dequantize", "expected a quantized tensor but got float32"});
  expect_error([&] { (void)x.qscheme(); }, {"qscheme", "expected a quantized tensor"});
  expect_error([&] { (void)_make_per_tensor_quantized_tensor(x, 0.1, 0); },
               {"_make_per_tensor_quantized_tensor", "expected an int8, uint8 or int32 tensor but got float32"});
  expect_error([&] { (void)_make_per_tensor_quantized_tensor(tensor({1}), 0.1, 0); }, {"but got int64"});
  // a quantized dtype made without a quantizer has nothing to dequantize with
  const Tensor bare = empty({2}, kQInt8);
  expect_error([&] { (void)bare.dequantize(); }, {"dequantize", "has no scale or zero point"});
  expect_error([&] { (void)(bare + 1); }, {"add.Scalar: input 0 is a quantized tensor (qint8); dequantize() it first"});
}

// One program in both modes: the recorded quantize, view, int_repr and
// dequantize nodes compute what the eager kernels do, cold, compiled and replayed.
TEST(Quantize, TracedEqualsEager) {
  testing::expect_traced_equals_eager(
      [] { return std::vector<Tensor>{random({5, 7}, kFloat32, 17, -3.0, 3.0)}; },
      [](std::vector<Tensor>& in) {
        const Tensor x = (in[0] * 1.5).t();
        const Tensor q = quantize_per_tensor(x, 0.03, 4, kQInt8);
        const Tensor qc = quantize_per_channel(x, tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}),
                                               tensor({0, 1, 2, 3, 4, 5, 6}), 0, kQUInt8);
        const Tensor v = q.slice(0, 1, 6, 2).transpose(0, 1);
        return std::vector<Tensor>{q.int_repr(),  v.int_repr(),           v.dequantize() * 2,
                                   qc.int_repr(), qc.dequantize().exp(), q.clone().dequantize() + 1};
      });
}

}  // namespace
}  // namespace nnvm
