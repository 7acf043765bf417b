// The model ops add_more_ops registers (model/ops_misc.cpp and the groups it
// calls: losses, random draws, signals, images; quantization in
// model_quant_ops_test.cpp), one node each
// through GraphBuilder: against naive loops over doubles or values worked out
// by hand, with edge sizes, and the user's mistakes as nnvm::Errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
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
using testing::run1;
using testing::run_node;

using testing::random;

using testing::expect_tensor;
using testing::values_of;

// ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ----

// The losses by their definition over scores [N, C, D] (D: the trailing dims
// flattened): per element -w[t] * x[n, t, d], 0 where t is ignored; "mean"
// divides the sum by the summed weights of the elements not ignored.
Doubles class_loss_reference(const Tensor& x, const Tensor& target, const Doubles& weight,
                             const std::string& reduction, int64_t ignore_index) {
  const Doubles xv = testing::values(x), tv = testing::values(target);
  const int64_t n = x.size(0), c = x.size(1), d = x.numel() / (n * c);
  Doubles loss;
  double sum = 0, weights = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const int64_t t = int64_t(tv[size_t(i * d + j)]);
      const double w = t == ignore_index ? 0.0 : weight.empty() ? 1.0 : weight[size_t(t)];
      const double l = t == ignore_index ? 0.0 : -w * xv[size_t((i * c + t) * d + j)];
      loss.push_back(l);
      sum += l;
      weights += w;
    }
  if (reduction == "none") return loss;
  return {reduction == "sum" ? sum : sum / weights};
}

TEST(ModelMoreOps, NegativeLogLikelihoodLossReductionsWeightsIgnoreIndex) {
  const Tensor x = random({3, 4, 2, 3}, 1);
  // Targets in [0, 4) and some -1 (ignored below): the ignored ones must not be read.
  Tensor target = random({3, 2, 3}, 2, kInt64, -1.4, 3.4);
  const Tensor w = random({4}, 3, kFloat64, 0.2, 1.0);
  const Doubles wv = testing::values(w);
  for (const std::string reduction : {"none", "sum", "mean"})
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(reduction + (weighted ? " weighted" : ""));
      const Attrs attrs{{"reduction", reduction}, {"ignore_index", int64_t(-1)}};
      const Tensor y = run1("NegativeLogLikelihoodLoss", {x, target, weighted ? w : Tensor()}, attrs);
      testing::expect_values(y, class_loss_reference(x, target, weighted ? wv : Doubles{}, reduction, -1));
      EXPECT_EQ(y.dim(), reduction == "none" ? 3 : 0);
    }
  // Without ignore_index every target counts; [N, C] scores; int32 targets.
  const Tensor x2 = random({5, 3}, 4), t2 = tensor({0, 2, 1, 1, 0}).to(kInt32);
  testing::expect_values(run1("NegativeLogLikelihoodLoss", {x2, t2}),
                         class_loss_reference(x2, t2, {}, "mean", std::numeric_limits<int64_t>::min()));
  // A target outside [0, C) that is not ignore_index is an error.
  expect_node_error("NegativeLogLikelihoodLoss", {x2, tensor({0, 2, 3, 1, 0})}, {}, {"out of range"});
  expect_node_error("NegativeLogLikelihoodLoss", {x2, t2}, {{"reduction", std::string("avg")}},
                    {"NegativeLogLikelihoodLoss", "reduction 'avg'"});
}

TEST(ModelMoreOps, SoftmaxCrossEntropyLossWithAndWithoutLogProb) {
  const Tensor x = random({2, 5, 3}, 5), target = tensor({1, 4, 2, 0, 3, 1}).reshape({2, 3});
  const Tensor w = random({5}, 6, kFloat64, 0.1, 1.0);
  const Tensor log_prob = x.log_softmax(1);
  const Attrs attrs{{"ignore_index", int64_t(1)}};
  const Doubles expected = class_loss_reference(log_prob, target, testing::values(w), "mean", 1);
  testing::expect_values(run1("SoftmaxCrossEntropyLoss", {x, target, w}, attrs), expected);
  const std::vector<Tensor> both = run_node("SoftmaxCrossEntropyLoss", {x, target, w}, attrs, 2);
  testing::expect_values(both[0], expected);
  testing::expect_tensors_close(both[1], log_prob);
  expect_tensor(run1("SoftmaxCrossEntropyLoss", {x, target}, {{"reduction", std::string("none")}}), kFloat64,
                {2, 3}, class_loss_reference(log_prob, target, {}, "none", -1000));
  expect_node_error("SoftmaxCrossEntropyLoss", {random({5}, 7), tensor({1})}, {}, {"scores [N, C, d1, ...]"});
}

// ---- random draws ----

