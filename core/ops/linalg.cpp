// Matrix products: the one op that does the arithmetic ("matmul": batched,
// with broadcast batch dims, rank >= 2 on both sides), and the public
// functions built from it with views (1-D promotion, mm, bmm, outer, linear).
// "matmul_sum" (a b + c d, float32 and float64, both products of one shape)
// is no public function: the recognise pass makes it of the sum of two
// products (an RNN cell's x W + h U, a gradient reaching a tensor through two
// products), and its kernel adds the second product into the first's memory.
// Kernel: kernels/cpu/linalg.cpp on the GEMM of kernels/cpu/gemm.h.
#include <algorithm>

#include "nnvm/core/autocast.h"
#include "nnvm/core/autocast_state.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm {

namespace {

// The dtype a product's operand has when the product runs: under autocast
// (core/autocast.h) float32, float16 and bfloat16 operands are all cast to
// the autocast dtype first.
DType running_dtype(DType t) {
  const bool cast = detail::t_autocast_on && (t == kFloat32 || t == kFloat16 || t == kBFloat16);
  return cast ? get_autocast_dtype() : t;
}

void check_operands(const Tensor& a, const Tensor& b, std::string_view op) {
  NNVM_CHECK(running_dtype(a.dtype()) == running_dtype(b.dtype()), op,
             "expected both operands to have the same dtype, got ", a.dtype(), " and ", b.dtype(), " (shapes ",
             shape_str(a.sizes()), " and ", shape_str(b.sizes()), ")");
  NNVM_CHECK(a.dtype() != kBool, op, "bool operands are not supported (shapes ", shape_str(a.sizes()), " and ",
             shape_str(b.sizes()), ")");
}

// a: [*batch_a, m, k], b: [*batch_b, k, n] -> [*broadcast(batch_a, batch_b), m, n]
OutputSpecs infer_matmul(absl::Span<const Tensor> in, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  NNVM_CHECK(a.dim() >= 2 && b.dim() >= 2, "matmul", "expected operands of rank >= 2, got ", shape_str(a.sizes()),
             " and ", shape_str(b.sizes()));
  check_operands(a, b, "matmul");
  NNVM_CHECK(a.size(-1) == b.size(-2), "matmul", "shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()),
             " cannot be multiplied (", a.size(-1), " columns against ", b.size(-2), " rows)");
  const IntArrayRef batch_a = a.sizes().first(a.dim() - 2), batch_b = b.sizes().first(b.dim() - 2);
  for (size_t i = 1; i <= std::min(batch_a.size(), batch_b.size()); ++i) {
    const int64_t da = batch_a[batch_a.size() - i], db = batch_b[batch_b.size() - i];
    NNVM_CHECK(da == db || da == 1 || db == 1, "matmul", "batch dims of ", shape_str(a.sizes()), " and ",
               shape_str(b.sizes()), " do not broadcast (", da, " vs ", db, ")");
  }
  DimVector shape = broadcast_shapes(batch_a, batch_b, "matmul");
  shape.push_back(a.size(-2));
  shape.push_back(b.size(-1));
  return {{std::move(shape), a.dtype()}};
}

// Matrices stored column by column: the transposed view of row-major ones
// (a linear layer's weight.t(), a batch of keys' k.mT()).
bool is_transposed_matrix(const Tensor& t) {
  const int64_t d = t.dim();
  return d >= 2 && t.size(d - 2) > 1 && t.size(d - 1) > 1 && t.stride(d - 2) == 1 && t.stride(d - 1) == t.size(d - 2);
}

const OpDef& matmul_op() {
  static const OpDef& op = find_op("matmul");
  return op;
}

}  // namespace

// d(a b) = da b + a db: ga = g bᵀ, gb = aᵀ g (broadcast batch dims are summed back by the engine).
// An operand stored transposed gets its gradient in its own layout, as the
// transposed view of (ga)ᵀ = b gᵀ or (gb)ᵀ = gᵀ a: through the view's own
// backward (weight.t() of a linear layer) the gradient then reaches the
// weight row-major, as the weight is. Computed as aᵀ g, it would reach it
// transposed, and every later reader (an optimizer step, a gradient
// accumulation) would walk a large matrix down its columns. Where the other
// operand has more batch dims the engine's sum over them would lay the
// gradient out afresh, so the rule needs at least as many; and a 2-D right
// operand against a batched left one (a linear layer over a sequence) gets
// its gradient from one product over all the rows, the batch folded into
// them, instead of a product per batch entry summed after.
std::vector<Tensor> matmul_grad(const GradContext& c) {
  static const OpDef& op = find_op("matmul");
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor(), Tensor()};
  const Tensor &a = c.inputs[0], &b = c.inputs[1];
  Tensor ga, gb;
  if (c.needs_input_grad[0])
    ga = is_transposed_matrix(a) && a.dim() >= b.dim() ? call1(op, {b, g.mT()}).mT() : call1(op, {g, b.mT()});
  if (c.needs_input_grad[1]) {
    Tensor rows = a, grad = g;
    if (b.dim() == 2 && a.dim() > 2) {  // the batch folded into the rows (reshape's -1 is ambiguous with none)
      const int64_t count = numel_of(a.sizes().first(size_t(a.dim() - 1)));
      rows = a.reshape({count, a.size(-1)});
      grad = g.reshape({count, g.size(-1)});
    }
    gb = is_transposed_matrix(b) && b.dim() >= rows.dim() ? call1(op, {grad.mT(), rows}).mT()
                                                          : call1(op, {rows.mT(), grad});
  }
  return {ga, gb};
}

