// The model ops of neural networks (model/ops_nn.cpp and the families it
// registers), one node each through GraphBuilder, first half: convolutions
// and pooling against naive loops over doubles, and the user's mistakes as
// errors naming the node (the rest: model_nn_layers_test.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "nnvm/nnvm.h"
#include "model_node.h"
#include "reference.h"

namespace nnvm {
namespace {

using Attrs = std::map<std::string, Attribute>;
using Ints = std::vector<int64_t>;

using testing::expect_node_error;
using testing::run1;
using testing::run_node;

using testing::random;

int64_t offset(const DimVector& index, IntArrayRef shape) { return testing::broadcast_offset(index, shape); }

// ---- naive sliding windows ----

// A window over the spatial dims: per dim its kernel, stride, dilation and pads.
struct Window {
  Ints kernel, strides, dilations, begin, end;
  int64_t rank() const { return int64_t(kernel.size()); }
};

Window window(Ints kernel, Ints strides = {}, Ints dilations = {}, Ints begin = {}, Ints end = {}) {
  const size_t r = kernel.size();
  if (strides.empty()) strides.assign(r, 1);
  if (dilations.empty()) dilations.assign(r, 1);
  if (begin.empty()) begin.assign(r, 0);
  if (end.empty()) end.assign(r, 0);
  return {kernel, strides, dilations, begin, end};
}

// Calls fn(input position, kernel tap) for each tap of the window at output
// position `out` (spatial); positions may lie outside the input.
void for_each_tap(const Window& w, const DimVector& out,
                  const std::function<void(const DimVector&, const DimVector&)>& fn) {
  testing::for_each_index(w.kernel, [&](const DimVector& k) {
    DimVector pos(size_t(w.rank()));
    for (int64_t d = 0; d < w.rank(); ++d) pos[d] = out[d] * w.strides[d] - w.begin[d] + k[d] * w.dilations[d];
    fn(pos, k);
  });
}

bool inside(const DimVector& pos, IntArrayRef sizes, const Ints& lo = {}, const Ints& hi = {}) {
  for (size_t d = 0; d < pos.size(); ++d)
    if (pos[d] < (lo.empty() ? 0 : -lo[d]) || pos[d] >= sizes[d] + (hi.empty() ? 0 : hi[d])) return false;
  return true;
}

DimVector join(std::initializer_list<int64_t> head, const DimVector& tail) {
  DimVector v(head);
  v.insert(v.end(), tail.begin(), tail.end());
  return v;
}

// Conv as its definition: y[n, m, o] = b[m] + sum over the group's channels and the taps.
std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor& b, const Window& win, int64_t group,
                                   IntArrayRef out_shape) {
  const std::vector<double> xv = testing::values(x), wv = testing::values(w);
  const std::vector<double> bv = b.defined() ? testing::values(b) : std::vector<double>(size_t(w.size(0)), 0.0);
  const IntArrayRef spatial = x.sizes().subspan(2);
  const int64_t per_group = x.size(1) / group, out_per_group = w.size(0) / group;
  std::vector<double> y;
  testing::for_each_index(out_shape, [&](const DimVector& o) {
    const int64_t n = o[0], m = o[1], g = m / out_per_group;
    double sum = bv[size_t(m)];
    for (int64_t c = 0; c < per_group; ++c)
      for_each_tap(win, DimVector(o.begin() + 2, o.end()), [&](const DimVector& pos, const DimVector& k) {
        if (!inside(pos, spatial)) return;
        sum += xv[size_t(offset(join({n, g * per_group + c}, pos), x.sizes()))] *
               wv[size_t(offset(join({m, c}, k), w.sizes()))];
      });
    y.push_back(sum);
  });
  return y;
}

// ConvTranspose as conv's adjoint: every input element scatters input * weight
// to the output positions its taps reach.
std::vector<double> conv_transpose_reference(const Tensor& x, const Tensor& w, const Window& win, int64_t group,
                                             IntArrayRef out_shape) {
  const std::vector<double> xv = testing::values(x), wv = testing::values(w);
  const int64_t per_group = x.size(1) / group, out_per_group = w.size(1);
  std::vector<double> y(size_t(numel_of(out_shape)), 0.0);
  testing::for_each_index(x.sizes(), [&](const DimVector& i) {
    const int64_t n = i[0], c = i[1], g = c / per_group;
    for (int64_t m = 0; m < out_per_group; ++m)
      testing::for_each_index(win.kernel, [&](const DimVector& k) {
        DimVector pos;
        for (int64_t d = 0; d < win.rank(); ++d)
          pos.push_back(i[2 + d] * win.strides[d] + k[d] * win.dilations[d] - win.begin[d]);
        if (!inside(pos, out_shape.subspan(2))) return;
        y[size_t(offset(join({n, g * out_per_group + m}, pos), out_shape))] +=
            xv[size_t(offset(i, x.sizes()))] * wv[size_t(offset(join({c, m}, k), w.sizes()))];
      });
  });
  return y;
}

// Max pooling: each window's maximum over the input (padding never wins) and
// its first position's index in the input flattened row-major.
std::pair<std::vector<double>, std::vector<double>> max_pool_reference(const Tensor& x, const Window& win,
                                                                       IntArrayRef out_shape) {
  const std::vector<double> xv = testing::values(x);
  std::vector<double> y, index;
  testing::for_each_index(out_shape, [&](const DimVector& o) {
    double best = -INFINITY, at = -1;
    for_each_tap(win, DimVector(o.begin() + 2, o.end()), [&](const DimVector& pos, const DimVector&) {
      if (!inside(pos, x.sizes().subspan(2))) return;
      const int64_t i = offset(join({o[0], o[1]}, pos), x.sizes());
      if (xv[size_t(i)] > best) best = xv[size_t(i)], at = double(i);
    });
    y.push_back(best);
    index.push_back(at);
  });
  return {y, index};
}

// Average pooling: the mean over the window's input elements, counting the
// pads too when count_include_pad (never ceil_mode's overhang past them).
std::vector<double> avg_pool_reference(const Tensor& x, const Window& win, bool count_include_pad,
                                       IntArrayRef out_shape) {
  const std::vector<double> xv = testing::values(x);
  std::vector<double> y;
  testing::for_each_index(out_shape, [&](const DimVector& o) {
    double sum = 0, count = 0;
    for_each_tap(win, DimVector(o.begin() + 2, o.end()), [&](const DimVector& pos, const DimVector&) {
      const IntArrayRef sizes = x.sizes().subspan(2);
      if (inside(pos, sizes)) sum += xv[size_t(offset(join({o[0], o[1]}, pos), x.sizes()))];
      if (count_include_pad ? inside(pos, sizes, win.begin, win.end) : inside(pos, sizes)) ++count;
    });
    y.push_back(sum / count);
  });
  return y;
}

// ---- Conv ----

TEST(ModelNnOps, Conv2dStridesDilationsPadsBiasMatchLoops) {
  const Tensor x = random({1, 3, 7, 6}, 1), w = random({4, 3, 3, 2}, 2), b = random({4}, 3);
  const Window win = window({3, 2}, {2, 1}, {1, 2}, {1, 0}, {1, 0});
  const Tensor y =
      run1("Conv", {x, w, b}, {{"strides", Ints{2, 1}}, {"dilations", Ints{1, 2}}, {"pads", Ints{1, 0, 1, 0}}});
  ASSERT_EQ(y.sizes(), IntArrayRef({1, 4, 4, 4}));
  testing::expect_values(y, conv_reference(x, w, b, win, 1, y.sizes()));
}

TEST(ModelNnOps, ConvAsymmetricPadsAndAutoPad) {
  const Tensor x = random({2, 2, 5, 7}, 4), w = random({3, 2, 3, 3}, 5);
  // asymmetric pads: padded explicitly first
  Tensor y = run1("Conv", {x, w}, {{"pads", Ints{0, 1, 2, 0}}, {"strides", Ints{2, 2}}});
  ASSERT_EQ(y.sizes(), IntArrayRef({2, 3, 3, 3}));
  testing::expect_values(y, conv_reference(x, w, {}, window({3, 3}, {2, 2}, {}, {0, 1}, {2, 0}), 1, y.sizes()));
  // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the start: ceil(7 / 2) = 4 columns
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    SCOPED_TRACE(mode);
    y = run1("Conv", {x, w}, {{"auto_pad", std::string(mode)}, {"strides", Ints{1, 2}}, {"kernel_shape", Ints{3, 3}}});
    ASSERT_EQ(y.sizes(), IntArrayRef({2, 3, 5, 4}));
    const bool upper = std::string(mode) == "SAME_UPPER";  // columns: total pad (4 - 1) * 2 + 3 - 7 = 2
    testing::expect_values(y, conv_reference(x, w, {}, window({3, 3}, {1, 2}, {}, {1, 1}, {1, 1}), 1, y.sizes()));
    const Tensor even =
        run1("Conv", {x.narrow(3, 0, 6), w}, {{"auto_pad", std::string(mode)}, {"strides", Ints{2, 2}}});
    ASSERT_EQ(even.sizes(), IntArrayRef({2, 3, 3, 3}));  // rows: total pad 2; columns: 1
    const Ints lo = upper ? Ints{1, 0} : Ints{1, 1}, hi = upper ? Ints{1, 1} : Ints{1, 0};
    testing::expect_values(
        even, conv_reference(x.narrow(3, 0, 6), w, {}, window({3, 3}, {2, 2}, {}, lo, hi), 1, even.sizes()));
  }
  y = run1("Conv", {x, w}, {{"auto_pad", std::string("VALID")}, {"pads", Ints{5, 5, 5, 5}}});
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, 3, 5}));
}

