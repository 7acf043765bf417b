// CPU kernel of view_scatter, the gradient of slice/select/diagonal (core/ops/views.cpp):
// zeros of the input's shape, with the incoming gradient written through the view.
#include "nnvm/core/op.h"

namespace nnvm::cpu {

NNVM_REGISTER(cpu_view_scatter_kernel) {
  // attrs: input shape, view op name, the view op's attrs
  register_kernel("view_scatter", kCPU, [](absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
    Tensor target = out[0];
    target.zero_();
    const ViewSpec v = find_op(a.str(1)).view(target, a.tail(2));
    auto impl = std::make_shared<TensorImpl>(*target.impl());
    impl->shape = v.shape;
    impl->strides = v.strides;
    impl->offset = v.offset;
    Tensor(std::move(impl)).copy_(in[0].detach());
  });
}

}  // namespace nnvm::cpu
