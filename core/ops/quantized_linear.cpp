// "quantized_linear_dynamic": y = x Wᵀ + b with W stored as int8 (per output
// channel, symmetric) and x quantized to uint8 on each call from its own
// range, the product on the INT8 GEMM (kernels/cpu/gemm_int8.h), the result
// dequantized in the GEMM's store: PyTorch's quantized::linear_dynamic.
// Inputs: x (float32, [..., k]), W packed (int8, int8_packed_bytes(k, n)),
// W's column sums (int32 [n]), W's scales (float32 [n]), the bias (float32
// [n]). Attributes: n, k. Not differentiable (inference; fine-tune the float
// model). The public function: python-free-api nnvm/quantized.h. Kernel:
// kernels/cpu/quantized_linear.cpp.
#include "nnvm/core/op.h"
#include "nnvm/core/int8_layout.h"

namespace nnvm {

namespace {

OutputSpecs infer_linear_dynamic(absl::Span<const Tensor> in, const Attrs& attrs) {
  constexpr std::string_view op = "quantized_linear_dynamic";
  const int64_t n = attrs.i(0), k = attrs.i(1);
  const Tensor &x = in[0], &packed = in[1], &sums = in[2], &scales = in[3], &bias = in[4];
  NNVM_CHECK(x.dtype() == kFloat32, op, "expected a float32 input, got ", x.dtype(), " ", shape_str(x.sizes()));
  NNVM_CHECK(x.dim() >= 1 && x.size(-1) == k, op, "input ", shape_str(x.sizes()), " against a weight of ", k,
             " input features (expected [..., ", k, "])");
  NNVM_CHECK(k <= kInt8MaxK, op, k, " input features, past the INT8 GEMM's ", kInt8MaxK);
  NNVM_CHECK(packed.dtype() == kInt8 && packed.dim() == 1 && packed.numel() == int8_packed_bytes(k, n), op,
             "expected a packed weight of ", int8_packed_bytes(k, n), " int8 bytes, got ", packed.dtype(), " ",
             shape_str(packed.sizes()));
  NNVM_CHECK(sums.dtype() == kInt32 && sums.dim() == 1 && sums.numel() == n, op,
             "expected the weight's column sums as int32 [", n, "], got ", sums.dtype(), " ", shape_str(sums.sizes()));
  for (const Tensor* t : {&scales, &bias})
    NNVM_CHECK(t->dtype() == kFloat32 && t->dim() == 1 && t->numel() == n, op, "expected float32 [", n,
               "] scales and bias, got ", t->dtype(), " ", shape_str(t->sizes()));
  DimVector shape(x.sizes().begin(), x.sizes().end());
  shape.back() = n;
  return {{std::move(shape), kFloat32}};
}

}  // namespace

NNVM_REGISTER(quantized_linear_ops) {
  register_op("quantized_linear_dynamic").inputs(5).infer_with(infer_linear_dynamic).checks_input_values();
}

}  // namespace nnvm
