// The model ops of 8-bit quantization (model/ops_quant.cpp): QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear and the integer products
// MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, one node each
// through GraphBuilder, against int64 loops (every signedness, zero points
// per tensor, row or column, odd and empty sizes) and the user's mistakes as
// nnvm::Errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "nnvm/nnvm.h"
#include "model_node.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::Attrs;
using Ints = std::vector<int64_t>;
using Doubles = std::vector<double>;

using testing::expect_node_error;
using testing::expect_tensor;
using testing::random;
using testing::run1;
using testing::run_node;
using testing::values_of;

// ---- quantization ----

TEST(ModelQuantOps, QuantizeLinearRoundsHalfToEvenAndSaturates) {
  const Tensor x = tensor(Doubles{0.5, 1.5, 2.5, -0.5, -1.5, 3.4, 1000.0, -1000.0, NAN}).to(kFloat32).mul(2.0);
  const Tensor scale = scalar_tensor(2.0, kFloat32);
  expect_tensor(run1("QuantizeLinear", {x, scale, scalar_tensor(10, kUInt8)}), kUInt8, {9},
                {10, 12, 12, 10, 8, 13, 255, 0, 10});
  expect_tensor(run1("QuantizeLinear", {x, scale, scalar_tensor(-1, kInt8)}), kInt8, {9},
                {-1, 1, 1, -1, -3, 2, 127, -128, -1});
  // No zero point: uint8 around 0. An int32 input.
  expect_tensor(run1("QuantizeLinear", {x, scale}), kUInt8, {9}, {0, 2, 2, 0, 0, 3, 255, 0, 0});
  expect_tensor(run1("QuantizeLinear", {tensor({-7, 7, 5}).to(kInt32), scale}), kUInt8, {3}, {0, 4, 2});
  // Per axis (opset 13): one scale and zero point per index of `axis`.
  const Tensor xa = values_of({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32);
  const Tensor scales = tensor({1.0, 2.0, 4.0}).to(kFloat32), zps = tensor({0, 1, 2}).to(kInt8);
  expect_tensor(run1("QuantizeLinear", {xa, scales, zps}, {{"axis", int64_t(-1)}}), kInt8, {2, 3},
                {1, 2, 3, 4, 3, 4});
  expect_node_error("QuantizeLinear", {xa, scales, zps}, {{"axis", int64_t(0)}}, {"y_scale", "one per index"});
}

TEST(ModelQuantOps, DequantizeLinearPerTensorPerAxisAndInt32) {
  const Tensor q = tensor({0, 3, 128, 255}).to(kUInt8);
  expect_tensor(run1("DequantizeLinear", {q, scalar_tensor(2.0, kFloat32), scalar_tensor(128, kUInt8)}), kFloat32,
                {4}, {-256, -250, 0, 254});
  const Tensor qa = tensor({-128, 0, 127, 5, -5, 1}).to(kInt8).reshape({1, 3, 2});
  const Tensor scales = tensor({0.5, 1.0, 2.0}).to(kFloat32), zps = tensor({0, -1, 1}).to(kInt8);
  expect_tensor(run1("DequantizeLinear", {qa, scales, zps}), kFloat32, {1, 3, 2}, {-64, 0, 128, 6, -12, 0});
  expect_tensor(run1("DequantizeLinear", {tensor({-1000000, 7}).to(kInt32), scalar_tensor(0.5, kFloat32)}),
                kFloat32, {2}, {-500000, 3.5});
  expect_node_error("DequantizeLinear", {qa, scales, zps.to(kUInt8)}, {}, {"x_zero_point is uint8"});
}

TEST(ModelQuantOps, DynamicQuantizeLinearOverTheRangeWithZero) {
  const Tensor x = tensor({0.0, 2.0, -3.0, -2.5, 1.34, 0.5}).to(kFloat32);
  std::vector<Tensor> y = run_node("DynamicQuantizeLinear", {x}, {}, 3);
  const double scale = double(float(5.0f / 255.0f));
  expect_tensor(y[1], kFloat32, {}, {scale});
  expect_tensor(y[2], kUInt8, {}, {153});
  expect_tensor(y[0], kUInt8, {6}, {153, 255, 0, 26, 221, 179});
  // All zeros: scale 1, zero point 0, rather than 0 / 0.
  y = run_node("DynamicQuantizeLinear", {zeros({3})}, {}, 3);
  expect_tensor(y[0], kUInt8, {3}, {0, 0, 0});
  expect_tensor(y[1], kFloat32, {}, {1});
  expect_tensor(y[2], kUInt8, {}, {0});
}

// An int64 sum as int32 accumulation gives it (wrapping).
double wrap_int32(int64_t v) { return double(int32_t(uint32_t(uint64_t(v)))); }

// A uint8 or int8 tensor of uniform values over its dtype's range.
Tensor random_bytes(IntArrayRef shape, uint64_t seed, DType dtype) {
  return dtype == kUInt8 ? random(shape, seed, kUInt8, 0, 255) : random(shape, seed, kInt8, -128, 127);
}

// Zero points: none (empty), one, or `count` of them, in the operand's dtype.
Tensor random_zero_points(int mode, int64_t count, uint64_t seed, DType dtype) {
  if (mode == 0) return Tensor();
  return random_bytes(mode == 1 ? Ints{} : Ints{count}, seed, dtype);
}

Doubles values_or_zero(const Tensor& t) { return t.defined() ? testing::values(t) : Doubles{0}; }

// Σ_p (a[i][p] - za[i]) (b[p][j] - zb[j]) in int64 for 2-d a, b, wrapped to int32.
Doubles int64_matmul(const Tensor& a, const Doubles& za, const Tensor& b, const Doubles& zb) {
  const Doubles av = testing::values(a), bv = testing::values(b);
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  Doubles y;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += (int64_t(av[size_t(i * k + p)]) - int64_t(za[size_t(i) % za.size()])) *
               (int64_t(bv[size_t(p * n + j)]) - int64_t(zb[size_t(j) % zb.size()]));
      y.push_back(wrap_int32(sum));
    }
  return y;
}

