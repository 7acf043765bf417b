// The model ops of neural networks, second half (the first: model_nn_ops_test.cpp):
// normalisation against its formula or nnvm's own op, softmax and hardmax by
// opset, Gemm and MatMul, Einsum, Resize against values worked out by hand
// (ONNX's documented examples) and nnvm's interpolate, and the recurrent
// layers against nnvm's GRUCell and LSTMCell, with the user's mistakes as
// errors naming the node.
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

// ---- normalisation ----

TEST(ModelNnOps, BatchNormalizationInferenceAndTraining) {
  const Tensor x = random({3, 4, 2, 5}, 50), scale = random({4}, 51), bias = random({4}, 52);
  const Tensor mean = random({4}, 53), var = random({4}, 54, kFloat64).abs() + 0.1;
  auto c = [](const Tensor& t) { return t.reshape({1, 4, 1, 1}); };
  const Tensor expected = (x - c(mean)) / (c(var) + 1e-3).sqrt() * c(scale) + c(bias);
  for (int64_t opset : {7, 9, 15}) {
    SCOPED_TRACE(opset);
    testing::expect_tensors_close(run1("BatchNormalization", {x, scale, bias, mean, var}, {{"epsilon", 1e-3}}, opset),
                                  expected);
  }
  // training_mode: the batch's statistics (biased variance), running ones updated by momentum
  const std::vector<Tensor> outs =
      run_node("BatchNormalization", {x, scale, bias, mean, var},
               {{"training_mode", int64_t(1)}, {"momentum", 0.8}, {"epsilon", 1e-3}}, 3, 15);
  const Tensor batch_mean = x.mean({0, 2, 3}), batch_var = x.var({0, 2, 3}, 0);
  testing::expect_tensors_close(outs[0], (x - c(batch_mean)) / (c(batch_var) + 1e-3).sqrt() * c(scale) + c(bias));
  testing::expect_tensors_close(outs[1], mean * 0.8 + batch_mean * 0.2);
  testing::expect_tensors_close(outs[2], var * 0.8 + batch_var * 0.2);
  // opset 7's spatial=0: statistics per activation
  const Tensor s2 = random({4, 2, 5}, 55), v2 = random({4, 2, 5}, 56).abs() + 0.1;
  testing::expect_tensors_close(run1("BatchNormalization", {x, s2, s2, s2, v2}, {{"spatial", int64_t(0)}}, 7),
                                (x - s2) / (v2 + 1e-5).sqrt() * s2 + s2);
  expect_node_error("BatchNormalization", {x, random({3}, 1), bias, mean, var}, {},
                    {"BatchNormalization node", "input 1 has shape [3], expected [4]"});
}

TEST(ModelNnOps, InstanceLayerAndMeanVarianceNormalization) {
  const Tensor x = random({2, 3, 4, 5}, 60), scale = random({3}, 61), bias = random({3}, 62);
  auto c = [](const Tensor& t) { return t.reshape({1, 3, 1, 1}); };
  const Tensor mean = x.mean({2, 3}, true), var = x.var({2, 3}, 0, true);
  testing::expect_tensors_close(run1("InstanceNormalization", {x, scale, bias}, {{"epsilon", 1e-2}}),
                                (x - mean) / (var + 1e-2).sqrt() * c(scale) + c(bias));
  // LayerNormalization over the dims from axis; scale broadcast; Mean and InvStdDev keep them as 1s
  const Tensor w = random({4, 5}, 63), b = random({5}, 64);
  testing::expect_tensors_close(run1("LayerNormalization", {x, w, b}, {{"axis", int64_t(-2)}}),
                                layer_norm(x, {4, 5}, w, b.expand({4, 5}).contiguous(), 1e-5));
  const std::vector<Tensor> outs =
      run_node("LayerNormalization", {x, w.narrow(0, 0, 1)}, {{"axis", int64_t(2)}, {"epsilon", 0.1}}, 3);
  const Tensor m = x.mean({2, 3}, true), inv = (x.var({2, 3}, 0, true) + 0.1).rsqrt();
  testing::expect_tensors_close(outs[0], (x - m) * inv * w.narrow(0, 0, 1));
  testing::expect_tensors_close(outs[1], m);
  testing::expect_tensors_close(outs[2], inv);
  EXPECT_EQ(outs[1].sizes(), IntArrayRef({2, 3, 1, 1}));
  // MeanVarianceNormalization over [0, 2, 3] by default
  const Tensor mv = x.mean({0, 2, 3}, true);
  testing::expect_tensors_close(run1("MeanVarianceNormalization", {x}),
                                (x - mv) / (x.var({0, 2, 3}, 0, true) + 1e-9).sqrt());
  testing::expect_tensors_close(run1("MeanVarianceNormalization", {x}, {{"axes", Ints{1}}}),
                                (x - x.mean(1, true)) / (x.var({1}, 0, true) + 1e-9).sqrt());
  expect_node_error("LayerNormalization", {x, w}, {{"axis", int64_t(4)}},
                    {"LayerNormalization node", "axis 4 is out of range"});
}

