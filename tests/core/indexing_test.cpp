// libtorch's index lists (core/indexing.h) against Python's x[...] semantics,
// computed here with plain loops over the row-major values.
#include "nnvm/core/indexing.h"

#include "reference.h"

namespace nnvm {
namespace {

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;

// x[i][j][k] of a [2, 3, 4] tensor holding 0..23.
Tensor cube() { return arange(24, kFloat32).reshape({2, 3, 4}); }
double at(int64_t i, int64_t j, int64_t k) { return double(i * 12 + j * 4 + k); }

TEST(Indexing, BasicIndicesAreViews) {
  const Tensor x = cube();
  const Tensor a = x.index({Slice(), 0});  // x[:, 0]
  EXPECT_EQ(a.sizes(), IntArrayRef({2, 4}));
  testing::expect_values(a, {at(0, 0, 0), at(0, 0, 1), at(0, 0, 2), at(0, 0, 3), at(1, 0, 0), at(1, 0, 1),
                             at(1, 0, 2), at(1, 0, 3)});
  EXPECT_EQ(a.storage(), x.storage());
  const Tensor b = x.index({"...", Slice(1, None, 2)});  // x[..., 1::2]
  EXPECT_EQ(b.sizes(), IntArrayRef({2, 3, 2}));
  EXPECT_EQ(b.index({1, 2, 1}).item<double>(), at(1, 2, 3));
  EXPECT_EQ(x.index({-1, -1, -1}).item<double>(), at(1, 2, 3));
  EXPECT_EQ(x.index({None, Ellipsis, None}).sizes(), IntArrayRef({1, 2, 3, 4, 1}));
  EXPECT_EQ(x.index({Slice(None, None, 2), true}).sizes(), IntArrayRef({1, 1, 3, 4}));
  EXPECT_EQ(x.index({false}).sizes(), IntArrayRef({0, 2, 3, 4}));
  EXPECT_EQ(x.index({Slice(1, 100)}).sizes(), IntArrayRef({1, 3, 4}));  // stops past the end are clamped
}

TEST(Indexing, TensorIndicesGatherLikePython) {
  const Tensor x = cube();
  // x[:, [2, 0, -1]]: the index's dims replace dim 1.
  const Tensor a = x.index({Slice(), tensor<int64_t>({2, 0, -1})});
  EXPECT_EQ(a.sizes(), IntArrayRef({2, 3, 4}));
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j : {2, 0, 2})
      for (int64_t k = 0; k < 4; ++k) want.push_back(at(i, j, k));
  testing::expect_values(a, want);
  // x[[1, 0], [[0], [2]]]: two indices broadcast to [2, 2].
  const Tensor b = x.index({tensor<int64_t>({1, 0}), tensor(std::vector<int64_t>{0, 2}, std::vector<int64_t>{2, 1})});
  EXPECT_EQ(b.sizes(), IntArrayRef({2, 2, 4}));
  want.clear();
  for (int64_t j : {0, 2})
    for (int64_t i : {1, 0})
      for (int64_t k = 0; k < 4; ++k) want.push_back(at(i, j, k));
  testing::expect_values(b, want);
  // x[x > 20] and a mask over the last two dims.
  testing::expect_values(x.index({x > 20}), {21, 22, 23});
  const Tensor mask = tensor(std::vector<int64_t>{1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, std::vector<int64_t>{3, 4}).to(kBool);
  testing::expect_values(x.index({Slice(), mask}), {at(0, 0, 0), at(0, 0, 3), at(0, 2, 3), at(1, 0, 0),
                                                    at(1, 0, 3), at(1, 2, 3)});
  testing::expect_values(x.index({Slice(), mask}).sum(), {at(0, 0, 0) + at(0, 0, 3) + at(0, 2, 3) + at(1, 0, 0) +
                                                          at(1, 0, 3) + at(1, 2, 3)});
}

TEST(Indexing, IndexPutWritesWhereIndexReads) {
  {
    Tensor x = cube();
    x.index_put_({Slice(), 1}, -1);  // x[:, 1] = -1
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(x.index({i, 1, k}).item<double>(), -1.0);
    EXPECT_EQ(x.sum().item<double>(), 276.0 - (4 + 5 + 6 + 7 + 16 + 17 + 18 + 19) - 8);
  }
  {
    Tensor x = cube();
    x.index_put_({x > 20}, 0);  // x[x > 20] = 0
    EXPECT_EQ(x.sum().item<double>(), 276.0 - 21 - 22 - 23);
  }
  {
    Tensor x = cube();
    x.index_put_({Slice(), tensor<int64_t>({0, 2})}, full({2, 2, 4}, 7.0));  // x[:, [0, 2]] = 7
    EXPECT_EQ(x.index({Slice(), 0}).sum().item<double>(), 56.0);
    EXPECT_EQ(x.index({Slice(), 2}).sum().item<double>(), 56.0);
    EXPECT_EQ(x.index({Slice(), 1}).sum().item<double>(), 4 + 5 + 6 + 7 + 16 + 17 + 18 + 19);
  }
  {
    Tensor x = cube();
    x.index_put_({Ellipsis, 3}, arange(6, kFloat32).reshape({2, 3}) * 100);  // x[..., 3] = values
    EXPECT_EQ(x.index({1, 2, 3}).item<double>(), 500.0);
    EXPECT_EQ(x.index({1, 2, 2}).item<double>(), at(1, 2, 2));
  }
  {
    Tensor x = cube();  // leading tensor indices: the op itself
    x.index_put_({tensor<int64_t>({1})}, zeros({1, 3, 4}));
    EXPECT_EQ(x.sum().item<double>(), 66.0);
  }
}

// Tensor indices separated by other indices: the broadcast dims go first, as
// in PyTorch (the shapes below are PyTorch 2's for the same index lists).
TEST(Indexing, SeparatedTensorIndicesPutTheirDimsFirst) {
  const Tensor x = arange(120, kFloat64).reshape({2, 3, 4, 5});
  auto at = [](int64_t a, int64_t b, int64_t c, int64_t d) { return double(((a * 3 + b) * 4 + c) * 5 + d); };
  const Tensor i = tensor<int64_t>({1, 0}), j = tensor<int64_t>({2, 1}).reshape({2, 1});
  const int64_t iv[] = {1, 0}, jv[] = {2, 1};  // i broadcasts along the columns, j along the rows
  auto expect = [](const Tensor& got, const std::string& shape, const std::function<double(const DimVector&)>& value) {
    ASSERT_EQ(shape_str(got.sizes()), shape);
    std::vector<double> want;
    testing::for_each_index(got.sizes(), [&](const DimVector& idx) { want.push_back(value(idx)); });
    testing::expect_values(got, want, 0, 0);
  };
  // x[i, :, j] -> [2, 2, 3, 5]
  expect(x.index({i, Slice(), j}), "[2, 2, 3, 5]",
         [&](const DimVector& o) { return at(iv[o[1]], o[2], jv[o[0]], o[3]); });
  // x[:, i, :, j] -> [2, 2, 2, 4]
  expect(x.index({Slice(), i, Slice(), j}), "[2, 2, 2, 4]",
         [&](const DimVector& o) { return at(o[2], iv[o[1]], o[3], jv[o[0]]); });
  // x[i, :, 0, j] -> [2, 2, 3]: the integer selects first, the slice still separates
  expect(x.index({i, Slice(), 0, j}), "[2, 2, 3]", [&](const DimVector& o) { return at(iv[o[1]], o[2], 0, jv[o[0]]); });
  // x[i, None, j] -> [2, 2, 1, 4, 5] and x[i, ..., j] -> [2, 2, 3, 4]
  expect(x.index({i, None, j}), "[2, 2, 1, 4, 5]",
         [&](const DimVector& o) { return at(iv[o[1]], jv[o[0]], o[3], o[4]); });
  expect(x.index({i, Ellipsis, j}), "[2, 2, 3, 4]", [&](const DimVector& o) { return at(iv[o[1]], o[2], o[3], jv[o[0]]); });
  // a mask and a tensor, separated: x[:, mask, :, i] -> [2, 2, 4]
  const Tensor mask = tensor(std::vector<bool>{true, false, true});
  const int64_t mv[] = {0, 2};
  expect(x.index({Slice(), mask, Slice(), i}), "[2, 2, 4]", [&](const DimVector& o) { return at(o[1], mv[o[0]], o[2], iv[o[0]]); });

  // index_put_ writes where index reads, with values of the shape index gives
  Tensor y = zeros({2, 3, 4, 5}, kFloat64);
  const Tensor values = arange(60, kFloat64).reshape({2, 2, 3, 5}) + 1;
  y.index_put_({i, Slice(), j}, values);
  testing::expect_tensors_close(y.index({i, Slice(), j}), values, 0, 0);
  EXPECT_EQ(y.sum().item<double>(), values.sum().item<double>());  // nothing else written
  Tensor z = zeros({2, 3, 4, 5}, kFloat64);
  z.index_put_({Slice(), i, Slice(), j}, 2.5);
  EXPECT_EQ(z.sum().item<double>(), 2.5 * 2 * 2 * 2 * 4);

  // the gradient of a separated read, by finite differences
  testing::gradcheck([&](const std::vector<Tensor>& in) { return in[0].index({j, Slice(), i}); },
                     {testing::leaf({3, 2, 2}, 9)});
}

TEST(Indexing, TracedEqualsEager) {
  testing::expect_traced_equals_eager([] { return std::vector<Tensor>{testing::random({4, 5, 3}, kFloat32, 3)}; },
                                      [](std::vector<Tensor>& in) {
                                        const Tensor& x = in[0];
                                        Tensor y = x.index({Slice(1), Slice(None, None, 2), 0}) * 2;
                                        Tensor z = x.index({Slice(), tensor<int64_t>({4, 0})}).exp();
                                        Tensor w = x.clone();
                                        w.index_put_({Slice(), 2}, 0.5);
                                        return std::vector<Tensor>{y, z, w};
                                      });
}

TEST(Indexing, MistakesNameTheIndices) {
  const Tensor x = cube();
  testing::expect_error([&] { x.index({0, 0, 0, 0}); }, {"index", "too many indices", "[2, 3, 4]"});
  testing::expect_error([&] { x.index({Slice(), 3}); }, {"index", "index 3 is out of bounds for dim 1 of size 3"});
  testing::expect_error([&] { x.index({Ellipsis, "..."}); }, {"index", "at most one Ellipsis"});
  testing::expect_error([&] { x.index({Slice(None, None, -1)}); }, {"index", "positive", "::-1"});
  testing::expect_error([&] { x.index({tensor<int64_t>({0, 1}), Slice(), tensor<int64_t>({1, 0, 1})}); },
                        {"index", "[2]", "[3]", "broadcastable"});
  testing::expect_error([&] { x.index({tensor<int64_t>({2})}); }, {"index", "out of bounds for dim 0 of size 2"});
  testing::expect_error([&] { x.index({ones({2}, kFloat32)}); }, {"index", "int64, int32, bool or uint8", "float32"});
  testing::expect_error([&] { x.index({ones({3}, kBool)}); }, {"index", "bool mask of shape [3]", "[2]"});
  testing::expect_error([] { indexing::TensorIndex("::"); }, {"index", "\"...\""});
}

}  // namespace
}  // namespace nnvm
