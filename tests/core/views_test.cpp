// Views share storage and never copy; their layouts match libtorch's.
#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_error;
using testing::expect_values;

Tensor grid() { return arange(24, kFloat32).view({2, 3, 4}); }

void expect_shares(const Tensor& view, const Tensor& base) { EXPECT_EQ(view.storage(), base.storage()); }

TEST(Views, ViewAndReshape) {
  const Tensor g = grid();
  const Tensor v = g.view({6, -1});
  expect_shares(v, g);
  EXPECT_EQ(v.sizes(), IntArrayRef({6, 4}));
  expect_values(v[5], {20, 21, 22, 23});
  // a transposed tensor cannot be viewed flat, but reshape copies
  const Tensor t = g.transpose(1, 2);
  expect_error([&] { t.view({-1}); }, {"view", "[2, 4, 3]", "reshape"});
  const Tensor r = t.reshape({-1});
  EXPECT_NE(r.storage(), g.storage());
  expect_values(r.slice(0, 0, 4), {0, 4, 8, 1});
  // splitting a dim of a non-contiguous tensor is still a view
  const Tensor s = t.view({2, 2, 2, 3});
  expect_shares(s, g);
  expect_values(s[0][1][0], {2, 6, 10});
  expect_error([&] { g.view({5, -1}); }, {"view", "[5, -1]", "[2, 3, 4]"});
  expect_error([&] { g.view({-1, -1}); }, {"view", "only one dimension"});
  expect_error([&] { g.reshape({7}); }, {"reshape", "[7]", "24 elements"});
  EXPECT_EQ(zeros({0, 3}).view({3, 0, 5}).numel(), 0);
  EXPECT_EQ(scalar_tensor(1.0).view({1, 1}).sizes(), IntArrayRef({1, 1}));
  EXPECT_EQ(ones({1}).view({}).dim(), 0);
}

