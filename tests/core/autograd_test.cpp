// The autograd engine: recording, backward, accumulation, grad modes,
// version checks, second derivatives, and the gradients of the pointwise,
// view and copy ops against finite differences.
#include <cmath>

#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::gradcheck;
using testing::gradgradcheck;
using testing::leaf;
using testing::values;

TEST(Autograd, BackwardAccumulatesIntoLeaves) {
  Tensor x = tensor<double>({1.0, -2.0, 3.0}).requires_grad_();
  EXPECT_TRUE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  Tensor y = (x * x + x * 3).sum();
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn_name(), "SumBackward0");
  y.backward({}, /*retain_graph=*/true);
  expect_values(x.grad(), {5, -1, 9});
  y.backward();
  expect_values(x.grad(), {10, -2, 18});  // accumulates
  x.mutable_grad() = Tensor();
  (x * 2).sum().backward();
  expect_values(x.grad(), {2, 2, 2});
  expect_error([&] { y.backward(); }, {"sum", "second time", "retain_graph"});
}

TEST(Autograd, GradientArgumentAndErrors) {
  Tensor x = tensor<float>({1.f, 2.f}).requires_grad_();
  Tensor y = x * 3;
  expect_error([&] { y.backward(); }, {"backward", "scalar", "[2]"});
  y.backward(tensor<float>({1.f, 10.f}));
  expect_values(x.grad(), {3, 30});
  expect_error([&] { (x * 2).backward(ones({3})); }, {"backward", "[3]", "[2]"});
  expect_error([&] { ones({2}).sum().backward(); }, {"backward", "does not require grad"});
  expect_error([&] { tensor<int64_t>({1}).requires_grad_(); }, {"requires_grad_", "floating", "int64"});
  expect_error([&] { y.requires_grad_(false); }, {"requires_grad_", "leaf"});
}

TEST(Autograd, NoGradDetachAndNonFloatOutputs) {
  Tensor x = ones({2}).requires_grad_();
  {
    NoGradGuard guard;
    EXPECT_FALSE((x * 2).requires_grad());
    {
      EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
  }
  EXPECT_TRUE((x * 2).requires_grad());
  const Tensor d = (x * 2).detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.data_ptr(), d.data_ptr());
  EXPECT_FALSE((x > 0).requires_grad());  // bool results never require grad
  EXPECT_FALSE(x.argmax().requires_grad());
  Tensor y = x * 2;
  y.detach_();
  EXPECT_FALSE(y.requires_grad());
}

TEST(Autograd, BroadcastGradientsSumBack) {
  Tensor a = leaf({3, 1}, 1), b = leaf({4}, 2);
  Tensor w = leaf({}, 3);
  ((a + b) * w).sum().backward();
  EXPECT_EQ(a.grad().sizes(), IntArrayRef({3, 1}));
  EXPECT_EQ(b.grad().sizes(), IntArrayRef({4}));
  EXPECT_EQ(w.grad().dim(), 0);
  const double wv = w.item<double>();
  expect_values(a.grad(), {4 * wv, 4 * wv, 4 * wv});
  // a float32 leaf mixed with float64 gets a float32 gradient
  Tensor f = ones({2}).requires_grad_();
  (f * tensor<double>({2.0, 3.0})).sum().backward();
  EXPECT_EQ(f.grad().dtype(), kFloat32);
  expect_values(f.grad(), {2, 3});
}