// A grouped 2-d convolution of integers by int64 loops: x - x_zp (padding reads as x_zp), w - w_zp per output
// channel; pads top, left, bottom, right.
Doubles int64_conv(const Tensor& x, int64_t x_zp, const Tensor& w, const Doubles& w_zp, const Ints& stride,
                   const Ints& pads, const Ints& dilation, int64_t groups) {
  const Doubles xv = testing::values(x), wv = testing::values(w);
  const int64_t batch = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t m = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3), mg = m / groups;
  const int64_t oh = (h + pads[0] + pads[2] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
  const int64_t ow = (wd + pads[1] + pads[3] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
  // output (b, o, i, j): its window over the input channels of o's group
  const auto window_sum = [&](int64_t b, int64_t o, int64_t i, int64_t j) {
    int64_t sum = 0;
    for (int64_t ch = 0; ch < cg; ++ch)
      for (int64_t p = 0; p < kh; ++p)
        for (int64_t q = 0; q < kw; ++q) {
          const int64_t r = i * stride[0] + p * dilation[0] - pads[0];
          const int64_t s = j * stride[1] + q * dilation[1] - pads[1];
          const int64_t in_ch = o / mg * cg + ch;
          const int64_t xval = r < 0 || r >= h || s < 0 || s >= wd
                                   ? x_zp
                                   : int64_t(xv[size_t(((b * c + in_ch) * h + r) * wd + s)]);
          const int64_t wval = int64_t(wv[size_t(((o * cg + ch) * kh + p) * kw + q)]);
          sum += (xval - x_zp) * (wval - int64_t(w_zp[size_t(o) % w_zp.size()]));
        }
    return sum;
  };
  Doubles y;
  for (int64_t t = 0; t < batch * m * oh * ow; ++t)
    y.push_back(wrap_int32(window_sum(t / (m * oh * ow), t / (oh * ow) % m, t / ow % oh, t % ow)));
  return y;
}

TEST(ModelQuantOps, MatMulIntegerIsExactInInt32) {
  // k = 300 of 255 * 255 sums past float32's exact integers; the int32 result is exact.
  const Tensor a = random({3, 300}, 8, kUInt8, 200, 255), b = random({300, 4}, 9, kUInt8, 200, 255);
  expect_tensor(run1("MatMulInteger", {a, b}), kInt32, {3, 4}, int64_matmul(a, {0}, b, {0}), 0, 0);
  const Tensor a_zp = tensor({3, 100, 255}).to(kUInt8), b_zp = scalar_tensor(7, kUInt8);
  expect_tensor(run1("MatMulInteger", {a, b, a_zp, b_zp}), kInt32, {3, 4},
                int64_matmul(a, {3, 100, 255}, b, {7}), 0, 0);
  const Tensor c = random({2, 5}, 10, kInt8, -128, 127), d = random({5, 3}, 11, kInt8, -128, 127);
  const Tensor d_zp = tensor({-1, 0, 5}).to(kInt8);
  expect_tensor(run1("MatMulInteger", {c, d, Tensor(), d_zp}), kInt32, {2, 3},
                int64_matmul(c, {0}, d, {-1, 0, 5}), 0, 0);
  expect_node_error("MatMulInteger", {c.to(kInt32), d}, {}, {"A must be uint8 or int8"});
}

// round half to even, then saturate to [lo, hi]
double requantize(double v, double zp, double lo, double hi) {
  return std::clamp(std::nearbyint(v) + zp, lo, hi);
}

TEST(ModelQuantOps, QLinearMatMulRequantizesPerRowAndColumn) {
  const Tensor a = random({2, 2, 6}, 12, kUInt8, 0, 255), b = random({6, 3}, 13, kUInt8, 0, 255);
  const Tensor a_scale = scalar_tensor(0.02, kFloat32), b_scale = tensor({0.01, 0.03, 0.002}).to(kFloat32);
  const Tensor y_scale = scalar_tensor(0.5, kFloat32);
  const Tensor a_zp = scalar_tensor(120, kUInt8), b_zp = tensor({100, 128, 90}).to(kUInt8);
  const Tensor y = run1("QLinearMatMul", {a, a_scale, a_zp, b, b_scale, b_zp, y_scale, scalar_tensor(128, kUInt8)});
  ASSERT_EQ(y.dtype(), kUInt8);
  Doubles expected;
  for (int64_t e = 0; e < 2; ++e) {
    const Doubles sums = int64_matmul(a[e], {120}, b, {100, 128, 90});
    for (size_t i = 0; i < sums.size(); ++i) {
      const float ratio = 0.02f * float(testing::values(b_scale)[i % 3]) / 0.5f;
      expected.push_back(requantize(sums[i] * double(float(ratio)), 128, 0, 255));
    }
  }
  expect_tensor(y, kUInt8, {2, 2, 3}, expected, 0, 0);
}

TEST(ModelQuantOps, ConvIntegerAndQLinearConvPadWithTheZeroPoint) {
  const Tensor x = random({1, 2, 5, 4}, 14, kUInt8, 0, 255), w = random({3, 2, 3, 2}, 15, kUInt8, 0, 255);
  const Tensor w_zp = tensor({10, 128, 250}).to(kUInt8);
  const Attrs pads{{"pads", Ints{1, 1, 1, 1}}};
  const Doubles sums = int64_conv(x, 17, w, {10, 128, 250}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  expect_tensor(run1("ConvInteger", {x, w, scalar_tensor(17, kUInt8), w_zp}, pads), kInt32, {1, 3, 5, 5}, sums, 0, 0);
  expect_tensor(run1("ConvInteger", {x, w}), kInt32, {1, 3, 3, 3}, int64_conv(x, 0, w, {0}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1), 0, 0);
  // QLinearConv: per-channel w_scale, an int32 bias added to the sums, int8 out.
  const Tensor w_scale = tensor({0.001, 0.002, 0.0005}).to(kFloat32), bias = tensor({100, -2000, 0}).to(kInt32);
  const Tensor y = run1("QLinearConv", {x, scalar_tensor(0.05, kFloat32), scalar_tensor(17, kUInt8), w, w_scale, w_zp,
                                        scalar_tensor(0.25, kFloat32), scalar_tensor(-3, kInt8), bias},
                        pads);
  Doubles expected;
  for (size_t i = 0; i < sums.size(); ++i) {
    const size_t o = i / 25;
    const float ratio = 0.05f * float(testing::values(w_scale)[o]) / 0.25f;
    expected.push_back(requantize((sums[i] + testing::values(bias)[o]) * double(float(ratio)), -3, -128, 127));
  }
  expect_tensor(y, kInt8, {1, 3, 5, 5}, expected, 0, 0);
  expect_node_error("ConvInteger", {x, w, tensor({1, 2}).to(kUInt8)}, {}, {"x_zero_point must hold one value"});
}

// ---- the integer products on the INT8 GEMM against int64 loops ----

TEST(ModelQuantOps, MatMulIntegerOnTheGemmMatchesInt64LoopsForEverySignedness) {
  const std::vector<Ints> shapes{{1, 1, 1}, {3, 17, 65}, {17, 300, 3}, {65, 1, 17}, {3, 65, 300},
                                 {0, 5, 3},  {3, 0, 4},   {2, 5, 0}};  // m, k, n
  uint64_t seed = 100;
  for (const DType a_dtype : {kUInt8, kInt8})
    for (const DType b_dtype : {kUInt8, kInt8})
      for (int zp_mode = 0; zp_mode < 3; ++zp_mode)  // none, one value, per row of A and per column of B
        for (const Ints& s : shapes) {
          SCOPED_TRACE(shape_str(s) + " " + std::string(dtype_name(a_dtype)) + " x " +
                       std::string(dtype_name(b_dtype)) + " zero points " + std::to_string(zp_mode));
          const Tensor a = random_bytes({s[0], s[1]}, ++seed, a_dtype), b = random_bytes({s[1], s[2]}, ++seed, b_dtype);
          const Tensor za = random_zero_points(zp_mode, s[0], ++seed, a_dtype);
          const Tensor zb = random_zero_points(zp_mode, s[2], ++seed, b_dtype);
          expect_tensor(run1("MatMulInteger", {a, b, za, zb}), kInt32, {s[0], s[2]},
                        int64_matmul(a, values_or_zero(za), b, values_or_zero(zb)), 0, 0);
        }
}

TEST(ModelQuantOps, MatMulIntegerOnTheGemmBroadcastsBatchesAndWrapsAsInt32) {
  // A [2, 1, 3, 17] by B [4, 17, 5]: one GEMM per broadcast batch; per-row and per-column zero points.
  const Tensor a = random_bytes({2, 1, 3, 17}, 200, kInt8), b = random_bytes({4, 17, 5}, 201, kUInt8);
  const Tensor za = random_bytes({3}, 202, kInt8), zb = random_bytes({5}, 203, kUInt8);
  Doubles expected;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const Doubles part = int64_matmul(a[i][0], testing::values(za), b[j], testing::values(zb));
      expected.insert(expected.end(), part.begin(), part.end());
    }
  expect_tensor(run1("MatMulInteger", {a, b, za, zb}), kInt32, {2, 4, 3, 5}, expected, 0, 0);
  // A [2, 3, 17] by a matrix: A's rows in one GEMM; a 1-d A and a 1-d B drop their dims.
  const Tensor a3 = random_bytes({2, 3, 17}, 204, kUInt8), b2 = random_bytes({17, 5}, 205, kInt8);
  Doubles rows = int64_matmul(a3[0], testing::values(za.to(kInt32) + 128), b2, {0});
  const Doubles rows1 = int64_matmul(a3[1], testing::values(za.to(kInt32) + 128), b2, {0});
  rows.insert(rows.end(), rows1.begin(), rows1.end());
  expect_tensor(run1("MatMulInteger", {a3, b2, (za.to(kInt32) + 128).to(kUInt8)}), kInt32, {2, 3, 5}, rows, 0, 0);
  expect_tensor(run1("MatMulInteger", {a3[0][1], b2}), kInt32, {5}, int64_matmul(a3[0][1].unsqueeze(0), {0}, b2, {0}),
                0, 0);
  expect_tensor(run1("MatMulInteger", {a3, b2.select(1, 2)}), kInt32, {2, 3},
                int64_matmul(a3.reshape({6, 17}), {0}, b2.select(1, 2).unsqueeze(1), {0}), 0, 0);
  // 40000 products of 255 · -255 sum past int32's range: the int32 result wraps.
  const Tensor ones = full({1, 40000}, 255, kUInt8), low = zeros({40000, 1}, kUInt8);
  expect_tensor(run1("MatMulInteger", {ones, low, Tensor(), scalar_tensor(255, kUInt8)}), kInt32, {1, 1},
                {wrap_int32(int64_t(40000) * 255 * -255)}, 0, 0);
}

TEST(ModelQuantOps, MatMulIntegerRepacksAnInitializerWrittenInPlace) {
  const Tensor a = random_bytes({3, 17}, 250, kUInt8), b = random_bytes({17, 5}, 251, kInt8);
  GraphBuilder g;
  g.output(g.op("MatMulInteger", {g.input("a", kUInt8, {3, 17}), g.initializer("b", b)}));
  Model m = g.build();
  expect_tensor(m({a})[0], kInt32, {3, 5}, int64_matmul(a, {0}, b, {0}), 0, 0);
  b.copy_(random_bytes({17, 5}, 252, kInt8));  // a new version of the same storage: packed again
  expect_tensor(m({a})[0], kInt32, {3, 5}, int64_matmul(a, {0}, b, {0}), 0, 0);
}

TEST(ModelQuantOps, QLinearMatMulOnTheGemmRequantizesAsFloat64Did) {
  uint64_t seed = 300;
  for (const DType a_dtype : {kUInt8, kInt8})
    for (const DType b_dtype : {kUInt8, kInt8}) {
      const int64_t m = 17, k = 65, n = 3;
      const Tensor a = random_bytes({m, k}, ++seed, a_dtype), b = random_bytes({k, n}, ++seed, b_dtype);
      const Tensor za = random_bytes({m}, ++seed, a_dtype), zb = random_bytes({n}, ++seed, b_dtype);
      const Tensor a_scale = random({m}, ++seed, kFloat32, 0.001, 0.01);
      const Tensor b_scale = random({n}, ++seed, kFloat32, 0.001, 0.01), y_scale = scalar_tensor(0.5, kFloat32);
      const Tensor y_zp = a_dtype == kUInt8 ? scalar_tensor(128, kUInt8) : scalar_tensor(-3, kInt8);
      const Tensor y = run1("QLinearMatMul", {a, a_scale, za, b, b_scale, zb, y_scale, y_zp});
      const Doubles sums = int64_matmul(a, testing::values(za), b, testing::values(zb));
      const Doubles as = testing::values(a_scale), bs = testing::values(b_scale);
      const double lo = a_dtype == kUInt8 ? 0 : -128, hi = a_dtype == kUInt8 ? 255 : 127;
      Doubles expected;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const float ratio = float(as[size_t(i)]) * float(bs[size_t(j)]) / 0.5f;
          expected.push_back(requantize(sums[size_t(i * n + j)] * double(ratio), testing::values(y_zp)[0], lo, hi));
        }
      expect_tensor(y, a_dtype, {m, n}, expected, 0, 0);
    }
}