TEST(ModelNnOps, ConvGroupsDepthwise1dAnd3d) {
  // groups of 2 input channels; depthwise (group = channels, two filters each)
  const Tensor x = random({1, 4, 6, 5}, 6);
  const Tensor grouped = random({6, 2, 2, 3}, 7), depthwise = random({8, 1, 3, 3}, 8);
  Tensor y = run1("Conv", {x, grouped}, {{"group", int64_t(2)}, {"pads", Ints{1, 1, 1, 1}}});
  testing::expect_values(y, conv_reference(x, grouped, {}, window({2, 3}, {}, {}, {1, 1}, {1, 1}), 2, y.sizes()));
  y = run1("Conv", {x, depthwise, random({8}, 9)}, {{"group", int64_t(4)}});
  testing::expect_values(y, conv_reference(x, depthwise, random({8}, 9), window({3, 3}), 4, y.sizes()));
  // 1-d, with SAME_LOWER's odd pad first
  const Tensor x1 = random({3, 2, 9}, 10), w1 = random({5, 2, 4}, 11);
  y = run1("Conv", {x1, w1}, {{"auto_pad", std::string("SAME_LOWER")}});
  ASSERT_EQ(y.sizes(), IntArrayRef({3, 5, 9}));
  testing::expect_values(y, conv_reference(x1, w1, {}, window({4}, {1}, {1}, {2}, {1}), 1, y.sizes()));
  // 3-d: one conv2d per kernel depth, depth padded first
  const Tensor x3 = random({2, 2, 5, 4, 6}, 12), w3 = random({4, 1, 3, 2, 3}, 13), b3 = random({4}, 14);
  y = run1("Conv", {x3, w3, b3},
           {{"group", int64_t(2)},
            {"strides", Ints{2, 1, 2}},
            {"pads", Ints{1, 0, 1, 2, 1, 0}},
            {"dilations", Ints{1, 2, 1}}});
  ASSERT_EQ(y.sizes(), IntArrayRef({2, 4, 3, 3, 3}));
  testing::expect_values(
      y, conv_reference(x3, w3, b3, window({3, 2, 3}, {2, 1, 2}, {1, 2, 1}, {1, 0, 1}, {2, 1, 0}), 2, y.sizes()));
}