TEST(Autograd, InPlaceOpsAndVersionChecks) {
  Tensor x = leaf({3}, 5);
  expect_error([&] { x.add_(1); }, {"add", "leaf", "NoGradGuard"});
  {
    NoGradGuard guard;
    x.add_(1);  // an optimizer step: allowed without recording
  }
  Tensor a = x * 2;
  a.mul_(3);  // recorded on a non-leaf
  EXPECT_EQ(a.grad_fn_name(), "MulBackward1");
  a.sum().backward();
  expect_values(x.grad(), {6, 6, 6});

  Tensor b = x * 2;
  Tensor c = b * b;  // saves b
  b.add_(1);
  expect_error([&] { c.sum().backward(); }, {"mul", "modified by an in-place operation", "version"});

  Tensor v = x * 1;
  expect_error([&] { v.slice(0, 0, 2).mul_(2); }, {"mul", "view"});
  // in-place that reads the overwritten value: x * y then y *= y keeps the old y for the gradient
  Tensor y = x * 1;
  Tensor z = y.clone();
  z.mul_(y);  // z = y * y
  x.mutable_grad() = Tensor();
  z.sum().backward();
  std::vector<double> expect;
  for (double e : values(x)) expect.push_back(2 * e);
  expect_values(x.grad(), expect);
}

TEST(Autograd, RetainGradAndGradFunction) {
  Tensor x = leaf({2}, 7);
  Tensor h = x.exp();
  h.retain_grad();
  Tensor y = (h * 2).sum();
  const std::vector<Tensor> g = autograd::grad({y}, {x, h});
  EXPECT_FALSE(x.grad().defined());  // grad() leaves .grad() alone
  expect_values(g[1], {2, 2});
  std::vector<double> gx;
  for (double e : values(x)) gx.push_back(2 * std::exp(e));
  expect_values(g[0], gx, 1e-12);
  Tensor y2 = (x.exp() * 2).sum();
  Tensor h2 = x * 1;
  h2.retain_grad();
  (h2.exp() * 3).sum().backward();
  EXPECT_TRUE(h2.grad().defined());
  Tensor unused = leaf({2}, 8);
  expect_error([&] { autograd::grad({y2}, {unused}); }, {"autograd::grad", "not used", "allow_unused"});
  EXPECT_FALSE(autograd::grad({(x * 2).sum()}, {unused}, {}, std::nullopt, false, true)[0].defined());
}

TEST(Autograd, SecondDerivatives) {
  Tensor x = tensor<double>({0.5, -1.5, 2.0}).requires_grad_();
  const Tensor y = x.pow(3).sum();
  const Tensor dy = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  expect_values(dy, {0.75, 6.75, 12});
  const Tensor d2y = autograd::grad({dy.sum()}, {x})[0];
  expect_values(d2y, {3, -9, 12});
}

TEST(Autograd, NonDifferentiableOpReportsItself) {
  register_op("test.no_grad_op")
      .inputs(1)
      .infer_with([](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs { return {{dims(in[0].sizes()), kFloat64}}; })
      .kernel(kCPU, [](absl::Span<const Tensor>, absl::Span<const Tensor> out, const Attrs&) { Tensor(out[0]).zero_(); });
  Tensor x = leaf({2}, 9);
  const Tensor y = call1(find_op("test.no_grad_op"), {x});
  EXPECT_TRUE(y.requires_grad());
  expect_error([&] { y.sum().backward(); }, {"test.no_grad_op", "not differentiable"});
}

// ---- gradients of the pointwise ops ----

using UnaryFn = Tensor (*)(const Tensor&);
struct UnaryGrad {
  const char* name;
  UnaryFn fn;
  double lo, hi;
};

const UnaryGrad kUnaryGrads[] = {
    {"exp", [](const Tensor& x) { return x.exp(); }, -2, 2},
    {"exp2", [](const Tensor& x) { return x.exp2(); }, -2, 2},
    {"log", [](const Tensor& x) { return x.log(); }, 0.5, 3},
    {"log2", [](const Tensor& x) { return x.log2(); }, 0.5, 3},
    {"log1p", [](const Tensor& x) { return x.log1p(); }, -0.5, 3},
    {"expm1", [](const Tensor& x) { return x.expm1(); }, -2, 2},
    {"sqrt", [](const Tensor& x) { return x.sqrt(); }, 0.5, 3},
    {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }, 0.5, 3},
    {"sin", [](const Tensor& x) { return x.sin(); }, -3, 3},
    {"cos", [](const Tensor& x) { return x.cos(); }, -3, 3},
    {"tan", [](const Tensor& x) { return x.tan(); }, -1, 1},
    {"tanh", [](const Tensor& x) { return x.tanh(); }, -2, 2},
    {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, -3, 3},
    {"erf", [](const Tensor& x) { return x.erf(); }, -2, 2},
    {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }, 0.5, 3},
    {"neg", [](const Tensor& x) { return x.neg(); }, -2, 2},
    {"abs", [](const Tensor& x) { return x.abs(); }, -2, 2},
    {"relu", [](const Tensor& x) { return x.relu(); }, -2, 2},
    {"square", [](const Tensor& x) { return x.square(); }, -2, 2},
    {"floor", [](const Tensor& x) { return x.floor() + x; }, -2, 2},
    {"clamp", [](const Tensor& x) { return x.clamp(-1, 1); }, -2, 2},
    {"nan_to_num", [](const Tensor& x) { return x.nan_to_num(); }, -2, 2},
    {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }, -2, 2},
    {"elu", [](const Tensor& x) { return elu(x, 1.3); }, -2, 2},
    {"gelu", [](const Tensor& x) { return gelu(x); }, -3, 3},
    {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, -3, 3},
    {"silu", [](const Tensor& x) { return silu(x); }, -3, 3},
    {"softplus", [](const Tensor& x) { return softplus(x, 1.5, 3.0); }, -3, 3},
};