TEST(ModelQuantOps, ConvIntegerAndQLinearConvOnTheGemmMatchInt64Loops) {
  const Ints stride{2, 1}, pads{1, 0, 2, 1}, dilation{1, 2};
  const Attrs attrs{{"strides", stride}, {"pads", pads}, {"dilations", dilation}, {"group", int64_t(2)}};
  uint64_t seed = 400;
  for (const DType x_dtype : {kUInt8, kInt8})
    for (const DType w_dtype : {kUInt8, kInt8}) {
      SCOPED_TRACE(std::string(dtype_name(x_dtype)) + " x " + std::string(dtype_name(w_dtype)));
      // x [2, 6, 7, 9], w [4, 3, 3, 2]: two groups of 3 channels in, 2 out
      const Tensor x = random_bytes({2, 6, 7, 9}, ++seed, x_dtype), w = random_bytes({4, 3, 3, 2}, ++seed, w_dtype);
      const Tensor x_zp = random_bytes({}, ++seed, x_dtype), w_zp = random_bytes({4}, ++seed, w_dtype);
      const int64_t zx = int64_t(testing::values(x_zp)[0]);
      const Doubles sums = int64_conv(x, zx, w, testing::values(w_zp), stride, pads, dilation, 2);
      const Tensor y = run1("ConvInteger", {x, w, x_zp, w_zp}, attrs);
      expect_tensor(y, kInt32, {2, 4, 4, 8}, sums, 0, 0);
      expect_tensor(run1("ConvInteger", {x, w}, {{"group", int64_t(2)}}), kInt32, {2, 4, 5, 8},
                    int64_conv(x, 0, w, {0}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2), 0, 0);
      // QLinearConv: per-channel w_scale and an int32 bias
      const Tensor w_scale = random({4}, ++seed, kFloat32, 0.001, 0.01), bias = tensor({100, -2000, 0, 7}).to(kInt32);
      const Tensor y_zp = x_dtype == kUInt8 ? scalar_tensor(128, kUInt8) : scalar_tensor(-3, kInt8);
      const Tensor q = run1("QLinearConv", {x, scalar_tensor(0.05, kFloat32), x_zp, w, w_scale, w_zp,
                                            scalar_tensor(0.25, kFloat32), y_zp, bias},
                            attrs);
      const double lo = x_dtype == kUInt8 ? 0 : -128, hi = x_dtype == kUInt8 ? 255 : 127;
      Doubles expected;
      for (size_t i = 0; i < sums.size(); ++i) {
        const size_t o = i / 32 % 4;
        const float ratio = 0.05f * float(testing::values(w_scale)[o]) / 0.25f;
        expected.push_back(requantize((sums[i] + testing::values(bias)[o]) * double(ratio),
                                      testing::values(y_zp)[0], lo, hi));
      }
      expect_tensor(q, x_dtype, {2, 4, 4, 8}, expected, 0, 0);
    }
  // depthwise (groups = channels), SAME_UPPER padding, one w zero point
  const Tensor x = random_bytes({1, 3, 5, 6}, 450, kUInt8), w = random_bytes({3, 1, 3, 3}, 451, kInt8);
  expect_tensor(run1("ConvInteger", {x, w, scalar_tensor(9, kUInt8), scalar_tensor(-5, kInt8)},
                     {{"auto_pad", std::string("SAME_UPPER")}, {"group", int64_t(3)}}),
                kInt32, {1, 3, 5, 6}, int64_conv(x, 9, w, {-5}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 3), 0, 0);
}

}  // namespace
}  // namespace nnvm