TEST(ModelNnOps, ConvFloat32BatchOne) {
  const Tensor x = random({1, 1, 3, 3}, 15, kFloat32), w = random({1, 1, 2, 2}, 16, kFloat32);
  const Tensor y = run1("Conv", {x, w});
  EXPECT_EQ(y.dtype(), kFloat32);
  testing::expect_values(y, conv_reference(x, w, {}, window({2, 2}), 1, y.sizes()), 1e-5, 1e-5);
}

TEST(ModelNnOps, ConvMistakesNameTheNode) {
  const Tensor x = random({1, 3, 5, 5}, 17);
  expect_node_error("Conv", {x, random({2, 4, 3, 3}, 18)}, {},
                    {"Conv node 'Conv_0'", "weight W [2, 4, 3, 3]", "expects 4 input channels", "has 3"});
  expect_node_error("Conv", {x, random({2, 3, 3, 3}, 18)}, {{"kernel_shape", Ints{2, 2}}},
                    {"Conv node", "kernel_shape [2, 2] differs"});
  expect_node_error("Conv", {x, random({2, 3, 3, 3}, 18)}, {{"auto_pad", std::string("SAME")}},
                    {"Conv node", "auto_pad must be"});
  expect_node_error("Conv", {x, random({2, 3, 3, 3}, 18)}, {{"strides", Ints{1}}},
                    {"Conv node", "strides [1] must have 2 values"});
  expect_node_error("Conv", {x, random({2, 3, 3, 3}, 18), random({3}, 1)}, {}, {"Conv node", "bias B [3] must be [2]"});
  expect_node_error("Conv", {x, random({2, 3, 7, 3}, 18)}, {}, {"Conv node", "is larger than"});
}

