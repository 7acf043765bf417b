// interpolate's "nearest" of 3- and 5-D inputs and "nearest-exact" of 3- to
// 5-D inputs (core/ops/interpolate.cpp), and nn::Upsample: values against
// direct loops with libtorch's source index (aten/src/ATen/native/UpSample.h:
// nearest_idx, nearest_exact_idx, in single precision), gradients against
// finite differences, errors.
#include <cmath>

#include "reference.h"

namespace nnvm {
namespace {

namespace F = nn::functional;
using Sizes = std::vector<int64_t>;
using Scales = std::vector<double>;

// libtorch's source index of output index o (scale 0: derived from the sizes).
int64_t source(int64_t o, int64_t in, int64_t out, double user_scale, bool exact) {
  const float scale = user_scale > 0 ? float(1.0 / user_scale) : float(in) / float(out);
  if (exact) return std::min<int64_t>(int64_t(std::floor(float((double(o) + 0.5) * double(scale)))), in - 1);
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  return std::min<int64_t>(int64_t(std::floor(float(o) * scale)), in - 1);
}

// x resampled to `out` (the spatial sizes) by direct loops over the output.
std::vector<double> nearest_loops(const Tensor& x, IntArrayRef out, const Scales& scales, bool exact) {
  const Tensor c = x.contiguous().to(kFloat64);
  const std::vector<double> v = c.to_vector<double>();
  DimVector shape = dims(x.sizes());
  for (size_t s = 0; s < out.size(); ++s) shape[2 + s] = out[s];
  std::vector<double> result;
  testing::for_each_index(shape, [&](const DimVector& o) {
    int64_t flat = 0;
    for (int64_t d = 0; d < x.dim(); ++d) {
      int64_t i = o[size_t(d)];
      if (d >= 2) i = source(i, x.size(d), shape[size_t(d)], scales.empty() ? 0.0 : scales[size_t(d - 2)], exact);
      flat = flat * x.size(d) + i;
    }
    result.push_back(v[size_t(flat)]);
  });
  return result;
}

struct Case {
  const char* name;
  DimVector input;
  std::optional<Sizes> size;
  Scales scales;  // empty: given by size
  const char* mode;
};

TEST(InterpolateNearest, AnyRankMatchesLibtorchsIndices) {
  const Case cases[] = {
      {"3-D up", {2, 3, 5}, Sizes{12}, {}, "nearest"},
      {"3-D down", {1, 2, 9}, Sizes{4}, {}, "nearest"},
      {"3-D double", {1, 2, 5}, std::nullopt, {2.0}, "nearest"},
      {"3-D scale 2.1 is out = 2 in", {1, 1, 5}, std::nullopt, {2.1}, "nearest"},
      {"3-D scale 1.7", {1, 2, 6}, std::nullopt, {1.7}, "nearest"},
      {"5-D", {1, 2, 3, 4, 5}, Sizes{5, 3, 7}, {}, "nearest"},
      {"5-D scale", {2, 1, 2, 3, 3}, std::nullopt, {1.5, 2.0, 0.7}, "nearest"},
      {"4-D scale 2.1", {1, 1, 5, 4}, std::nullopt, {2.1, 1.3}, "nearest"},
      {"exact 3-D", {1, 2, 5}, Sizes{8}, {}, "nearest-exact"},
      {"exact 3-D same size", {1, 2, 5}, Sizes{5}, {}, "nearest-exact"},
      {"exact 4-D", {2, 1, 5, 7}, Sizes{3, 11}, {}, "nearest-exact"},
      {"exact 4-D scale", {1, 2, 4, 5}, std::nullopt, {2.0, 0.5}, "nearest-exact"},
      {"exact 5-D", {1, 1, 3, 4, 2}, Sizes{4, 3, 5}, {}, "nearest-exact"},
  };
  uint64_t seed = 500;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor x = testing::random(c.input, kFloat32, seed++);
    const std::optional<Scales> scales = c.scales.empty() ? std::nullopt : std::optional<Scales>(c.scales);
    const Tensor y = interpolate(x, c.size, scales, c.mode);
    DimVector out;
    for (int64_t s = 0; s < x.dim() - 2; ++s)
      out.push_back(c.size
                        ? (*c.size)[size_t(s)]
                        : int64_t(std::floor(double(x.size(2 + s)) * c.scales[c.scales.size() == 1 ? 0 : size_t(s)])));
    Scales per_dim;
    for (int64_t s = 0; s < x.dim() - 2 && !c.scales.empty(); ++s)
      per_dim.push_back(c.scales[c.scales.size() == 1 ? 0 : size_t(s)]);
    DimVector shape = dims(x.sizes());
    for (size_t s = 0; s < out.size(); ++s) shape[2 + s] = out[s];
    ASSERT_EQ(shape_str(y.sizes()), shape_str(shape));
    testing::expect_values(y, nearest_loops(x, out, per_dim, std::string(c.mode) == "nearest-exact"), 0, 0);
    for (testing::Layout l : testing::kLayouts)
      testing::expect_tensors_close(interpolate(testing::with_layout(x, l), c.size, scales, c.mode), y, 0, 0);
  }
  // the same size gives a new tensor, never the input itself
  const Tensor x = testing::random({1, 2, 5}, kFloat32, 520);
  EXPECT_FALSE(interpolate(x, Sizes{5}).is_same(x));
}

TEST(InterpolateNearest, GradientsMatchFiniteDifferences) {
  const Case cases[] = {
      {"3-D", {2, 2, 5}, Sizes{7}, {}, "nearest"},
      {"3-D down", {1, 2, 7}, Sizes{3}, {}, "nearest"},
      {"5-D", {1, 2, 2, 3, 3}, Sizes{3, 5, 2}, {}, "nearest"},
      {"exact 3-D", {1, 2, 4}, Sizes{7}, {}, "nearest-exact"},
      {"exact 4-D", {1, 1, 4, 5}, Sizes{6, 3}, {}, "nearest-exact"},
      {"exact 5-D scale", {1, 1, 2, 3, 2}, std::nullopt, {1.5}, "nearest-exact"},
  };
  uint64_t seed = 540;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<Scales> scales = c.scales.empty() ? std::nullopt : std::optional<Scales>(c.scales);
    testing::gradcheck([&](const std::vector<Tensor>& in) { return interpolate(in[0], c.size, scales, c.mode); },
                       {testing::leaf(c.input, seed++)});
  }
}

