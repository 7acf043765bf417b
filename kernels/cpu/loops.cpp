#include "nnvm/kernels/cpu/loops.h"

namespace nnvm::cpu {

StridedLoop::StridedLoop(const Tensor& out, absl::Span<const Tensor* const> inputs) {
  NNVM_DCHECK(inputs.size() + 1 <= kMaxOperands);
  num_operands = inputs.size() + 1;
  const IntArrayRef out_shape = out.sizes();
  const size_t nd = out_shape.size();

  // Fast path, the common case: every operand contiguous with the output's
  // shape. One flat dim, no broadcasting, nothing to merge.
  bool flat = out.is_contiguous();
  for (size_t k = 0; flat && k < inputs.size(); ++k)
    flat = inputs[k]->sizes() == out_shape && inputs[k]->is_contiguous();
  if (flat) {
    shape.assign(1, out.numel());
    base[0] = data_bytes(out);
    dtype[0] = out.dtype();
    strides.push_back(int64_t(itemsize(dtype[0])));
    for (size_t k = 0; k < inputs.size(); ++k) {
      base[k + 1] = inputs[k]->numel() == 0 ? nullptr : data_bytes(*inputs[k]);
      dtype[k + 1] = inputs[k]->dtype();
      strides.push_back(int64_t(itemsize(dtype[k + 1])));
    }
    return;
  }

  std::array<DimVector, kMaxOperands> elem_strides;
  elem_strides[0] = DimVector(out.strides().begin(), out.strides().end());
  base[0] = data_bytes(out);
  dtype[0] = out.dtype();
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& in = *inputs[k];
    elem_strides[k + 1] = broadcast_strides(in.sizes(), in.strides(), out_shape);
    base[k + 1] = in.numel() == 0 ? nullptr : data_bytes(in);
    dtype[k + 1] = in.dtype();
  }

  // Drop size-1 dims, then merge dim d into d-1 where every operand steps
  // through d-1 exactly as if the two were one dim.
  std::array<DimVector, kMaxOperands> merged;  // per operand, element strides of the merged dims
  DimVector kept;
  for (size_t d = 0; d < nd; ++d)
    if (out_shape[d] != 1) kept.push_back(int64_t(d));
  for (size_t i = 0; i < kept.size(); ++i) {
    const int64_t d = kept[i];
    const bool merge = !shape.empty() && [&] {
      for (size_t k = 0; k < num_operands; ++k)
        if (merged[k].back() != elem_strides[k][d] * out_shape[d]) return false;
      return true;
    }();
    if (merge) {
      shape.back() *= out_shape[d];
      for (size_t k = 0; k < num_operands; ++k) merged[k].back() = elem_strides[k][d];
    } else {
      shape.push_back(out_shape[d]);
      for (size_t k = 0; k < num_operands; ++k) merged[k].push_back(elem_strides[k][d]);
    }
  }
  for (size_t k = 0; k < num_operands; ++k) {
    const int64_t size = int64_t(itemsize(dtype[k]));
    for (int64_t s : merged[k]) strides.push_back(s * size);
  }
}

}  // namespace nnvm::cpu
