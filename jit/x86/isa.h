// Which vector instruction set the JIT emits (docs/DESIGN.md §3.8). Picked once from
// CPUID: AVX-512F (zmm, opmask tails) when the CPU has it, else AVX2 with FMA
// (ymm, masked loads and stores), else none, and the portable tile programs
// run. NNVM_ISA=avx512|avx2|portable (core/knobs.h) or set_isa() forces one;
// a forced ISA the CPU lacks falls back to the best it has.
#pragma once

#include <string_view>

namespace nnvm::jit {

enum class Isa { kPortable, kAvx2, kAvx512 };
const char* isa_name(Isa isa);

// Whether this CPU runs code of `isa` (kPortable: always).
bool isa_supported(Isa isa);
// The ISA kernels are compiled for now.
Isa active_isa();
// Forces `isa` for the kernels compiled and run from now on (tests, benchmarks);
// throws nnvm::Error when the CPU cannot run it.
void set_isa(Isa isa);

}  // namespace nnvm::jit
