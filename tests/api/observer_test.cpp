// Observers (nnvm/quantization/observer.h) against qparams computed by hand
// with PyTorch's formulas, in float32.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm::quantization {
namespace {

using nnvm::testing::expect_error;

void expect_qparams(const std::tuple<Tensor, Tensor>& got, const std::vector<float>& scales,
                    const std::vector<int64_t>& zero_points) {
  const auto& [s, z] = got;
  EXPECT_EQ(s.dtype(), kFloat32);
  EXPECT_EQ(z.dtype(), kInt64);
  EXPECT_EQ(s.to_vector<float>(), scales);
  EXPECT_EQ(z.to_vector<int64_t>(), zero_points);
}

Tensor floats(std::initializer_list<float> v) { return tensor(std::vector<float>(v)); }

TEST(Observer, MinMaxAffine) {
  MinMaxObserver obs;  // quint8, per-tensor affine
  EXPECT_EQ(obs.quant_min(), 0);
  EXPECT_EQ(obs.quant_max(), 255);
  obs(floats({-1, 2}));
  obs.forward(floats({0.5, 3}));
  obs(floats({}));  // an empty batch changes nothing
  EXPECT_EQ(obs.min_val(), -1.0f);
  EXPECT_EQ(obs.max_val(), 3.0f);
  // scale = (3 - -1) / 255, zero point = 0 - round(-1 / scale) = round(63.75) = 64
  expect_qparams(obs.calculate_qparams(), {4.0f / 255.0f}, {64});

  MinMaxObserver q8(kQInt8);
  q8(floats({-1, 3}));
  expect_qparams(q8.calculate_qparams(), {4.0f / 255.0f}, {-128 + 64});

  MinMaxObserver positive;  // the range always holds 0
  positive(floats({1, 2}));
  expect_qparams(positive.calculate_qparams(), {2.0f / 255.0f}, {0});

  MinMaxObserver zeros_only;  // the scale is at least float32's epsilon
  zeros_only(floats({0, 0}));
  expect_qparams(zeros_only.calculate_qparams(), {std::numeric_limits<float>::epsilon()}, {0});

  expect_qparams(MinMaxObserver().calculate_qparams(), {1.0f}, {0});  // nothing observed
}

TEST(Observer, MinMaxSymmetric) {
  MinMaxObserver q8(kQInt8, kPerTensorSymmetric);
  q8(floats({-1.5, 0.25}));
  expect_qparams(q8.calculate_qparams(), {1.5f / 127.5f}, {0});
  MinMaxObserver u8(kQUInt8, kPerTensorSymmetric);
  u8(floats({-0.5, 2}));
  expect_qparams(u8.calculate_qparams(), {2.0f / 127.5f}, {128});
}

TEST(Observer, ReduceRange) {
  MinMaxObserver q8(kQInt8, kPerTensorAffine, /*reduce_range=*/true);
  EXPECT_EQ(q8.quant_min(), -64);
  EXPECT_EQ(q8.quant_max(), 63);
  q8(floats({-1, 1}));
  // scale 2 / 127, zero point -64 - round(-1 / scale) = -64 + round(63.5) = 0
  const float scale = 2.0f / 127.0f;
  expect_qparams(q8.calculate_qparams(), {scale}, {-64 - int64_t(std::nearbyint(-1.0f / scale))});
  EXPECT_EQ(MinMaxObserver(kQUInt8, kPerTensorAffine, true).quant_max(), 127);
}

TEST(Observer, MovingAverage) {
  MovingAverageMinMaxObserver obs(0.5);
  obs(floats({-2, 2}));  // the first batch sets the bounds
  obs(floats({0, 4}));   // then m += 0.5 (batch - m)
  EXPECT_EQ(obs.min_val(), -1.0f);
  EXPECT_EQ(obs.max_val(), 3.0f);
  expect_qparams(obs.calculate_qparams(), {4.0f / 255.0f}, {64});
  MovingAverageMinMaxObserver slow;  // 0.01
  slow(floats({-1, 1}));
  slow(floats({-2, 2}));
  EXPECT_EQ(slow.min_val(), -1.0f + 0.01f * (-2.0f - -1.0f));
}

TEST(Observer, PerChannel) {
  const Tensor x = floats({-1, 0, 2, 1, -4, 3}).view({2, 3});
  PerChannelMinMaxObserver sym(1, kQInt8, kPerChannelSymmetric);
  sym(x);
  expect_qparams(sym.calculate_qparams(), {1.0f / 127.5f, 4.0f / 127.5f, 3.0f / 127.5f}, {0, 0, 0});

  PerChannelMinMaxObserver affine(1);  // quint8, per-channel affine
  affine(x);
  const float s0 = 2.0f / 255.0f, s1 = 4.0f / 255.0f, s2 = 3.0f / 255.0f;
  const int64_t z0 = -int64_t(std::nearbyint(-1.0f / s0));  // round(127.5) = 128
  const int64_t z1 = std::min<int64_t>(255, -int64_t(std::nearbyint(-4.0f / s1)));
  expect_qparams(affine.calculate_qparams(), {s0, s1, s2}, {z0, z1, 0});

  PerChannelMinMaxObserver rows(0, kQInt8, kPerChannelSymmetric);  // axis 0, then a second batch
  rows(x);
  rows(floats({5, 0, 0, 0, 0, -8}).view({2, 3}));
  expect_qparams(rows.calculate_qparams(), {5.0f / 127.5f, 8.0f / 127.5f}, {0, 0});
  expect_error([&] { rows(floats({1, 2, 3})); }, {"PerChannelMinMaxObserver", "observed 2 channels before, now 3"});

  // the qparams quantize per channel
  const auto [scales, zero_points] = affine.calculate_qparams();
  const Tensor q = quantize_per_channel(x, scales, zero_points, 1, kQUInt8);
  EXPECT_EQ(q.q_per_channel_zero_points().to_vector<int64_t>(), zero_points.to_vector<int64_t>());
}

TEST(Observer, Percentile) {
  // 98 ones between two outliers; 2048 bins over [-1000, 1000], each 0.9765625 wide
  std::vector<float> v(98, 1.0f);
  v.push_back(-1000.0f);
  v.push_back(1000.0f);
  PercentileObserver obs(98.0);
  obs(tensor(v));
  // the 98th value from either end lies in the ones' bin [0.9765625, 1.953125)
  const auto [lo, hi] = obs.bounds();
  EXPECT_EQ(lo, 0.9765625f);
  EXPECT_EQ(hi, 1.953125f);
  expect_qparams(obs.calculate_qparams(), {1.953125f / 255.0f}, {0});

  PercentileObserver all(100.0, kQInt8, kPerTensorSymmetric, 4);  // nothing clipped
  all(floats({-1, 1}));
  all(floats({-3, 2}));  // the range widens: the histogram is re-binned
  const auto [lo_all, hi_all] = all.bounds();
  EXPECT_EQ(lo_all, -3.0f);
  EXPECT_EQ(hi_all, 2.0f);
  expect_qparams(all.calculate_qparams(), {3.0f / 127.5f}, {0});
  expect_qparams(PercentileObserver().calculate_qparams(), {1.0f}, {0});
}

TEST(Observer, Errors) {
  expect_error([] { (void)MinMaxObserver(kQInt32); }, {"observer", "expected dtype kQInt8 or kQUInt8 but got qint32"});
  expect_error([] { (void)MinMaxObserver(kQInt8, kPerChannelAffine); }, {"MinMaxObserver", "per_channel_affine"});
  expect_error([] { (void)PerChannelMinMaxObserver(0, kQInt8, kPerTensorAffine); },
               {"expected a per-channel qscheme"});
  expect_error([] { (void)MovingAverageMinMaxObserver(0.0); }, {"averaging_constant must be in (0, 1]"});
  expect_error([] { (void)PercentileObserver(20.0); }, {"percentile must be in [50, 100]"});
  expect_error([] { (void)PercentileObserver(99.0, kQUInt8, kPerTensorAffine, 0); },
               {"bins must be positive"});
  MinMaxObserver obs;
  expect_error([&] { obs(quantize_per_tensor(floats({1}), 0.1, 0, kQUInt8)); }, {"to", "quint8"});
  PerChannelMinMaxObserver pc(2);
  expect_error([&] { pc(floats({1, 2})); }, {"PerChannelMinMaxObserver", "out of range"});
}

}  // namespace
}  // namespace nnvm::quantization
