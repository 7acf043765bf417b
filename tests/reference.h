// Test support: random inputs in several layouts, and comparison against
// plain reference values computed by the tests with naive loops over doubles.
#pragma once

#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"

namespace nnvm::testing {

// Same values, different memory layouts: the fused and reference paths must
// agree on all of them.
enum class Layout {
  Contiguous,
  Transposed,  // last two dims stored transposed (rank >= 2; otherwise Strided)
  Strided,     // every second element of a wider buffer along the last dim, one element in
};
inline constexpr Layout kLayouts[] = {Layout::Contiguous, Layout::Transposed, Layout::Strided};
const char* layout_name(Layout l);

// Uniform values in [lo, hi) (rounded for integral dtypes, 0/1 for bool), from
// a fixed seed so failures reproduce.
Tensor random(IntArrayRef shape, DType dtype, uint64_t seed, double lo = -2.0, double hi = 2.0);
Tensor with_layout(const Tensor& t, Layout layout);

// Row-major values as doubles.
std::vector<double> values(const Tensor& t);

// Calls fn(index) for every multi-index of `shape` in row-major order.
void for_each_index(IntArrayRef shape, const std::function<void(const DimVector&)>& fn);
// Linear row-major position in `shape` of `index` (given for a broadcast
// target shape: missing leading dims and size-1 dims are ignored).
int64_t broadcast_offset(const DimVector& index, IntArrayRef shape);

// Element-wise |a - e| <= atol + rtol * |e|, NaNs equal, infinities equal;
// reports the first few mismatches with their index.
void expect_values(const Tensor& actual, const std::vector<double>& expected, double rtol = 1e-5,
                   double atol = 1e-6);
void expect_tensors_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-6);

// Asserts that `fn` throws nnvm::Error whose message contains every piece.
void expect_error(const std::function<void()>& fn, std::initializer_list<std::string_view> pieces);

// Runs `program` on fresh inputs from `make_inputs` once eagerly and three
// times traced (cold, turning hot, hot); every traced run must return what
// the eager one returned.
void expect_traced_equals_eager(const std::function<std::vector<Tensor>()>& make_inputs,
                                const std::function<std::vector<Tensor>(std::vector<Tensor>&)>& program);

// Checks autograd's gradients of `fn` at `inputs` against central finite
// differences. Inputs are contiguous float64 tensors; those with
// requires_grad() are checked (fn may take views of them to test
// non-contiguous layouts). The output is weighted by fixed random values, so
// every output element's gradient matters.
using DiffFn = std::function<Tensor(const std::vector<Tensor>&)>;
void gradcheck(const DiffFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
               double rtol = 1e-4);
// Second derivatives: gradcheck of the first derivatives, taken with create_graph.
void gradgradcheck(const DiffFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-4,
                   double rtol = 1e-3);
// A float64 leaf that requires grad, with values in [lo, hi).
Tensor leaf(IntArrayRef shape, uint64_t seed, double lo = -2.0, double hi = 2.0);

// Tolerances suited to a dtype's precision.
double rtol_for(DType t);

}  // namespace nnvm::testing