TEST(ModelMoreOps, RandomUniformAndNormalDrawTheirDistributions) {
  const Attrs uniform{{"shape", Ints{200, 50}}, {"low", -3.0}, {"high", 5.0}, {"dtype", int64_t(11)}};
  const Tensor u = run1("RandomUniform", {}, uniform);
  expect_tensor(u.amin(), kFloat64, {}, {-3.0}, 0, 0.05);
  expect_tensor(u.amax(), kFloat64, {}, {5.0}, 0, 0.05);
  EXPECT_GE(u.min().item<double>(), -3.0);
  EXPECT_LT(u.max().item<double>(), 5.0);
  expect_tensor(u.mean(), kFloat64, {}, {1.0}, 0, 0.1);
  const Tensor n = run1("RandomNormalLike", {zeros({100, 100})}, {{"mean", 2.0}, {"scale", 3.0}});
  EXPECT_EQ(n.dtype(), kFloat32);
  expect_tensor(n.mean(), kFloat32, {}, {2.0}, 0, 0.1);
  expect_tensor(n.std(), kFloat32, {}, {3.0}, 0, 0.1);
  expect_tensor(run1("RandomUniformLike", {zeros({2, 3}, kInt32)}, {{"dtype", int64_t(10)}}).amax() <= 1, kBool, {},
                {1});
  expect_node_error("RandomNormalLike", {zeros({2}, kInt32)}, {}, {"RandomNormalLike", "set the dtype attribute"});
}

TEST(ModelMoreOps, SeededDrawsRepeatAndUnseededOnesFollowManualSeed) {
  const Attrs seeded{{"shape", Ints{64}}, {"seed", 7.0}};
  const Tensor a = run1("RandomNormal", {}, seeded), b = run1("RandomNormal", {}, seeded);
  testing::expect_tensors_close(a, b, 0, 0);
  EXPECT_GT((a - run1("RandomNormal", {}, {{"shape", Ints{64}}, {"seed", 8.0}})).abs().max().item<double>(), 0.1);
  // Seed 7 draws what manual_seed(7) and randn would.
  manual_seed(7);
  testing::expect_tensors_close(a, randn({64}), 0, 0);
  manual_seed(3);
  const Tensor c = run1("RandomUniform", {}, {{"shape", Ints{64}}});
  manual_seed(3);
  testing::expect_tensors_close(run1("RandomUniform", {}, {{"shape", Ints{64}}}), c, 0, 0);
}

TEST(ModelMoreOps, BernoulliDrawsOnesWithTheirProbability) {
  const Tensor p = tensor({0.0, 1.0, 0.0, 1.0}).to(kFloat32);
  expect_tensor(run1("Bernoulli", {p}), kFloat32, {4}, {0, 1, 0, 1});
  expect_tensor(run1("Bernoulli", {p}, {{"dtype", int64_t(9)}}), kBool, {4}, {0, 1, 0, 1});
  const Tensor half = full({4000}, 0.25, kFloat64);
  const Tensor draws = run1("Bernoulli", {half}, {{"seed", 1.0}});
  expect_tensor(draws.mean(), kFloat64, {}, {0.25}, 0, 0.03);
  testing::expect_tensors_close(run1("Bernoulli", {half}, {{"seed", 1.0}}), draws, 0, 0);
  expect_node_error("Bernoulli", {tensor({1.5})}, {}, {"bernoulli"});
}

// ---- EyeLike, ReverseSequence, MaxUnpool, BitShift, Det, Scan ----

