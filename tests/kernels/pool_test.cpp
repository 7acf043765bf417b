// max_pool2d, avg_pool2d, adaptive_avg_pool2d and interpolate against direct
// loops over doubles.
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "reference.h"

namespace nnvm {
namespace {

using testing::values;

// Output size of a pooling window sweep, written out from libtorch's definition.
int64_t pooled(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil_mode) {
  const double span = double(in + 2 * pad - dil * (k - 1) - 1) / double(s);
  int64_t out = int64_t(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

struct Pool {
  DimVector shape, k, s, pad, dil;
  bool ceil_mode;
};

const Pool kPools[] = {
    {{1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, false},
    {{2, 3, 7, 9}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
    {{2, 3, 7, 9}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
    {{1, 2, 13, 11}, {3, 2}, {2, 1}, {1, 1}, {2, 1}, true},
    {{3, 1, 8, 8}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, true},
    {{1, 4, 33, 17}, {5, 4}, {3, 2}, {2, 2}, {1, 3}, false},
    {{0, 2, 5, 5}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, false},
};

std::vector<double> naive_max_pool(const Tensor& x, const Pool& p, DimVector* shape) {
  const std::vector<double> v = values(x);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t oh = pooled(h, p.k[0], p.s[0], p.pad[0], p.dil[0], p.ceil_mode);
  const int64_t ow = pooled(w, p.k[1], p.s[1], p.pad[1], p.dil[1], p.ceil_mode);
  *shape = {n, c, oh, ow};
  std::vector<double> out;
  for (int64_t q = 0; q < n * c; ++q)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < p.k[0]; ++i)
          for (int64_t j = 0; j < p.k[1]; ++j) {
            const int64_t iy = y * p.s[0] - p.pad[0] + i * p.dil[0], iz = z * p.s[1] - p.pad[1] + j * p.dil[1];
            if (iy >= 0 && iy < h && iz >= 0 && iz < w) best = std::max(best, v[size_t((q * h + iy) * w + iz)]);
          }
        out.push_back(best);
      }
  return out;
}

std::vector<double> naive_avg_pool(const Tensor& x, const Pool& p, bool include_pad, DimVector* shape) {
  const std::vector<double> v = values(x);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t oh = pooled(h, p.k[0], p.s[0], p.pad[0], 1, p.ceil_mode);
  const int64_t ow = pooled(w, p.k[1], p.s[1], p.pad[1], 1, p.ceil_mode);
  *shape = {n, c, oh, ow};
  std::vector<double> out;
  for (int64_t q = 0; q < n * c; ++q)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        double sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < p.k[0]; ++i)
          for (int64_t j = 0; j < p.k[1]; ++j) {
            const int64_t iy = y * p.s[0] - p.pad[0] + i, iz = z * p.s[1] - p.pad[1] + j;
            // Window positions past the padded input (ceil mode) count for nothing.
            if (iy >= h + p.pad[0] || iz >= w + p.pad[1]) continue;
            ++padded;
            if (iy < 0 || iy >= h || iz < 0 || iz >= w) continue;
            ++inside;
            sum += v[size_t((q * h + iy) * w + iz)];
          }
        out.push_back(sum / double(include_pad ? padded : inside));
      }
  return out;
}

TEST(Pool2d, MaxPoolMatchesDirectLoops) {
  uint64_t seed = 1;
  for (const Pool& p : kPools)
    for (DType dt : {kFloat32, kFloat64, kBFloat16})
      for (testing::Layout l : testing::kLayouts) {
        const Tensor x = testing::with_layout(testing::random(p.shape, dt, seed++), l);
        DimVector shape;
        const std::vector<double> expected = naive_max_pool(x, p, &shape);
        const Tensor y = max_pool2d(x, p.k, p.s, p.pad, p.dil, p.ceil_mode);
        ASSERT_EQ(shape_str(y.sizes()), shape_str(shape)) << shape_str(p.shape);
        EXPECT_EQ(y.dtype(), dt);
        testing::expect_values(y, expected, 0, 0);
      }
  // The stride defaults to the kernel; an unbatched input is a batch of one.
  const Tensor x = tensor<float>({1, 5, 2, 4, 3, 0, 7, 6, 8}, std::vector<int64_t>{1, 3, 3});
  const Tensor y = max_pool2d(x, {2}, {}, {0}, {1}, true);
  ASSERT_EQ(shape_str(y.sizes()), "[1, 2, 2]");
  testing::expect_values(y, {5, 2, 7, 8}, 0, 0);
  // NaN propagates.
  const Tensor z = max_pool2d(tensor<float>({1, NAN, 2, 3}, std::vector<int64_t>{1, 1, 2, 2}), {2});
  EXPECT_TRUE(std::isnan(z.item<float>()));
}

// Windows holding ties, NaN and infinities, the scan rule in full: the first
// largest value wins, NaN wins over anything (the last NaN of a window, and
// its gradient goes there); a window inside the padding is -inf and passes
// no gradient. Rows are wide enough for the kernels' vector loops.
TEST(Pool2d, MaxPoolTiesNaNAndInfinitiesForwardAndBackward) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const double palette[] = {-inf, -1, 0, 0, 1, 1, 2, inf, nan};
  std::vector<Pool> pools(std::begin(kPools), std::end(kPools));
  // 2x2 windows with stride 2 (kernels/cpu/pool.cpp's Window2x2): rows of
  // 20 windows (a last block overlapping the one before), exactly 8, and 1.
  pools.push_back({{2, 3, 6, 40}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false});
  pools.push_back({{1, 2, 5, 16}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false});
  pools.push_back({{2, 1, 2, 3}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false});
  pools.push_back({{1, 2, 9, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, true});
  pools.push_back({{1, 1, 4, 4}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false});  // corner windows: one tap
  uint64_t state = 7;
  for (const Pool& p : pools)
    for (DType dt : {kFloat32, kFloat64}) {
      SCOPED_TRACE(shape_str(p.shape) + " kernel " + shape_str(p.k) + " " + std::string(dtype_name(dt)));
      const int64_t n = p.shape[0], c = p.shape[1], h = p.shape[2], w = p.shape[3];
      std::vector<double> v(size_t(n * c * h * w));
      for (double& e : v) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        e = palette[(state >> 33) % std::size(palette)];
      }
      const Tensor x = tensor<double>(v, p.shape).to(dt).requires_grad_();
      const int64_t oh = pooled(h, p.k[0], p.s[0], p.pad[0], p.dil[0], p.ceil_mode);
      const int64_t ow = pooled(w, p.k[1], p.s[1], p.pad[1], p.dil[1], p.ceil_mode);
      std::vector<double> expected, grad_out, expected_grad(v.size(), 0.0);
      for (int64_t q = 0; q < n * c; ++q)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t z = 0; z < ow; ++z) {
            const double g = double(grad_out.size() % 7) - 3;
            grad_out.push_back(g);
            double best = -inf;
            int64_t arg = -1;
            for (int64_t i = 0; i < p.k[0]; ++i)
              for (int64_t j = 0; j < p.k[1]; ++j) {
                const int64_t iy = y * p.s[0] - p.pad[0] + i * p.dil[0], iz = z * p.s[1] - p.pad[1] + j * p.dil[1];
                if (iy < 0 || iy >= h || iz < 0 || iz >= w) continue;
                const int64_t at = (q * h + iy) * w + iz;
                if (arg < 0 || v[size_t(at)] > best || std::isnan(v[size_t(at)])) {
                  best = v[size_t(at)];
                  arg = at;
                }
              }
            expected.push_back(best);
            if (arg >= 0) expected_grad[size_t(arg)] += g;
          }
      const Tensor y = max_pool2d(x, p.k, p.s, p.pad, p.dil, p.ceil_mode);
      const std::vector<double> got = values(y);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i)
        if (std::isnan(expected[i])) EXPECT_TRUE(std::isnan(got[i])) << "output " << i;
        else EXPECT_EQ(got[i], expected[i]) << "output " << i;
      y.backward(tensor<double>(grad_out, y.sizes()).to(dt));
      testing::expect_values(x.grad(), expected_grad, 0, 0);
    }
}