TEST(ModelNnOps, LrnSumsSquaresOverNeighbouringChannels) {
  const Tensor x = random({2, 5, 3, 2}, 65);
  for (int64_t size : {1, 2, 3, 4}) {
    SCOPED_TRACE(size);
    const std::vector<double> xv = testing::values(x);
    std::vector<double> expected;
    testing::for_each_index(x.sizes(), [&](const DimVector& i) {
      double sum = 0;
      for (int64_t c = i[1] - (size - 1) / 2; c <= i[1] + size / 2; ++c)
        if (c >= 0 && c < 5) sum += std::pow(xv[size_t(offset({i[0], c, i[2], i[3]}, x.sizes()))], 2);
      expected.push_back(xv[size_t(offset(i, x.sizes()))] / std::pow(2.0 + 0.5 / double(size) * sum, 0.6));
    });
    testing::expect_values(run1("LRN", {x}, {{"size", size}, {"alpha", 0.5}, {"beta", 0.6}, {"bias", 2.0}}), expected);
  }
}

// ---- softmax family and matrix products ----

TEST(ModelNnOps, SoftmaxHardmaxReadTheAxisByOpset) {
  const Tensor x = random({2, 3, 4}, 70);
  // opset 13: along axis 1; before: over the input flattened to [2, 12] at axis 1
  testing::expect_tensors_close(run1("Softmax", {x}, {{"axis", int64_t(1)}}), x.softmax(1));
  testing::expect_tensors_close(run1("Softmax", {x}, {{"axis", int64_t(1)}}, 11),
                                x.reshape({2, 12}).softmax(1).reshape({2, 3, 4}));
  testing::expect_tensors_close(run1("LogSoftmax", {x}, {}, 11), x.reshape({2, 12}).log_softmax(1).reshape({2, 3, 4}));
  testing::expect_tensors_close(run1("LogSoftmax", {x}, {{"axis", int64_t(0)}}, 11),
                                x.reshape({1, 24}).log_softmax(1).reshape({2, 3, 4}));
  // Hardmax: 1 at the first maximum only
  const Tensor ties = tensor({1.0, 3.0, 3.0, 2.0, 0.0, 5.0, 5.0, 5.0}).reshape({2, 4});
  testing::expect_values(run1("Hardmax", {ties}), {0, 1, 0, 0, 0, 1, 0, 0});
  testing::expect_values(run1("Hardmax", {ties}, {{"axis", int64_t(0)}}), {1, 0, 0, 0, 0, 1, 1, 1});
  testing::expect_values(run1("Hardmax", {ties.reshape({2, 2, 2})}, {{"axis", int64_t(1)}}, 11),
                         {0, 1, 0, 0, 0, 1, 0, 0});
}

TEST(ModelNnOps, GemmAndMatMulBroadcasting) {
  const Tensor a = random({3, 5}, 71), b = random({4, 3}, 72), c = random({4}, 73);
  testing::expect_tensors_close(
      run1("Gemm", {a, b, c}, {{"transA", int64_t(1)}, {"transB", int64_t(1)}, {"alpha", 0.5}, {"beta", 2.0}}),
      a.t().matmul(b.t()) * 0.5 + c * 2.0);
  testing::expect_tensors_close(run1("Gemm", {a.t(), b.t()}), a.t().matmul(b.t()));
  // MatMul as numpy's: batch dims broadcast, a 1-d operand is a vector
  const Tensor x = random({2, 1, 3, 4}, 74), y = random({5, 4, 2}, 75), v = random({4}, 76);
  const Tensor xy = run1("MatMul", {x, y});
  ASSERT_EQ(xy.sizes(), IntArrayRef({2, 5, 3, 2}));
  testing::expect_tensors_close(xy.select(0, 1).select(0, 3), x.select(0, 1).select(0, 0).matmul(y.select(0, 3)));
  testing::expect_tensors_close(run1("MatMul", {x, v}), (x * v).sum(-1));
  EXPECT_EQ(run1("MatMul", {v, y}).sizes(), IntArrayRef({5, 2}));
  EXPECT_EQ(run1("MatMul", {v, v}).dim(), 0);
  expect_node_error("Gemm", {a, b}, {}, {"Gemm node", "cannot be multiplied"});
}