TEST(InterpolateNearest, UpsampleModuleAndTraceAsEager) {
  const Tensor line = testing::random({2, 3, 5}, kFloat32, 560),
               volume = testing::random({1, 2, 3, 4, 2}, kFloat32, 561);
  nn::Upsample up(nn::UpsampleOptions().scale_factor(Scales{2.0}));
  testing::expect_tensors_close(up(line), interpolate(line, std::nullopt, Scales{2.0}), 0, 0);
  testing::expect_tensors_close(up(volume), interpolate(volume, std::nullopt, Scales{2.0}), 0, 0);
  EXPECT_EQ(shape_str(up(volume).sizes()), "[1, 2, 6, 8, 4]");
  nn::Upsample exact(nn::UpsampleOptions().size(Sizes{7}).mode(kNearestExact));
  testing::expect_values(exact(line), nearest_loops(line, {7}, {}, true), 0, 0);
  nn::Upsample linear(nn::UpsampleOptions().size(Sizes{9}).mode(kLinear).align_corners(true));
  testing::expect_tensors_close(linear(line), interpolate(line, Sizes{9}, std::nullopt, "linear", true), 0, 0);
  EXPECT_EQ(up->name(), "Upsample");

  testing::expect_traced_equals_eager(
      [] {
        return std::vector<Tensor>{testing::random({2, 3, 5}, kFloat32, 562),
                                   testing::random({1, 2, 3, 2, 4}, kFloat32, 563)};
      },
      [](std::vector<Tensor>& in) {
        return std::vector<Tensor>{interpolate(in[0], Sizes{11}).relu(),
                                   interpolate(in[1], std::nullopt, Scales{1.5}, "nearest-exact") * 3};
      });
}

TEST(InterpolateNearest, ReportBadInput) {
  testing::expect_error(
      [] {
        interpolate(ones({2, 3}), Sizes{3});
      },
      {"interpolate", "\"nearest\"", "3-, 4- or 5-D", "[2, 3]"});
  testing::expect_error(
      [] {
        interpolate(ones({1, 1, 1, 1, 1, 1}), Sizes{3}, std::nullopt, "nearest-exact");
      },
      {"interpolate", "\"nearest-exact\"", "3-, 4- or 5-D"});
  testing::expect_error(
      [] {
        interpolate(ones({1, 2, 4}), Sizes{3}, std::nullopt, "nearest-exact", true);
      },
      {"interpolate", "align_corners", "\"nearest-exact\""});
  testing::expect_error(
      [] {
        interpolate(ones({1, 2, 4, 4, 4}), Sizes{3, 3});
      },
      {"interpolate", "size", "1 or 3 values"});
  const auto exact = F::InterpolateFuncOptions().size(Sizes{3}).mode(kNearestExact).align_corners(false);
  testing::expect_error(
      [&] {
        F::interpolate(ones({1, 2, 4}), exact);
      },
      {"interpolate", "align_corners", "kNearestExact"});
}

}  // namespace
}  // namespace nnvm