TEST(Pool2d, AvgPoolMatchesDirectLoops) {
  uint64_t seed = 100;
  for (const Pool& p : kPools) {
    if (p.dil[0] != 1 || p.dil[1] != 1) continue;
    for (bool include_pad : {true, false})
      for (DType dt : {kFloat32, kFloat64})
        for (testing::Layout l : testing::kLayouts) {
          const Tensor x = testing::with_layout(testing::random(p.shape, dt, seed++), l);
          DimVector shape;
          const std::vector<double> expected = naive_avg_pool(x, p, include_pad, &shape);
          const Tensor y = avg_pool2d(x, p.k, p.s, p.pad, p.ceil_mode, include_pad);
          ASSERT_EQ(shape_str(y.sizes()), shape_str(shape)) << shape_str(p.shape);
          testing::expect_values(y, expected, testing::rtol_for(dt), 1e-6);
        }
  }
  // 3×3 ones, kernel 2, padding 1: corners see one value in a window of 4.
  testing::expect_values(avg_pool2d(ones({1, 1, 3, 3}), {2}, {2}, {1}), {0.25, 0.5, 0.5, 1}, 0, 0);
  testing::expect_values(avg_pool2d(ones({1, 1, 3, 3}), {2}, {2}, {1}, false, false), {1, 1, 1, 1}, 0, 0);
}

