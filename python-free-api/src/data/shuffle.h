// Seeded permutations, shared by the in-memory DataLoader (one seed, a
// permutation per epoch) and RandomSampler (a seed per epoch).
#pragma once

#include <cstdint>
#include <vector>

namespace nnvm::data {

// 64 random bits from the default generator: nnvm::manual_seed fixes them.
uint64_t draw_seed();

// 0..n-1 shuffled by Fisher-Yates with the random words of step i drawn from
// Philox counter (stream, i): a pure function of (seed, stream).
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, uint64_t stream);

}  // namespace nnvm::data
