// interpolate's linear, bicubic, trilinear and area modes (core/ops/interpolate.cpp):
// values against PyTorch's, gradients against finite differences, errors.
#include <iterator>

#include "reference.h"

namespace nnvm {
namespace {

namespace F = nn::functional;

// torch.nn.functional.interpolate in float64 on PyTorch 2 (CPU), written by
// tests/data/make_interpolate_fixtures.py; the input is fixture_input(shape).
constexpr double kLinear8[] = {
    -5, -1.9375, 1.75, -0.75, 0.1875, 4.5625, 2.75, 1, -3, 0.0625, 3.75, 1.25, -1.25, -3.75, -0.0625, 3};
constexpr double kLinear8Corners[] = {
    -5, -1, 1.42857142857, -0.857142857143, 0, 4, 3.28571428571, 1, -3, 1, 3.42857142857, 1.14285714286,
    -1.14285714286, -3.42857142857, -1, 3};
constexpr double kLinearHalf[] = {
    -1.5, 1.5, 0.5, -2};
constexpr double kBicubic7x3[] = {
    -2.77250701868, -2.19843294461, 2.85393046107, -1.7650361732, -1.44150874636, 1.81842538603,
    -0.592700572292, -0.206814868805, 0.600360382248, -1.61111111111, 1, 1.89872685185, -2.62952164993,
    2.2068148688, 2.34965176547, -1.45718604902, 3.44150874636, -0.953258287442, -0.449715203542,
    4.19843294461, -3.51232824479};
constexpr double kBicubic7x3Corners[] = {
    -5, -2, 1, -4.1875, -1.1875, 1.8125, -3, 0, 3, -2, 1, 5.03125, -1, 2, 5, 0.1875, 3.1875, 0.6875, 1, 4, -4};
constexpr double kBicubicScale[] = {
    -6.21135947145, -1.07888454861, 2.27533436214, -2.3621399177, 0.992078993056, 6.1245539159,
    -1.57194010417, -1.5341796875, -0.6845703125, 0.9833984375, 2.4560546875, 3.09895833333, 1.09630996013,
    -1.48260271991, -1.86486732682, 3.25963970336, 1.92357494213, -1.58172984182, -3.63226192773,
    -0.353985821759, 2.25877164781, 0.596455975652, -2.4828197338, -4.73301263503};
constexpr double kTrilinear3x5x2[] = {
    -1.5, 1.5, -1.3, 1.7, -1, 2, -0.7, -1, -0.5, -3, -0.75, 2.25, -0.55, 1.35, -0.25, 0, 0.05, -1.35, 0.25,
    -2.25, 0, 3, 0.2, 1, 0.5, -2, 0.8, -1.7, 1, -1.5};
constexpr double kTrilinear3x5x2Corners[] = {
    -5, 5, -2, 2.5, 1, 0, -1.5, -2.5, -4, -5, -1.5, 3, -1.25, 0.5, -1, -2, -0.75, -1.75, -0.5, -1.5, 2, 1,
    -0.5, -1.5, -3, -4, 0, -1, 3, 2};
constexpr double kArea4d[] = {
    -1.75, 0.5, -0.166666666667, 0.25, -0.666666666667, -0.555555555556, 0, -0.5, -0.5, -1, 0.166666666667,
    -1.25, 1.25, -0.166666666667, 1, 0.5, 0.5, 0, 0.555555555556, 0.666666666667, -0.25, 0.166666666667, -0.5,
    1.75};
constexpr double kArea3d[] = {
    -1.66666666667, 1.33333333333, 0.666666666667};
constexpr double kArea5d[] = {
    -0.25, 0.166666666667, 0.125, 0.375, -0.583333333333, 0.75};

// ((i * 7) mod 11) - 5 for element i in row-major order: small integers, so
// both sides start from exactly the same values.
Tensor fixture_input(IntArrayRef shape) {
  return ((arange(numel_of(shape), kFloat64) * 7).remainder(11) - 5).reshape(shape);
}

struct Case {
  const char* name;
  DimVector input;
  F::InterpolateFuncOptions options;
  DimVector output;
  std::vector<double> expected;
};

template <size_t N> std::vector<double> vec(const double (&values)[N]) { return {std::begin(values), std::end(values)}; }

std::vector<Case> pytorch_cases() {
  using O = F::InterpolateFuncOptions;
  using Sizes = std::vector<int64_t>;
  using Scales = std::vector<double>;
  return {
      {"linear size 8", {1, 2, 5}, O().size(Sizes{8}).mode(kLinear), {1, 2, 8}, vec(kLinear8)},
      {"linear size 8 align_corners", {1, 2, 5}, O().size(Sizes{8}).mode(kLinear).align_corners(true), {1, 2, 8},
       vec(kLinear8Corners)},
      {"linear scale 0.5", {1, 2, 5}, O().scale_factor(Scales{0.5}).mode(kLinear), {1, 2, 2}, vec(kLinearHalf)},
      {"bicubic size 7x3", {1, 1, 4, 5}, O().size(Sizes{7, 3}).mode(kBicubic), {1, 1, 7, 3}, vec(kBicubic7x3)},
      {"bicubic size 7x3 align_corners", {1, 1, 4, 5}, O().size(Sizes{7, 3}).mode(kBicubic).align_corners(true),
       {1, 1, 7, 3}, vec(kBicubic7x3Corners)},
      {"bicubic scale 1.5", {1, 1, 3, 4}, O().scale_factor(Scales{1.5, 1.5}).mode(kBicubic), {1, 1, 4, 6},
       vec(kBicubicScale)},
      {"trilinear size 3x5x2", {1, 1, 2, 3, 4}, O().size(Sizes{3, 5, 2}).mode(kTrilinear), {1, 1, 3, 5, 2},
       vec(kTrilinear3x5x2)},
      {"trilinear size 3x5x2 align_corners", {1, 1, 2, 3, 4},
       O().size(Sizes{3, 5, 2}).mode(kTrilinear).align_corners(true), {1, 1, 3, 5, 2}, vec(kTrilinear3x5x2Corners)},
      {"area 4-D 3x4", {1, 2, 5, 7}, O().size(Sizes{3, 4}).mode(kArea), {1, 2, 3, 4}, vec(kArea4d)},
      {"area 3-D 3", {1, 1, 7}, O().size(Sizes{3}).mode(kArea), {1, 1, 3}, vec(kArea3d)},
      {"area 5-D 1x2x3", {1, 1, 2, 3, 5}, O().size(Sizes{1, 2, 3}).mode(kArea), {1, 1, 1, 2, 3}, vec(kArea5d)},
  };
}

TEST(InterpolateModes, MatchPyTorch) {
  for (const Case& c : pytorch_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor out = F::interpolate(fixture_input(c.input), c.options);
    ASSERT_EQ(shape_str(out.sizes()), shape_str(c.output));
    testing::expect_values(out, c.expected, 1e-10, 1e-10);
    // float32 gives the same values to its precision
    testing::expect_values(F::interpolate(fixture_input(c.input).to(kFloat32), c.options), c.expected, 1e-5, 1e-5);
  }
}

// Area is adaptive average pooling; resampling to the input's own size is the identity.
TEST(InterpolateModes, AreaIsAdaptivePoolingAndSameSizeIsIdentity) {
  const Tensor x = testing::random({2, 3, 7, 6}, kFloat64, 70);
  testing::expect_tensors_close(interpolate(x, std::vector<int64_t>{3, 4}, std::nullopt, "area"),
                                adaptive_avg_pool2d(x, {3, 4}), 1e-12, 1e-12);
  for (const char* mode : {"bicubic", "area"})
    testing::expect_tensors_close(interpolate(x, std::vector<int64_t>{7, 6}, std::nullopt, mode), x, 0, 0);
  const Tensor line = testing::random({2, 3, 5}, kFloat64, 71);
  testing::expect_tensors_close(interpolate(line, std::vector<int64_t>{5}, std::nullopt, "linear"), line, 0, 0);
  // linear on a line is bilinear on an image of one row
  testing::expect_tensors_close(interpolate(line, std::vector<int64_t>{9}, std::nullopt, "linear"),
                                interpolate(line.unsqueeze(2), std::vector<int64_t>{1, 9}, std::nullopt, "bilinear")
                                    .squeeze(2),
                                1e-12, 1e-12);
}

TEST(InterpolateModes, GradientsMatchFiniteDifferences) {
  using Sizes = std::vector<int64_t>;
  struct GradCase {
    const char* name;
    DimVector input;
    std::function<Tensor(const Tensor&)> fn;
  };
  const GradCase cases[] = {
      {"linear", {2, 2, 5}, [](const Tensor& x) { return interpolate(x, Sizes{7}, std::nullopt, "linear"); }},
      {"bicubic", {1, 2, 4, 5}, [](const Tensor& x) { return interpolate(x, Sizes{6, 3}, std::nullopt, "bicubic"); }},
      {"bicubic align_corners", {1, 1, 4, 4},
       [](const Tensor& x) { return interpolate(x, Sizes{5, 7}, std::nullopt, "bicubic", true); }},
      {"trilinear scale", {1, 1, 2, 3, 3},
       [](const Tensor& x) { return interpolate(x, std::nullopt, std::vector<double>{1.5}, "trilinear"); }},
      {"area", {1, 2, 5, 6}, [](const Tensor& x) { return interpolate(x, Sizes{3, 4}, std::nullopt, "area"); }},
      {"area transposed", {1, 2, 6, 5},
       [](const Tensor& x) { return interpolate(x.transpose(2, 3), Sizes{2, 4}, std::nullopt, "area"); }},
  };
  uint64_t seed = 72;
  for (const GradCase& c : cases) {
    SCOPED_TRACE(c.name);
    testing::gradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0]); }, {testing::leaf(c.input, seed++)});
  }
}

