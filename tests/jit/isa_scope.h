// Test helpers for running a JIT test under every instruction set this CPU has.
#pragma once

#include <vector>

#include "nnvm/jit/x86/isa.h"

namespace nnvm::jit {

// Forces an ISA for one scope.
class IsaGuard {
 public:
  explicit IsaGuard(Isa isa) : saved_(active_isa()) { set_isa(isa); }
  ~IsaGuard() { set_isa(saved_); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;

 private:
  Isa saved_;
};

// The JIT instruction sets this CPU runs (AVX-512 first), none without either.
inline std::vector<Isa> jit_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2})
    if (isa_supported(isa)) isas.push_back(isa);
  return isas;
}

}  // namespace nnvm::jit
