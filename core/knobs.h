// The one table of environment knobs (STYLE habit 8). Each is read once, at
// first use; each can also be set from code through the API named beside it.
//
//   NNVM_THREADS=N            worker threads of the process-wide pool      set_num_threads()
//                             (default: hardware concurrency)
//   NNVM_CPU_CACHE_LIMIT=B    bytes the CPU caching allocator may reserve
//                             before it releases cached blocks (default 8 GiB)
#pragma once

#include <cstdint>

namespace nnvm {

struct Knobs {
  int threads;
  int64_t cpu_cache_limit;
};

const Knobs& knobs();

}  // namespace nnvm