TEST(ModelMoreOps, EyeLikeOffsetsAndDtypes) {
  expect_tensor(run1("EyeLike", {zeros({3, 4}, kInt32)}), kInt32, {3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  expect_tensor(run1("EyeLike", {zeros({3, 2})}, {{"k", int64_t(-1)}, {"dtype", int64_t(11)}}), kFloat64, {3, 2},
                {0, 0, 1, 0, 0, 1});
  expect_tensor(run1("EyeLike", {zeros({2, 3})}, {{"k", int64_t(5)}}), kFloat32, {2, 3}, {0, 0, 0, 0, 0, 0});
  expect_tensor(run1("EyeLike", {zeros({0, 3})}), kFloat32, {0, 3}, {});
  expect_node_error("EyeLike", {zeros({2, 2, 2})}, {}, {"EyeLike", "2-d input"});
}

TEST(ModelMoreOps, ReverseSequenceReversesEachPrefix) {
  // [time 4, batch 3, 2]: batch entry b's first lens[b] steps reversed.
  const Tensor x = arange(24, kFloat32).reshape({4, 3, 2}), lens = tensor({4, 1, 0});
  const Tensor y = run1("ReverseSequence", {x, lens}, {{"time_axis", int64_t(0)}, {"batch_axis", int64_t(1)}});
  Doubles expected;
  const Doubles xv = testing::values(x);
  const Ints lv{4, 1, 0};
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t k = 0; k < 2; ++k) {
        const int64_t src = t < lv[size_t(b)] ? lv[size_t(b)] - 1 - t : t;
        expected.push_back(xv[size_t((src * 3 + b) * 2 + k)]);
      }
  expect_tensor(y, kFloat32, {4, 3, 2}, expected);
  const Tensor by_batch = run1("ReverseSequence", {x.transpose(0, 1).contiguous(), lens},
                               {{"time_axis", int64_t(1)}, {"batch_axis", int64_t(0)}});
  testing::expect_tensors_close(by_batch, y.transpose(0, 1));
  testing::expect_error([&] { testing::values(run1("ReverseSequence", {x, tensor({5, 1, 0})})); },
                        {"out of bounds"});
}

TEST(ModelMoreOps, MaxUnpoolUndoesMaxPool) {
  const Tensor x = random({2, 3, 4, 6}, 16, kFloat32);
  const Attrs pool{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  const std::vector<Tensor> pooled = run_node("MaxPool", {x}, pool, 2);
  const Tensor y = run1("MaxUnpool", {pooled[0], pooled[1]}, pool);
  // Each window's maximum back in its place, zeros elsewhere.
  const Tensor kept = x == x.reshape({2, 3, 2, 2, 3, 2}).amax({3, 5}, true).expand({2, 3, 2, 2, 3, 2}).reshape(
                               {2, 3, 4, 6});
  testing::expect_tensors_close(y, where(kept, x, 0.0));
  const Tensor padded = run1("MaxUnpool", {pooled[0], pooled[1], tensor({2, 3, 5, 7})}, pool);
  ASSERT_EQ(padded.sizes(), IntArrayRef({2, 3, 5, 7}));
  testing::expect_tensors_close(padded.slice(2, 0, 4).slice(3, 0, 6), y);
  EXPECT_EQ(padded.slice(2, 4).abs().sum().item<double>() + padded.slice(3, 6).abs().sum().item<double>(), 0.0);
  expect_node_error("MaxUnpool", {pooled[0], pooled[1], tensor({2, 3, 3, 7})}, pool, {"output_shape"});
  testing::expect_error([&] { testing::values(run1("MaxUnpool", {pooled[0], pooled[1] + 1000}, pool)); },
                        {"out of bounds"});
}

TEST(ModelMoreOps, BitShiftOfUint8) {
  const Tensor x = tensor({16, 4, 1, 255, 128}).to(kUInt8), s = tensor({1, 2, 3, 9, 7}).to(kUInt8);
  expect_tensor(run1("BitShift", {x, s}, {{"direction", std::string("LEFT")}}), kUInt8, {5}, {32, 16, 8, 0, 0});
  expect_tensor(run1("BitShift", {x, s}, {{"direction", std::string("RIGHT")}}), kUInt8, {5}, {8, 1, 0, 0, 1});
  expect_tensor(run1("BitShift", {x, scalar_tensor(1, kUInt8)}, {{"direction", std::string("LEFT")}}), kUInt8, {5},
                {32, 8, 2, 254, 0});
  expect_node_error("BitShift", {x.to(kInt32), s.to(kInt32)}, {{"direction", std::string("LEFT")}}, {"uint8"});
}

// The determinant by the Leibniz formula (small m).
double det_reference(const Doubles& a, int64_t m) {
  Ints perm(static_cast<size_t>(m));
  std::iota(perm.begin(), perm.end(), 0);
  double det = 0;
  do {
    double term = 1;
    int64_t inversions = 0;
    for (int64_t i = 0; i < m; ++i) {
      term *= a[size_t(i * m + perm[size_t(i)])];
      for (int64_t j = i + 1; j < m; ++j) inversions += perm[size_t(i)] > perm[size_t(j)];
    }
    det += inversions % 2 ? -term : term;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return det;
}

TEST(ModelMoreOps, DetOfBatchesSingularAndPivotingMatrices) {
  const Tensor x = random({2, 3, 4, 4}, 17);
  Doubles expected;
  const Doubles xv = testing::values(x);
  for (int64_t i = 0; i < 6; ++i)
    expected.push_back(det_reference(Doubles(xv.begin() + i * 16, xv.begin() + (i + 1) * 16), 4));
  expect_tensor(run1("Det", {x}), kFloat64, {2, 3}, expected, 1e-9, 1e-9);
  // A zero first pivot needs a row swap; a singular matrix has det 0; 1x1 and 0x0.
  expect_tensor(run1("Det", {values_of({0, 1, 2, 3}, {2, 2}, kFloat32)}), kFloat32, {}, {-2});
  expect_tensor(run1("Det", {values_of({1, 2, 3, 2, 4, 6, 0, 1, 5}, {3, 3}, kFloat32)}), kFloat32, {}, {0});
  expect_tensor(run1("Det", {values_of({-4}, {1, 1}, kFloat32)}), kFloat32, {}, {-4});
  expect_tensor(run1("Det", {zeros({3, 0, 0})}), kFloat32, {3}, {1, 1, 1});
  expect_tensor(run1("Det", {zeros({0, 2, 2})}), kFloat32, {0}, {});
  expect_node_error("Det", {zeros({2, 3})}, {}, {"Det", "square matrices"});
}

// A Scan body: (sum [2], x [2]) -> (sum + x, sum + x), its outputs declared float32[2].
std::shared_ptr<const Graph> cumulative_sum_body() {
  GraphBuilder b;
  const std::string sum = b.input("sum", kFloat32, {2}), x = b.input("x", kFloat32, {2});
  const std::string next = b.op("Add", {sum, x});
  b.output(next);
  b.output(b.op("Identity", {next}));
  Graph g = b.graph();
  for (ValueInfo& out : g.outputs) {
    out.dtype = kFloat32;
    out.shape = std::vector<Dim>{Dim{2, {}}};
  }
  return std::make_shared<const Graph>(g);
}

TEST(ModelMoreOps, ScanAxesDirectionsAndOpset8Batches) {
  const Tensor init = zeros({2}), x = arange(6, kFloat32).reshape({3, 2});
  Attrs attrs{{"body", cumulative_sum_body()}, {"num_scan_inputs", int64_t(1)}};
  std::vector<Tensor> y = run_node("Scan", {init, x}, attrs, 2);
  expect_tensor(y[0], kFloat32, {2}, {6, 9});
  expect_tensor(y[1], kFloat32, {3, 2}, {0, 1, 2, 4, 6, 9});
  // The input scanned along axis 1 backwards, the output stacked along axis 1 backwards.
  attrs["scan_input_axes"] = Ints{1};
  attrs["scan_input_directions"] = Ints{1};
  attrs["scan_output_axes"] = Ints{-1};
  attrs["scan_output_directions"] = Ints{1};
  y = run_node("Scan", {init, x.t().contiguous()}, attrs, 2);
  expect_tensor(y[0], kFloat32, {2}, {6, 9});
  expect_tensor(y[1], kFloat32, {2, 3}, {6, 6, 4, 9, 8, 5});
  // No steps: the states pass through, the scan output is empty.
  y = run_node("Scan", {init, zeros({2, 0})}, attrs, 2);
  expect_tensor(y[0], kFloat32, {2}, {0, 0});
  expect_tensor(y[1], kFloat32, {2, 0}, {});
  // Opset 8: batch axis 0, sequence lengths; steps past a length give zeros.
  const Attrs scan8{{"body", cumulative_sum_body()}, {"num_scan_inputs", int64_t(1)}};
  y = run_node("Scan", {tensor({3, 1}), zeros({2, 2}), stack({x, x + 10}, 0)}, scan8, 2, 8);
  expect_tensor(y[0], kFloat32, {2, 2}, {6, 9, 10, 11});
  expect_tensor(y[1], kFloat32, {2, 3, 2}, {0, 1, 2, 4, 6, 9, 10, 11, 0, 0, 0, 0});
  expect_node_error("Scan", {init, x}, {{"body", cumulative_sum_body()}, {"num_scan_inputs", int64_t(3)}},
                    {"Scan", "num_scan_inputs 3"});
}


// ---- windows, MelWeightMatrix, DFT, STFT ----

TEST(ModelMoreOps, WindowsPeriodicAndSymmetric) {
  const Tensor ten = scalar_tensor(10, kInt64);
  const double pi = std::acos(-1.0);
  for (bool periodic : {true, false}) {
    SCOPED_TRACE(periodic ? "periodic" : "symmetric");
    const Attrs attrs{{"periodic", int64_t(periodic)}};
    const double n_ = periodic ? 10 : 9;
    Doubles hann, hamming, blackman;
    for (int n = 0; n < 10; ++n) {
      const double c = std::cos(2 * pi * n / n_);
      hann.push_back(0.5 - 0.5 * c);
      hamming.push_back(25.0 / 46 - 21.0 / 46 * c);
      blackman.push_back(0.42 - 0.5 * c + 0.08 * std::cos(4 * pi * n / n_));
    }
    expect_tensor(run1("HannWindow", {ten}, attrs), kFloat32, {10}, hann);
    expect_tensor(run1("HammingWindow", {ten}, attrs), kFloat32, {10}, hamming);
    expect_tensor(run1("BlackmanWindow", {ten}, attrs), kFloat32, {10}, blackman);
  }
  expect_tensor(run1("HannWindow", {scalar_tensor(1, kInt32)}, {{"periodic", int64_t(0)}}), kFloat32, {1}, {1});
  expect_tensor(run1("HannWindow", {scalar_tensor(0, kInt32)}, {{"output_datatype", int64_t(11)}}), kFloat64, {0},
                {});
  expect_node_error("HammingWindow", {scalar_tensor(-3, kInt32)}, {}, {"HammingWindow", "non-negative"});
}

TEST(ModelMoreOps, MelWeightMatrixTriangles) {
  // Values of the specification's reference for these arguments.
  const Tensor y = run1("MelWeightMatrix", {scalar_tensor(4, kInt64), scalar_tensor(32, kInt64),
                                            scalar_tensor(1000, kInt64), scalar_tensor(100.0, kFloat32),
                                            scalar_tensor(450.0, kFloat32)});
  Doubles expected(17 * 4, 0.0);
  const std::vector<std::tuple<int, int, double>> nonzero{{4, 0, 1},   {5, 0, 0.5}, {5, 1, 0.5}, {6, 1, 1},
                                                          {7, 1, 0.5}, {7, 2, 0.5}, {8, 2, 1},   {9, 2, 0.5},
                                                          {9, 3, 0.5}, {10, 3, 1},  {11, 3, 0.5}};
  for (const auto& [bin, filter, w] : nonzero) expected[size_t(bin * 4 + filter)] = w;
  expect_tensor(y, kFloat32, {17, 4}, expected);
  expect_node_error("MelWeightMatrix",
                    {scalar_tensor(4, kInt64), scalar_tensor(32, kInt64), scalar_tensor(1000, kInt64),
                     scalar_tensor(100.0, kFloat32), scalar_tensor(900.0, kFloat32)},
                    {}, {"upper_edge_hertz"});
}

using Complex = std::complex<double>;

// The DFT by its definition, of each row of `signal` [rows, length] over n
// points (cut or padded with zeros), the first `outputs` frequencies.
std::vector<Complex> dft_reference(const std::vector<Complex>& signal, int64_t rows, int64_t n, int64_t outputs,
                                   bool inverse) {
  const int64_t length = int64_t(signal.size()) / rows;
  const double pi = std::acos(-1.0), sign = inverse ? 1 : -1;
  std::vector<Complex> y;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < outputs; ++k) {
      Complex sum = 0;
      for (int64_t j = 0; j < std::min(n, length); ++j)
        sum += signal[size_t(r * length + j)] * std::polar(1.0, sign * 2 * pi * double(j * k) / double(n));
      y.push_back(inverse ? sum / double(n) : sum);
    }
  return y;
}

// x [rows, length, 1 or 2] as complex values, and complex values as [..., 2] doubles.
std::vector<Complex> complex_values(const Tensor& x) {
  const Doubles v = testing::values(x);
  std::vector<Complex> c;
  const bool real = x.size(-1) == 1;
  for (size_t i = 0; i < v.size(); i += real ? 1 : 2) c.emplace_back(v[i], real ? 0.0 : v[i + 1]);
  return c;
}
Doubles pairs(const std::vector<Complex>& c) {
  Doubles v;
  for (const Complex& z : c) v.insert(v.end(), {z.real(), z.imag()});
  return v;
}

TEST(ModelMoreOps, DftRealComplexInverseOnesidedAndLength) {
  const Tensor real = random({3, 6, 1}, 20), complex = random({2, 5, 2}, 21);
  expect_tensor(run1("DFT", {real}), kFloat64, {3, 6, 2}, pairs(dft_reference(complex_values(real), 3, 6, 6, false)));
  expect_tensor(run1("DFT", {complex}, {{"inverse", int64_t(1)}}), kFloat64, {2, 5, 2},
                pairs(dft_reference(complex_values(complex), 2, 5, 5, true)));
  // Padded to 8 points, one-sided: 5 frequencies; cut to 4 points.
  expect_tensor(run1("DFT", {real, scalar_tensor(8, kInt64)}, {{"onesided", int64_t(1)}}), kFloat64, {3, 5, 2},
                pairs(dft_reference(complex_values(real), 3, 8, 5, false)));
  expect_tensor(run1("DFT", {complex, scalar_tensor(4, kInt64)}), kFloat64, {2, 4, 2},
                pairs(dft_reference(complex_values(complex), 2, 4, 4, false)));
  // The inverse undoes the transform; another axis is the transposed transform.
  const Tensor spectrum = run1("DFT", {complex.to(kFloat32)});
  testing::expect_tensors_close(run1("DFT", {spectrum}, {{"inverse", int64_t(1)}}), complex.to(kFloat32), 1e-5,
                                1e-5);
  const Tensor x4 = random({2, 3, 4, 2}, 22);
  testing::expect_tensors_close(run1("DFT", {x4}, {{"axis", int64_t(-2)}}),
                                run1("DFT", {x4.transpose(1, 2).contiguous()}).transpose(1, 2));
  expect_node_error("DFT", {real}, {{"axis", int64_t(2)}}, {"DFT", "complex dim"});
}

TEST(ModelMoreOps, StftFramesTimesTheWindow) {
  const Tensor signal = random({2, 20, 1}, 23), window = random({8}, 24, kFloat64, 0, 1);
  // 1 + (20 - 8) / 4 = 4 frames of 8 points, 5 one-sided frequencies.
  const std::vector<Complex> x = complex_values(signal);
  const Doubles wv = testing::values(window);
  std::vector<Complex> frames, plain;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t f = 0; f < 4; ++f)
      for (int64_t j = 0; j < 8; ++j) {
        frames.push_back(x[size_t(b * 20 + f * 4 + j)] * wv[size_t(j)]);
        plain.push_back(x[size_t(b * 20 + f * 4 + j)]);
      }
  expect_tensor(run1("STFT", {signal, scalar_tensor(4, kInt64), window}), kFloat64, {2, 4, 5, 2},
                pairs(dft_reference(frames, 8, 8, 5, false)));
  expect_tensor(run1("STFT", {signal, scalar_tensor(4, kInt64), Tensor(), scalar_tensor(8, kInt64)},
                     {{"onesided", int64_t(0)}}),
                kFloat64, {2, 4, 8, 2}, pairs(dft_reference(plain, 8, 8, 8, false)));
  expect_node_error("STFT", {signal, scalar_tensor(4, kInt64), Tensor(), scalar_tensor(21, kInt64)}, {},
                    {"STFT", "frame length"});
}

// ---- GridSample, RoiAlign, NonMaxSuppression ----

// Sample points (x, y) in normalized coordinates as a grid [1, 1, points, 2].
Tensor grid_of(const Doubles& xy) { return values_of(xy, {1, 1, int64_t(xy.size() / 2), 2}, kFloat32); }

TEST(ModelMoreOps, GridSampleModesAndPaddings) {
  // Pixel centers (align_corners 0) read the pixels themselves in every mode.
  const Tensor x = random({1, 2, 3, 4}, 25, kFloat32);
  Doubles centers;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) centers.insert(centers.end(), {(2.0 * j + 1) / 4 - 1, (2.0 * i + 1) / 3 - 1});
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    SCOPED_TRACE(mode);
    const Tensor y = run1("GridSample", {x, grid_of(centers)}, {{"mode", std::string(mode)}});
    testing::expect_tensors_close(y.reshape({1, 2, 3, 4}), x, 1e-5, 1e-5);
  }
  // [[1, 2], [3, 4]] at the center, a corner, half a pixel left of the image, and near (1, 1).
  const Tensor small = values_of({1, 2, 3, 4}, {1, 1, 2, 2}, kFloat32);
  const Tensor grid = grid_of({0, 0, -1, -1, -2, 0, 0.1, 0.1});
  auto sample = [&](const char* mode, const char* padding) {
    return run1("GridSample", {small, grid}, {{"mode", std::string(mode)}, {"padding_mode", std::string(padding)}});
  };
  expect_tensor(sample("bilinear", "zeros"), kFloat32, {1, 1, 1, 4}, {2.5, 0.25, 0, 2.8});
  expect_tensor(sample("bilinear", "border"), kFloat32, {1, 1, 1, 4}, {2.5, 1, 2, 2.8});
  expect_tensor(sample("bilinear", "reflection"), kFloat32, {1, 1, 1, 4}, {2.5, 1, 2.5, 2.8});
  expect_tensor(sample("nearest", "zeros"), kFloat32, {1, 1, 1, 4}, {1, 1, 0, 4});
  // align_corners 1: -1 and 1 are the corner pixels' centers.
  expect_tensor(run1("GridSample", {small, grid_of({1, -1, 0, 0})}, {{"align_corners", int64_t(1)}}), kFloat32,
                {1, 1, 1, 2}, {2, 2.5});
  // One spatial dim: X [N, C, W], grid [N, W_out, 1].
  const Tensor line = values_of({0, 10}, {1, 1, 2}, kFloat32);
  expect_tensor(run1("GridSample", {line, values_of({0, 0.25}, {1, 2, 1}, kFloat32)}), kFloat32, {1, 1, 2}, {5, 7.5});
  expect_node_error("GridSample", {small, grid_of({0, 0}).narrow(3, 0, 1)}, {}, {"GridSample", "grid"});
  expect_node_error("GridSample", {small, grid}, {{"mode", std::string("area")}}, {"mode 'area'"});
}

