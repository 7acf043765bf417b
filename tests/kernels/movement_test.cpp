// cat, stack, pad, repeat, flip, roll, tril and triu against naive per-element
// references, on every dtype, layout, odd and empty sizes, and negative dims.
#include <functional>
#include <optional>

#include "reference.h"

namespace nnvm {
namespace {

using testing::values;

constexpr DType kAllDTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64,
                                kInt32,   kInt8,    kUInt8,   kBool};

Tensor input(IntArrayRef shape, DType dt, uint64_t seed) {
  return testing::random(shape, dt, seed, dt == kUInt8 ? 0.0 : -50.0, 50.0);
}

int64_t linear(const DimVector& idx, IntArrayRef shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

// Expected values of an op whose output element at `idx` is x at src(idx),
// or `fill` where src gives nothing.
using SourceFn = std::function<std::optional<DimVector>(const DimVector&)>;
std::vector<double> remapped(const Tensor& x, IntArrayRef out_shape, const SourceFn& src, double fill = 0) {
  const std::vector<double> v = values(x);
  std::vector<double> out;
  testing::for_each_index(out_shape, [&](const DimVector& idx) {
    const std::optional<DimVector> s = src(idx);
    out.push_back(s ? v[size_t(linear(*s, x.sizes()))] : fill);
  });
  return out;
}

std::string trace(DType dt, testing::Layout l, IntArrayRef shape) {
  return std::string(dtype_name(dt)) + " " + testing::layout_name(l) + " " + shape_str(shape);
}

TEST(MovementCat, MatchesNaiveForEveryDimDtypeAndLayout) {
  uint64_t seed = 1;
  for (DType dt : kAllDTypes)
    for (testing::Layout l : testing::kLayouts)
      for (int64_t dim : {0, 1, 2, -1, -3}) {
        const int64_t d = dim < 0 ? dim + 3 : dim;
        std::vector<Tensor> parts;
        for (int64_t len : {1, 0, 4, 3}) {
          DimVector shape{2, 3, 5};
          shape[d] = len;
          parts.push_back(testing::with_layout(input(shape, dt, seed++), l));
        }
        SCOPED_TRACE(trace(dt, l, parts[0].sizes()) + " dim " + std::to_string(dim));
        const Tensor out = cat(parts, dim);
        DimVector shape{2, 3, 5};
        shape[d] = 8;
        ASSERT_EQ(shape_str(out.sizes()), shape_str(shape));
        EXPECT_EQ(out.dtype(), dt);
        std::vector<double> expected;
        testing::for_each_index(shape, [&](const DimVector& idx) {
          DimVector at = idx;
          size_t k = 0;
          while (at[d] >= parts[k].size(d)) at[d] -= parts[k++].size(d);
          expected.push_back(values(parts[k])[size_t(linear(at, parts[k].sizes()))]);
        });
        testing::expect_values(out, expected, 0, 0);
      }
}

TEST(MovementCat, PromotesDtypesAndSkipsEmptyVectors) {
  const Tensor a = input({2, 2}, kInt32, 1), b = input({2, 1}, kFloat16, 2);
  const Tensor ab = cat({a, b}, 1);
  EXPECT_EQ(ab.dtype(), kFloat16);
  std::vector<double> expected;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) expected.push_back(values(a)[size_t(i * 2 + j)]);
    expected.push_back(values(b)[size_t(i)]);
  }
  testing::expect_values(ab, expected, 0, 0);

  EXPECT_EQ(cat({input({3}, kBool, 3), input({2}, kInt8, 4)}).dtype(), kInt8);