TEST(AutogradPointwise, UnaryGradientsMatchFiniteDifferences) {
  for (const UnaryGrad& c : kUnaryGrads) {
    SCOPED_TRACE(c.name);
    // keep inputs away from kinks (relu/abs/clamp at 0 and +-1)
    Tensor x = testing::random({3, 5}, kFloat64, 31, c.lo, c.hi);
    x = where((x.abs() - 1).abs() < 0.05, x + 0.1, x);
    x = where(x.abs() < 0.05, x + 0.1, x).contiguous().requires_grad_();
    gradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0]); }, {x});
    // through a transposed (non-contiguous) view
    gradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0].t()); }, {x});
  }
}

TEST(AutogradPointwise, UnarySecondDerivatives) {
  for (const UnaryGrad& c : kUnaryGrads) {
    const std::string name = c.name;
    if (name == "floor" || name == "clamp" || name == "relu" || name == "abs" || name == "nan_to_num") continue;
    SCOPED_TRACE(c.name);
    Tensor x = testing::random({4}, kFloat64, 32, c.lo, c.hi);
    x = where(x.abs() < 0.05, x + 0.1, x).contiguous().requires_grad_();
    gradgradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0]); }, {x});
  }
}

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
struct BinaryGrad {
  const char* name;
  BinaryFn fn;
};

const BinaryGrad kBinaryGrads[] = {
    {"add", [](const Tensor& a, const Tensor& b) { return a.add(b, 2.5); }},
    {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
    {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
    {"div", [](const Tensor& a, const Tensor& b) { return a / (b.abs() + 1); }},
    {"pow", [](const Tensor& a, const Tensor& b) { return (a.abs() + 0.5).pow(b); }},
    {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
    {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
    {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }},
    {"remainder", [](const Tensor& a, const Tensor& b) { return a.remainder(b.abs() + 1); }},
    {"where", [](const Tensor& a, const Tensor& b) { return where(a > b, a * 2, b * 3); }},
    {"masked_fill", [](const Tensor& a, const Tensor& b) { return (a * b).masked_fill(a > 1, 0.5); }},
    {"scalars", [](const Tensor& a, const Tensor& b) {
       return (a * 2 + 1) / 3 - b.pow(2) + (2 - a) + pow(2.0, b) + a.maximum(0.3) + b.minimum(-0.2) + a.atan2(2.0);
     }},
};

TEST(AutogradPointwise, BinaryGradientsWithBroadcasting) {
  for (const BinaryGrad& c : kBinaryGrads) {
    SCOPED_TRACE(c.name);
    const Tensor a = leaf({3, 4}, 41), b = leaf({4}, 42), col = leaf({3, 1}, 43);
    gradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0], in[1]); }, {a, b});
    gradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0], in[1]); }, {col, b});
    gradgradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0], in[1]); }, {a, b});
  }
}