TEST(InterpolateModes, TraceAsEager) {
  testing::expect_traced_equals_eager(
      [] { return std::vector<Tensor>{testing::random({2, 3, 5, 4}, kFloat32, 80)}; },
      [](std::vector<Tensor>& in) {
        return std::vector<Tensor>{
            interpolate(in[0], std::vector<int64_t>{8, 6}, std::nullopt, "bicubic", true).relu(),
            interpolate(in[0], std::nullopt, std::vector<double>{0.5}, "area") * 3};
      });
}

TEST(InterpolateModes, ReportBadInput) {
  const Tensor image = ones({1, 2, 4, 4});
  testing::expect_error([&] { interpolate(image, std::vector<int64_t>{3}, std::nullopt, "linear"); },
                        {"interpolate", "\"linear\"", "3-D", "[1, 2, 4, 4]"});
  testing::expect_error([&] { interpolate(image, std::vector<int64_t>{3}, std::nullopt, "trilinear"); },
                        {"interpolate", "\"trilinear\"", "5-D", "[1, 2, 4, 4]"});
  testing::expect_error([] { interpolate(ones({2, 3}), std::vector<int64_t>{3}, std::nullopt, "area"); },
                        {"interpolate", "\"area\"", "3-, 4- or 5-D", "[2, 3]"});
  testing::expect_error([&] { interpolate(image, std::vector<int64_t>{3, 3, 3}, std::nullopt, "bicubic"); },
                        {"interpolate", "size", "1 or 2 values", "got 3"});
  testing::expect_error([&] { interpolate(image, std::vector<int64_t>{3}, std::nullopt, "area", true); },
                        {"interpolate", "align_corners", "\"area\""});
  testing::expect_error(
      [] { interpolate(ones({1, 2, 4, 4}, kInt64), std::vector<int64_t>{3}, std::nullopt, "bicubic"); },
      {"interpolate", "floating-point", "int64"});
  // set at all, even to false, align_corners is an error with kArea and kNearest, as in libtorch
  const auto area = F::InterpolateFuncOptions().size(std::vector<int64_t>{3}).mode(kArea);
  testing::expect_error([&] { F::interpolate(image, F::InterpolateFuncOptions(area).align_corners(false)); },
                        {"interpolate", "align_corners", "kTrilinear", "kArea"});
}

}  // namespace
}  // namespace nnvm
