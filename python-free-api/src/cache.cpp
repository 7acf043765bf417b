#include "nnvm/cache.h"

#include "nnvm/trace/kernel_cache.h"
#include "nnvm/trace/recorder.h"

namespace nnvm {

CacheStats cache_stats() { return {trace::global_trace_cache().stats(), trace::global_kernel_cache().stats()}; }

}  // namespace nnvm