// ---- ConvTranspose ----

TEST(ModelNnOps, ConvTransposeMatchesScatterLoops) {
  const Tensor x = random({2, 4, 3, 4}, 20), w = random({4, 3, 3, 2}, 21), b = random({6}, 22);
  // group 2, strides, dilations, symmetric pads and output_padding (nnvm's op as it is)
  Tensor y = run1("ConvTranspose", {x, w, b},
                  {{"group", int64_t(2)},
                   {"strides", Ints{2, 3}},
                   {"dilations", Ints{1, 2}},
                   {"pads", Ints{1, 1, 1, 1}},
                   {"output_padding", Ints{1, 2}}});
  // (in - 1) * stride + (k - 1) * dilation + 1 + output_padding - pads: 4 + 3 + 1 - 2 = 6, 9 + 3 + 2 - 2 = 12
  ASSERT_EQ(y.sizes(), IntArrayRef({2, 6, 6, 12}));
  const Window win = window({3, 2}, {2, 3}, {1, 2}, {1, 1}, {1, 1});
  std::vector<double> expected = conv_transpose_reference(x, w, win, 2, y.sizes());
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += testing::values(b)[(i / 72) % 6];
  testing::expect_values(y, expected);
  // asymmetric pads and an output_padding the stride does not cover: cropped from the whole output
  y = run1("ConvTranspose", {x, w},
           {{"group", int64_t(2)}, {"pads", Ints{0, 2, 1, 0}}, {"output_padding", Ints{1, 0}}});
  ASSERT_EQ(y.sizes(), IntArrayRef({2, 6, 5, 3}));
  testing::expect_values(y, conv_transpose_reference(x, w, window({3, 2}, {1, 1}, {}, {0, 2}), 2, y.sizes()));
}