TEST(Pool2d, AdaptiveAvgPoolMatchesDirectLoops) {
  const DimVector cases[][2] = {{{2, 3, 7, 9}, {3, 4}}, {{1, 2, 5, 5}, {5, 5}}, {{1, 1, 4, 6}, {1, 1}},
                                {{2, 2, 3, 3}, {7, 2}}, {{1, 2, 4, 4}, {0, 2}}};
  uint64_t seed = 200;
  for (const auto& cs : cases)
    for (DType dt : {kFloat32, kFloat64})
      for (testing::Layout l : testing::kLayouts) {
        const Tensor x = testing::with_layout(testing::random(cs[0], dt, seed++), l);
        const std::vector<double> v = values(x);
        const int64_t h = x.size(2), w = x.size(3), oh = cs[1][0], ow = cs[1][1];
        std::vector<double> expected;
        for (int64_t q = 0; q < x.size(0) * x.size(1); ++q)
          for (int64_t y = 0; y < oh; ++y)
            for (int64_t z = 0; z < ow; ++z) {
              const int64_t y0 = int64_t(std::floor(double(y * h) / double(oh)));
              const int64_t y1 = int64_t(std::ceil(double((y + 1) * h) / double(oh)));
              const int64_t z0 = int64_t(std::floor(double(z * w) / double(ow)));
              const int64_t z1 = int64_t(std::ceil(double((z + 1) * w) / double(ow)));
              double sum = 0;
              for (int64_t i = y0; i < y1; ++i)
                for (int64_t j = z0; j < z1; ++j) sum += v[size_t((q * h + i) * w + j)];
              expected.push_back(sum / double((y1 - y0) * (z1 - z0)));
            }
        const Tensor y = adaptive_avg_pool2d(x, cs[1]);
        ASSERT_EQ(shape_str(y.sizes()), shape_str({x.size(0), x.size(1), oh, ow}));
        testing::expect_values(y, expected, testing::rtol_for(dt), 1e-6);
      }
  EXPECT_EQ(shape_str(adaptive_avg_pool2d(ones({3, 4, 4}), {2}).sizes()), "[3, 2, 2]");
}

// libtorch's source coordinate of output pixel `dst`.
double source_coord(int64_t dst, int64_t in, int64_t out, double scale_factor, bool align_corners) {
  if (align_corners) return out > 1 ? double(dst) * double(in - 1) / double(out - 1) : 0.0;
  const double scale = scale_factor > 0 ? 1.0 / scale_factor : double(in) / double(out);
  return std::max(0.0, (double(dst) + 0.5) * scale - 0.5);
}

std::vector<double> naive_bilinear(const Tensor& x, int64_t oh, int64_t ow, double sf, bool align_corners) {
  const std::vector<double> v = values(x);
  const int64_t h = x.size(2), w = x.size(3);
  std::vector<double> out;
  for (int64_t q = 0; q < x.size(0) * x.size(1); ++q)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        const double sy = source_coord(y, h, oh, sf, align_corners), sz = source_coord(z, w, ow, sf, align_corners);
        const int64_t y0 = std::min(int64_t(sy), h - 1), z0 = std::min(int64_t(sz), w - 1);
        const int64_t y1 = std::min(y0 + 1, h - 1), z1 = std::min(z0 + 1, w - 1);
        const double ly = sy - double(y0), lz = sz - double(z0);
        auto at = [&](int64_t i, int64_t j) { return v[size_t((q * h + i) * w + j)]; };
        out.push_back((1 - ly) * ((1 - lz) * at(y0, z0) + lz * at(y0, z1)) +
                      ly * ((1 - lz) * at(y1, z0) + lz * at(y1, z1)));
      }
  return out;
}

