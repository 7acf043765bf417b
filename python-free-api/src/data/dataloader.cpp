#include "nnvm/data/dataloader.h"

#include <numeric>

#include "nnvm/core/functions.h"

namespace nnvm::data {

DataLoader::DataLoader(Tensor data, Tensor targets, DataLoaderOptions options)
    : data_(std::move(data)), targets_(std::move(targets)), options_(options) {
  NNVM_CHECK(data_.defined() && targets_.defined(), "DataLoader", "data and targets must be defined tensors");
  NNVM_CHECK(options_.batch_size_ >= 1, "DataLoader", "batch_size ", options_.batch_size_, ", expected >= 1");
  NNVM_CHECK(data_.dim() >= 1 && targets_.dim() >= 1, "DataLoader", "data ", shape_str(data_.sizes()),
             " and targets ", shape_str(targets_.sizes()), ": expected at least 1 dim each");
  NNVM_CHECK(data_.size(0) == targets_.size(0), "DataLoader", "data ", shape_str(data_.sizes()), " and targets ",
             shape_str(targets_.sizes()), ": expected the same size in dim 0");
  if (options_.seed_) {
    seed_ = *options_.seed_;
  } else {
    const auto [gen_seed, counter] = default_generator().reserve(1);
    const auto words = philox4x32(gen_seed, counter);
    seed_ = uint64_t(words[0]) << 32 | words[1];
  }
}

int64_t DataLoader::num_batches() const {
  const int64_t n = dataset_size(), b = options_.batch_size_;
  return options_.drop_last_ ? n / b : (n + b - 1) / b;
}

// Fisher-Yates, with the random words of step i drawn from Philox counter
// (epoch, i): a pure function of (seed, epoch), whatever ran before.
std::vector<int64_t> DataLoader::permutation(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_size()));
  std::iota(order.begin(), order.end(), 0);
  if (!options_.shuffle_) return order;
  for (int64_t i = int64_t(order.size()) - 1; i > 0; --i) {
    const auto words = philox4x32(seed_, (uint64_t(epoch) << 40) + uint64_t(i / 2));
    const int w = int(i % 2) * 2;
    const uint64_t bits = uint64_t(words[w]) << 32 | words[w + 1];
    // Multiply-shift maps 64 random bits onto [0, i] with bias below 2^-20 for i < 2^44.
    const auto j = int64_t((static_cast<unsigned __int128>(bits) * uint64_t(i + 1)) >> 64);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  const int64_t epoch = epoch_++;
  std::shared_ptr<const std::vector<int64_t>> order;
  if (options_.shuffle_) order = std::make_shared<const std::vector<int64_t>>(permutation(epoch));
  return Iterator(this, std::move(order), 0);
}

Example DataLoader::batch(const std::shared_ptr<const std::vector<int64_t>>& order, int64_t index) const {
  NNVM_CHECK(index >= 0 && index < num_batches(), "DataLoader", "batch ", index, " out of range, expected 0..",
             num_batches() - 1);
  const int64_t start = index * options_.batch_size_;
  const int64_t len = std::min(options_.batch_size_, dataset_size() - start);
  if (!order) return {data_.narrow(0, start, len).clone(), targets_.narrow(0, start, len).clone()};
  const Tensor rows = tensor(std::vector<int64_t>(order->begin() + start, order->begin() + start + len));
  return {data_.index_select(0, rows), targets_.index_select(0, rows)};
}

}  // namespace nnvm::data
