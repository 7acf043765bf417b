// sort and topk against a reference that stably sorts each slice's doubles
// (NaN larger than every number), over dtypes, layouts and dims.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::values;

const DType kAllTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kBool};

// Positions, in row-major order, of each 1-d slice along `dim`.
std::vector<std::vector<int64_t>> slices(IntArrayRef shape, int64_t dim) {
  if (shape.empty()) return {{0}};
  DimVector outer(shape.begin(), shape.end());
  outer[size_t(dim)] = 1;
  const DimVector strides = contiguous_strides(shape);
  std::vector<std::vector<int64_t>> out;
  testing::for_each_index(outer, [&](const DimVector& idx) {
    int64_t base = 0;
    for (size_t d = 0; d < idx.size(); ++d) base += idx[d] * strides[d];
    std::vector<int64_t> pos;
    for (int64_t k = 0; k < shape[size_t(dim)]; ++k) pos.push_back(base + k * strides[size_t(dim)]);
    out.push_back(pos);
  });
  return out;
}

// Expected (values, indices) of topk(k) or, with k = the dim's size, of sort.
std::pair<std::vector<double>, std::vector<double>> reference(const Tensor& x, int64_t dim, int64_t k,
                                                             bool descending) {
  const std::vector<double> v = values(x);
  const int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "test");
  DimVector out_shape(x.sizes().begin(), x.sizes().end());
  if (x.dim() > 0) out_shape[size_t(d)] = k;
  const auto in_slices = slices(x.sizes(), d), out_slices = slices(out_shape, d);
  std::vector<double> vals(size_t(numel_of(out_shape))), idx(vals.size());
  for (size_t s = 0; s < in_slices.size(); ++s) {
    std::vector<int64_t> order(in_slices[s].size());
    std::iota(order.begin(), order.end(), int64_t(0));
    auto key = [&](int64_t j) { return v[size_t(in_slices[s][size_t(j)])]; };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double p = key(a), q = key(b);
      if (std::isnan(p) || std::isnan(q)) return descending ? std::isnan(p) && !std::isnan(q) : !std::isnan(p) && std::isnan(q);
      return descending ? p > q : p < q;
    });
    for (int64_t j = 0; j < k; ++j) {
      vals[size_t(out_slices[s][size_t(j)])] = key(order[size_t(j)]);
      idx[size_t(out_slices[s][size_t(j)])] = double(order[size_t(j)]);
    }
  }
  return {vals, idx};
}

const std::vector<std::pair<DimVector, int64_t>> kCases = {
    {{}, 0},       {{0}, 0},        {{1}, 0},        {{9}, 0},        {{3, 5}, 1}, {{3, 5}, 0},
    {{4, 0, 3}, 1}, {{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{33, 65}, 0}, {{5, 700}, -1}};

template <class Check> void for_each_input(DType dt, Check check) {
  uint64_t seed = 7;
  for (const auto& [shape, dim] : kCases) {
    // [-3, 3] rounds to many ties for integral types.
    const Tensor base = testing::random(shape, dt, seed++, -3.0, 3.0);
    for (testing::Layout layout : testing::kLayouts) {
      SCOPED_TRACE(testing::layout_name(layout) + std::string(" ") + shape_str(shape) + " dim " +
                   std::to_string(dim) + " " + std::string(dtype_name(dt)));
      check(testing::with_layout(base, layout), dim);
    }
  }
}

TEST(Sort, MatchesStableReference) {
  for (DType dt : kAllTypes) {
    for_each_input(dt, [&](const Tensor& x, int64_t dim) {
      for (bool descending : {false, true}) {
        const auto [v, i] = x.sort(dim, descending);
        EXPECT_EQ(v.dtype(), dt);
        EXPECT_EQ(i.dtype(), kInt64);
        EXPECT_EQ(shape_str(v.sizes()), shape_str(x.sizes()));
        const int64_t n = x.dim() == 0 ? 1 : x.size(wrap_dim(dim, x.dim(), "test"));
        const auto [ev, ei] = reference(x, dim, n, descending);
        expect_values(v, ev, 0, 0);
        expect_values(i, ei, 0, 0);
      }
    });
  }
}

TEST(Sort, NaNSortsAsLargest) {
  const Tensor x = tensor<float>({3.f, NAN, -1.f, NAN, 2.f});
  const auto [v, i] = x.sort();
  expect_values(v, {-1, 2, 3, NAN, NAN});
  expect_values(i, {2, 4, 0, 1, 3});
  const auto [dv, di] = x.sort(0, true);
  expect_values(dv, {NAN, NAN, 3, 2, -1});
  expect_values(di, {1, 3, 0, 4, 2});
}

TEST(Topk, MatchesReference) {
  for (DType dt : kAllTypes) {
    for_each_input(dt, [&](const Tensor& x, int64_t dim) {
      const int64_t n = x.dim() == 0 ? 1 : x.size(wrap_dim(dim, x.dim(), "test"));
      for (int64_t k : {int64_t(0), std::min<int64_t>(1, n), n / 2, n}) {
        if (x.dim() == 0 && k == 0) continue;  // a 0-d input takes k = 1 only
        for (bool largest : {true, false}) {
          SCOPED_TRACE("k = " + std::to_string(k) + (largest ? " largest" : " smallest"));
          const auto [v, i] = x.topk(k, dim, largest);
          EXPECT_EQ(i.dtype(), kInt64);
          const auto [ev, ei] = reference(x, dim, k, largest);
          expect_values(v, ev, 0, 0);
          expect_values(i, ei, 0, 0);
        }
      }
    });
  }
}

TEST(Topk, BadArgumentsAreErrors) {
  const Tensor x = zeros({2, 3});
  expect_error([&] { x.topk(4); }, {"topk", "k = 4", "[2, 3]"});
  expect_error([&] { x.topk(-1, 0); }, {"topk", "k = -1"});
  expect_error([&] { x.topk(1, 2); }, {"topk", "dim 2"});
  expect_error([&] { x.sort(-3); }, {"sort", "dim -3"});
  expect_error([&] { scalar_tensor(1.0).topk(0); }, {"topk", "k = 0", "[]"});
}

}  // namespace
}  // namespace nnvm