TEST(ModelNnOps, ConvTransposeOutputShapeAutoPad1dAnd3d) {
  const Tensor x = random({1, 2, 3, 3}, 23), w = random({2, 2, 3, 3}, 24);
  // output_shape [10, 8] from a natural 9 x 7: the pads are -1, so a zero row and column grow at the end
  Tensor y = run1("ConvTranspose", {x, w}, {{"strides", Ints{3, 2}}, {"output_shape", Ints{10, 8}}});
  ASSERT_EQ(y.sizes(), IntArrayRef({1, 2, 10, 8}));
  testing::expect_values(y, conv_transpose_reference(x, w, window({3, 3}, {3, 2}), 1, y.sizes()));
  // SAME_UPPER: output in * stride, the odd pad at the end; SAME_LOWER at the start
  y = run1("ConvTranspose", {x, w}, {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  ASSERT_EQ(y.sizes(), IntArrayRef({1, 2, 6, 6}));
  testing::expect_values(y, conv_transpose_reference(x, w, window({3, 3}, {2, 2}), 1, y.sizes()));
  y = run1("ConvTranspose", {x, w}, {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}});
  testing::expect_values(y, conv_transpose_reference(x, w, window({3, 3}, {2, 2}, {}, {1, 1}), 1, y.sizes()));
  // 1-d
  const Tensor x1 = random({2, 3, 5}, 25), w1 = random({3, 2, 4}, 26);
  y = run1("ConvTranspose", {x1, w1}, {{"strides", Ints{3}}, {"pads", Ints{1, 2}}});
  ASSERT_EQ(y.sizes(), IntArrayRef({2, 2, 13}));
  testing::expect_values(y, conv_transpose_reference(x1, w1, window({4}, {3}, {}, {1}), 1, y.sizes()));
  // 3-d: one conv_transpose2d per kernel depth, spread over the strided depth
  const Tensor x3 = random({1, 2, 3, 2, 3}, 27), w3 = random({2, 3, 2, 3, 2}, 28), b3 = random({3}, 29);
  y = run1("ConvTranspose", {x3, w3, b3},
           {{"strides", Ints{2, 1, 2}}, {"dilations", Ints{2, 1, 1}}, {"pads", Ints{1, 0, 0, 0, 1, 1}}});
  ASSERT_EQ(y.sizes(), IntArrayRef({1, 3, 6, 3, 5}));
  std::vector<double> expected =
      conv_transpose_reference(x3, w3, window({2, 3, 2}, {2, 1, 2}, {2, 1, 1}, {1, 0, 0}), 1, y.sizes());
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += testing::values(b3)[i / 90];
  testing::expect_values(y, expected);
}

TEST(ModelNnOps, ConvTransposeMistakes) {
  const Tensor x = random({1, 3, 4, 4}, 30);
  expect_node_error("ConvTranspose", {x, random({2, 2, 3, 3}, 31)}, {},
                    {"ConvTranspose node", "weight W [2, 2, 3, 3]", "expects 2 input channels", "has 3"});
  expect_node_error("ConvTranspose", {x, random({3, 2, 3, 3}, 31)}, {{"output_shape", Ints{4}}},
                    {"ConvTranspose node", "output_shape [4] must have 2"});
}

// ---- pooling ----

// A pooling node's attributes and the window they mean.
struct PoolCase {
  Attrs attrs;
  Window win;
  Ints out;                        // MaxPool's spatial output size
  bool count_include_pad = false;  // AveragePool's
};

TEST(ModelNnOps, MaxPoolPadsCeilDilationsMatchLoops) {
  const Tensor x = random({2, 3, 7, 6}, 40);
  const PoolCase cases[] = {
      {{{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 0}}},
       window({3, 2}, {2, 2}, {}, {1, 0}, {1, 0}),
       {4, 3}},
      {{{"kernel_shape", Ints{2, 2}}, {"pads", Ints{0, 1, 1, 0}}}, window({2, 2}, {1, 1}, {}, {0, 1}, {1, 0}), {7, 6}},
      {{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t(1)}},
       window({3, 3}, {2, 2}),
       {3, 3}},
      {{{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 3}}, {"strides", Ints{1, 2}}},
       window({2, 2}, {1, 2}, {2, 3}),
       {5, 2}},
      {{{"kernel_shape", Ints{3, 3}}, {"pads", Ints{2, 2, 2, 2}}}, window({3, 3}, {}, {}, {2, 2}, {2, 2}), {9, 8}},
      {{{"kernel_shape", Ints{3, 2}}, {"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}},
       window({3, 2}, {2, 2}, {}, {1, 0}, {1, 0}),
       {4, 3}},
      {{{"kernel_shape", Ints{2, 3}}, {"auto_pad", std::string("SAME_LOWER")}},
       window({2, 3}, {}, {}, {1, 1}, {0, 1}),
       {7, 6}},
  };
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(shape_str(c.win.kernel) + " " + shape_str(c.out));
    const std::vector<Tensor> outs = run_node("MaxPool", {x}, c.attrs, 2);
    ASSERT_EQ(outs[0].sizes(), IntArrayRef({2, 3, c.out[0], c.out[1]}));
    const auto [values, index] = max_pool_reference(x, c.win, outs[0].sizes());
    testing::expect_values(outs[0], values);
    testing::expect_values(outs[1], index);
    EXPECT_EQ(outs[1].dtype(), kInt64);
    testing::expect_values(run1("MaxPool", {x}, c.attrs), values);  // without Indices: nnvm's op
  }
}