TEST(ModelNnOps, EinsumPatterns) {
  const Tensor a = random({2, 3, 4}, 80), b = random({2, 4, 5}, 81), m = random({3, 4}, 82), n = random({4, 5}, 83);
  testing::expect_tensors_close(run1("Einsum", {m, n}, {{"equation", std::string("ij,jk->ik")}}), m.matmul(n));
  testing::expect_tensors_close(run1("Einsum", {m, n}, {{"equation", std::string("ij,jk")}}), m.matmul(n));
  testing::expect_tensors_close(run1("Einsum", {a, b}, {{"equation", std::string("bij, bjk -> bik")}}), a.matmul(b));
  testing::expect_tensors_close(run1("Einsum", {a}, {{"equation", std::string("bij->jib")}}), a.permute({2, 1, 0}));
  testing::expect_tensors_close(run1("Einsum", {a}, {{"equation", std::string("bij->j")}}), a.sum({0, 1}));
  testing::expect_tensors_close(run1("Einsum", {m, m}, {{"equation", std::string("ij,ij->")}}), (m * m).sum());
  testing::expect_tensors_close(run1("Einsum", {a, m}, {{"equation", std::string("...ij,ij->...i")}}), (a * m).sum(-1));
  testing::expect_tensors_close(run1("Einsum", {m.narrow(1, 0, 3)}, {{"equation", std::string("ii->i")}}),
                                m.narrow(1, 0, 3).diagonal());
  testing::expect_tensors_close(run1("Einsum", {m.narrow(1, 0, 3)}, {{"equation", std::string("ii")}}),
                                m.narrow(1, 0, 3).diagonal().sum());
  // outer product, a three-operand chain, implicit output in alphabetical order
  const Tensor u = random({3}, 84), w = random({5}, 85);
  testing::expect_tensors_close(run1("Einsum", {u, w}, {{"equation", std::string("i,j->ij")}}), u.outer(w));
  testing::expect_tensors_close(run1("Einsum", {u, m, n}, {{"equation", std::string("i,ij,jk->k")}}),
                                u.matmul(m).matmul(n));
  testing::expect_tensors_close(run1("Einsum", {m}, {{"equation", std::string("ba")}}), m.t());
  expect_node_error("Einsum", {m, n}, {{"equation", std::string("ij->ij")}},
                    {"Einsum node", "equation 'ij->ij' has 1 terms for 2 inputs"});
  expect_node_error("Einsum", {m}, {{"equation", std::string("ij->ik")}},
                    {"Einsum node", "names 'k' in the output but in no input"});
  expect_node_error("Einsum", {m}, {{"equation", std::string("i2->i")}}, {"Einsum node", "'2'"});
}

// ---- Resize and Upsample (values from ONNX's operator documentation) ----