  // libtorch skips 1-d tensors of shape [0] whatever the others' rank, but they still promote.
  const Tensor x = input({2, 3}, kInt64, 5);
  const Tensor grown = cat({empty({0}, kFloat32), x, empty({0}, kInt64)}, -1);
  EXPECT_EQ(grown.dtype(), kFloat32);
  testing::expect_tensors_close(grown, x, 0, 0);
  EXPECT_EQ(shape_str(cat({empty({0}), empty({0})}).sizes()), "[0]");
  EXPECT_EQ(shape_str(cat({empty({2, 0}), empty({2, 0})}, 1).sizes()), "[2, 0]");
}

TEST(MovementCat, ReportsBadInput) {
  testing::expect_error([] { cat({}); }, {"cat", "non-empty"});
  testing::expect_error([] { cat({zeros({}), zeros({})}); }, {"cat", "zero-dimensional", "position 0"});
  testing::expect_error([] { cat({zeros({2, 3}), zeros({2, 4})}, 0); }, {"cat", "[2, 3]", "[2, 4]", "dim 0"});
  testing::expect_error([] { cat({zeros({2, 3}), zeros({2, 3, 1})}, 0); }, {"cat", "rank", "[2, 3, 1]"});
  testing::expect_error([] { cat({zeros({2, 3}), zeros({2, 3})}, 2); }, {"cat", "dim 2"});
}

TEST(MovementStack, MatchesNaiveForEveryDim) {
  uint64_t seed = 10;
  for (DType dt : {kFloat32, kBFloat16, kInt8, kBool})
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& shape : {DimVector{3, 5}, DimVector{1, 1}, DimVector{0, 3}})
        for (int64_t dim : {0, 1, 2, -1, -3}) {
          SCOPED_TRACE(trace(dt, l, shape) + " dim " + std::to_string(dim));
          std::vector<Tensor> parts;
          for (int k = 0; k < 3; ++k) parts.push_back(testing::with_layout(input(shape, dt, seed++), l));
          const Tensor out = stack(parts, dim);
          const int64_t d = dim < 0 ? dim + 3 : dim;
          DimVector out_shape = shape;
          out_shape.insert(out_shape.begin() + d, 3);
          ASSERT_EQ(shape_str(out.sizes()), shape_str(out_shape));
          std::vector<double> expected;
          testing::for_each_index(out_shape, [&](const DimVector& idx) {
            DimVector at = idx;
            at.erase(at.begin() + d);
            expected.push_back(values(parts[size_t(idx[d])])[size_t(linear(at, shape))]);
          });
          testing::expect_values(out, expected, 0, 0);
        }
  EXPECT_EQ(stack({zeros({2}, kInt32), zeros({2}, kFloat64)}).dtype(), kFloat64);
  EXPECT_EQ(shape_str(stack({scalar_tensor(1), scalar_tensor(2)}).sizes()), "[2]");
}

TEST(MovementStack, ReportsBadInput) {
  testing::expect_error([] { stack({}); }, {"stack", "non-empty"});
  testing::expect_error([] { stack({zeros({2, 3}), zeros({2, 4})}); }, {"stack", "[2, 3]", "[2, 4]", "entry 1"});
  testing::expect_error([] { stack({zeros({2, 3})}, 3); }, {"stack", "dim 3"});
}

// Where output index i of a padded dim of size n reads (nullopt: the fill).
std::optional<int64_t> pad_source(int64_t i, int64_t before, int64_t n, bool reflect) {
  int64_t s = i - before;
  if (reflect) {
    if (s < 0) s = -s;
    if (s >= n) s = 2 * (n - 1) - s;
  }
  return s >= 0 && s < n ? std::optional<int64_t>(s) : std::nullopt;
}