TEST(Views, TransposePermuteT) {
  const Tensor g = grid();
  const Tensor p = g.permute({2, 0, 1});
  expect_shares(p, g);
  EXPECT_EQ(p.sizes(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(p.strides(), IntArrayRef({1, 12, 4}));
  EXPECT_EQ(p[3][1][2].item<float>(), 12 + 8 + 3);
  expect_error([&] { g.permute({0, 1}); }, {"permute", "[2, 3, 4]"});
  expect_error([&] { g.permute({0, 1, 1}); }, {"permute", "twice"});
  const Tensor m = arange(6, kFloat32).view({2, 3});
  expect_values(m.t().contiguous(), {0, 3, 1, 4, 2, 5});
  EXPECT_EQ(g.mT().sizes(), IntArrayRef({2, 4, 3}));
  EXPECT_EQ(arange(3).t().sizes(), IntArrayRef({3}));
  expect_error([&] { g.t(); }, {"t", "[2, 3, 4]"});
  expect_error([&] { g.transpose(0, 3); }, {"transpose", "dim 3", "rank 3"});
}

TEST(Views, SliceNarrowSelect) {
  const Tensor g = grid();
  const Tensor s = g.slice(2, 1, std::nullopt, 2);
  expect_shares(s, g);
  EXPECT_EQ(s.sizes(), IntArrayRef({2, 3, 2}));
  EXPECT_EQ(s.storage_offset(), 1);
  expect_values(s[1][2], {21, 23});
  expect_values(g.slice(1, -2)[0][0], {4, 5, 6, 7});
  EXPECT_EQ(g.slice(1, 5, 10).size(1), 0);  // clamped like Python
  EXPECT_EQ(g.slice(1, 2, 1).size(1), 0);
  expect_values(g.narrow(2, 1, 2)[0][0], {1, 2});
  expect_error([&] { g.narrow(2, 3, 2); }, {"narrow", "start 3", "length 2", "size 4"});
  expect_error([&] { g.slice(0, 0, 1, 0); }, {"slice", "step"});
  const Tensor sel = g.select(1, -1);
  EXPECT_EQ(sel.sizes(), IntArrayRef({2, 4}));
  expect_values(sel[0], {8, 9, 10, 11});
  expect_error([&] { g.select(1, 3); }, {"select", "index 3", "size 3"});
  expect_error([&] { g[2]; }, {"select", "index 2", "size 2"});
  expect_error([&] { scalar_tensor(1.0).select(0, 0); }, {"select", "0-d"});
}

TEST(Views, ExpandSqueezeUnsqueeze) {
  const Tensor col = arange(3, kFloat32).view({3, 1});
  const Tensor e = col.expand({2, 3, 4});
  expect_shares(e, col);
  EXPECT_EQ(e.strides(), IntArrayRef({0, 1, 0}));
  expect_values(e[1][2], {2, 2, 2, 2});
  EXPECT_EQ(col.expand({-1, 5}).sizes(), IntArrayRef({3, 5}));
  expect_error([&] { col.expand({4, 1}); }, {"expand", "size 4", "existing size 3"});
  expect_error([&] { col.expand({3}); }, {"expand", "rank"});
  EXPECT_EQ(ones({2, 3}).expand_as(ones({4, 2, 3})).sizes(), IntArrayRef({4, 2, 3}));
  const Tensor u = col.unsqueeze(0);
  EXPECT_EQ(u.sizes(), IntArrayRef({1, 3, 1}));
  EXPECT_EQ(col.unsqueeze(-1).sizes(), IntArrayRef({3, 1, 1}));
  EXPECT_EQ(u.squeeze().sizes(), IntArrayRef({3}));
  EXPECT_EQ(u.squeeze(0).sizes(), IntArrayRef({3, 1}));
  EXPECT_EQ(u.squeeze(1).sizes(), IntArrayRef({1, 3, 1}));  // not size 1: unchanged
  EXPECT_EQ(scalar_tensor(2.0).unsqueeze(0).sizes(), IntArrayRef({1}));
  expect_error([&] { col.unsqueeze(3); }, {"unsqueeze", "dim 3"});
}

TEST(Views, FlattenUnflattenDiagonal) {
  const Tensor g = grid();
  EXPECT_EQ(g.flatten().sizes(), IntArrayRef({24}));
  EXPECT_EQ(g.flatten(1).sizes(), IntArrayRef({2, 12}));
  EXPECT_EQ(g.flatten(0, 1).sizes(), IntArrayRef({6, 4}));
  expect_shares(g.flatten(1), g);
  EXPECT_EQ(g.unflatten(2, {2, 2}).sizes(), IntArrayRef({2, 3, 2, 2}));
  EXPECT_EQ(g.unflatten(1, {-1, 1}).sizes(), IntArrayRef({2, 3, 1, 4}));
  expect_error([&] { g.unflatten(1, {2, 2}); }, {"unflatten", "[2, 2]"});
  const Tensor m = arange(12, kFloat32).view({3, 4});
  expect_values(m.diagonal(), {0, 5, 10});
  expect_values(m.diagonal(1), {1, 6, 11});
  expect_values(m.diagonal(-1), {4, 9});
  EXPECT_EQ(m.diagonal(5).numel(), 0);
  expect_shares(m.diagonal(), m);
  EXPECT_EQ(g.diagonal(0, 1, 2).sizes(), IntArrayRef({2, 3}));
  expect_values(g.diagonal(0, 1, 2)[1], {12, 17, 22});
  expect_error([&] { arange(3).diagonal(); }, {"diagonal", "rank >= 2"});
}

TEST(Views, SplitChunkUnbind) {
  const Tensor m = arange(10, kFloat32);
  const auto parts = m.split(4);
  ASSERT_EQ(parts.size(), 3u);
  expect_values(parts[2], {8, 9});
  expect_shares(parts[1], m);
  const auto sized = m.split({3, 7});
  expect_values(sized[0], {0, 1, 2});
  expect_error([&] { m.split({3, 3}); }, {"split", "sum to 6", "size 10"});
  const auto chunks = m.chunk(3);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].numel(), 4);
  EXPECT_EQ(chunks[2].numel(), 2);
  const auto rows = grid().unbind(1);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].sizes(), IntArrayRef({2, 4}));
}

TEST(Views, WritesThroughViewsReachTheBase) {
  Tensor g = zeros({3, 4});
  g.t()[1].fill_(5);  // column 1
  g.slice(0, 0, 3, 2).select(1, 3).fill_(7);
  g.diagonal().add_(1);
  expect_values(g, {1, 5, 0, 7, 0, 6, 0, 0, 0, 5, 1, 7});
}

}  // namespace
}  // namespace nnvm

