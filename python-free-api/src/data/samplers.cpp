#include <algorithm>
#include <numeric>

#include "nnvm/core/error.h"
#include "nnvm/data/samplers/random.h"
#include "nnvm/data/samplers/sequential.h"
#include "shuffle.h"

namespace nnvm::data::samplers {
namespace {

void check_size(const char* op, int64_t size) {
  NNVM_CHECK(size >= 1, op, "dataset size ", size, ", expected at least 1 example");
}

// The next up to batch_size positions of an epoch over `size` indices.
std::optional<std::pair<size_t, size_t>> next_range(const char* op, size_t size, size_t& index, size_t batch_size) {
  NNVM_CHECK(batch_size >= 1, op, "batch_size 0, expected >= 1");
  if (index >= size) return std::nullopt;
  const size_t begin = index;
  index = std::min(size, index + batch_size);
  return std::pair(begin, index);
}

}  // namespace

SequentialSampler::SequentialSampler(size_t size) : size_(size) { check_size("SequentialSampler", int64_t(size)); }

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) {
    check_size("SequentialSampler::reset", int64_t(*new_size));
    size_ = *new_size;
  }
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  const auto range = next_range("SequentialSampler::next", size_, index_, batch_size);
  if (!range) return std::nullopt;
  std::vector<size_t> indices(range->second - range->first);
  std::iota(indices.begin(), indices.end(), range->first);
  return indices;
}

RandomSampler::RandomSampler(int64_t size) {
  check_size("RandomSampler", size);
  reset(size_t(size));
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  const int64_t size = new_size ? int64_t(*new_size) : int64_t(indices_.size());
  check_size("RandomSampler::reset", size);
  const std::vector<int64_t> order = random_permutation(size, draw_seed(), 0);
  indices_.assign(order.begin(), order.end());
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  const auto range = next_range("RandomSampler::next", indices_.size(), index_, batch_size);
  if (!range) return std::nullopt;
  return std::vector<size_t>(indices_.begin() + ptrdiff_t(range->first), indices_.begin() + ptrdiff_t(range->second));
}

}  // namespace nnvm::data::samplers
