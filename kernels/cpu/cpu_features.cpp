#include "nnvm/kernels/cpu/cpu_features.h"

namespace nnvm::cpu {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__)
    __builtin_cpu_init();
    f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512dq = f.avx512f && __builtin_cpu_supports("avx512dq");
#endif
    return f;
  }();
  return features;
}

}  // namespace nnvm::cpu
