// Gradients of the reductions, scans, softmax and sort/topk
// (core/ops/reduce.cpp, core/ops/sort.cpp) against finite differences, and
// second derivatives of the smooth ones. Each function also reads its input
// through a transposed view, so non-contiguous inputs take the same path.
#include <cmath>

#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_values;
using testing::gradcheck;
using testing::gradgradcheck;
using testing::leaf;
using testing::values;

using Reduction = std::function<Tensor(const Tensor&, IntArrayRef, bool)>;

struct ReductionCase {
  const char* name;
  Reduction fn;
  double lo, hi;  // input range: away from kinks and zeros where the op has them
  bool second_order;
};

const ReductionCase kReductions[] = {
    {"sum", [](const Tensor& x, IntArrayRef d, bool k) { return x.sum(d, k); }, -2, 2, true},
    {"mean", [](const Tensor& x, IntArrayRef d, bool k) { return x.mean(d, k); }, -2, 2, true},
    {"amax", [](const Tensor& x, IntArrayRef d, bool k) { return x.amax(d, k); }, -2, 2, true},
    {"amin", [](const Tensor& x, IntArrayRef d, bool k) { return x.amin(d, k); }, -2, 2, false},
    {"var", [](const Tensor& x, IntArrayRef d, bool k) { return x.var(d, 1, k); }, -2, 2, true},
    {"var0", [](const Tensor& x, IntArrayRef d, bool k) { return x.var(d, 0, k); }, -2, 2, false},
    {"std", [](const Tensor& x, IntArrayRef d, bool k) { return x.std(d, 1, k); }, -2, 2, true},
    {"logsumexp", [](const Tensor& x, IntArrayRef d, bool k) { return x.logsumexp(d, k); }, -2, 2, true},
    {"norm2", [](const Tensor& x, IntArrayRef d, bool k) { return x.norm(2, d, k); }, -2, 2, true},
    {"norm1", [](const Tensor& x, IntArrayRef d, bool k) { return x.norm(1, d, k); }, 0.2, 2, true},
    {"norm3", [](const Tensor& x, IntArrayRef d, bool k) { return x.norm(3, d, k); }, -2, 2, true},
    {"norm1.5", [](const Tensor& x, IntArrayRef d, bool k) { return x.norm(1.5, d, k); }, 0.2, 2, true},
    {"norm_inf", [](const Tensor& x, IntArrayRef d, bool k) { return x.norm(INFINITY, d, k); }, -2, 2, false},
    {"norm_-inf", [](const Tensor& x, IntArrayRef d, bool k) { return x.norm(-INFINITY, d, k); }, 0.2, 2, false},
    {"var_mean", [](const Tensor& x, IntArrayRef d, bool k) {
       auto [v, m] = var_mean(x, d, 1, k);
       return v + m * 3;
     }, -2, 2, false},
};

TEST(ReduceGrad, ReductionsMatchFiniteDifferences) {
  struct Shape {
    DimVector shape;  // of the leaf; the op sees its transpose(0, last)
    DimVector dims;
  };
  const Shape shapes[] = {{{5}, {}}, {{3, 4}, {1}}, {{3, 4}, {0}}, {{4, 3}, {}}, {{2, 3, 5}, {0, 2}},
                          {{3, 1, 4}, {-1}}, {{1, 5}, {0}}};
  for (const ReductionCase& c : kReductions) {
    for (const Shape& s : shapes) {
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(std::string(c.name) + " " + shape_str(s.shape) + " dims " + shape_str(s.dims) +
                     (keepdim ? " keepdim" : ""));
        Tensor x = leaf(s.shape, 11, c.lo, c.hi);
        auto fn = [&](const std::vector<Tensor>& in) {
          const Tensor v = in[0].dim() > 1 ? in[0].transpose(0, in[0].dim() - 1) : in[0];
          return c.fn(v, s.dims, keepdim);
        };
        gradcheck(fn, {x});
        if (c.second_order) gradgradcheck(fn, {x});
      }
    }
  }
}

TEST(ReduceGrad, ProdWithAndWithoutZeros) {
  auto prod_all = [](const std::vector<Tensor>& in) { return in[0].t().prod(); };
  auto prod_dim = [](const std::vector<Tensor>& in) { return in[0].t().prod(1, true); };
  auto prod_f64 = [](const std::vector<Tensor>& in) { return in[0].prod(0, false, kFloat64); };
  for (int zeros : {0, 1, 2}) {
    SCOPED_TRACE(std::to_string(zeros) + " zeros");
    Tensor x = leaf({3, 4}, 21, 0.5, 1.5);
    double* p = x.data_ptr<double>();
    for (int i = 0; i < zeros; ++i) p[4 * i] = 0;  // zeros in row 0 of x.t(), in column 0 of x
    if (zeros == 2) p[5] = 0;
    gradcheck(prod_all, {x});
    gradcheck(prod_dim, {x});
    gradcheck(prod_f64, {x});
    if (zeros == 0) {
      gradgradcheck(prod_all, {x});
      gradgradcheck(prod_dim, {x});
    }
  }
  // one zero: its gradient is the product of the others, the rest get 0
  Tensor y = tensor<double>({2.0, 0.0, 3.0}).requires_grad_();
  y.prod().backward();
  expect_values(y.grad(), {0, 6, 0});
}