void check_pad(const Tensor& x, const DimVector& pads, bool reflect, double value) {
  SCOPED_TRACE(shape_str(pads) + (reflect ? " reflect" : " constant"));
  const Tensor out = pad(x, pads, reflect ? "reflect" : "constant", value);
  DimVector shape = dims(x.sizes());
  for (size_t p = 0; p < pads.size() / 2; ++p) shape[x.dim() - 1 - p] += pads[2 * p] + pads[2 * p + 1];
  ASSERT_EQ(shape_str(out.sizes()), shape_str(shape));
  EXPECT_EQ(out.dtype(), x.dtype());
  const double fill = x.dtype() == kBool ? double(value != 0) : value;
  testing::expect_values(out, remapped(x, shape, [&](const DimVector& idx) -> std::optional<DimVector> {
    DimVector s = idx;
    for (size_t p = 0; p < pads.size() / 2; ++p) {
      const int64_t d = x.dim() - 1 - int64_t(p);
      const auto from = pad_source(idx[d], pads[2 * p], x.size(d), reflect);
      if (!from) return std::nullopt;
      s[d] = *from;
    }
    return s;
  }, fill), 0, 0);
}

TEST(MovementPad, ConstantPadsAndNegativePaddingCrops) {
  const DimVector cases[] = {{1, 2}, {0, 0, 2, 1}, {1, 1, 1, 1, 1, 1}, {-1, 2}, {-2, -1, 1, 0}, {3, -3}, {}};
  uint64_t seed = 20;
  for (DType dt : kAllDTypes)
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& shape : {DimVector{3, 4, 5}, DimVector{2, 0, 5}, DimVector{1, 3, 3}})
        for (const DimVector& pads : cases) {
          SCOPED_TRACE(trace(dt, l, shape));
          check_pad(testing::with_layout(input(shape, dt, seed++), l), pads, false, 3.0);
        }
  check_pad(input({2, 3}, kFloat32, 30), {1, 1}, false, 0.0);  // the default value
  EXPECT_EQ(shape_str(pad(zeros({2, 3}), {-3, 0}).sizes()), "[2, 0]");
}

// Negative pads crop the reflected result, as PyTorch's reflection_pad: x[j - before] reflected.
TEST(MovementPad, ReflectMirrorsWithoutRepeatingTheEdge) {
  uint64_t seed = 40;
  for (DType dt : {kFloat32, kFloat16, kInt64, kBool})
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& pads : {DimVector{1, 2}, DimVector{2, 0, 1, 3}, DimVector{4, 4}, DimVector{0, 0, 0, 0},
                                    DimVector{-1, 2}, DimVector{2, -3}, DimVector{-4, 3}, DimVector{-2, 1, 1, -1}}) {
        SCOPED_TRACE(trace(dt, l, {2, 4, 5}));
        check_pad(testing::with_layout(input({2, 4, 5}, dt, seed++), l), pads, true, 0.0);
      }
}

TEST(MovementPad, ReportsBadInput) {
  const Tensor x = zeros({2, 3});
  testing::expect_error([&] { pad(x, {1, 2, 3}); }, {"pad", "pairs", "[1, 2, 3]"});
  testing::expect_error([&] { pad(x, {1, 1, 1, 1, 1, 1}); }, {"pad", "[2, 3]", "3 (before, after) pairs"});
  testing::expect_error([&] { pad(x, {3, 0}, "reflect"); }, {"pad", "reflect", "(3, 0)", "size 3"});
  testing::expect_error([&] { pad(x, {-1, 3}, "reflect"); }, {"pad", "reflect", "(-1, 3)", "less than", "size 3"});
  testing::expect_error([&] { pad(x, {-2, -2}, "reflect"); }, {"pad", "negative size -1", "[2, 3]"});
  testing::expect_error([&] { pad(x, {1, 1}, "wrap"); }, {"pad", "\"wrap\""});
  testing::expect_error([&] { pad(x, {-2, -2}); }, {"pad", "negative size -1", "[2, 3]"});
}

