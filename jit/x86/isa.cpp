#include "nnvm/jit/x86/isa.h"

#include <atomic>

#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"
#include "nnvm/kernels/cpu/cpu_features.h"

namespace nnvm::jit {

namespace {

Isa best_isa() {
  static const Isa best = [] {
    const cpu::CpuFeatures& cpu = cpu::cpu_features();
    if (cpu.avx512f) return Isa::kAvx512;
    if (cpu.avx2_fma) return Isa::kAvx2;
    return Isa::kPortable;
  }();
  return best;
}

std::atomic<int>& forced() {
  static std::atomic<int> isa = [] {
    const std::string& knob = knobs().isa;
    Isa want = best_isa();
    if (knob == "portable") want = Isa::kPortable;
    else if (knob == "avx2") want = Isa::kAvx2;
    else if (knob == "avx512") want = Isa::kAvx512;
    return int(isa_supported(want) ? want : best_isa());
  }();
  return isa;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kPortable: return "portable";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

bool isa_supported(Isa isa) { return int(isa) <= int(best_isa()); }

Isa active_isa() { return Isa(forced().load(std::memory_order_relaxed)); }

void set_isa(Isa isa) {
  NNVM_CHECK(isa_supported(isa), "set_isa", "this CPU cannot run ", isa_name(isa), " code (best: ",
             isa_name(best_isa()), ")");
  forced().store(int(isa), std::memory_order_relaxed);
}

}  // namespace nnvm::jit