TEST(ReduceGrad, MaxMinOverAllAndAlongDim) {
  Tensor x = leaf({3, 5}, 31);
  gradcheck([](const std::vector<Tensor>& in) { return in[0].t().max(); }, {x});
  gradcheck([](const std::vector<Tensor>& in) { return in[0].t().min(); }, {x});
  for (bool keepdim : {false, true})
    for (int64_t dim : {0, 1, -1}) {
      SCOPED_TRACE("dim " + std::to_string(dim) + (keepdim ? " keepdim" : ""));
      gradcheck([&](const std::vector<Tensor>& in) { return std::get<0>(in[0].t().max(dim, keepdim)); }, {x});
      gradcheck([&](const std::vector<Tensor>& in) { return std::get<0>(in[0].t().min(dim, keepdim)); }, {x});
    }
}

TEST(ReduceGrad, TiesSplitForAmaxButFollowTheIndexForMaxDim) {
  Tensor x = tensor<double>({1, 3, 3, 2, 3, -1}, IntArrayRef{2, 3}).requires_grad_();
  x.amax({}, false).backward();
  expect_values(x.grad(), {0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 0});
  x.mutable_grad() = Tensor();
  x.max().backward();
  expect_values(x.grad(), {0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 0});
  x.mutable_grad() = Tensor();
  auto [v, i] = x.max(1);
  v.sum().backward();
  const std::vector<double> idx = values(i);
  std::vector<double> expect(6, 0.0);
  for (int r = 0; r < 2; ++r) expect[size_t(r * 3 + int(idx[size_t(r)]))] = 1;
  expect_values(x.grad(), expect);
  // norm inf: |x| ties split too, with x's sign
  Tensor y = tensor<double>({-2, 2, 1}).requires_grad_();
  y.norm(INFINITY).backward();
  expect_values(y.grad(), {-0.5, 0.5, 0});
}

TEST(ReduceGrad, NormSubgradientAtZeroIsZero) {
  Tensor x = tensor<double>({0, 0, 0}).requires_grad_();
  x.norm(2).backward();
  expect_values(x.grad(), {0, 0, 0});
  x.mutable_grad() = Tensor();
  x.norm(1).backward();
  expect_values(x.grad(), {0, 0, 0});
  Tensor y = tensor<double>({0, 2, -1}).requires_grad_();
  y.norm(1).backward();
  expect_values(y.grad(), {0, 1, -1});
  y.mutable_grad() = Tensor();
  y.norm(1.5).backward();
  EXPECT_EQ(values(y.grad())[0], 0);
}

TEST(ReduceGrad, AlongDimOps) {
  using AlongDim = std::function<Tensor(const Tensor&, int64_t)>;
  const std::pair<const char*, AlongDim> ops[] = {
      {"cumsum", [](const Tensor& x, int64_t d) { return x.cumsum(d); }},
      {"softmax", [](const Tensor& x, int64_t d) { return softmax(x, d); }},
      {"log_softmax", [](const Tensor& x, int64_t d) { return log_softmax(x, d); }},
  };
  const DimVector shapes[] = {{6}, {3, 5}, {2, 3, 4}, {1, 4}};
  for (const auto& [name, fn] : ops)
    for (const DimVector& shape : shapes)
      for (int64_t dim = -1; dim < int64_t(shape.size()); ++dim) {
        SCOPED_TRACE(std::string(name) + " " + shape_str(shape) + " dim " + std::to_string(dim));
        Tensor x = leaf(shape, 41);
        auto f = [&, &fn = fn](const std::vector<Tensor>& in) {  // clang 14 cannot capture a structured binding
          const Tensor v = in[0].dim() > 1 ? in[0].transpose(0, in[0].dim() - 1) : in[0];
          return fn(v, dim);
        };
        gradcheck(f, {x});
        gradgradcheck(f, {x});
      }
}

TEST(ReduceGrad, SortAndTopkScatterThroughIndices) {
  Tensor x = leaf({4, 5}, 51);
  for (int64_t dim : {0, 1})
    for (bool descending : {false, true}) {
      SCOPED_TRACE("sort dim " + std::to_string(dim));
      gradcheck([&](const std::vector<Tensor>& in) { return std::get<0>(in[0].t().sort(dim, descending)); }, {x});
    }
  for (int64_t k : {1, 2, 4})
    for (bool largest : {false, true}) {
      SCOPED_TRACE("topk k " + std::to_string(k));
      gradcheck([&](const std::vector<Tensor>& in) { return std::get<0>(in[0].t().topk(k, 1, largest)); }, {x});
      gradcheck([&](const std::vector<Tensor>& in) { return std::get<0>(in[0].topk(k, 0, largest)); }, {x});
    }
  Tensor y = tensor<double>({3, 1, 2}).requires_grad_();
  auto [top, idx] = y.topk(2);
  (top * tensor<double>({10, 1})).sum().backward();
  expect_values(y.grad(), {10, 0, 1});
}

}  // namespace
}  // namespace nnvm
