#include "nnvm/core/ops/pointwise.h"

namespace nnvm {

DType result_dtype(DType promoted, ResultType rule) {
  switch (rule) {
    case ResultType::Same: return promoted;
    case ResultType::Floating: return is_floating(promoted) ? promoted : kFloat32;
    case ResultType::Bool: return kBool;
  }
  return promoted;
}

DType pointwise_common_dtype(absl::Span<const Tensor> inputs, const Attrs& attrs, int num_scalars,
                             ResultType rule) {
  DType t = inputs.empty() ? attrs.s(0).default_dtype() : inputs[0].dtype();
  for (size_t i = 1; i < inputs.size(); ++i) t = promote_types(t, inputs[i].dtype());
  for (int k = 0; k < num_scalars; ++k) t = promote_with_scalar(t, attrs.s(k));
  return rule == ResultType::Floating && !is_floating(t) ? kFloat32 : t;
}

OpDef& declare_pointwise(std::string_view name, int num_tensor_inputs, int num_scalars, ResultType rule) {
  const std::string op_name(name);
  return register_op(name).inputs(num_tensor_inputs).is_elementwise().infer_with(
      [op_name, num_scalars, rule](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
        DimVector shape = dims(in[0].sizes());
        for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].sizes(), op_name);
        const DType common = pointwise_common_dtype(in, a, num_scalars, rule);
        return {{std::move(shape), rule == ResultType::Bool ? kBool : common}};
      });
}

}  // namespace nnvm
