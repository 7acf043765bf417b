// Mini-batches over an in-memory data set: a data tensor and a target tensor
// whose first dims match. Each pass (each begin()) is one epoch; with shuffle,
// epoch k visits the samples in a permutation that depends only on (seed, k),
// so two loaders with the same seed yield the same batches.
//
//   data::DataLoader loader(train, data::DataLoaderOptions(64).shuffle(true).seed(0));
//   for (const auto& [x, y] : loader) { ... }
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nnvm/data/dataloader_options.h"
#include "nnvm/data/example.h"
#include "nnvm/data/fashion_mnist.h"

namespace nnvm::data {

class DataLoader {
 public:
  // Throws nnvm::Error when batch_size < 1, workers are asked for (make_data_loader
  // runs them), a tensor is 0-d, or the first dims differ.
  DataLoader(Tensor data, Tensor targets, DataLoaderOptions options = {});
  DataLoader(const FashionMNIST& dataset, DataLoaderOptions options = {})
      : DataLoader(dataset.images(), dataset.targets(), options) {}

  class Iterator {
   public:
    using value_type = Example<>;
    using difference_type = std::ptrdiff_t;
    Example<> operator*() const { return loader_->batch(order_, index_); }
    Iterator& operator++() { ++index_; return *this; }
    bool operator==(const Iterator& o) const { return index_ == o.index_; }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* loader, std::shared_ptr<const std::vector<int64_t>> order, int64_t index)
        : loader_(loader), order_(std::move(order)), index_(index) {}
    const DataLoader* loader_;
    std::shared_ptr<const std::vector<int64_t>> order_;  // null: samples in order
    int64_t index_;
  };

  // Starts the next epoch.
  Iterator begin();
  Iterator end() const { return Iterator(this, nullptr, num_batches()); }

  int64_t num_batches() const;   // per epoch
  int64_t dataset_size() const { return data_.size(0); }
  int64_t epoch() const { return epoch_; }  // epochs started so far
  const DataLoaderOptions& options() const { return options_; }

  // The sample order of epoch `k` for this loader's seed (identity without shuffle).
  std::vector<int64_t> permutation(int64_t epoch) const;

 private:
  Example<> batch(const std::shared_ptr<const std::vector<int64_t>>& order, int64_t index) const;

  Tensor data_, targets_;
  DataLoaderOptions options_;
  uint64_t seed_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace nnvm::data
