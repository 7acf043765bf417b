#include "reference.h"

#include "nnvm/core/mode.h"

#include <cmath>

namespace nnvm::testing {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Strided: return "strided";
  }
  return "?";
}

Tensor random(IntArrayRef shape, DType dtype, uint64_t seed, double lo, double hi) {
  Generator gen(seed);
  Tensor u = rand(shape, kFloat64, &gen) * (hi - lo) + lo;
  if (dtype == kBool) return u > (lo + hi) / 2;
  if (is_integral(dtype)) u = u.round();
  return u.to(dtype);
}

Tensor with_layout(const Tensor& t, Layout layout) {
  if (layout == Layout::Transposed && t.dim() >= 2) return t.mT().contiguous().mT();
  if (layout == Layout::Contiguous) return t.contiguous();
  if (t.dim() == 0) return t.clone();
  DimVector wide(t.sizes().begin(), t.sizes().end());
  wide.back() = 2 * wide.back() + 1;
  Tensor buf = zeros(wide, t.dtype());
  Tensor view = buf.slice(-1, 1, std::nullopt, 2);
  view.copy_(t);
  return view;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

void for_each_index(IntArrayRef shape, const std::function<void(const DimVector&)>& fn) {
  const int64_t n = numel_of(shape);
  DimVector idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(idx);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t broadcast_offset(const DimVector& index, IntArrayRef shape) {
  const size_t lead = index.size() - shape.size();
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + (shape[d] == 1 ? 0 : index[lead + d]);
  return off;
}

void expect_values(const Tensor& actual, const std::vector<double>& expected, double rtol, double atol) {
  ASSERT_EQ(actual.numel(), int64_t(expected.size())) << "shape " << shape_str(actual.sizes());
  const std::vector<double> got = values(actual);
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], e = expected[i];
    const bool ok = (std::isnan(a) && std::isnan(e)) || a == e || std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok && reported++ < 5)
      ADD_FAILURE() << "element " << i << " of shape " << shape_str(actual.sizes()) << " (" << actual.dtype()
                    << "): got " << a << ", expected " << e;
  }
}

void expect_tensors_close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  ASSERT_EQ(shape_str(actual.sizes()), shape_str(expected.sizes()));
  expect_values(actual, values(expected), rtol, atol);
}

void expect_error(const std::function<void()>& fn, std::initializer_list<std::string_view> pieces) {
  try {
    fn();
    mark_step();  // in traced mode a kernel's check on the data runs when the trace does
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (std::string_view p : pieces)
      EXPECT_NE(msg.find(p), std::string::npos) << "message \"" << msg << "\" lacks \"" << p << "\"";
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-nnvm exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected an nnvm::Error";
}

void expect_traced_equals_eager(const std::function<std::vector<Tensor>()>& make_inputs,
                                const std::function<std::vector<Tensor>(std::vector<Tensor>&)>& program) {
  std::vector<Tensor> want;
  {
    EagerGuard eager;
    std::vector<Tensor> in = make_inputs();
    want = program(in);
  }
  for (int run = 1; run <= 3; ++run) {
    SCOPED_TRACE(::testing::Message() << "traced run " << run);
    std::vector<Tensor> in;
    {
      EagerGuard eager;
      in = make_inputs();
    }
    const std::vector<Tensor> got = program(in);
    mark_step();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_tensors_close(got[i], want[i]);
  }
}

Tensor leaf(IntArrayRef shape, uint64_t seed, double lo, double hi) {
  return random(shape, kFloat64, seed, lo, hi).requires_grad_();
}

namespace {

// sum(fn(inputs) * weights), the scalar both derivative methods differentiate.
Tensor weighted(const DiffFn& fn, const std::vector<Tensor>& inputs, Tensor& weights) {
  const Tensor out = fn(inputs);
  if (!weights.defined()) weights = random(out.sizes(), kFloat64, 4242, 0.5, 1.5);
  return (out.to(kFloat64) * weights).sum();
}

}  // namespace

void gradcheck(const DiffFn& fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  std::vector<Tensor> checked;
  for (const Tensor& t : inputs) {
    if (!t.requires_grad()) continue;
    ASSERT_EQ(t.dtype(), kFloat64) << "gradcheck needs float64 inputs";
    ASSERT_TRUE(t.is_contiguous()) << "gradcheck perturbs inputs in place; pass contiguous leaves";
    checked.push_back(t);
  }
  ASSERT_FALSE(checked.empty()) << "no input requires grad";
  Tensor weights;
  const Tensor loss = weighted(fn, inputs, weights);
  // A loss that does not depend on the inputs through the graph (the
  // derivative of a linear function, in gradgradcheck) has zero gradients.
  const std::vector<Tensor> analytic = loss.requires_grad()
                                           ? autograd::grad({loss}, checked, {}, std::nullopt, false, true)
                                           : std::vector<Tensor>(checked.size());
  for (size_t i = 0; i < checked.size(); ++i) {
    double* x = checked[i].data_ptr<double>();
    const std::vector<double> got =
        analytic[i].defined() ? values(analytic[i]) : std::vector<double>(size_t(checked[i].numel()), 0.0);
    int reported = 0;
    for (int64_t j = 0; j < checked[i].numel(); ++j) {
      const double saved = x[j];
      x[j] = saved + eps;
      const double plus = weighted(fn, inputs, weights).item<double>();
      x[j] = saved - eps;
      const double minus = weighted(fn, inputs, weights).item<double>();
      x[j] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      if (std::fabs(got[size_t(j)] - numeric) > atol + rtol * std::fabs(numeric) && reported++ < 5)
        ADD_FAILURE() << "input " << i << " (shape " << shape_str(checked[i].sizes()) << ") element " << j
                      << ": autograd " << got[size_t(j)] << ", finite difference " << numeric;
    }
  }
}

void gradgradcheck(const DiffFn& fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  std::vector<Tensor> diff;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) diff.push_back(t);
  auto first_derivatives = [&](const std::vector<Tensor>& in) {
    Tensor weights;
    const Tensor loss = weighted(fn, in, weights);
    const std::vector<Tensor> grads = autograd::grad({loss}, diff, {}, std::nullopt, true, true);
    Tensor total = zeros({}, kFloat64);
    for (size_t i = 0; i < grads.size(); ++i)
      if (grads[i].defined()) total = total + (grads[i] * random(grads[i].sizes(), kFloat64, 77 + i, 0.5, 1.5)).sum();
    return total;
  };
  gradcheck(first_derivatives, inputs, eps, atol, rtol);
}

double rtol_for(DType t) {
  switch (t) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat32: return 1e-5;
    default: return 1e-12;
  }
}

}  // namespace nnvm::testing
