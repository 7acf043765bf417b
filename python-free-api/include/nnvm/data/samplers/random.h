// A fresh random permutation of 0..size-1 per epoch (libtorch's
// samplers::RandomSampler). Each permutation is seeded from the default
// generator, at construction and at every reset(), so nnvm::manual_seed(s)
// before building the loader fixes every epoch's order.
#pragma once

#include <cstdint>

#include "nnvm/data/samplers/base.h"

namespace nnvm::data::samplers {

class RandomSampler : public Sampler<> {
 public:
  // Throws nnvm::Error for a size < 1.
  explicit RandomSampler(int64_t size);

  void reset(std::optional<size_t> new_size = std::nullopt) override;
  // Throws nnvm::Error for batch_size 0.
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

}  // namespace nnvm::data::samplers
