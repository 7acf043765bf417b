// Indices 0, 1, ..., size - 1 in order (libtorch's samplers::SequentialSampler).
#pragma once

#include "nnvm/data/samplers/base.h"

namespace nnvm::data::samplers {

class SequentialSampler : public Sampler<> {
 public:
  // Throws nnvm::Error for size 0: a loader over no examples is a mistake.
  explicit SequentialSampler(size_t size);

  void reset(std::optional<size_t> new_size = std::nullopt) override;
  // Throws nnvm::Error for batch_size 0.
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  // How many indices were handed out this epoch.
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

}  // namespace nnvm::data::samplers