// ---- views and copies ----

TEST(AutogradViews, GradientsOfEveryView) {
  const Tensor x = leaf({2, 3, 4}, 51);
  const testing::DiffFn fns[] = {
      [](const std::vector<Tensor>& in) { return in[0].view({6, 4}) * 2; },
      [](const std::vector<Tensor>& in) { return in[0].transpose(0, 2).reshape({-1}); },
      [](const std::vector<Tensor>& in) { return in[0].permute({2, 0, 1}).exp(); },
      [](const std::vector<Tensor>& in) { return in[0].slice(2, 1, 4, 2) * 3; },
      [](const std::vector<Tensor>& in) { return in[0].select(1, -1).square(); },
      [](const std::vector<Tensor>& in) { return in[0].diagonal(1, 1, 2) * 5; },
      [](const std::vector<Tensor>& in) { return in[0].narrow(0, 1, 1).squeeze(0).unsqueeze(1); },
      [](const std::vector<Tensor>& in) { return in[0].select(2, 0).unsqueeze(2).expand({2, 3, 5}) * in[0].sum(); },
      [](const std::vector<Tensor>& in) { return in[0].flatten(1).t().contiguous(); },
      [](const std::vector<Tensor>& in) { return in[0].clone() * 2 + in[0].mT().contiguous().mT(); },
  };
  for (const auto& fn : fns) {
    gradcheck(fn, {x});
    gradgradcheck(fn, {x});
  }
}

TEST(AutogradViews, CastsPassGradientsInTheInputsDtype) {
  Tensor x = leaf({3}, 63);
  (x.to(kFloat32) * 2).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  expect_values(x.grad(), {2, 2, 2});
}

TEST(AutogradViews, CopyIntoANonLeaf) {
  Tensor x = leaf({3}, 61), y = leaf({3}, 62);
  Tensor buf = x * 1;
  buf.copy_(y * 2);  // buf now depends on y only
  buf.sum().backward();
  EXPECT_FALSE(x.grad().defined());
  expect_values(y.grad(), {2, 2, 2});
}

}  // namespace
}  // namespace nnvm