TEST(MovementRepeat, TilesAlongEveryDim) {
  const DimVector cases[] = {{2, 1}, {1, 3}, {2, 0}, {3, 1, 2}, {2, 1, 1, 2}};
  uint64_t seed = 50;
  for (DType dt : kAllDTypes)
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& shape : {DimVector{2, 3}, DimVector{0, 3}, DimVector{1, 1}})
        for (const DimVector& reps : cases) {
          SCOPED_TRACE(trace(dt, l, shape) + " repeats " + shape_str(reps));
          const Tensor x = testing::with_layout(input(shape, dt, seed++), l);
          const Tensor out = x.repeat(reps);
          const size_t lead = reps.size() - shape.size();
          DimVector out_shape = reps;
          for (size_t d = 0; d < shape.size(); ++d) out_shape[lead + d] *= shape[d];
          ASSERT_EQ(shape_str(out.sizes()), shape_str(out_shape));
          testing::expect_values(out, remapped(x, out_shape, [&](const DimVector& idx) -> std::optional<DimVector> {
            DimVector s(shape.size());
            for (size_t d = 0; d < shape.size(); ++d) s[d] = idx[lead + d] % shape[d];
            return s;
          }), 0, 0);
        }
  const Tensor s = scalar_tensor(7);
  testing::expect_values(s.repeat({2, 3}), std::vector<double>(6, 7.0), 0, 0);
}

TEST(MovementRepeat, ReportsBadInput) {
  testing::expect_error([] { zeros({2, 3}).repeat({2}); }, {"repeat", "[2]", "[2, 3]"});
  testing::expect_error([] { zeros({2, 3}).repeat({2, -1}); }, {"repeat", "non-negative", "[2, -1]"});
}

TEST(MovementFlip, ReversesTheGivenDims) {
  const DimVector cases[] = {{}, {0}, {-1}, {0, 2}, {1, 2, 0}};
  uint64_t seed = 60;
  for (DType dt : kAllDTypes)
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& shape : {DimVector{3, 4, 5}, DimVector{2, 0, 3}, DimVector{1, 1, 7}})
        for (const DimVector& flips : cases) {
          SCOPED_TRACE(trace(dt, l, shape) + " dims " + shape_str(flips));
          const Tensor x = testing::with_layout(input(shape, dt, seed++), l);
          testing::expect_values(x.flip(flips), remapped(x, shape, [&](const DimVector& idx) {
            DimVector s = idx;
            for (int64_t d : flips) {
              const int64_t w = d < 0 ? d + 3 : d;
              s[w] = shape[w] - 1 - idx[w];
            }
            return std::optional<DimVector>(s);
          }), 0, 0);
        }
  testing::expect_values(scalar_tensor(4.5).flip({0}), {4.5}, 0, 0);
  testing::expect_error([] { zeros({2, 3}).flip({1, -1}); }, {"flip", "dim 1 appears twice"});
  testing::expect_error([] { zeros({2, 3}).flip({2}); }, {"flip", "dim 2"});
}

TEST(MovementRoll, ShiftsCyclicallyAlongDims) {
  struct Case { DimVector shifts, dims; };
  const Case cases[] = {{{1}, {0}}, {{-2}, {-1}}, {{7, -3}, {1, 2}}, {{2, 3}, {1, 1}}, {{0}, {2}}};
  uint64_t seed = 70;
  for (DType dt : kAllDTypes)
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& shape : {DimVector{3, 4, 5}, DimVector{2, 0, 3}, DimVector{1, 1, 1}})
        for (const Case& c : cases) {
          SCOPED_TRACE(trace(dt, l, shape) + " shifts " + shape_str(c.shifts) + " dims " + shape_str(c.dims));
          const Tensor x = testing::with_layout(input(shape, dt, seed++), l);
          testing::expect_values(x.roll(c.shifts, c.dims), remapped(x, shape, [&](const DimVector& idx) {
            DimVector s = idx;
            for (size_t k = 0; k < c.dims.size(); ++k) {
              const int64_t d = c.dims[k] < 0 ? c.dims[k] + 3 : c.dims[k], n = shape[d];
              s[d] = ((s[d] - c.shifts[k]) % n + n) % n;
            }
            return std::optional<DimVector>(s);
          }), 0, 0);
        }
}

