#include "reference.h"

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
  wide.back() *= 2;
  Tensor buf = zeros(wide, t.dtype());
  Tensor view = buf.slice(-1, 0, std::nullopt, 2);
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

double rtol_for(DType t) {
  switch (t) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat32: return 1e-5;
    default: return 1e-12;
  }
}

}  // namespace nnvm::testing