TEST(Interpolate, NearestMatchesDirectLoops) {
  const Tensor x = testing::random({2, 3, 5, 7}, kFloat64, 300);
  const std::vector<double> v = values(x);
  for (const DimVector& size : {DimVector{10, 14}, DimVector{3, 4}, DimVector{5, 7}, DimVector{1, 13}}) {
    std::vector<double> expected;
    for (int64_t q = 0; q < 6; ++q)
      for (int64_t y = 0; y < size[0]; ++y)
        for (int64_t z = 0; z < size[1]; ++z) {
          // libtorch computes nearest indices in single precision.
          const int64_t iy = std::min<int64_t>(int64_t(std::floor(float(y) * (5.f / float(size[0])))), 4);
          const int64_t iz = std::min<int64_t>(int64_t(std::floor(float(z) * (7.f / float(size[1])))), 6);
          expected.push_back(v[size_t((q * 5 + iy) * 7 + iz)]);
        }
    for (testing::Layout l : testing::kLayouts) {
      const Tensor y = interpolate(testing::with_layout(x, l), std::vector<int64_t>(size.begin(), size.end()));
      ASSERT_EQ(shape_str(y.sizes()), shape_str({2, 3, size[0], size[1]}));
      testing::expect_values(y, expected, 0, 0);
    }
  }
  // Scale factor 2 repeats each pixel twice.
  const Tensor s = interpolate(tensor<float>({1, 2, 3, 4}, std::vector<int64_t>{1, 1, 2, 2}), std::nullopt,
                               std::vector<double>{2.0});
  testing::expect_values(s, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0, 0);
}

TEST(Interpolate, BilinearMatchesDirectLoops) {
  uint64_t seed = 400;
  for (DType dt : {kFloat32, kFloat64})
    for (bool align_corners : {false, true})
      for (testing::Layout l : testing::kLayouts) {
        const Tensor x = testing::with_layout(testing::random({2, 3, 5, 7}, dt, seed++), l);
        for (const DimVector& size : {DimVector{10, 13}, DimVector{3, 4}, DimVector{1, 1}, DimVector{5, 7}}) {
          const Tensor y = interpolate(x, std::vector<int64_t>(size.begin(), size.end()), std::nullopt, "bilinear",
                                       align_corners);
          ASSERT_EQ(shape_str(y.sizes()), shape_str({2, 3, size[0], size[1]}));
          testing::expect_values(y, naive_bilinear(x, size[0], size[1], 0, align_corners), 1e-5, 1e-5);
        }
        const Tensor y = interpolate(x, std::nullopt, std::vector<double>{1.5}, "bilinear", align_corners);
        ASSERT_EQ(shape_str(y.sizes()), "[2, 3, 7, 10]");
        testing::expect_values(y, naive_bilinear(x, 7, 10, align_corners ? 0 : 1.5, align_corners), 1e-5, 1e-5);
      }
  const Tensor e = interpolate(tensor<double>({0, 1}, std::vector<int64_t>{1, 1, 1, 2}),
                               std::vector<int64_t>{1, 3}, std::nullopt, "bilinear", true);
  testing::expect_values(e, {0, 0.5, 1}, 0, 0);
}

TEST(PoolErrors, NameOpAndShapes) {
  testing::expect_error([] { max_pool2d(ones({1, 1, 2, 2}), {3}); }, {"max_pool2d", "[1, 1, 2, 2]", "kernel_size"});
  testing::expect_error([] { max_pool2d(ones({1, 1, 5, 5}), {2}, {0}); }, {"max_pool2d", "stride"});
  testing::expect_error([] { max_pool2d(ones({1, 1, 5, 5}), {2}, {1}, {2}); }, {"max_pool2d", "padding"});
  testing::expect_error([] { max_pool2d(ones({5, 5}), {2}); }, {"max_pool2d", "[5, 5]"});
  testing::expect_error([] { max_pool2d(ones({1, 1, 5, 5}, kInt64), {2}); }, {"max_pool2d", "int64"});
  testing::expect_error([] { avg_pool2d(ones({1, 1, 5, 5}), {2, 2, 2}); }, {"avg_pool2d", "kernel_size"});
  testing::expect_error([] { avg_pool2d(ones({1, 0, 5, 5}), {2}); }, {"avg_pool2d", "[1, 0, 5, 5]"});
  testing::expect_error([] { adaptive_avg_pool2d(ones({2, 1, 5, 5}), {-1, 2}); }, {"adaptive_avg_pool2d", "output_size"});
  testing::expect_error([] { interpolate(ones({1, 5}), std::vector<int64_t>{3}); }, {"interpolate", "[1, 5]"});
  testing::expect_error([] { interpolate(ones({1, 1, 5, 5}), std::nullopt); }, {"interpolate", "size"});
  testing::expect_error([] { interpolate(ones({1, 1, 5, 5}), std::vector<int64_t>{2}, std::nullopt, "lanczos"); },
                        {"interpolate", "lanczos"});
  testing::expect_error([] { interpolate(ones({1, 1, 5, 5}), std::nullopt, std::vector<double>{-1.0}); },
                        {"interpolate", "scale_factor"});
}

}  // namespace
}  // namespace nnvm
