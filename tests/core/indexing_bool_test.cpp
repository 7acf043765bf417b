// libtorch's reading of bools and 0-dim tensors in index lists
// (core/indexing.h), against x[...] as PyTorch computes it: a bool is an
// advanced index of a dim of size 1 it inserts, so it broadcasts with the
// tensor indices and joins or separates them; a k-dim mask indexes k dims as
// its true elements' coordinates; a 0-dim integer tensor is an integer.
#include <functional>

#include "nnvm/core/indexing.h"
#include "reference.h"

namespace nnvm {
namespace {

using indexing::Slice;

// x[i][j]... of a tensor holding 0, 1, 2, ... in row-major order.
Tensor counting(IntArrayRef shape) { return arange(numel_of(shape), kFloat64).reshape(shape); }
double at(IntArrayRef shape, const DimVector& idx) {
  double v = 0;
  for (size_t d = 0; d < shape.size(); ++d) v = v * double(shape[d]) + double(idx[d]);
  return v;
}

void expect(const Tensor& got, const std::string& shape, const std::function<double(const DimVector&)>& value) {
  ASSERT_EQ(shape_str(got.sizes()), shape);
  std::vector<double> want;
  testing::for_each_index(got.sizes(), [&](const DimVector& idx) { want.push_back(value(idx)); });
  testing::expect_values(got, want, 0, 0);
}

TEST(IndexingBool, BoolBroadcastsWithTheTensorIndices) {
  const DimVector shape{4, 5};
  const Tensor x = counting(shape), i = tensor<int64_t>({0, 2}), j = tensor<int64_t>({1, 3});
  const int64_t iv[] = {0, 2}, jv[] = {1, 3};
  // x[i, True, j] -> [2]: the inserted dim is indexed by [0], adjacent to i and j
  expect(x.index({i, true, j}), "[2]", [&](const DimVector& o) { return at(shape, {iv[o[0]], jv[o[0]]}); });
  // x[i, True] -> [2, 5]
  expect(x.index({i, true}), "[2, 5]", [&](const DimVector& o) { return at(shape, {iv[o[0]], o[1]}); });
  // x[True, i] -> [2, 5] and x[i, :, True] -> [2, 5]: separated, the broadcast dim goes first
  expect(x.index({true, i}), "[2, 5]", [&](const DimVector& o) { return at(shape, {iv[o[0]], o[1]}); });
  expect(x.index({i, Slice(), true}), "[2, 5]", [&](const DimVector& o) { return at(shape, {iv[o[0]], o[1]}); });
  // alone, as before: a dim of size 1 (True) or 0 (False)
  expect(x.index({Slice(), true}), "[4, 1, 5]", [&](const DimVector& o) { return at(shape, {o[0], o[2]}); });
  EXPECT_EQ(shape_str(x.index({false}).sizes()), "[0, 4, 5]");
  EXPECT_EQ(shape_str(x.index({false, tensor<int64_t>({3})}).sizes()), "[0, 5]");  // [] broadcasts with one index
  testing::expect_error([&] { x.index({i, false}); }, {"index", "[2]", "[0]"});
  // a 0-dim bool tensor reads as the bool
  expect(x.index({i, tensor(std::vector<bool>{true}).reshape({}), j}), "[2]", [&](const DimVector& o) {
    return at(shape, {iv[o[0]], jv[o[0]]});
  });
  EXPECT_EQ(shape_str(x.index({tensor(std::vector<bool>{false}).reshape({})}).sizes()), "[0, 4, 5]");
}

TEST(IndexingBool, ZeroDimIntegerTensorIsAnInteger) {
  const DimVector shape{3, 4, 5};
  const Tensor x = counting(shape), k = scalar_tensor(1, kInt64), j = tensor<int64_t>({0, 2});
  // x[k, :, j] -> [4, 2] (an integer selects; NumPy would give [2, 4])
  expect(x.index({k, Slice(), j}), "[4, 2]", [&](const DimVector& o) { return at(shape, {1, o[0], 2 * o[1]}); });
  EXPECT_EQ(x.index({k}).storage(), x.storage());  // a view, as an integer gives
  testing::expect_error([&] { x.index({scalar_tensor(3, kInt64)}); }, {"index", "index 3", "size 3"});
}

TEST(IndexingBool, MasksIndexAsManyDimsAsTheyHave) {
  const DimVector shape{2, 3, 4, 5};
  const Tensor x = counting(shape);
  // mask over dims 1 and 2 with true at (0, 1) and (2, 3), between two integer tensors
  std::vector<bool> m(12, false);
  m[0 * 4 + 1] = m[2 * 4 + 3] = true;
  const Tensor mask = tensor(m).reshape({3, 4}), a = tensor<int64_t>({1, 0}), b = tensor<int64_t>({4, 2});
  const int64_t rows[] = {0, 2}, cols[] = {1, 3}, av[] = {1, 0}, bv[] = {4, 2};
  expect(x.index({a, mask, b}), "[2]", [&](const DimVector& o) {
    return at(shape, {av[o[0]], rows[o[0]], cols[o[0]], bv[o[0]]});
  });
  // a uint8 mask is read as a bool one
  expect(x.index({a, mask.to(kUInt8), b}), "[2]", [&](const DimVector& o) {
    return at(shape, {av[o[0]], rows[o[0]], cols[o[0]], bv[o[0]]});
  });
  // the mask and a tensor separated by a slice: the broadcast dim first
  std::vector<bool> m2(6, false);
  m2[0 * 3 + 2] = m2[1 * 3 + 0] = true;
  const Tensor lead = tensor(m2).reshape({2, 3});
  const int64_t lead_rows[] = {0, 1}, lead_cols[] = {2, 0};
  expect(x.index({lead, Slice(), b}), "[2, 4]", [&](const DimVector& o) {
    return at(shape, {lead_rows[o[0]], lead_cols[o[0]], o[1], bv[o[0]]});
  });
  testing::expect_error(
      [&] {
        x.index({mask, mask, 0});
      },
      {"index", "too many indices", "[2, 3, 4, 5]", "names 5 dims"});
  testing::expect_error(
      [&] {
        x.index({tensor<double>({0.0, 1.0})});
      },
      {"index", "int64, int32, bool or uint8", "float64"});
}

TEST(IndexingBool, IndexPutWritesWhereIndexReads) {
  const Tensor i = tensor<int64_t>({0, 2}), j = tensor<int64_t>({1, 3});
  Tensor x = zeros({4, 5}, kFloat64);
  x.index_put_({i, true, j}, tensor<double>({7.0, 9.0}));
  EXPECT_EQ(x.sum().item<double>(), 16.0);
  EXPECT_EQ(x.index({0, 1}).item<double>(), 7.0);
  EXPECT_EQ(x.index({2, 3}).item<double>(), 9.0);
  x.index_put_({i, true}, 1.5);  // rows 0 and 2
  EXPECT_EQ(x.sum().item<double>(), 15.0);
  x.index_put_({scalar_tensor(3, kInt64)}, 2.0);  // row 3 through the 0-dim integer tensor
  EXPECT_EQ(x.sum().item<double>(), 25.0);
  x.index_put_({false}, 100.0);  // writes nothing
  EXPECT_EQ(x.sum().item<double>(), 25.0);
}

}  // namespace
}  // namespace nnvm