namespace nnvm {
namespace {

// Found in review: each used to crash, return a bad shape or keep a stale gradient.
TEST(Views, EdgeCasesFoundInReview) {
  using testing::expect_error;
  const Tensor s = scalar_tensor(3.0);
  expect_error([&] { s.size(0); }, {"size", "0-d"});
  expect_error([&] { s.stride(-1); }, {"stride", "0-d"});
  expect_error([&] { s.unbind(0); }, {"unbind", "0-d"});
  expect_error([&] { s.unflatten(0, {1}); }, {"unflatten", "0-d"});
  expect_error([&] { s.split(1); }, {"split", "0-d"});
  expect_error([&] { s.chunk(1); }, {"chunk", "0-d"});
  const Tensor x = arange(5);
  EXPECT_EQ(x.slice(0, 0, 5, INT64_MAX).sizes(), IntArrayRef({1}));
  EXPECT_EQ(x.slice(0, 1, 5, INT64_MAX - 2).sizes(), IntArrayRef({1}));
  EXPECT_EQ(x.slice(0, 0, 5, 2).sizes(), IntArrayRef({3}));
  expect_error([&] { x.narrow(0, 1, INT64_MAX); }, {"narrow", "length"});
  expect_error([&] { ones({1}).expand({-5}); }, {"expand", "-5"});
  expect_error([&] { empty({int64_t(1) << 61}, kFloat64); }, {"empty", "2^63"});
  expect_error([&] { zeros({int64_t(1) << 40, int64_t(1) << 40}); }, {"full", "2^63"});
}

TEST(Views, GradLeavesUnrelatedGraphIntact) {
  Tensor x = ones({3}).requires_grad_();
  Tensor h = x * 2;
  Tensor y = (h * 3).sum();
  testing::expect_values(autograd::grad({y}, {h})[0], {3, 3, 3});
  h.sum().backward();  // h's own node was not run (nor freed) by grad()
  testing::expect_values(x.grad(), {2, 2, 2});
}

TEST(Views, RetainGradFollowsInPlaceOps) {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 2;
  y.retain_grad();
  y.mul_(3);
  y.sum().backward();
  testing::expect_values(y.grad(), {1, 1});
  testing::expect_values(x.grad(), {6, 6});
}

}  // namespace
}  // namespace nnvm

namespace nnvm {
namespace {

// The two ops the recorder reads and writes views of lazy values with.
TEST(Views, AsStridedAndStridedUpdateMatchIndexing) {
  const OpDef& as_strided = find_op("as_strided");
  const OpDef& strided_update = find_op("strided_update");
  const Tensor base = testing::random({4, 6}, kFloat32, 1);
  // rows 1..2, every other column from 1: offset 7, strides [6, 2]
  const Attrs layout{DimVector{2, 3}, DimVector{6, 2}, int64_t(7)};
  const Tensor view = call1(as_strided, {base}, layout);
  EXPECT_EQ(view.storage(), base.storage());
  testing::expect_tensors_close(view, base.slice(0, 1, 3).slice(1, 1, std::nullopt, 2));
  const Tensor src = testing::random({2, 3}, kFloat32, 2);
  const Tensor updated = call1(strided_update, {base, src}, layout);
  Tensor want = base.clone();
  want.slice(0, 1, 3).slice(1, 1, std::nullopt, 2).copy_(src);
  testing::expect_tensors_close(updated, want);
  testing::expect_tensors_close(base, base.clone());  // the base is not written

  testing::expect_error([&] { call1(as_strided, {base}, {DimVector{5, 6}, DimVector{6, 1}, int64_t(0)}); },
                        {"as_strided", "reaches past the storage's 24 elements"});
  testing::expect_error([&] { call1(as_strided, {base}, {DimVector{2}, DimVector{1, 1}, int64_t(0)}); },
                        {"as_strided", "differ in rank"});
  testing::expect_error([&] { call1(as_strided, {base}, {DimVector{2}, DimVector{1}, int64_t(-1)}); },
                        {"as_strided", "negative storage offset"});
  testing::expect_error([&] { call1(strided_update, {base, src.t()}, layout); },
                        {"strided_update", "[3, 2]", "[2, 3]"});
}

}  // namespace
}  // namespace nnvm