TEST(ModelMoreOps, RoiAlignAveragesBilinearSamples) {
  // half_pixel, one sample per bin at the pixels themselves: a crop, in both modes.
  const Tensor x = random({1, 1, 4, 5}, 26, kFloat32, 0.5, 2.0);
  const Tensor crop = x.slice(2, 1, 4).slice(3, 2, 5);
  const Tensor roi = values_of({2, 1, 5, 4}, {1, 4}, kFloat32), first = tensor({0});
  for (const char* mode : {"avg", "max"}) {
    SCOPED_TRACE(mode);
    const Attrs attrs{{"output_height", int64_t(3)}, {"output_width", int64_t(3)}, {"sampling_ratio", int64_t(1)},
                      {"mode", std::string(mode)}};
    testing::expect_tensors_close(run1("RoiAlign", {x, roi, first}, attrs), crop, 1e-5, 1e-6);
  }
  // A ramp x[h][w] = w: each bin the mean of its samples' columns. Opset 10
  // (output_half_pixel); spatial_scale 0.5 halves the box; adaptive sampling.
  const Tensor ramp = arange(6, kFloat32).expand({2, 1, 6, 6}) * values_of({1, 10}, {2, 1, 1, 1}, kFloat32);
  const Tensor boxes = values_of({2, 2, 10, 10, 2, 2, 10, 10}, {2, 4}, kFloat32);
  const Attrs ramp_attrs{{"output_height", int64_t(2)}, {"output_width", int64_t(2)}, {"spatial_scale", 0.5}};
  expect_tensor(run1("RoiAlign", {ramp, boxes, tensor({1, 0})}, ramp_attrs, 10), kFloat32, {2, 1, 2, 2},
                {20, 40, 20, 40, 2, 4, 2, 4});
  expect_node_error("RoiAlign", {x, roi, tensor({1})}, {}, {"RoiAlign", "batch index 1"});
  expect_node_error("RoiAlign", {x, values_of({0, 0, NAN, 1}, {1, 4}, kFloat32), first}, {}, {"not finite"});
}

