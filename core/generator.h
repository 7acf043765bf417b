// Seeded random numbers that do not depend on the thread count.
//
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11) is counter based: the 4 random words for counter c are a pure function
// of (seed, c). An op that needs n numbers reserves a block of counters from
// the generator and element i uses counter (base + i / 4), word i % 4, so any
// split of the elements over threads draws the same numbers.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace nnvm {

std::array<uint32_t, 4> philox4x32(uint64_t seed, uint64_t counter);

// Uniform float in [0, 1) from 24 random bits; double from 53.
inline float uniform_float(uint32_t bits) { return float(bits >> 8) * (1.0f / 16777216.0f); }
inline double uniform_double(uint32_t hi, uint32_t lo) {
  return double(((uint64_t(hi) << 32) | lo) >> 11) * (1.0 / 9007199254740992.0);
}

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : seed_(seed) {}

  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  // Reserves `n` counters and returns (seed, first counter).
  std::pair<uint64_t, uint64_t> reserve(uint64_t n);

 private:
  mutable std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
// Seeds the default generator (libtorch's torch::manual_seed).
void manual_seed(uint64_t seed);

}  // namespace nnvm
