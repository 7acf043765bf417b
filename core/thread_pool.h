// The process-wide thread pool (docs/DESIGN.md §3.11). Kernels split their outer
// iteration space with parallel_for. The split depends only on the range, the
// grain and the thread count, so a kernel that reduces each chunk in a fixed
// order gives bit-identical results for the same thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace nnvm {

int get_num_threads();
// Resizes the pool; takes effect for the next parallel_for.
void set_num_threads(int n);

// Calls fn(begin, end) on disjoint chunks covering [begin, end). Runs inline
// when the range is smaller than `grain`, when there is one thread, or when
// called from inside another parallel_for. Exceptions from fn are rethrown.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// The threads a parallel_for called here spreads over: get_num_threads(),
// or 1 inside another parallel_for (which runs nested ones inline).
int parallel_threads();

// How parallel_for splits [0, n): the number of chunks it will use.
int64_t parallel_chunks(int64_t n, int64_t grain);

}  // namespace nnvm
