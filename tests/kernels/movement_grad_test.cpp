// Gradients of the data-movement ops (core/ops/movement.cpp) and the
// index-driven ops (core/ops/index.cpp) against finite differences. Each
// op also runs on a non-contiguous view of its input; index tensors are
// int64, with repeated entries where the gradient must accumulate.
#include "reference.h"

namespace nnvm {
namespace {

using testing::DiffFn;
using testing::gradcheck;
using testing::gradgradcheck;
using testing::leaf;

Tensor longs(std::vector<int64_t> v, IntArrayRef shape) { return tensor<int64_t>(v, shape); }

TEST(MovementGrad, Cat) {
  const Tensor a = leaf({2, 3}, 1), b = leaf({2, 1}, 2), c = leaf({4, 2}, 3), empty = leaf({0}, 4);
  gradcheck([](const std::vector<Tensor>& in) { return cat({in[0], in[1], in[2].t()}, 1); }, {a, b, c});
  gradcheck([](const std::vector<Tensor>& in) { return cat({in[0], in[3], in[0].exp()}, -2); }, {a, b, c, empty});
  gradcheck([](const std::vector<Tensor>& in) { return cat({in[1].t(), in[2]}, 0); }, {a, b, c});
  gradgradcheck([](const std::vector<Tensor>& in) { return cat({in[0], in[1]}, 1).square(); }, {a, b});
}

TEST(MovementGrad, Stack) {
  const Tensor a = leaf({3, 2}, 5), b = leaf({2, 3}, 6), one = leaf({1}, 7);
  for (int64_t dim : {0, 1, 2, -1})
    gradcheck([dim](const std::vector<Tensor>& in) { return stack({in[0], in[1].t(), in[0] * in[0]}, dim); },
              {a, b});
  gradcheck([](const std::vector<Tensor>& in) { return stack({in[0]}, 0); }, {one});
}

TEST(MovementGrad, PadConstant) {
  const Tensor x = leaf({2, 3, 5}, 8);
  const std::vector<std::vector<int64_t>> pads = {{1, 2}, {0, 0, 2, 1}, {1, -2, 0, 3}, {2, 1, 1, 0, 1, 1}};
  for (const auto& p : pads) {
    gradcheck([&p](const std::vector<Tensor>& in) { return pad(in[0], p, "constant", 1.5); }, {x});
    gradcheck([&p](const std::vector<Tensor>& in) { return pad(in[0].transpose(0, 2), p); }, {x});
  }
}

TEST(MovementGrad, PadReflect) {
  const Tensor x = leaf({2, 4, 5}, 9), one = leaf({3, 1}, 10);
  const std::vector<std::vector<int64_t>> pads = {{1, 2},  {3, 3},   {0, 3, 2, 0},  {2, 1, 3, 1},
                                                  {0, 0, 1, 1}, {-1, 3}, {2, -4}, {-2, 1, 3, -1}};
  for (const auto& p : pads) {
    gradcheck([&p](const std::vector<Tensor>& in) { return pad(in[0], p, "reflect"); }, {x});
    gradcheck([&p](const std::vector<Tensor>& in) { return pad(in[0].transpose(1, 2), p, "reflect"); }, {x});
  }
  gradcheck([](const std::vector<Tensor>& in) { return pad(in[0], {0, 0, 2, 1}, "reflect"); }, {one});
  gradgradcheck([](const std::vector<Tensor>& in) { return pad(in[0], {2, 1}, "reflect").square(); }, {x});
}

TEST(MovementGrad, Repeat) {
  const Tensor x = leaf({2, 3}, 11), s = leaf({}, 12), one = leaf({1}, 13);
  const std::vector<std::vector<int64_t>> repeats = {{1, 1}, {2, 3}, {3, 1, 2}, {2, 1, 1, 1}, {2, 0}};
  for (const auto& r : repeats) {
    gradcheck([&r](const std::vector<Tensor>& in) { return in[0].repeat(r); }, {x});
    gradcheck([&r](const std::vector<Tensor>& in) { return in[0].t().t().repeat(r) * 2; }, {x});
  }
  gradcheck([](const std::vector<Tensor>& in) { return in[0].t().repeat({2, 2}); }, {x});
  gradcheck([](const std::vector<Tensor>& in) { return in[0].repeat({3}); }, {s});
  gradcheck([](const std::vector<Tensor>& in) { return in[0].repeat({}); }, {s});
  gradcheck([](const std::vector<Tensor>& in) { return in[0].repeat({5}); }, {one});
}

TEST(MovementGrad, FlipRollTriangles) {
  const Tensor x = leaf({3, 4, 5}, 14), one = leaf({1, 1}, 15);
  const DiffFn fns[] = {
      [](const std::vector<Tensor>& in) { return in[0].flip({0, 2}); },
      [](const std::vector<Tensor>& in) { return in[0].mT().flip({-1}); },
      [](const std::vector<Tensor>& in) { return in[0].roll({2, -1}, {0, 2}); },
      [](const std::vector<Tensor>& in) { return in[0].roll({7}); },
      [](const std::vector<Tensor>& in) { return in[0].mT().roll({3}, {1}); },
      [](const std::vector<Tensor>& in) { return in[0].tril(); },
      [](const std::vector<Tensor>& in) { return in[0].tril(-1); },
      [](const std::vector<Tensor>& in) { return in[0].mT().triu(1); },
      [](const std::vector<Tensor>& in) { return in[0].triu(-2) * in[0]; },
  };
  for (const auto& fn : fns) {
    gradcheck(fn, {x});
    gradgradcheck(fn, {x});
  }
  gradcheck([](const std::vector<Tensor>& in) { return in[0].tril().flip({1}).roll({1}, {0}); }, {one});
}

TEST(IndexGrad, Gather) {
  const Tensor x = leaf({3, 4}, 20);
  const Tensor index = longs({0, 2, 2, 1, 0, 0, 2, 1}, {2, 4});  // repeated rows accumulate
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].gather(0, index); }, {x});
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].t().gather(1, index.t().contiguous()); }, {x});
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].gather(-1, longs({3, 3, 0}, {3, 1})); }, {x});
  gradgradcheck([&](const std::vector<Tensor>& in) { return in[0].gather(0, index).square(); }, {x});
}

