// The one table of environment knobs (STYLE habit 8). Each is read once, at
// first use; each can also be set from code through the API named beside it.
//
//   NNVM_THREADS=N            worker threads of the process-wide pool      set_num_threads()
//                             (default: hardware concurrency)
//   NNVM_CPU_CACHE_LIMIT=B    bytes the CPU caching allocator may reserve
//                             before it releases cached blocks (default 8 GiB)
//   NNVM_ALLOC_GUARD=1        every CPU block ends against a PROT_NONE     set_alloc_guard()
//                             page, unmapped when freed: an overrun faults
//                             (tests of JIT code; core/allocator.h)
//   NNVM_HOT=N                sightings of a trace signature before it is   TraceCache(capacity, hot)
//                             compiled (default 2)
//   NNVM_MODE=eager|traced    how ops run (default traced): recorded into    set_mode()
//                             traces, or each at once by its kernel
//   NNVM_TRACE_CAP=N          nodes a trace may hold before it flushes     set_trace_cap()
//                             (default 16384)
//   NNVM_DUMP=DIR             write every compiled plan there (DOT, text), jit::set_kernel_dump_dir()
//                             each JIT kernel's machine code and LoopIR,
//                             and name kernels in /tmp/perf-<pid>.map    jit::set_perf_map()
//   NNVM_LOG=a,b              comma-separated topics that print one line    TraceCache::set_log()
//                             per event to stderr: trace, cache, jit,     trace::set_pipeline_log()
//                             pipeline (default none)
//   NNVM_ISA=avx512|avx2|portable  the JIT's instruction set (default: the  jit::set_isa()
//                             best the CPU has; portable: no JIT)
//   NNVM_CACHE_DIR=DIR        where choices measured at run time persist    (none)
//                             across processes: the JIT GEMM's tile per
//                             shape class (jit/gemm_jit.h); unset: memory only
//   NNVM_PROFILE=FILE.json    record the whole program with a profiler     profiler::Session
//                             session; at exit write its Chrome trace
//                             there and its summary table to stderr
//   NNVM_PLUGINS=a.so:b.so    plugins loaded when the library starts, in    load_plugin()
//                             order (docs/PLUGINS.md; default none)
//   NNVM_CHECK=1              each fused group also runs unfused and the    trace::set_check()
//                             results are compared (trace/check.h)
//   NNVM_REPRO=DIR            repro bundles of wrong or crashing fused      trace::set_repro_dir()
//                             groups and failed compiles (trace/repro.h)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace nnvm {

struct Knobs {
  int threads;
  int64_t cpu_cache_limit;
  bool alloc_guard;
  int hot;
  bool traced;
  int64_t trace_cap;
  std::string dump_dir;
  std::string log;
  std::string isa;
  std::string cache_dir;
  std::string profile;
  std::string plugins;
  bool check;
  std::string repro_dir;
};

const Knobs& knobs();

// Whether NNVM_LOG names `topic`.
bool log_enabled(std::string_view topic);

}  // namespace nnvm