TEST(ModelMoreOps, NonMaxSuppressionKeepsTheBestBoxes) {
  // ONNX's example: three overlapping boxes, two far ones, one farther.
  const Tensor boxes = values_of({0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, -0.1, 1, 0.9, 0, 10, 1, 11, 0, 10.1, 1, 11.1,
                                  0, 100, 1, 101},
                                 {1, 6, 4}, kFloat32);
  const Tensor scores = values_of({0.9, 0.75, 0.6, 0.95, 0.5, 0.3}, {1, 1, 6}, kFloat32);
  const Tensor three = tensor({3}), half = tensor({0.5}).to(kFloat32);
  expect_tensor(run1("NonMaxSuppression", {boxes, scores, three, half}), kInt64, {3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5});
  expect_tensor(run1("NonMaxSuppression", {boxes, scores, three, half, tensor({0.4}).to(kFloat32)}), kInt64, {2, 3},
                {0, 0, 3, 0, 0, 0});
  expect_tensor(run1("NonMaxSuppression", {boxes, scores}), kInt64, {0, 3}, {});
  // Flipped corners, center format, two classes with tied scores (the lower index first).
  const Tensor flipped = boxes.index_select(2, tensor({2, 3, 0, 1}));
  expect_tensor(run1("NonMaxSuppression", {flipped, scores, three, half}), kInt64, {3, 3},
                {0, 0, 3, 0, 0, 0, 0, 0, 5});
  const Tensor centered = values_of({0.5, 0.5, 1, 1, 0.5, 0.6, 1, 1, 0.5, 10.5, 1, 1}, {1, 3, 4}, kFloat32);
  const Tensor tied = values_of({0.5, 0.5, 0.5, 0.1, 0.9, 0.9}, {1, 2, 3}, kFloat32);
  expect_tensor(run1("NonMaxSuppression", {centered, tied, three, half}, {{"center_point_box", int64_t(1)}}), kInt64,
                {4, 3}, {0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 2});
  expect_node_error("NonMaxSuppression", {boxes, scores.narrow(2, 0, 5)}, {}, {"NonMaxSuppression", "scores"});
}

