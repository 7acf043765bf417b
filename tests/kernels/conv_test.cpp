// conv1d, conv2d and conv_transpose2d against direct convolution loops over doubles.
#include <cstring>

#include "nnvm/core/thread_pool.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::values;

struct Conv {
  int64_t n, c, h, w, o, kh, kw;
  DimVector stride, pad, dil;
  int64_t groups;
  bool bias;
};

// Direct convolution (transposed = false) or its adjoint scatter (transposed = true).
std::vector<double> naive_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv& p, bool transposed,
                               DimVector out_shape) {
  const std::vector<double> vx = values(x), vw = values(w);
  const std::vector<double> vb = b.defined() ? values(b) : std::vector<double>();
  const int64_t oc = out_shape[1], oh_n = out_shape[2], ow_n = out_shape[3];
  const int64_t cg = p.c / p.groups, og = oc / p.groups;
  std::vector<double> out(size_t(numel_of(out_shape)), 0.0);
  auto at = [&](int64_t n, int64_t o, int64_t y, int64_t z) -> double& {
    return out[size_t(((n * oc + o) * oh_n + y) * ow_n + z)];
  };
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t o = 0; o < og; ++o)
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t kh = 0; kh < p.kh; ++kh)
            for (int64_t kw = 0; kw < p.kw; ++kw) {
              const int64_t ci = g * cg + c, oi = g * og + o;
              const double wv = transposed ? vw[size_t(((ci * og + o) * p.kh + kh) * p.kw + kw)]
                                           : vw[size_t(((oi * cg + c) * p.kh + kh) * p.kw + kw)];
              if (!transposed) {
                for (int64_t y = 0; y < oh_n; ++y)
                  for (int64_t z = 0; z < ow_n; ++z) {
                    const int64_t iy = y * p.stride[0] - p.pad[0] + kh * p.dil[0];
                    const int64_t iz = z * p.stride[1] - p.pad[1] + kw * p.dil[1];
                    if (iy >= 0 && iy < p.h && iz >= 0 && iz < p.w)
                      at(n, oi, y, z) += wv * vx[size_t(((n * p.c + ci) * p.h + iy) * p.w + iz)];
                  }
              } else {
                for (int64_t iy = 0; iy < p.h; ++iy)
                  for (int64_t iz = 0; iz < p.w; ++iz) {
                    const int64_t y = iy * p.stride[0] - p.pad[0] + kh * p.dil[0];
                    const int64_t z = iz * p.stride[1] - p.pad[1] + kw * p.dil[1];
                    if (y >= 0 && y < oh_n && z >= 0 && z < ow_n)
                      at(n, oi, y, z) += wv * vx[size_t(((n * p.c + ci) * p.h + iy) * p.w + iz)];
                  }
              }
            }
  if (!vb.empty())
    for (size_t i = 0; i < out.size(); ++i) out[i] += vb[(i / size_t(oh_n * ow_n)) % size_t(oc)];
  return out;
}