TEST(IndexGrad, Scatter) {
  const Tensor self = leaf({3, 5}, 21), src = leaf({3, 6}, 22);
  const Tensor index = longs({0, 2, 1, 2, 1, 0, 2, 0}, {2, 4});  // distinct per column
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter(0, index, in[1]); }, {self, src});
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].t().scatter(1, index.t().contiguous(), in[1].t()); },
            {self, src});
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter(0, index, Scalar(2.5)) * in[0]; }, {self});
  gradgradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter(0, index, in[1]).square(); },
                {self, src});
}

TEST(IndexGrad, ScatterAdd) {
  const Tensor self = leaf({3, 5}, 23), src = leaf({4, 5}, 24);
  const Tensor index = longs({0, 2, 2, 1, 0, 0, 0, 1, 2, 2, 0, 0, 0, 0, 0}, {3, 5});  // many repeats
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter_add(0, index, in[1]); }, {self, src});
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter_add(1, index.narrow(1, 0, 3), in[1]); },
            {self, src});
  gradgradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter_add(0, index, in[1]).square(); },
                {self, src});
}

TEST(IndexGrad, IndexSelect) {
  const Tensor x = leaf({4, 3, 2}, 25);
  const Tensor index = longs({3, 0, 3, 3, 1}, {5});
  for (int64_t dim : {0, 1, -1}) {
    const Tensor idx = dim == 0 ? index : longs({1, 0, 1}, {3}), small = longs({1, 0, 1}, {3});
    gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_select(dim, idx); }, {x});
    gradcheck([&](const std::vector<Tensor>& in) { return in[0].transpose(0, 2).index_select(dim, small); }, {x});
  }
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_select(1, longs({2}, {})); }, {x});
  gradgradcheck([&](const std::vector<Tensor>& in) { return in[0].index_select(0, index).square(); }, {x});
}

