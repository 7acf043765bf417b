#include "nnvm/kernels/cpu/cpu_features.h"

#include <unistd.h>

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace nnvm::cpu {

namespace {

int64_t cache_bytes(int name, int64_t otherwise) {
  const long bytes = sysconf(name);
  return bytes > 0 ? int64_t(bytes) : otherwise;
}

std::string brand() {
  std::string s;
#if defined(__x86_64__)
  unsigned regs[12] = {};
  if (unsigned(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000004u) return s;
  for (unsigned leaf = 0; leaf < 3; ++leaf)
    __get_cpuid(0x80000002u + leaf, &regs[4 * leaf], &regs[4 * leaf + 1], &regs[4 * leaf + 2], &regs[4 * leaf + 3]);
  char text[sizeof(regs) + 1] = {};
  std::memcpy(text, regs, sizeof(regs));
  s = text;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
#endif
  return s;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__)
    __builtin_cpu_init();
    f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512dq = f.avx512f && __builtin_cpu_supports("avx512dq");
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (f.avx512f && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      f.avx512_vnni = (c >> 11) & 1u;
      f.avx512_fp16 = (d >> 23) & 1u;
      f.amx_bf16 = (d >> 22) & 1u;
      f.amx_int8 = (d >> 25) & 1u;
      if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = (a >> 5) & 1u;
    }
#endif
    f.l1d_bytes = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 48 << 10);
    f.l2_bytes = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 1 << 20);
    f.l3_bytes = cache_bytes(_SC_LEVEL3_CACHE_SIZE, 16 << 20);
    f.model = brand();
    return f;
  }();
  return features;
}

}  // namespace nnvm::cpu
