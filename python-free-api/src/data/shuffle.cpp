#include "shuffle.h"

#include <numeric>
#include <utility>

#include "nnvm/core/generator.h"

namespace nnvm::data {

uint64_t draw_seed() {
  const auto [gen_seed, counter] = default_generator().reserve(1);
  const auto words = philox4x32(gen_seed, counter);
  return uint64_t(words[0]) << 32 | words[1];
}

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto words = philox4x32(seed, (stream << 40) + uint64_t(i / 2));
    const int w = int(i % 2) * 2;
    const uint64_t bits = uint64_t(words[w]) << 32 | words[w + 1];
    // Multiply-shift maps 64 random bits onto [0, i] with bias below 2^-20 for i < 2^44.
    const auto j = int64_t((static_cast<unsigned __int128>(bits) * uint64_t(i + 1)) >> 64);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

}  // namespace nnvm::data
