// Samplers decide which examples make each batch (libtorch's
// torch::data::samplers): a loader calls reset() at the start of every epoch,
// then next(batch_size) until it returns nothing. The last batch may be short.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace nnvm::data::samplers {

template <class BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;

  virtual ~Sampler() = default;
  // Starts over, over `new_size` examples when given.
  virtual void reset(std::optional<size_t> new_size) = 0;
  // The next up to batch_size indices; empty once every index was handed out.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
};

}  // namespace nnvm::data::samplers