TEST(ModelNnOps, ResizeModesAndCoordinates) {
  const Tensor x4 = arange(1.0, 17.0, 1.0, kFloat32).reshape({1, 1, 4, 4});
  const Tensor x2 = tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({1, 1, 2, 2});
  const Tensor x24 = arange(1.0, 9.0, 1.0, kFloat32).reshape({1, 1, 2, 4});
  auto scales = [](std::vector<double> s) { return tensor(s).to(kFloat32); };
  auto sizes = [](Ints s) { return tensor(s); };
  auto attrs = [](std::string mode, std::string coordinates = "half_pixel",
                  std::string nearest = "round_prefer_floor") {
    return Attrs{{"mode", mode}, {"coordinate_transformation_mode", coordinates}, {"nearest_mode", nearest}};
  };
  const Tensor none;
  testing::expect_values(run1("Resize", {x2, none, scales({1, 1, 2, 2})}, attrs("linear")),
                         {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  testing::expect_values(run1("Resize", {x24, none, scales({1, 1, 0.6, 0.6})}, attrs("linear")), {2.6666665, 4.333333});
  testing::expect_values(run1("Resize", {x24, none, scales({1, 1, 0.6, 0.6})}, attrs("linear", "align_corners")),
                         {1, 3.142857});
  testing::expect_values(run1("Resize", {x24, none, scales({1, 1, 0.6, 0.6})}, attrs("nearest")), {1, 3});
  testing::expect_values(run1("Resize", {x2, none, scales({1, 1, 2, 3})}, attrs("nearest")),
                         {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  testing::expect_values(run1("Resize", {x24, none, none, sizes({1, 1, 1, 3})}, attrs("nearest")), {1, 2, 4});
  testing::expect_values(
      run1("Resize", {x4, none, scales({1, 1, 0.8, 0.8})}, attrs("cubic")),
      {1.47119141, 2.78125, 4.08251953, 6.71142578, 8.02148438, 9.32275391, 11.91650391, 13.2265625, 14.52783203});
  Attrs cubic = attrs("cubic");
  cubic["cubic_coeff_a"] = -0.5;
  cubic["exclude_outside"] = int64_t(1);
  testing::expect_values(
      run1("Resize", {x4, none, scales({1, 1, 0.8, 0.8})}, cubic),
      {1.36812675, 2.6695014, 4.0133367, 6.57362535, 7.875, 9.2188353, 11.94896657, 13.25034023, 14.59417653});
  testing::expect_values(run1("Resize", {x4, none, none, sizes({1, 1, 3, 1})}, attrs("linear", "pytorch_half_pixel")),
                         {1.6666666, 7, 12.333333});
  const Tensor ceil = run1("Resize", {x4, none, none, sizes({1, 1, 8, 8})}, attrs("nearest", "half_pixel", "ceil"));
  testing::expect_values(ceil.select(2, 0), {1, 2, 2, 3, 3, 4, 4, 4});
  const Tensor floor =
      run1("Resize", {x4, none, none, sizes({1, 1, 8, 8})}, attrs("nearest", "align_corners", "floor"));
  testing::expect_values(floor.select(2, 0), {1, 1, 1, 2, 2, 3, 3, 4});
  // tf_crop_and_resize: outside the roi is extrapolation_value
  Attrs crop = attrs("linear", "tf_crop_and_resize");
  crop["extrapolation_value"] = 10.0;
  testing::expect_values(
      run1("Resize", {x4, tensor({0.0, 0.0, 0.4, 0.6, 1.0, 1.0, 1.2, 1.7}).to(kFloat32), none, sizes({1, 1, 3, 3})},
           crop),
      {7.6000004, 10, 10, 12.400001, 10, 10, 10, 10, 10});
  crop["extrapolation_value"] = 0.0;
  testing::expect_values(
      run1("Resize", {x4, tensor({0.0, 0.0, 0.4, 0.6, 1.0, 1.0, 0.6, 0.8}).to(kFloat32), none, sizes({1, 1, 3, 3})},
           crop),
      {7.6, 7.9, 8.2, 8.8, 9.1, 9.4, 10.0, 10.3, 10.6});
}

TEST(ModelNnOps, ResizeByNnvmInterpolateMatchesTheTaps) {
  // A 4-d input goes to nnvm's interpolate; the same values as 5-d take the per-axis taps.
  const Tensor x = random({2, 3, 5, 7}, 90, kFloat32);
  const Tensor none;
  struct Case {
    std::string mode, coordinates, nearest;
    std::vector<double> scales;
    Ints sizes;
  };
  const Case cases[] = {
      {"linear", "half_pixel", "", {1, 1, 2, 1.5}, {}},       {"linear", "half_pixel", "", {}, {2, 3, 3, 11}},
      {"linear", "pytorch_half_pixel", "", {}, {2, 3, 9, 4}}, {"linear", "align_corners", "", {}, {2, 3, 8, 3}},
      {"linear", "align_corners", "", {1, 1, 2, 3}, {}},      {"nearest", "asymmetric", "floor", {1, 1, 2, 0.5}, {}},
      {"nearest", "asymmetric", "floor", {}, {2, 3, 10, 14}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode + " " + c.coordinates);
    const Attrs attrs = {{"mode", c.mode},
                         {"coordinate_transformation_mode", c.coordinates},
                         {"nearest_mode", c.nearest.empty() ? std::string("round_prefer_floor") : c.nearest}};
    Tensor s4, s5, z4, z5;
    if (!c.scales.empty()) {
      s4 = tensor(c.scales).to(kFloat32);
      std::vector<double> wide = c.scales;
      wide.insert(wide.begin(), 1.0);
      s5 = tensor(wide).to(kFloat32);
    } else {
      z4 = tensor(c.sizes);
      Ints wide = c.sizes;
      wide.insert(wide.begin(), 1);
      z5 = tensor(wide);
    }
    const Tensor fast = run1("Resize", {x, none, s4, z4}, attrs);
    const Tensor taps = run1("Resize", {x.unsqueeze(0), none, s5, z5}, attrs);
    testing::expect_tensors_close(fast, taps.squeeze(0), 1e-5, 1e-5);
  }
}

TEST(ModelNnOps, ResizeOpset10AndUpsample) {
  const Tensor x2 = tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({1, 1, 2, 2});
  const Tensor up = tensor({1.0f, 1.0f, 2.0f, 3.0f}).to(kFloat32);
  const std::vector<double> nearest = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  testing::expect_values(run1("Upsample", {x2, up}, {{"mode", std::string("nearest")}}, 9), nearest);
  testing::expect_values(run1("Upsample", {x2}, {{"scales", std::vector<double>{1, 1, 2, 3}}}, 7), nearest);
  testing::expect_values(run1("Resize", {x2, up}, {{"mode", std::string("nearest")}}, 10), nearest);
  // opset 10's linear is asymmetric: x / scale, the edge repeated past the end
  testing::expect_values(run1("Resize", {x2, tensor({1.0f, 1.0f, 2.0f, 2.0f})}, {{"mode", std::string("linear")}}, 10),
                         {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4});
  // opset 10's nearest rounds up when downsampling
  const Tensor x24 = arange(1.0, 9.0, 1.0, kFloat32).reshape({1, 1, 2, 4});
  testing::expect_values(run1("Resize", {x24, tensor({1.0f, 1.0f, 0.6f, 0.6f})}, {}, 10), {1, 3});
  expect_node_error("Resize", {x2, Tensor(), up}, {{"mode", std::string("area")}},
                    {"Resize node", "mode 'area' is not one of nearest, linear, cubic"});
  expect_node_error("Resize", {x2, Tensor(), up, tensor({1, 1, 4, 4})}, {},
                    {"Resize node", "needs exactly one of scales and sizes"});
  expect_node_error("Resize", {x2, Tensor(), tensor({2.0f, 2.0f})}, {},
                    {"Resize node", "scales must have one value per dim"});
}

// ---- recurrent layers ----

// ONNX's gate blocks from PyTorch's: `order` lists which PyTorch block each ONNX block is.
Tensor reorder(const Tensor& t, const Ints& order) {
  const std::vector<Tensor> blocks = t.chunk(int64_t(order.size()), 0);
  std::vector<Tensor> picked;
  for (int64_t k : order) picked.push_back(blocks[size_t(k)]);
  return cat(picked, 0);
}

TEST(ModelNnOps, LstmMatchesLstmCellBothDirections) {
  const int64_t steps = 4, batch = 3, in = 5, hidden = 2;
  manual_seed(1);
  nn::LSTMCell fwd(in, hidden), bwd(in, hidden);
  const Ints iofc = {0, 3, 1, 2};  // PyTorch: i, f, g, o
  auto weights = [&](nn::LSTMCell& cell) {
    return std::vector<Tensor>{reorder(cell->weight_ih, iofc), reorder(cell->weight_hh, iofc),
                               cat({reorder(cell->bias_ih, iofc), reorder(cell->bias_hh, iofc)}, 0)};
  };
  const std::vector<Tensor> f = weights(fwd), r = weights(bwd);
  const Tensor w = stack({f[0], r[0]}), rr = stack({f[1], r[1]}), b = stack({f[2], r[2]});
  const Tensor x = random({steps, batch, in}, 100, kFloat32), h0 = random({2, batch, hidden}, 101, kFloat32);
  const Tensor c0 = random({2, batch, hidden}, 102, kFloat32);
  const std::vector<Tensor> outs = run_node("LSTM", {x, w, rr, b, Tensor(), h0, c0},
                                            {{"direction", std::string("bidirectional")}, {"hidden_size", hidden}}, 3);
  ASSERT_EQ(outs[0].sizes(), IntArrayRef({steps, 2, batch, hidden}));
  Tensor h = h0[0], c = c0[0];
  for (int64_t t = 0; t < steps; ++t) {
    std::tie(h, c) = fwd(x[t], std::make_tuple(h, c));
    testing::expect_tensors_close(outs[0][t][0], h, 1e-4, 1e-5);
  }
  testing::expect_tensors_close(outs[1][0], h, 1e-4, 1e-5);
  testing::expect_tensors_close(outs[2][0], c, 1e-4, 1e-5);
  h = h0[1], c = c0[1];
  for (int64_t t = steps - 1; t >= 0; --t) {
    std::tie(h, c) = bwd(x[t], std::make_tuple(h, c));
    testing::expect_tensors_close(outs[0][t][1], h, 1e-4, 1e-5);
  }
  testing::expect_tensors_close(outs[1][1], h, 1e-4, 1e-5);
  testing::expect_tensors_close(outs[2][1], c, 1e-4, 1e-5);
}

TEST(ModelNnOps, LstmPeepholesSequenceLengthsAndLayout) {
  const int64_t steps = 3, batch = 2, in = 2, hidden = 3;
  const Tensor x = random({batch, steps, in}, 110), w = random({1, 4 * hidden, in}, 111, kFloat64, -0.5, 0.5);
  const Tensor r = random({1, 4 * hidden, hidden}, 112, kFloat64, -0.5, 0.5), p = random({1, 3 * hidden}, 113);
  const Tensor lens = tensor({3, 1}).to(kInt32);
  // layout 1 (batch first), reverse, peepholes; the second entry's sequence has one step
  const std::vector<Tensor> outs = run_node("LSTM", {x, w, r, Tensor(), lens, Tensor(), Tensor(), p},
                                            {{"layout", int64_t(1)}, {"direction", std::string("reverse")}}, 3);
  ASSERT_EQ(outs[0].sizes(), IntArrayRef({batch, steps, 1, hidden}));
  ASSERT_EQ(outs[1].sizes(), IntArrayRef({batch, 1, hidden}));
  const Tensor pi = p[0].narrow(0, 0, hidden), po = p[0].narrow(0, hidden, hidden),
               pf = p[0].narrow(0, 2 * hidden, hidden);
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t len = n == 0 ? 3 : 1;
    Tensor h = zeros({hidden}, kFloat64), c = zeros({hidden}, kFloat64);
    for (int64_t t = len - 1; t >= 0; --t) {
      const Tensor g = w[0].matmul(x[n][t]) + r[0].matmul(h);
      const Tensor i = (g.narrow(0, 0, hidden) + pi * c).sigmoid(),
                   fg = (g.narrow(0, 2 * hidden, hidden) + pf * c).sigmoid();
      c = fg * c + i * g.narrow(0, 3 * hidden, hidden).tanh();
      h = (g.narrow(0, hidden, hidden) + po * c).sigmoid() * c.tanh();
      testing::expect_tensors_close(outs[0][n][t][0], h);
    }
    for (int64_t t = len; t < steps; ++t) testing::expect_values(outs[0][n][t][0], {0, 0, 0});
    testing::expect_tensors_close(outs[1][n][0], h);
    testing::expect_tensors_close(outs[2][n][0], c);
  }
}

TEST(ModelNnOps, GruMatchesGruCellAndRnnItsFormula) {
  const int64_t steps = 3, batch = 2, in = 4, hidden = 3;
  manual_seed(2);
  nn::GRUCell cell(in, hidden);
  const Ints zrh = {1, 0, 2};  // PyTorch: r, z, n
  const Tensor w = reorder(cell->weight_ih, zrh).unsqueeze(0), r = reorder(cell->weight_hh, zrh).unsqueeze(0);
  const Tensor b = cat({reorder(cell->bias_ih, zrh), reorder(cell->bias_hh, zrh)}, 0).unsqueeze(0);
  const Tensor x = random({steps, batch, in}, 120, kFloat32), h0 = random({1, batch, hidden}, 121, kFloat32);
  // PyTorch's GRU applies the reset gate after the recurrent projection: linear_before_reset=1
  const std::vector<Tensor> outs =
      run_node("GRU", {x, w, r, b, Tensor(), h0}, {{"linear_before_reset", int64_t(1)}}, 2);
  Tensor h = h0[0];
  for (int64_t t = 0; t < steps; ++t) {
    h = cell(x[t], h);
    testing::expect_tensors_close(outs[0][t][0], h, 1e-4, 1e-5);
  }
  testing::expect_tensors_close(outs[1][0], h, 1e-4, 1e-5);
  // linear_before_reset=0: the reset gate scales the state before R
  const Tensor y0 = run_node("GRU", {x, w, r, b}, {}, 1)[0];
  Tensor s = zeros({batch, hidden}, kFloat32);
  auto part = [&](const Tensor& t, int64_t k) { return t.narrow(-1, k * hidden, hidden); };
  for (int64_t t = 0; t < steps; ++t) {
    const Tensor gx = x[t].matmul(w[0].t()) + b[0].narrow(0, 0, 3 * hidden);
    const Tensor z = (part(gx, 0) + s.matmul(part(r[0].t(), 0)) + part(b[0], 3)).sigmoid();
    const Tensor rs = (part(gx, 1) + s.matmul(part(r[0].t(), 1)) + part(b[0], 4)).sigmoid();
    const Tensor n = (part(gx, 2) + (rs * s).matmul(part(r[0].t(), 2)) + part(b[0], 5)).tanh();
    s = (1.0 - z) * n + z * s;
    testing::expect_tensors_close(y0[t][0], s, 1e-4, 1e-5);
  }
  // RNN with Relu and clip: h = relu(clip(x W^T + h R^T + Wb + Rb))
  const Tensor rw = random({1, hidden, in}, 122, kFloat32), rr = random({1, hidden, hidden}, 123, kFloat32);
  const std::vector<Tensor> rnn =
      run_node("RNN", {x, rw, rr}, {{"activations", std::vector<std::string>{"Relu"}}, {"clip", 1.5}}, 2);
  Tensor hr = zeros({batch, hidden}, kFloat32);
  for (int64_t t = 0; t < steps; ++t) {
    hr = (x[t].matmul(rw[0].t()) + hr.matmul(rr[0].t())).clamp(-1.5, 1.5).relu();
    testing::expect_tensors_close(rnn[0][t][0], hr, 1e-5, 1e-6);
  }
  testing::expect_tensors_close(rnn[1][0], hr, 1e-5, 1e-6);
}

TEST(ModelNnOps, RecurrentActivationsAndMistakes) {
  const Tensor x = random({2, 1, 2}, 130), w = random({1, 2, 2}, 131), r = random({1, 2, 2}, 132);
  // LeakyRelu takes the first alpha, HardSigmoid... via RNN's single activation: alpha and beta in turn
  Tensor y = run_node("RNN", {x, w, r},
                      {{"activations", std::vector<std::string>{"HardSigmoid"}},
                       {"activation_alpha", std::vector<double>{0.3}},
                       {"activation_beta", std::vector<double>{0.4}}},
                      1)[0];
  Tensor h = zeros({1, 2}, kFloat64);
  for (int64_t t = 0; t < 2; ++t) {
    h = ((x[t].matmul(w[0].t()) + h.matmul(r[0].t())) * 0.3 + 0.4).clamp(0.0, 1.0);
    testing::expect_tensors_close(y[t][0], h);
  }
  y = run_node("RNN", {x, w, r}, {{"activations", std::vector<std::string>{"leakyrelu"}}}, 1)[0];
  const Tensor pre = x[0].matmul(w[0].t());
  testing::expect_tensors_close(y[0][0], where(pre >= 0.0, pre, pre * 0.01));
  expect_node_error("RNN", {x, w, r}, {{"direction", std::string("sideways")}},
                    {"RNN node", "direction must be forward, reverse or bidirectional"});
  expect_node_error("RNN", {x, w, r}, {{"activations", std::vector<std::string>{"Swish"}}},
                    {"RNN node", "activation 'Swish'"});
  expect_node_error("LSTM", {x, w, r}, {}, {"LSTM node", "W has shape [1, 2, 2], expected [1, 8, 2]"});
  expect_node_error("GRU", {x, random({1, 6, 3}, 1), random({1, 6, 2}, 2)}, {},
                    {"GRU node", "W has shape [1, 6, 3], expected [1, 6, 2]"});
}

}  // namespace
}  // namespace nnvm