namespace nnvm {
namespace {

TEST(AutogradLinalg, MatmulFirstAndSecondDerivatives) {
  const Tensor a = testing::leaf({2, 3, 4}, 71), b = testing::leaf({4, 5}, 72), v = testing::leaf({4}, 73);
  const testing::DiffFn fns[] = {
      [](const std::vector<Tensor>& in) { return in[0].matmul(in[1]); },
      [](const std::vector<Tensor>& in) { return in[0].matmul(in[1]).tanh().matmul(in[1].t()); },
      [](const std::vector<Tensor>& in) { return in[0].matmul(in[2]); },
      [](const std::vector<Tensor>& in) { return linear(in[0], in[1].t(), in[2].slice(0, 0, 5, 1).sum() * ones({5}, kFloat64)); },
  };
  for (const auto& fn : fns) {
    testing::gradcheck(fn, {a, b, v});
    testing::gradgradcheck(fn, {a, b, v});
  }
}

// A matrix operand stored transposed (a linear layer's weight.t(), a.t() on
// the left) gets its gradient in its own layout: the leaf behind the view
// receives a row-major gradient, as the leaf is, eagerly and traced. The
// values are the products written out: for L = sum(y^2) / 2, dL/dy = y.
TEST(AutogradLinalg, TransposedOperandsGetGradientsInTheirLayout) {
  const Mode previous = mode();
  for (Mode m : {Mode::Eager, Mode::Traced}) {
    set_mode(m);
    const Tensor w = testing::leaf({5, 3}, 81), x = testing::leaf({4, 3}, 82);
    const Tensor y = linear(x, w);  // x wᵀ, [4, 5]
    (y * y * 0.5).sum().backward();
    const Tensor a = testing::leaf({3, 4}, 83), b = testing::leaf({3, 2}, 84);
    const Tensor z = a.t().matmul(b);  // aᵀ b, [4, 2]
    (z * z * 0.5).sum().backward();
    mark_step();
    const EagerGuard eager;
    const Tensor yd = y.detach(), zd = z.detach();
    ASSERT_TRUE(w.grad().is_contiguous()) << "mode " << int(m);
    ASSERT_TRUE(a.grad().is_contiguous()) << "mode " << int(m);
    testing::expect_tensors_close(w.grad(), yd.t().contiguous().matmul(x.detach()), 1e-12, 1e-12);  // yᵀ x
    testing::expect_tensors_close(x.grad(), yd.matmul(w.detach()), 1e-12, 1e-12);                  // y w
    testing::expect_tensors_close(a.grad(), b.detach().matmul(zd.t().contiguous()), 1e-12, 1e-12);  // b zᵀ
    testing::expect_tensors_close(b.grad(), a.detach().matmul(zd), 1e-12, 1e-12);                  // a z
  }
  set_mode(previous);
}

// The same for batches of matrices stored transposed (k.mT() of attention
// keys), and for a linear layer over a sequence ([batch, time, features]
// against a 2-D weight: one product over all rows gives the weight's
// gradient, row-major).
TEST(AutogradLinalg, BatchedAndSequenceOperandsGetGradientsInTheirLayout) {
  const Mode previous = mode();
  for (Mode m : {Mode::Eager, Mode::Traced}) {
    set_mode(m);
    const Tensor q = testing::leaf({2, 4, 3}, 85), k = testing::leaf({2, 5, 3}, 86);
    const Tensor s = q.matmul(k.mT());  // q kᵀ per batch entry, [2, 4, 5]
    (s * s * 0.5).sum().backward();
    const Tensor a = testing::leaf({2, 3, 4}, 87), b = testing::leaf({2, 3, 2}, 88);
    const Tensor z = a.mT().matmul(b);  // aᵀ b per batch entry, [2, 4, 2]
    (z * z * 0.5).sum().backward();
    const Tensor w = testing::leaf({5, 3}, 89), x = testing::leaf({2, 4, 3}, 90);
    const Tensor y = linear(x, w);  // x wᵀ, [2, 4, 5]
    (y * y * 0.5).sum().backward();
    mark_step();
    const EagerGuard eager;
    const Tensor sd = s.detach(), zd = z.detach(), yd = y.detach();
    for (const Tensor* t : {&k, &a, &w}) ASSERT_TRUE(t->grad().is_contiguous()) << "mode " << int(m);
    testing::expect_tensors_close(k.grad(), sd.mT().matmul(q.detach()), 1e-12, 1e-12);  // sᵀ q
    testing::expect_tensors_close(q.grad(), sd.matmul(k.detach()), 1e-12, 1e-12);       // s k
    testing::expect_tensors_close(a.grad(), b.detach().matmul(zd.mT()), 1e-12, 1e-12);  // b zᵀ
    testing::expect_tensors_close(b.grad(), a.detach().matmul(zd), 1e-12, 1e-12);       // a z
    testing::expect_tensors_close(w.grad(), yd.mT().matmul(x.detach()).sum({0}), 1e-12, 1e-12);  // Σ yᵀ x
    testing::expect_tensors_close(x.grad(), yd.matmul(w.detach()), 1e-12, 1e-12);                // y w
  }
  set_mode(previous);
}

}  // namespace
}  // namespace nnvm