// ---- Unique, TfIdfVectorizer ----

TEST(ModelMoreOps, UniqueValuesAndSlices) {
  const Tensor x = tensor({2.0, 1.0, 1.0, 3.0, 4.0, 3.0}).to(kFloat32);
  std::vector<Tensor> y = run_node("Unique", {x}, {{"sorted", int64_t(0)}}, 4);
  expect_tensor(y[0], kFloat32, {4}, {2, 1, 3, 4});
  expect_tensor(y[1], kInt64, {4}, {0, 1, 3, 4});
  expect_tensor(y[2], kInt64, {6}, {0, 1, 1, 2, 3, 2});
  expect_tensor(y[3], kInt64, {4}, {1, 2, 2, 1});
  y = run_node("Unique", {x}, {}, 4);
  expect_tensor(y[0], kFloat32, {4}, {1, 2, 3, 4});
  expect_tensor(y[1], kInt64, {4}, {1, 0, 3, 4});
  expect_tensor(y[2], kInt64, {6}, {1, 0, 0, 2, 3, 2});
  // int64 past double's integers stay distinct; NaNs equal each other and sort last.
  const int64_t big = int64_t(1) << 60;
  expect_tensor(run_node("Unique", {tensor({big + 1, big, big + 1})}, {}, 4)[3], kInt64, {2}, {1, 2});
  expect_tensor(run_node("Unique", {tensor(Doubles{NAN, 1, NAN})}, {}, 4)[0], kFloat64, {2}, {1, NAN});
  // Slices: rows along axis 0, columns along axis -1 (sorted lexicographically).
  const Tensor m = tensor({1, 0, 0, 1, 0, 0, 2, 3, 4}).reshape({3, 3});
  y = run_node("Unique", {m}, {{"axis", int64_t(0)}}, 4);
  expect_tensor(y[0], kInt64, {2, 3}, {1, 0, 0, 2, 3, 4});
  expect_tensor(y[2], kInt64, {3}, {0, 0, 1});
  y = run_node("Unique", {m}, {{"axis", int64_t(-1)}}, 4);
  expect_tensor(y[0], kInt64, {3, 3}, {0, 0, 1, 0, 0, 1, 3, 4, 2});
  expect_tensor(y[1], kInt64, {3}, {1, 2, 0});
  expect_tensor(y[2], kInt64, {3}, {2, 0, 1});
  expect_tensor(run_node("Unique", {zeros({0})}, {}, 4)[0], kFloat32, {0}, {});
  expect_node_error("Unique", {m}, {{"axis", int64_t(2)}}, {"Unique", "axis 2"});
}

