// gather, scatter, scatter_add, index_select, index_put, embedding and
// one_hot against naive loops, with repeated and negative indices, int32 and
// int64 indices in every layout, and the bounds-check messages.
#include <algorithm>
#include <functional>

#include "reference.h"

namespace nnvm {
namespace {

using testing::values;

constexpr DType kAllDTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64,
                                kInt32,   kInt8,    kUInt8,   kBool};

// Small integers (0/1 for bool), so sums stay exact in every dtype, int8 included.
Tensor input(IntArrayRef shape, DType dt, uint64_t seed) {
  Tensor x = testing::random(shape, dt, seed, dt == kUInt8 ? 0.0 : -10.0, 10.0);
  return is_floating(dt) ? x.round() : x;
}

// Uniform integers in [low, high) as `dt`.
Tensor indices(IntArrayRef shape, int64_t low, int64_t high, uint64_t seed, DType dt = kInt64) {
  Generator gen(seed);
  return randint(low, high, shape, kInt64, &gen).to(dt);
}

int64_t linear(const DimVector& idx, IntArrayRef shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

std::string trace(DType dt, testing::Layout l, testing::Layout li, int64_t dim) {
  return std::string(dtype_name(dt)) + " " + testing::layout_name(l) + " / index " + testing::layout_name(li) +
         " dim " + std::to_string(dim);
}

// An index shape for gather/scatter along `d` of a [4, 5, 3] input: larger
// than the input along d, smaller elsewhere.
DimVector index_shape(int64_t d, int64_t along) {
  DimVector s{3, 4, 2};
  s[d] = along;
  return s;
}

TEST(IndexGather, MatchesNaiveForEveryDimDtypeAndLayout) {
  const DimVector self_shape{4, 5, 3};
  uint64_t seed = 1;
  for (DType dt : kAllDTypes)
    for (DType it : {kInt64, kInt32})
      for (testing::Layout l : testing::kLayouts)
        for (testing::Layout li : testing::kLayouts)
          for (int64_t dim : {0, 1, 2, -1})
            for (int64_t along : {7, 1, 0}) {
              SCOPED_TRACE(trace(dt, l, li, dim));
              const int64_t d = dim < 0 ? dim + 3 : dim;
              const Tensor self = testing::with_layout(input(self_shape, dt, seed++), l);
              const DimVector ishape = index_shape(d, along);
              const Tensor index = testing::with_layout(indices(ishape, 0, self_shape[d], seed++, it), li);
              const Tensor out = self.gather(dim, index);
              ASSERT_EQ(shape_str(out.sizes()), shape_str(ishape));
              EXPECT_EQ(out.dtype(), dt);
              const std::vector<double> sv = values(self), iv = values(index);
              std::vector<double> expected;
              testing::for_each_index(ishape, [&](const DimVector& idx) {
                DimVector at = idx;
                at[d] = int64_t(iv[size_t(linear(idx, ishape))]);
                expected.push_back(sv[size_t(linear(at, self_shape))]);
              });
              testing::expect_values(out, expected, 0, 0);
            }
  testing::expect_values(scalar_tensor(5.5).gather(0, scalar_tensor(0, kInt64)), {5.5}, 0, 0);
}

TEST(IndexGather, ReportsBadIndices) {
  const Tensor x = zeros({3, 5});
  testing::expect_error([&] { x.gather(1, tensor<int64_t>({0, 7}, IntArrayRef{1, 2})); },
                        {"gather: index 7 is out of bounds for dim 1 with size 5"});
  testing::expect_error([&] { x.gather(-1, tensor<int64_t>({-1}, IntArrayRef{1, 1})); },
                        {"gather: index -1 is out of bounds for dim 1 with size 5"});
  testing::expect_error([&] { x.gather(0, zeros({1, 1})); }, {"gather", "int64", "float32"});
  testing::expect_error([&] { x.gather(0, zeros({2}, kInt64)); }, {"gather", "[2]", "[3, 5]", "rank"});
  testing::expect_error([&] { x.gather(1, zeros({4, 1}, kInt64)); }, {"gather", "[4, 1]", "[3, 5]"});
  testing::expect_error([&] { x.gather(2, zeros({1, 1}, kInt64)); }, {"gather", "dim 2"});
}

enum class Mode { Assign, Add, Value, AssignInPlace, AddInPlace };

Tensor run_scatter(Mode m, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  switch (m) {
    case Mode::Assign: return self.scatter(dim, index, src);
    case Mode::Add: return self.scatter_add(dim, index, src);
    case Mode::Value: return self.scatter(dim, index, Scalar(7));
    case Mode::AssignInPlace: {
      Tensor t = self;
      Tensor& r = t.scatter_(dim, index, src);
      EXPECT_TRUE(r.is_same(t));
      return self;
    }
    case Mode::AddInPlace: {
      Tensor t = self;
      Tensor& r = t.scatter_add_(dim, index, src);
      EXPECT_TRUE(r.is_same(t));
      return self;
    }
  }
  return {};
}

TEST(IndexScatter, MatchesNaiveWithRepeatedIndicesInEveryForm) {
  const DimVector self_shape{4, 5, 3};
  uint64_t seed = 100;
  for (Mode m : {Mode::Assign, Mode::Add, Mode::Value, Mode::AssignInPlace, Mode::AddInPlace})
    for (DType dt : kAllDTypes)
      for (testing::Layout l : testing::kLayouts)
        for (testing::Layout li : testing::kLayouts)
          for (int64_t dim : {0, 1, -1})
            for (int64_t along : {7, 0}) {
              SCOPED_TRACE(trace(dt, l, li, dim) + " mode " + std::to_string(int(m)));
              const int64_t d = dim < 0 ? dim + 3 : dim;
              const Tensor self = testing::with_layout(input(self_shape, dt, seed++), l);
              const DimVector ishape = index_shape(d, along);
              DimVector src_shape = ishape;
              for (int64_t& s : src_shape) ++s;  // src may be larger than the index
              const Tensor src = testing::with_layout(input(src_shape, dt, seed++), l);
              const Tensor index = testing::with_layout(indices(ishape, 0, self_shape[d], seed++), li);
              std::vector<double> expected = values(self);
              const std::vector<double> iv = values(index), vv = values(src);
              testing::for_each_index(ishape, [&](const DimVector& idx) {
                DimVector at = idx;
                at[d] = int64_t(iv[size_t(linear(idx, ishape))]);
                double& e = expected[size_t(linear(at, self_shape))];
                const double v = vv[size_t(linear(idx, src_shape))];
                if (m == Mode::Value) e = dt == kBool ? 1 : 7;
                else if (m == Mode::Assign || m == Mode::AssignInPlace) e = v;
                else e = dt == kBool ? double(e != 0 || v != 0) : e + v;
              });
              const Tensor out = run_scatter(m, self, dim, index, src);
              ASSERT_EQ(shape_str(out.sizes()), shape_str(self_shape));
              EXPECT_EQ(out.dtype(), dt);
              testing::expect_values(out, expected, 0, 0);
            }
}

TEST(IndexScatter, ReportsBadInput) {
  const Tensor x = zeros({3, 5});
  const Tensor idx = tensor<int64_t>({0, 3}, IntArrayRef{2, 1});
  testing::expect_error([&] { x.scatter(0, idx, ones({2, 1})); },
                        {"scatter: index 3 is out of bounds for dim 0 with size 3"});
  testing::expect_error([&] { x.scatter(0, idx, Scalar(1)); }, {"scatter: index 3 is out of bounds"});
  testing::expect_error([&] { zeros({3, 5}).scatter_add_(0, idx, ones({2, 1})); },
                        {"scatter_add: index 3 is out of bounds for dim 0 with size 3"});
  const Tensor ok = zeros({2, 1}, kInt64);
  testing::expect_error([&] { x.scatter(0, ok, ones({2, 1}, kFloat64)); }, {"scatter", "src", "float64", "float32"});
  testing::expect_error([&] { x.scatter_add(0, ok, ones({1, 1})); }, {"scatter_add", "[1, 1]", "[2, 1]"});
  testing::expect_error([&] { x.scatter(0, ok.to(kFloat32), ones({2, 1})); }, {"scatter", "int64", "float32"});
  testing::expect_error([&] { x.scatter(1, zeros({4, 1}, kInt64), ones({4, 1})); }, {"scatter", "[4, 1]", "[3, 5]"});
}

TEST(IndexSelect, PicksRowsAlongEveryDim) {
  const DimVector self_shape{4, 5, 3};
  uint64_t seed = 200;
  for (DType dt : kAllDTypes)
    for (DType it : {kInt64, kInt32})
      for (testing::Layout l : testing::kLayouts)
        for (testing::Layout li : {testing::Layout::Contiguous, testing::Layout::Strided})
          for (int64_t dim : {0, 1, 2, -2})
            for (const DimVector& ishape : {DimVector{7}, DimVector{0}, DimVector{}}) {
              SCOPED_TRACE(trace(dt, l, li, dim) + " index " + shape_str(ishape));
              const int64_t d = dim < 0 ? dim + 3 : dim;
              const Tensor self = testing::with_layout(input(self_shape, dt, seed++), l);
              const Tensor index = testing::with_layout(indices(ishape, 0, self_shape[d], seed++, it), li);
              const Tensor out = self.index_select(dim, index);
              DimVector out_shape = self_shape;
              out_shape[d] = index.numel();
              ASSERT_EQ(shape_str(out.sizes()), shape_str(out_shape));
              const std::vector<double> sv = values(self), iv = values(index);
              std::vector<double> expected;
              testing::for_each_index(out_shape, [&](const DimVector& idx) {
                DimVector at = idx;
                at[d] = int64_t(iv[size_t(idx[d])]);
                expected.push_back(sv[size_t(linear(at, self_shape))]);
              });
              testing::expect_values(out, expected, 0, 0);
            }
  const Tensor x = zeros({3, 5});
  testing::expect_error([&] { x.index_select(1, tensor<int64_t>({1, 5})); },
                        {"index_select: index 5 is out of bounds for dim 1 with size 5"});
  testing::expect_error([&] { x.index_select(0, tensor<int64_t>({-1})); },
                        {"index_select: index -1 is out of bounds for dim 0 with size 3"});
  testing::expect_error([&] { x.index_select(0, zeros({2, 1}, kInt64)); }, {"index_select", "[2, 1]"});
  testing::expect_error([&] { x.index_select(0, zeros({2}, kUInt8)); }, {"index_select", "int64", "uint8"});
  testing::expect_error([&] { scalar_tensor(1).index_select(0, zeros({1}, kInt64)); }, {"index_select", "0-d"});
}

// index_put's reference: writes (or adds) the broadcast values into each
// indexed slab in index order, given the slabs' positions in the leading dims.
std::vector<double> naive_index_put(const Tensor& self, const std::vector<DimVector>& positions,
                                    const Tensor& values_, bool accumulate) {
  const IntArrayRef shape = self.sizes();
  const size_t k = positions.empty() ? 0 : positions[0].size();
  const IntArrayRef slab = shape.subspan(k);
  DimVector target{int64_t(positions.size())};
  target.insert(target.end(), slab.begin(), slab.end());
  std::vector<double> out = values(self);
  const std::vector<double> vv = values(values_);
  for (size_t b = 0; b < positions.size(); ++b)
    testing::for_each_index(slab, [&](const DimVector& s) {
      DimVector at = positions[b], full{int64_t(b)};
      at.insert(at.end(), s.begin(), s.end());
      full.insert(full.end(), s.begin(), s.end());
      double& e = out[size_t(linear(at, shape))];
      const double v = vv[size_t(testing::broadcast_offset(full, values_.sizes()))];
      e = !accumulate ? v : self.dtype() == kBool ? double(e != 0 || v != 0) : e + v;
    });
  return out;
}

// The value shape of index_put's reference: the slabs in a row, then the slab.
DimVector put_shape(int64_t rows, IntArrayRef slab) {
  DimVector s{rows};
  s.insert(s.end(), slab.begin(), slab.end());
  return s;
}

TEST(IndexPut, IntegerIndicesBroadcastWrapAndAccumulate) {
  const DimVector self_shape{4, 5, 3};
  struct Case { std::vector<DimVector> index_shapes; DimVector values_shape; };
  // Each index lists positions into one leading dim; together they broadcast.
  const Case cases[] = {{{{6}}, {6, 5, 3}},          {{{6}}, {3}},           {{{3, 1}, {4}}, {3, 4, 3}},
                        {{{3, 1}, {4}}, {4, 1}},      {{{2, 2}, {2, 2}, {2, 2}}, {}},
                        {{{0}}, {1}},                 {{{1}}, {1, 5, 1}}};
  uint64_t seed = 300;
  for (DType dt : kAllDTypes)
    for (testing::Layout l : testing::kLayouts)
      for (bool accumulate : {false, true})
        for (bool in_place : {false, true})
          for (const Case& c : cases) {
            SCOPED_TRACE(std::string(dtype_name(dt)) + " " + testing::layout_name(l) + " values " +
                         shape_str(c.values_shape) + (accumulate ? " accumulate" : "") + (in_place ? " in place" : ""));
            const Tensor self = testing::with_layout(input(self_shape, dt, seed++), l);
            std::vector<Tensor> idx;
            DimVector lead;
            for (size_t d = 0; d < c.index_shapes.size(); ++d) {
              const int64_t n = self_shape[d];
              idx.push_back(testing::with_layout(indices(c.index_shapes[d], -n, n, seed++), l));
              lead = broadcast_shapes(lead, c.index_shapes[d], "test");
            }
            const Tensor vals = testing::with_layout(input(c.values_shape, dt, seed++), l);
            std::vector<DimVector> positions;
            testing::for_each_index(lead, [&](const DimVector& b) {
              DimVector p;
              for (size_t d = 0; d < idx.size(); ++d) {
                const int64_t i = int64_t(values(idx[d])[size_t(testing::broadcast_offset(b, idx[d].sizes()))]);
                p.push_back(i < 0 ? i + self_shape[d] : i);
              }
              positions.push_back(p);
            });
            const IntArrayRef slab = IntArrayRef(self_shape).subspan(idx.size());
            DimVector target = lead;
            target.insert(target.end(), slab.begin(), slab.end());
            const Tensor flat_vals = vals.expand(target).reshape(put_shape(int64_t(positions.size()), slab));
            const std::vector<double> expected = naive_index_put(self, positions, flat_vals, accumulate);
            Tensor out;
            if (in_place) {
              out = self.clone();
              EXPECT_TRUE(out.index_put_(idx, vals, accumulate).is_same(out));
            } else {
              out = self.index_put(idx, vals, accumulate);
            }
            ASSERT_EQ(shape_str(out.sizes()), shape_str(self_shape));
            EXPECT_EQ(out.dtype(), dt);
            testing::expect_values(out, expected, 0, 0);
          }
}

TEST(IndexPut, BoolMaskSelectsLeadingPositionsInOrder) {
  const DimVector self_shape{4, 5, 3};
  uint64_t seed = 400;
  for (DType dt : {kFloat32, kFloat16, kInt64, kInt8, kBool})
    for (testing::Layout l : testing::kLayouts)
      for (bool accumulate : {false, true})
        for (int64_t mask_rank : {1, 2, 3})
          for (bool full_values : {true, false}) {
            SCOPED_TRACE(std::string(dtype_name(dt)) + " " + testing::layout_name(l) + " mask rank " +
                         std::to_string(mask_rank) + (full_values ? " values per position" : " broadcast values"));
            const Tensor self = testing::with_layout(input(self_shape, dt, seed++), l);
            const IntArrayRef mshape = IntArrayRef(self_shape).first(size_t(mask_rank));
            const Tensor mask = testing::with_layout(input(mshape, kBool, seed++), l);
            std::vector<DimVector> positions;
            const std::vector<double> mv = values(mask);
            testing::for_each_index(mshape, [&](const DimVector& i) {
              if (mv[size_t(linear(i, mshape))] != 0) positions.push_back(i);
            });
            const IntArrayRef slab = IntArrayRef(self_shape).subspan(size_t(mask_rank));
            const DimVector vshape = full_values ? put_shape(int64_t(positions.size()), slab) : DimVector{1};
            const Tensor vals = input(vshape, dt, seed++);
            const Tensor out = self.index_put({mask}, vals, accumulate);
            testing::expect_values(out, naive_index_put(self, positions, vals, accumulate), 0, 0);
            Tensor in_place = self.clone();
            in_place.index_put_({mask}, vals, accumulate);
            testing::expect_tensors_close(in_place, out, 0, 0);
          }
}

TEST(IndexPut, ReportsBadInput) {
  const Tensor x = zeros({3, 4});
  testing::expect_error([&] { zeros({3, 4}).index_put_({tensor<int64_t>({0, 5})}, ones({4})); },
                        {"index_put: index 5 is out of bounds for dim 0 with size 3"});
  testing::expect_error([&] { x.index_put({tensor<int64_t>({1}), tensor<int64_t>({-5})}, ones({})); },
                        {"index_put: index -5 is out of bounds for dim 1 with size 4"});
  testing::expect_error([&] { x.index_put({tensor<int64_t>({0, 1})}, ones({2, 5})); },
                        {"index_put", "[2, 5]", "[2, 4]"});
  testing::expect_error([&] { x.index_put({tensor<int64_t>({0, 1}), tensor<int64_t>({0, 1, 2})}, ones({})); },
                        {"index_put", "[2]", "[3]"});
  testing::expect_error([&] { x.index_put({tensor<int64_t>({0})}, ones({4}, kFloat64)); },
                        {"index_put", "float64", "float32"});
  testing::expect_error([&] { x.index_put({tensor<float>({0})}, ones({4})); }, {"index_put", "int64", "float32"});
  const Tensor i = tensor<int64_t>({0});
  testing::expect_error([&] { x.index_put({i, i, i}, ones({})); }, {"index_put", "too many indices (3)", "[3, 4]"});
  testing::expect_error([&] { x.index_put({}, ones({})); }, {"index_put", "at least one index"});
  testing::expect_error([&] { x.index_put({zeros({3, 5}, kBool)}, ones({})); }, {"index_put", "mask", "[3, 5]", "[3, 4]"});
  const Tensor mask = tensor(std::vector<bool>{true, false, true});
  testing::expect_error([&] { x.index_put({mask}, ones({3, 4})); }, {"index_put", "[3, 4]", "[2, 4]"});
  testing::expect_error([&] { x.index_put({mask, i}, ones({})); }, {"index_put", "only index"});
}

TEST(IndexEmbedding, LooksUpRowsForAnyIndexShape) {
  uint64_t seed = 500;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (DType it : {kInt64, kInt32})
      for (testing::Layout l : testing::kLayouts)
        for (const DimVector& ishape : {DimVector{3, 5}, DimVector{7}, DimVector{}, DimVector{0, 2}}) {
          SCOPED_TRACE(std::string(dtype_name(dt)) + " " + testing::layout_name(l) + " " + shape_str(ishape));
          const Tensor weight = testing::with_layout(input({10, 4}, dt, seed++), l);
          const Tensor idx = testing::with_layout(indices(ishape, 0, 10, seed++, it), l);
          const Tensor out = embedding(weight, idx);
          DimVector out_shape = ishape;
          out_shape.push_back(4);
          ASSERT_EQ(shape_str(out.sizes()), shape_str(out_shape));
          const std::vector<double> wv = values(weight), iv = values(idx);
          std::vector<double> expected;
          for (double row : iv)
            for (int64_t j = 0; j < 4; ++j) expected.push_back(wv[size_t(int64_t(row) * 4 + j)]);
          testing::expect_values(out, expected, 0, 0);
          testing::expect_tensors_close(embedding(weight, idx, -1), out, 0, 0);  // padding_idx only shapes gradients
        }
  const Tensor w = zeros({10, 4});
  testing::expect_error([&] { embedding(w, tensor<int64_t>({3, 10})); },
                        {"embedding: index 10 is out of bounds for dim 0 with size 10"});
  testing::expect_error([&] { embedding(w, tensor<int64_t>({0}), 12); }, {"embedding", "padding_idx 12", "10 rows"});
  testing::expect_error([&] { embedding(zeros({10}), tensor<int64_t>({0})); }, {"embedding", "2-d", "[10]"});
  testing::expect_error([&] { embedding(w, zeros({2})); }, {"embedding", "int64", "float32"});
}

TEST(IndexOneHot, EncodesClassesAsInt64) {
  uint64_t seed = 600;
  for (DType it : {kInt64, kInt32})
    for (testing::Layout l : testing::kLayouts)
      for (const DimVector& shape : {DimVector{3, 4}, DimVector{5}, DimVector{}})
        for (int64_t num_classes : {-1, 6, 9}) {
          SCOPED_TRACE(testing::layout_name(l) + std::string(" ") + shape_str(shape) + " classes " +
                       std::to_string(num_classes));
          const Tensor idx = testing::with_layout(indices(shape, 0, 6, seed++, it), l);
          const std::vector<double> iv = values(idx);
          int64_t classes = num_classes;
          if (classes < 0) classes = int64_t(*std::max_element(iv.begin(), iv.end())) + 1;
          const Tensor out = one_hot(idx, num_classes);
          DimVector out_shape = shape;
          out_shape.push_back(classes);
          ASSERT_EQ(shape_str(out.sizes()), shape_str(out_shape));
          EXPECT_EQ(out.dtype(), kInt64);
          std::vector<double> expected;
          for (double c : iv)
            for (int64_t j = 0; j < classes; ++j) expected.push_back(int64_t(c) == j ? 1 : 0);
          testing::expect_values(out, expected, 0, 0);
        }
  EXPECT_EQ(shape_str(one_hot(zeros({0, 2}, kInt64), 3).sizes()), "[0, 2, 3]");
  testing::expect_error([] { one_hot(tensor<int64_t>({1, -1}), 6); },
                        {"one_hot: index -1 is out of bounds for dim 1 with size 6"});
  testing::expect_error([] { one_hot(tensor<int64_t>({1, 3}), 3); },
                        {"one_hot: index 3 is out of bounds for dim 1 with size 3"});
  testing::expect_error([] { one_hot(zeros({0}, kInt64)); }, {"one_hot", "empty", "num_classes"});
  testing::expect_error([] { one_hot(zeros({2})); }, {"one_hot", "int64", "float32"});
  testing::expect_error([] { one_hot(zeros({2}, kInt64), -3); }, {"one_hot", "-3"});
}

TEST(Index, LargeScatterAddIsDeterministicAcrossCalls) {
  const Tensor self = zeros({64, 1000});
  const Tensor index = indices({64, 3000}, 0, 1000, 700);
  const Tensor src = testing::random({64, 3000}, kFloat32, 701);
  const Tensor a = self.scatter_add(1, index, src), b = self.scatter_add(1, index, src);
  EXPECT_EQ(values(a), values(b));
  std::vector<double> expected(64 * 1000, 0.0);
  const std::vector<double> iv = values(index), sv = values(src);
  std::vector<float> acc(64 * 1000, 0.0f);
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t j = 0; j < 3000; ++j) {
      float& e = acc[size_t(r * 1000 + int64_t(iv[size_t(r * 3000 + j)]))];
      e += float(sv[size_t(r * 3000 + j)]);
    }
  expected.assign(acc.begin(), acc.end());
  testing::expect_values(a, expected, 0, 0);  // the same order of float adds as the naive loop
}

}  // namespace
}  // namespace nnvm
