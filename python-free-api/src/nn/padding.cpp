// The padding modules (nn/padding.h): F::pad behind a module, with the
// input ranks libtorch's take.
#include "nnvm/nn/padding.h"

#include "nnvm/core/functions.h"

namespace nnvm::nn {

Tensor detail::pad_module_forward(const Tensor& x, IntArrayRef padding, std::string_view mode, double value,
                                  size_t dims, std::string_view name) {
  const int64_t d = int64_t(dims);
  NNVM_CHECK(x.dim() == d + 1 || x.dim() == d + 2, name, "expected a ", d + 1, "-D (unbatched) or ", d + 2,
             "-D (batched) input, got shape ", shape_str(x.sizes()));
  return nnvm::pad(x, padding, mode, value);
}

}  // namespace nnvm::nn
