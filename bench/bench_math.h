// Math shared by the handwritten baselines of the benchmarks.
#pragma once

namespace nnvm::bench {

// tanh as the JIT's injector computes it (jit/x86/vector_math.cpp): Eigen's
// 13/6 rational on [-9, 9], plain arithmetic GCC vectorises at -O3
// -march=native where std::tanh is a libm call per element.
inline float tanh_vec(float u) {
  const float c = u > 9.0f ? 9.0f : u, x = c < -9.0f ? -9.0f : c, z = x * x;  // NaN passes
  float p = -2.76076847742355e-16f;
  p = p * z + 2.00018790482477e-13f;
  p = p * z + -8.60467152213735e-11f;
  p = p * z + 5.12229709037114e-08f;
  p = p * z + 1.48572235717979e-05f;
  p = p * z + 6.37261928875436e-04f;
  p = p * z + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * z + 1.18534705686654e-04f;
  q = q * z + 2.26843463243900e-03f;
  q = q * z + 4.89352518554385e-03f;
  return x * (p / q);
}

}  // namespace nnvm::bench
