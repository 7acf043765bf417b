// What a compiled kernel is, for people and profilers (docs/DESIGN.md §3.13):
//   - NNVM_DUMP=DIR writes each kernel beside the plans (trace/dump.h):
//       kernel-<hash>-<isa>.bin       its machine code and constant table, as
//                                     mapped (objdump -D -b binary -mi386:x86-64)
//       kernel-<hash>-<isa>.loopir.txt  the key and the LoopIR it was compiled from
//     <hash> is a 64-bit FNV-1a of the kernel's cache key, so two runs of a
//     program name a kernel alike;
//   - a Linux perf map, /tmp/perf-<pid>.map, gets one "START SIZE name" line
//     (hex, no 0x) per kernel, so `perf report` names JIT code instead of
//     showing raw addresses. Written when NNVM_DUMP is set, or from code.
// Every kernel kind calls publish_kernel once its code is final.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nnvm::jit {

enum class Isa;

// The directory kernels are dumped to; empty: none. Default: NNVM_DUMP.
void set_kernel_dump_dir(std::string dir);
std::string kernel_dump_dir();
// Whether kernels go into the perf map. Default: on when NNVM_DUMP is set.
void set_perf_map(bool on);
bool perf_map_enabled();
std::string perf_map_path();

uint64_t kernel_hash(std::string_view key);
// Machine code as text: 32 bytes a line in hex, each line led by its offset.
std::string hex_dump(const void* code, size_t bytes);
// A JIT path's code as text (a repro bundle's, trace/repro.h): `head` (what
// the path compiles from), then each compiled variant's "variant <name>:
// <describe()>" and its machine_code(). `variants`: (name, variant) pairs.
template <class Variants> std::string jit_code(std::string head, const Variants& variants) {
  for (const auto& [name, v] : variants) head += "variant " + name + ": " + v->describe() + "\n" + v->machine_code();
  return head;
}
// "kernel-<hash>-<isa>": the dump files' stem.
std::string kernel_file_stem(std::string_view key, Isa isa);

// Dumps and registers one kernel of `kind` ("pointwise", ...) compiled under
// `key`; `text` is what it was compiled from. Throws nnvm::Error when the dump
// directory cannot be written.
void publish_kernel(std::string_view kind, std::string_view key, Isa isa, const void* code, size_t bytes,
                    std::string_view text);

}  // namespace nnvm::jit