TEST(ModelNnOps, MaxPoolIndicesColumnMajor1dAnd3dAndUint8) {
  // storage_order 1: the index within a plane is h + w * H
  const Tensor x = arange(1.0, 26.0, 1.0, kFloat32).reshape({1, 1, 5, 5});
  const std::vector<Tensor> outs = run_node(
      "MaxPool", {x}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"storage_order", int64_t(1)}}, 2);
  testing::expect_values(outs[0], {7, 9, 17, 19});
  testing::expect_values(outs[1], {6, 16, 8, 18});
  const Tensor x1 = random({1, 2, 9}, 41);
  Tensor y = run1("MaxPool", {x1}, {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}, {"pads", Ints{0, 1}}});
  testing::expect_values(y, max_pool_reference(x1, window({3}, {2}, {}, {0}, {1}), y.sizes()).first);
  const Tensor x3 = random({1, 2, 5, 4, 5}, 42);
  const Attrs attrs3 = {{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{2, 1, 2}}, {"pads", Ints{1, 1, 0, 0, 0, 1}}};
  const std::vector<Tensor> outs3 = run_node("MaxPool", {x3}, attrs3, 2);
  ASSERT_EQ(outs3[0].sizes(), IntArrayRef({1, 2, 3, 3, 3}));
  const auto [v3, i3] =
      max_pool_reference(x3, window({2, 3, 2}, {2, 1, 2}, {}, {1, 1, 0}, {0, 0, 1}), outs3[0].sizes());
  testing::expect_values(outs3[0], v3);
  testing::expect_values(outs3[1], i3);
  testing::expect_values(run1("MaxPool", {x3}, attrs3), v3);
  const Tensor bytes = tensor({3, 250, 7, 1, 9, 255, 0, 4, 8}).to(kUInt8).reshape({1, 1, 3, 3});
  y = run1("MaxPool", {bytes}, {{"kernel_shape", Ints{2, 2}}});
  EXPECT_EQ(y.dtype(), kUInt8);
  testing::expect_values(y, {250, 255, 9, 255});
}