TEST(MovementRoll, WithoutDimsRollsTheFlattenedTensor) {
  uint64_t seed = 80;
  for (DType dt : {kFloat32, kFloat16, kInt32, kBool})
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& shape : {DimVector{3, 5}, DimVector{4, 0}, DimVector{1, 1}, DimVector{7}})
        for (int64_t shift : {1, -13, 0, 40}) {
          SCOPED_TRACE(trace(dt, l, shape) + " shift " + std::to_string(shift));
          const Tensor x = testing::with_layout(input(shape, dt, seed++), l);
          const Tensor out = x.roll({shift});
          ASSERT_EQ(shape_str(out.sizes()), shape_str(shape));
          const std::vector<double> v = values(x);
          const int64_t n = int64_t(v.size());
          std::vector<double> expected;
          for (int64_t i = 0; i < n; ++i) expected.push_back(v[size_t(((i - shift) % n + n) % n)]);
          testing::expect_values(out, expected, 0, 0);
        }
  testing::expect_error([] { zeros({2, 3}).roll({1, 2}); }, {"roll", "one shift", "[1, 2]"});
  testing::expect_error([] { zeros({2, 3}).roll({1, 2}, {0}); }, {"roll", "[1, 2]", "[0]", "same length"});
  testing::expect_error([] { zeros({2, 3}).roll({1}, {5}); }, {"roll", "dim 5"});
}

TEST(MovementTriangle, KeepsOneSideOfTheDiagonalOfEveryMatrix) {
  uint64_t seed = 90;
  for (DType dt : kAllDTypes)
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& shape : {DimVector{4, 5}, DimVector{2, 3, 5, 3}, DimVector{0, 3}, DimVector{1, 1},
                                     DimVector{3, 0, 2}})
        for (int64_t diag : {-7, -2, -1, 0, 1, 3, 9}) {
          SCOPED_TRACE(trace(dt, l, shape) + " diagonal " + std::to_string(diag));
          const Tensor x = testing::with_layout(input(shape, dt, seed++), l);
          const int64_t r = int64_t(shape.size()) - 2, c = r + 1;
          const Tensor lower = x.tril(diag), upper = triu(x, diag);
          testing::expect_values(lower, remapped(x, shape, [&](const DimVector& idx) {
            return idx[c] - idx[r] <= diag ? std::optional<DimVector>(idx) : std::nullopt;
          }), 0, 0);
          testing::expect_values(upper, remapped(x, shape, [&](const DimVector& idx) {
            return idx[c] - idx[r] >= diag ? std::optional<DimVector>(idx) : std::nullopt;
          }), 0, 0);
          testing::expect_tensors_close(tril(x, diag), lower, 0, 0);
          EXPECT_EQ(lower.dtype(), dt);
        }
  testing::expect_error([] { zeros({5}).tril(); }, {"tril", "at least 2 dims", "[5]"});
  testing::expect_error([] { triu(zeros({}), 0); }, {"triu", "at least 2 dims", "[]"});
}

TEST(Movement, LargeInputsSplitOverThreadsGiveTheSameValues) {
  const Tensor x = testing::with_layout(input({301, 257}, kFloat32, 100), testing::Layout::Transposed);
  const std::vector<double> v = values(x);
  std::vector<double> flipped(v.size());
  for (int64_t i = 0; i < 301; ++i)
    for (int64_t j = 0; j < 257; ++j) flipped[size_t(i * 257 + j)] = v[size_t((300 - i) * 257 + (256 - j))];
  testing::expect_values(x.flip({0, 1}), flipped, 0, 0);
  testing::expect_tensors_close(cat({x, x}, 1).slice(1, 257), x, 0, 0);
  testing::expect_tensors_close(x.tril(-400), zeros({301, 257}), 0, 0);
}

}  // namespace
}  // namespace nnvm
