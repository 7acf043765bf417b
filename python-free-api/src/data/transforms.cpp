// Normalize's statistics and Stack's collation (transforms/tensor.h, stack.h).
#include <vector>

#include "nnvm/core/functions.h"
#include "nnvm/data/transforms/stack.h"
#include "nnvm/data/transforms/tensor.h"

namespace nnvm::data::transforms {

namespace detail {

Tensor channel_stats(ArrayRef<double> values, const char* what, bool positive) {
  NNVM_CHECK(!values.empty(), "Normalize", what, " has no values, expected one, or one per channel");
  for (size_t c = 0; c < values.size() && positive; ++c)
    NNVM_CHECK(values[c] > 0, "Normalize", what, " ", values[c], " for channel ", c, ", expected > 0");
  if (values.size() == 1) return scalar_tensor(values[0], kFloat32);
  const auto channels = int64_t(values.size());
  return tensor(std::vector<float>(values.begin(), values.end())).view({channels, 1, 1});
}

}  // namespace detail

namespace {

// One tensor of [B, ...] from the `part` (data or target) of every example.
template <class E, class Part>
Tensor stack_part(const std::vector<E>& examples, Part part, const char* name) {
  NNVM_CHECK(!examples.empty(), "Stack", "an empty batch, expected at least one example");
  std::vector<Tensor> tensors;
  tensors.reserve(examples.size());
  for (const E& e : examples) tensors.push_back(e.*part);
  const IntArrayRef first = tensors[0].sizes();
  for (size_t i = 1; i < tensors.size(); ++i)
    NNVM_CHECK(tensors[i].sizes() == first, "Stack", "example ", i, "'s ", name, " has shape ",
               shape_str(tensors[i].sizes()), " but example 0's has ", shape_str(first),
               ", expected every example of a batch to have the same shape");
  return stack(tensors);
}

}  // namespace

Example<> Stack<Example<>>::apply_batch(std::vector<Example<>> examples) {
  return {stack_part(examples, &Example<>::data, "data"), stack_part(examples, &Example<>::target, "target")};
}

TensorExample Stack<TensorExample>::apply_batch(std::vector<TensorExample> examples) {
  return stack_part(examples, &TensorExample::data, "data");
}

}  // namespace nnvm::data::transforms