TEST(IndexGrad, IndexPutWithIndices) {
  const Tensor self = leaf({4, 3, 2}, 26), rows = leaf({3, 2}, 27), one = leaf({2}, 28), cells = leaf({2, 3}, 29);
  const Tensor i = longs({0, -1, 2}, {3}), dup = longs({1, 3, 1}, {3});
  for (bool accumulate : {false, true}) {
    gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({i}, in[1], accumulate); },
              {self, rows});
    // values broadcast over the indexed rows
    gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({i}, in[2], accumulate); },
              {self, rows, one});
    // two indices that broadcast together: [2, 1] and [3] index a [2, 3] grid of (row, col) cells
    const Tensor r = longs({0, 3}, {2, 1}), c = longs({2, 0, 1}, {3});
    gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({r, c}, in[1].unsqueeze(2), accumulate); },
              {self, cells});
  }
  // repeated indices accumulate
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({dup}, in[1], true); }, {self, rows});
  gradgradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({dup}, in[1], true).square(); },
                {self, rows});
}

TEST(IndexGrad, IndexPutWithMask) {
  const Tensor self = leaf({3, 4}, 30), values = leaf({5}, 31), row = leaf({1}, 32);
  const Tensor mask = tensor(std::vector<bool>{true, false, true, true, false, false, true, false, false, true,
                                               false, false}, IntArrayRef{3, 4});
  for (bool accumulate : {false, true}) {
    gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({mask}, in[1], accumulate); },
              {self, values});
    gradcheck([&](const std::vector<Tensor>& in) {
      return in[0].t().contiguous().index_put({mask.t().contiguous()}, in[2] * in[2], accumulate);
    }, {self, values, row});
  }
  const Tensor none = zeros({3}, kBool), rows = tensor(std::vector<bool>{false, true, true});
  const Tensor block = leaf({2, 4}, 33);
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({none}, in[2], false); }, {self, values, row});
  gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({rows}, in[1], false); }, {self, block});
}

TEST(IndexGrad, Embedding) {
  const Tensor weight = leaf({5, 3}, 34), one = leaf({1, 1}, 35);
  const Tensor ids = longs({4, 0, 4, 2, 4, 1}, {2, 3});
  gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], ids); }, {weight});
  gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0].t().contiguous().t(), ids.t()); }, {weight});
  gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], longs({0, 0}, {2})); }, {one});
  gradgradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], ids).square(); }, {weight});

  // The padding row is looked up but never learns.
  Tensor w = leaf({5, 3}, 36);
  (embedding(w, ids, 4) * 3).sum().backward();
  const std::vector<double> g = testing::values(w.grad());
  const std::vector<double> counts = {1, 1, 1, 0, 0};  // rows 0, 1, 2 once each; row 4 is padding
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(g[size_t(r * 3 + j)], 3 * counts[size_t(r)]) << r << ", " << j;
  // The other rows learn as without padding: the padding row is a constant here.
  const Tensor padding_row = testing::random({1, 3}, kFloat64, 38);
  gradcheck([&](const std::vector<Tensor>& in) { return embedding(cat({in[0], padding_row}), ids, -1); },
            {leaf({4, 3}, 39)});
}

TEST(IndexGrad, OneHotIsNotDifferentiable) {
  const Tensor x = leaf({3}, 37);
  const Tensor classes = one_hot(longs({2, 0, 1}, {3}), 3);
  EXPECT_FALSE(classes.requires_grad());
  // Used as a constant mask, it passes no gradient to the indices and the rest still differentiates.
  gradcheck([&](const std::vector<Tensor>& in) { return classes.to(kFloat64).matmul(in[0]); }, {x});
}

}  // namespace
}  // namespace nnvm