TEST(ModelMoreOps, TfIdfVectorizerCountsPooledNgrams) {
  // Outputs: 0 "1", 1 "3", 2 "1 2", 3 "2 3".
  Attrs attrs{{"min_gram_length", int64_t(1)}, {"max_gram_length", int64_t(2)}, {"max_skip_count", int64_t(0)},
              {"mode", std::string("TF")}, {"ngram_counts", Ints{0, 2}}, {"ngram_indexes", Ints{0, 1, 2, 3}},
              {"pool_int64s", Ints{1, 3, 1, 2, 2, 3}}};
  const Tensor x = tensor({1, 2, 1, 2, 3});
  expect_tensor(run1("TfIdfVectorizer", {x}, attrs), kFloat32, {4}, {2, 1, 2, 1});
  // Tokens one apart make the bigram (1, 2) with a skip; unigrams count once.
  const Tensor skipped = tensor({1, 9, 2, 3}).to(kInt32);
  expect_tensor(run1("TfIdfVectorizer", {skipped}, attrs), kFloat32, {4}, {1, 1, 0, 1});
  attrs["max_skip_count"] = int64_t(1);
  expect_tensor(run1("TfIdfVectorizer", {skipped}, attrs), kFloat32, {4}, {1, 1, 1, 1});
  attrs["max_skip_count"] = int64_t(0);
  attrs["weights"] = Doubles{0.5, 2, 3, 4};
  attrs["mode"] = std::string("IDF");
  expect_tensor(run1("TfIdfVectorizer", {skipped}, attrs), kFloat32, {4}, {0.5, 2, 0, 4});
  attrs["mode"] = std::string("TFIDF");
  expect_tensor(run1("TfIdfVectorizer", {stack({x, x.flip(0)}, 0)}, attrs), kFloat32, {2, 4},
                {1, 2, 6, 4, 1, 2, 3, 0});
  attrs["min_gram_length"] = int64_t(2);
  attrs["mode"] = std::string("TF");
  expect_tensor(run1("TfIdfVectorizer", {x}, attrs), kFloat32, {4}, {0, 0, 2, 1});
  attrs["ngram_counts"] = Ints{0, 3};
  expect_node_error("TfIdfVectorizer", {x}, attrs, {"TfIdfVectorizer", "ngram_counts"});
}

}  // namespace
}  // namespace nnvm