// a b + c d: both products of the same shape and dtype.
OutputSpecs infer_matmul_sum(absl::Span<const Tensor> in, const Attrs& attrs) {
  OutputSpecs ab = infer_matmul(in.subspan(0, 2), attrs);
  const OutputSpecs cd = infer_matmul(in.subspan(2, 2), attrs);
  NNVM_CHECK(ab[0].shape == cd[0].shape && ab[0].dtype == cd[0].dtype, "matmul_sum", "the products ",
             shape_str(in[0].sizes()), " x ", shape_str(in[1].sizes()), " and ", shape_str(in[2].sizes()), " x ",
             shape_str(in[3].sizes()), " have different shapes or dtypes (", shape_str(ab[0].shape), " and ",
             shape_str(cd[0].shape), ")");
  NNVM_CHECK(ab[0].dtype == kFloat32 || ab[0].dtype == kFloat64, "matmul_sum", "float32 and float64 only, got ",
             ab[0].dtype);
  return ab;
}

NNVM_REGISTER(linalg_ops) {
  register_op("matmul").inputs(2).infer_with(infer_matmul).grad_with(matmul_grad);
  register_op("matmul_sum").inputs(4).infer_with(infer_matmul_sum);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  NNVM_CHECK(a.defined() && b.defined(), "matmul", "an operand is an undefined tensor");
  NNVM_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul", "both operands need at least one dimension, got ",
             shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  // off the arrays, not through checked size(d) calls: a small product (an RNN step's) feels them
  const IntArrayRef as = a.sizes(), bs = b.sizes();
  const int64_t k_a = as.back(), k_b = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  NNVM_CHECK(k_a == k_b, "matmul", "shapes ", shape_str(as), " and ", shape_str(bs), " cannot be multiplied (", k_a,
             " columns against ", k_b, " rows)");
  if (a.dim() > 1 && b.dim() > 1) return call1(matmul_op(), {a, b});  // borrowed: no copies
  // A 1-D operand is a row (left) or column (right) vector whose unit dim is dropped afterwards.
  Tensor r = call1(matmul_op(), {a.dim() == 1 ? a.unsqueeze(0) : a, b.dim() == 1 ? b.unsqueeze(1) : b});
  if (a.dim() == 1) r = r.squeeze(-2);
  if (b.dim() == 1) r = r.squeeze(-1);
  return r;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  NNVM_CHECK(a.defined() && b.defined(), "mm", "an operand is an undefined tensor");
  NNVM_CHECK(a.dim() == 2 && b.dim() == 2, "mm", "expected 2-D matrices, got ", shape_str(a.sizes()), " and ",
             shape_str(b.sizes()));
  check_operands(a, b, "mm");
  NNVM_CHECK(a.size(1) == b.size(0), "mm", "shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()),
             " cannot be multiplied (", a.size(1), " columns against ", b.size(0), " rows)");
  return call1(matmul_op(), {a, b});
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  NNVM_CHECK(a.defined() && b.defined(), "bmm", "an operand is an undefined tensor");
  NNVM_CHECK(a.dim() == 3 && b.dim() == 3, "bmm", "expected 3-D batches of matrices, got ", shape_str(a.sizes()),
             " and ", shape_str(b.sizes()));
  check_operands(a, b, "bmm");
  NNVM_CHECK(a.size(0) == b.size(0), "bmm", "batch sizes differ: ", shape_str(a.sizes()), " and ",
             shape_str(b.sizes()));
  NNVM_CHECK(a.size(2) == b.size(1), "bmm", "shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()),
             " cannot be multiplied (", a.size(2), " columns against ", b.size(1), " rows)");
  return call1(matmul_op(), {a, b});
}

Tensor outer(const Tensor& a, const Tensor& b) {
  NNVM_CHECK(a.defined() && b.defined(), "outer", "an operand is an undefined tensor");
  NNVM_CHECK(a.dim() == 1 && b.dim() == 1, "outer", "expected 1-D vectors, got ", shape_str(a.sizes()), " and ",
             shape_str(b.sizes()));
  check_operands(a, b, "outer");
  return call1(matmul_op(), {a.unsqueeze(1), b.unsqueeze(0)});
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  NNVM_CHECK(x.defined() && weight.defined(), "linear", "input and weight must be defined tensors");
  NNVM_CHECK(weight.dim() == 2 && x.dim() >= 1, "linear", "expected an input of rank >= 1 and a 2-D weight, got ",
             shape_str(x.sizes()), " and ", shape_str(weight.sizes()));
  NNVM_CHECK(x.size(-1) == weight.size(1), "linear", "input ", shape_str(x.sizes()), " has ", x.size(-1),
             " features but weight ", shape_str(weight.sizes()), " expects ", weight.size(1));
  check_operands(x, weight, "linear");
  const Tensor y = matmul(x, weight.t());
  if (!bias.defined()) return y;
  NNVM_CHECK(bias.dim() == 0 || (bias.dim() == 1 && (bias.size(0) == weight.size(0) || bias.size(0) == 1)),
             "linear", "bias of shape ", shape_str(bias.sizes()), " does not match weight ",
             shape_str(weight.sizes()), " (expected [", weight.size(0), "])");
  return y + bias;
}

Tensor Tensor::matmul(const Tensor& other) const { return nnvm::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return nnvm::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return nnvm::bmm(*this, other); }
Tensor Tensor::outer(const Tensor& other) const { return nnvm::outer(*this, other); }

}  // namespace nnvm