TEST(ModelNnOps, AveragePoolCountIncludePadCeilMatchLoops) {
  const Tensor x = random({1, 2, 6, 7}, 43);
  const PoolCase cases[] = {
      {{{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}, window({3, 3}, {}, {}, {1, 1}, {1, 1}), {}, false},
      {{{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"count_include_pad", int64_t(1)}},
       window({3, 3}, {}, {}, {1, 1}, {1, 1}),
       {},
       true},
      {{{"kernel_shape", Ints{2, 3}}, {"pads", Ints{0, 2, 1, 0}}, {"strides", Ints{2, 2}}},
       window({2, 3}, {2, 2}, {}, {0, 2}, {1, 0}),
       {},
       false},
      {{{"kernel_shape", Ints{2, 3}}, {"pads", Ints{0, 2, 1, 0}}, {"count_include_pad", int64_t(1)}},
       window({2, 3}, {}, {}, {0, 2}, {1, 0}),
       {},
       true},
      {{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t(1)}},
       window({3, 3}, {2, 2}),
       {},
       false},
      {{{"kernel_shape", Ints{3, 2}},
        {"strides", Ints{2, 2}},
        {"ceil_mode", int64_t(1)},
        {"pads", Ints{1, 1, 1, 1}},
        {"count_include_pad", int64_t(1)}},
       window({3, 2}, {2, 2}, {}, {1, 1}, {1, 1}),
       {},
       true},
      {{{"kernel_shape", Ints{3, 3}}, {"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}},
       window({3, 3}, {2, 2}, {}, {0, 1}, {1, 1}),
       {},
       false},
  };
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(shape_str(c.win.kernel) + (c.count_include_pad ? " counting pads" : ""));
    const Tensor y = run1("AveragePool", {x}, c.attrs);
    testing::expect_values(y, avg_pool_reference(x, c.win, c.count_include_pad, y.sizes()));
  }
  // 1-d and 3-d
  const Tensor x1 = random({2, 3, 8}, 44);
  Tensor y = run1("AveragePool", {x1}, {{"kernel_shape", Ints{3}}, {"pads", Ints{2, 1}}});
  ASSERT_EQ(y.sizes(), IntArrayRef({2, 3, 9}));
  testing::expect_values(y, avg_pool_reference(x1, window({3}, {}, {}, {2}, {1}), false, y.sizes()));
  const Tensor x3 = random({1, 2, 4, 5, 3}, 45);
  for (int64_t include : {0, 1}) {
    y = run1("AveragePool", {x3},
             {{"kernel_shape", Ints{2, 2, 2}}, {"pads", Ints{1, 0, 1, 0, 1, 1}}, {"count_include_pad", include}});
    ASSERT_EQ(y.sizes(), IntArrayRef({1, 2, 4, 5, 4}));
    testing::expect_values(y,
                           avg_pool_reference(x3, window({2, 2, 2}, {}, {}, {1, 0, 1}, {0, 1, 1}), include, y.sizes()));
  }
}

TEST(ModelNnOps, GlobalPoolsAndPoolMistakes) {
  const Tensor x = random({2, 3, 4, 5, 2}, 46);
  testing::expect_tensors_close(run1("GlobalAveragePool", {x}), x.mean({2, 3, 4}, true));
  testing::expect_tensors_close(run1("GlobalMaxPool", {x}), x.amax({2, 3, 4}, true));
  const Tensor x1 = random({1, 2, 7}, 47);
  testing::expect_tensors_close(run1("GlobalMaxPool", {x1}), x1.amax(2, true));
  const Tensor img = random({1, 1, 4, 4}, 48);
  expect_node_error("MaxPool", {img}, {{"kernel_shape", Ints{2}}},
                    {"MaxPool node", "kernel_shape [2] must have 2 values"});
  expect_node_error("AveragePool", {img}, {}, {"AveragePool node", "kernel_shape"});
  expect_node_error("MaxPool", {img}, {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{1, 1}}},
                    {"MaxPool node", "pads [1, 1] must have 4 values"});
  expect_node_error("MaxPool", {img.flatten(1)}, {{"kernel_shape", Ints{2}}}, {"MaxPool node", "1 to 3 spatial dims"});
}

}  // namespace
}  // namespace nnvm
