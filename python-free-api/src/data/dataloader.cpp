#include "nnvm/data/dataloader.h"

#include <numeric>

#include "nnvm/core/functions.h"
#include "shuffle.h"

namespace nnvm::data {

DataLoader::DataLoader(Tensor data, Tensor targets, DataLoaderOptions options)
    : data_(std::move(data)), targets_(std::move(targets)), options_(options) {
  NNVM_CHECK(data_.defined() && targets_.defined(), "DataLoader", "data and targets must be defined tensors");
  NNVM_CHECK(options_.batch_size_ >= 1, "DataLoader", "batch_size ", options_.batch_size_, ", expected >= 1");
  NNVM_CHECK(data_.dim() >= 1 && targets_.dim() >= 1, "DataLoader", "data ", shape_str(data_.sizes()),
             " and targets ", shape_str(targets_.sizes()), ": expected at least 1 dim each");
  NNVM_CHECK(data_.size(0) == targets_.size(0), "DataLoader", "data ", shape_str(data_.sizes()), " and targets ",
             shape_str(targets_.sizes()), ": expected the same size in dim 0");
  NNVM_CHECK(options_.workers_ == 0, "DataLoader", "workers ", options_.workers_,
             ": the in-memory DataLoader slices its tensors on the loop's thread, expected 0 "
             "(make_data_loader runs worker threads)");
  seed_ = options_.seed_ ? *options_.seed_ : draw_seed();
}

int64_t DataLoader::num_batches() const {
  const int64_t n = dataset_size(), b = options_.batch_size_;
  return options_.drop_last_ ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::permutation(int64_t epoch) const {
  if (!options_.shuffle_) {
    std::vector<int64_t> order(static_cast<size_t>(dataset_size()));
    std::iota(order.begin(), order.end(), 0);
    return order;
  }
  return random_permutation(dataset_size(), seed_, uint64_t(epoch));
}

DataLoader::Iterator DataLoader::begin() {
  const int64_t epoch = epoch_++;
  std::shared_ptr<const std::vector<int64_t>> order;
  if (options_.shuffle_) order = std::make_shared<const std::vector<int64_t>>(permutation(epoch));
  return Iterator(this, std::move(order), 0);
}

Example<> DataLoader::batch(const std::shared_ptr<const std::vector<int64_t>>& order, int64_t index) const {
  NNVM_CHECK(index >= 0 && index < num_batches(), "DataLoader", "batch ", index, " out of range, expected 0..",
             num_batches() - 1);
  const int64_t start = index * options_.batch_size_;
  const int64_t len = std::min(options_.batch_size_, dataset_size() - start);
  if (!order) return {data_.narrow(0, start, len).clone(), targets_.narrow(0, start, len).clone()};
  const Tensor rows = tensor(std::vector<int64_t>(order->begin() + start, order->begin() + start + len));
  return {data_.index_select(0, rows), targets_.index_select(0, rows)};
}

}  // namespace nnvm::data