const Conv kConvs[] = {
    {1, 1, 1, 1, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false},
    {2, 3, 7, 9, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
    {1, 4, 13, 11, 6, 3, 2, {2, 3}, {1, 0}, {2, 1}, 2, true},
    {3, 6, 8, 8, 6, 3, 3, {1, 1}, {2, 2}, {2, 2}, 6, false},  // depthwise
    {2, 8, 5, 7, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 2, true},   // 1×1
    {1, 2, 33, 17, 5, 5, 4, {3, 2}, {2, 1}, {1, 3}, 1, true},
    {1, 16, 12, 12, 33, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
    {0, 3, 5, 5, 2, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true},   // empty batch
    // Output rows as wide as the input's (im2col copies shifted planes): fewer
    // rows than the input, and a kernel wider than the image.
    {2, 2, 6, 10, 3, 5, 3, {1, 1}, {0, 1}, {1, 1}, 1, true},
    {2, 3, 4, 2, 2, 3, 5, {1, 1}, {1, 2}, {1, 1}, 1, false},
};

TEST(Conv2d, MatchesDirectLoops) {
  uint64_t seed = 1;
  for (const Conv& p : kConvs)
    for (DType dt : {kFloat32, kFloat64})
      for (testing::Layout l : testing::kLayouts) {
        const Tensor x = testing::with_layout(testing::random({p.n, p.c, p.h, p.w}, dt, seed++), l);
        const Tensor w = testing::with_layout(testing::random({p.o, p.c / p.groups, p.kh, p.kw}, dt, seed++), l);
        const Tensor b = p.bias ? testing::random({p.o}, dt, seed++) : Tensor();
        const Tensor y = conv2d(x, w, b, p.stride, p.pad, p.dil, p.groups);
        SCOPED_TRACE(shape_str(x.sizes()) + shape_str(w.sizes()) + " " + testing::layout_name(l));
        const int64_t oh = (p.h + 2 * p.pad[0] - p.dil[0] * (p.kh - 1) - 1) / p.stride[0] + 1;
        const int64_t ow = (p.w + 2 * p.pad[1] - p.dil[1] * (p.kw - 1) - 1) / p.stride[1] + 1;
        const DimVector shape = {p.n, p.o, oh, ow};
        ASSERT_EQ(shape_str(y.sizes()), shape_str(shape));
        EXPECT_EQ(y.dtype(), dt);
        testing::expect_values(y, naive_conv(x, w, b, p, false, shape), testing::rtol_for(dt),
                               dt == kFloat64 ? 1e-12 : 1e-4);
      }
}

// The direct convolution (conv.cpp: the GEMM reads the image's windows in
// place through a table of rows, a band of output rows at a time) against
// the direct loops, on 1, 2 and 3 threads: one image (its bands, or its
// GEMM, split between the threads) and several (images to threads), the
// same bits on each. Strides, dilations, asymmetric and oversized padding,
// groups, 1×1 windows with a stride, outputs one pixel wide, bands (64×64
// over 32 channels), weights too large for L2 (one image, and several side
// by side in one product), views of every layout.
TEST(Conv2d, DirectMatchesLoopsWithTheSameBitsOnAnyThreadCount) {
  const Conv convs[] = {
      {1, 32, 64, 64, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {1, 64, 65, 63, 7, 3, 3, {2, 2}, {1, 0}, {1, 1}, 1, false},
      {1, 48, 70, 50, 12, 3, 5, {1, 2}, {2, 2}, {2, 1}, 2, true},
      {3, 3, 37, 41, 16, 7, 7, {2, 2}, {3, 3}, {1, 1}, 1, true},
      {2, 16, 15, 9, 24, 1, 1, {2, 2}, {0, 0}, {1, 1}, 1, false},
      {4, 12, 7, 7, 20, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {2, 8, 5, 1, 10, 3, 1, {1, 3}, {4, 2}, {2, 1}, 2, true},
      {3, 6, 9, 11, 9, 2, 4, {3, 1}, {0, 3}, {1, 2}, 3, false},
      // weights past half of any L2 (2.4 MB): the image in one band, the
      // windows' rows packed by the GEMM a k block at a time
      {1, 256, 9, 7, 260, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
      // ... over a batch: images side by side in one product (2 or 4 to a
      // product as the thread count has it), columns in runs of 25 pixels
      {4, 160, 5, 5, 200, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
  };
  const int threads = get_num_threads();
  uint64_t seed = 40;
  for (const Conv& p : convs)
    for (testing::Layout l : testing::kLayouts) {
      const Tensor x = testing::with_layout(testing::random({p.n, p.c, p.h, p.w}, kFloat32, seed++), l);
      const Tensor w = testing::random({p.o, p.c / p.groups, p.kh, p.kw}, kFloat32, seed++);
      const Tensor b = p.bias ? testing::random({p.o}, kFloat32, seed++) : Tensor();
      SCOPED_TRACE(shape_str(x.sizes()) + shape_str(w.sizes()) + " " + testing::layout_name(l));
      std::vector<Tensor> ys;
      for (int t : {2, 1, 3}) {
        set_num_threads(t);
        ys.push_back(conv2d(x, w, b, p.stride, p.pad, p.dil, p.groups).contiguous());
      }
      set_num_threads(threads);
      for (size_t i = 1; i < ys.size(); ++i)
        EXPECT_TRUE(std::memcmp(ys[0].data_ptr<float>(), ys[i].data_ptr<float>(), size_t(ys[0].nbytes())) == 0);
      const DimVector shape(ys[0].sizes().begin(), ys[0].sizes().end());
      testing::expect_values(ys[0], naive_conv(x, w, b, p, false, shape), testing::rtol_for(kFloat32), 1e-4);
    }
}

// No input channels: the sum over (c, kh, kw) is empty, the output the bias
// (or zeros); no batch, no output channels: empty outputs.
TEST(Conv2d, EmptySumsAndEmptyOutputs) {
  const Tensor y = conv2d(zeros({2, 0, 5, 5}), zeros({3, 0, 3, 3}), full({3}, 1.5f), {1, 1}, {1, 1});
  ASSERT_EQ(shape_str(y.sizes()), "[2, 3, 5, 5]");
  EXPECT_EQ(y.sum().item<float>(), 1.5f * 150);
  const Tensor t = conv_transpose2d(zeros({2, 0, 5, 5}), zeros({0, 3, 3, 3}), Tensor(), {1, 1}, {1, 1});
  ASSERT_EQ(shape_str(t.sizes()), "[2, 3, 5, 5]");
  EXPECT_EQ(t.abs().sum().item<float>(), 0.f);
  EXPECT_EQ(conv2d(zeros({0, 4, 5, 5}), ones({3, 4, 3, 3})).numel(), 0);
  EXPECT_EQ(conv2d(ones({1, 4, 5, 5}), ones({0, 4, 3, 3})).numel(), 0);
}

TEST(Conv2d, UnbatchedHalfAndConv1d) {
  const Conv p{1, 4, 6, 5, 2, 3, 3, {1, 2}, {1, 1}, {1, 1}, 2, true};
  const Tensor x = testing::random({4, 6, 5}, kFloat16, 30), w = testing::random({2, 2, 3, 3}, kFloat16, 31);
  const Tensor b = testing::random({2}, kFloat16, 32);
  const Tensor y = conv2d(x, w, b, p.stride, p.pad, p.dil, p.groups);
  ASSERT_EQ(shape_str(y.sizes()), "[2, 6, 3]");
  EXPECT_EQ(y.dtype(), kFloat16);
  testing::expect_values(y, naive_conv(x.unsqueeze(0), w, b, p, false, {1, 2, 6, 3}), 5e-3, 1e-2);

  // conv1d is conv2d over a height-1 image.
  const Conv q{2, 6, 1, 19, 4, 1, 3, {1, 2}, {0, 2}, {1, 3}, 2, true};
  const Tensor x1 = testing::random({2, 6, 19}, kFloat64, 33), w1 = testing::random({4, 3, 3}, kFloat64, 34);
  const Tensor b1 = testing::random({4}, kFloat64, 35);
  const Tensor y1 = conv1d(testing::with_layout(x1, testing::Layout::Transposed), w1, b1, {2}, {2}, {3}, 2);
  ASSERT_EQ(shape_str(y1.sizes()), "[2, 4, 9]");
  testing::expect_values(y1, naive_conv(x1.unsqueeze(2), w1.unsqueeze(2), b1, q, false, {2, 4, 1, 9}), 1e-12,
                         1e-12);
  const Tensor y2 = conv1d(x1[0], w1, {}, {1}, {0}, {1}, 2);
  ASSERT_EQ(shape_str(y2.sizes()), "[4, 17]");
}

TEST(ConvTranspose2d, MatchesScatterLoops) {
  struct Case {
    Conv p;
    DimVector output_padding;
  };
  const Case cases[] = {
      {{1, 1, 1, 1, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false}, {0, 0}},
      {{2, 3, 5, 4, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true}, {1, 0}},
      {{1, 4, 7, 6, 6, 3, 2, {3, 2}, {2, 0}, {2, 1}, 2, true}, {1, 1}},
      {{2, 6, 4, 9, 6, 2, 2, {1, 1}, {0, 1}, {1, 2}, 3, false}, {0, 1}},
      {{1, 16, 9, 9, 33, 4, 4, {2, 2}, {1, 1}, {1, 1}, 1, true}, {0, 0}},
      // Stride 1, output rows as wide as the input's (col2im adds shifted
      // planes): padding 1, dilation 2 with groups, fewer output rows than
      // input rows, and a kernel wider than the image.
      {{2, 3, 6, 7, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true}, {0, 0}},
      {{2, 4, 6, 6, 4, 3, 3, {1, 1}, {2, 2}, {2, 2}, 2, true}, {0, 0}},
      {{1, 2, 5, 3, 3, 2, 5, {1, 1}, {1, 2}, {1, 1}, 1, false}, {0, 0}},
      {{1, 2, 5, 2, 3, 2, 5, {1, 1}, {1, 2}, {1, 1}, 1, false}, {0, 0}},
  };
  uint64_t seed = 50;
  for (const Case& cs : cases)
    for (DType dt : {kFloat32, kFloat64})
      for (testing::Layout l : testing::kLayouts) {
        const Conv& p = cs.p;
        const Tensor x = testing::with_layout(testing::random({p.n, p.c, p.h, p.w}, dt, seed++), l);
        const Tensor w = testing::with_layout(testing::random({p.c, p.o / p.groups, p.kh, p.kw}, dt, seed++), l);
        const Tensor b = p.bias ? testing::random({p.o}, dt, seed++) : Tensor();
        const Tensor y = conv_transpose2d(x, w, b, p.stride, p.pad, cs.output_padding, p.groups, p.dil);
        const int64_t oh = (p.h - 1) * p.stride[0] - 2 * p.pad[0] + p.dil[0] * (p.kh - 1) + cs.output_padding[0] + 1;
        const int64_t ow = (p.w - 1) * p.stride[1] - 2 * p.pad[1] + p.dil[1] * (p.kw - 1) + cs.output_padding[1] + 1;
        const DimVector shape = {p.n, p.o, oh, ow};
        SCOPED_TRACE(shape_str(x.sizes()) + shape_str(w.sizes()) + " " + testing::layout_name(l));
        ASSERT_EQ(shape_str(y.sizes()), shape_str(shape));
        testing::expect_values(y, naive_conv(x, w, b, p, true, shape), testing::rtol_for(dt),
                               dt == kFloat64 ? 1e-12 : 1e-4);
      }
}

TEST(ConvErrors, NameOpAndShapes) {
  testing::expect_error([] { conv2d(ones({1, 4, 5, 5}), ones({2, 3, 3, 3})); }, {"conv2d", "[1, 4, 5, 5]", "[2, 3, 3, 3]"});
  testing::expect_error([] { conv2d(ones({1, 4, 5, 5}), ones({3, 2, 3, 3}), {}, {1}, {0}, {1}, 2); },
                        {"conv2d", "[3, 2, 3, 3]", "groups"});
  testing::expect_error([] { conv2d(ones({1, 1, 2, 2}), ones({1, 1, 3, 3})); }, {"conv2d", "[1, 1, 2, 2]", "larger"});
  testing::expect_error([] { conv2d(ones({1, 1, 5, 5}), ones({1, 1, 3, 3}), {}, {0, 1}); }, {"conv2d", "stride"});
  testing::expect_error([] { conv2d(ones({1, 1, 5, 5}), ones({1, 1, 3, 3}), {}, {1}, {-1}); }, {"conv2d", "padding"});
  testing::expect_error([] { conv2d(ones({5, 5}), ones({1, 1, 3, 3})); }, {"conv2d", "[5, 5]"});
  testing::expect_error([] { conv2d(ones({1, 1, 5, 5}), ones({1, 1, 3, 3}), ones({2})); }, {"conv2d", "bias", "[2]"});
  testing::expect_error([] { conv2d(ones({1, 1, 5, 5}, kInt64), ones({1, 1, 3, 3}, kInt64)); }, {"conv2d", "int64"});
  testing::expect_error([] { conv1d(ones({1, 2, 5}), ones({1, 3, 3})); }, {"conv1d", "[1, 2, 5]", "[1, 3, 3]"});
  testing::expect_error([] { conv1d(ones({1, 2, 2}), ones({1, 2, 3})); }, {"conv1d", "[1, 2, 2]"});
  testing::expect_error([] { conv_transpose2d(ones({1, 4, 3, 3}), ones({3, 2, 3, 3})); },
                        {"conv_transpose2d", "[1, 4, 3, 3]", "[3, 2, 3, 3]"});
  testing::expect_error([] { conv_transpose2d(ones({1, 2, 3, 3}), ones({2, 2, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}); },
                        {"conv_transpose2d", "output_padding"});
  testing::expect_error([] { conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3, 3}), {}, {1}, {0}, {0}, 2); },
                        {"conv_transpose2d", "groups"});
}

}  // namespace
}  // namespace nnvm
