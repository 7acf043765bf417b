// The traced RNN step of bench/trace_bench.cpp (BM_RnnDynamic) as a plain
// program, for step_footprint.py: before each measured step it stores to
// `marker`, so a memory trace splits into steps. Prints the addresses of W, U
// and the marker.
#include <cstdio>

#include "nnvm/core/thread_pool.h"
#include "nnvm/nnvm.h"

using namespace nnvm;

volatile long marker = 0;

int main() {
  set_num_threads(get_num_threads());  // as the benchmark binary: the worker pool started
  constexpr int64_t kHidden = 64, kWarmUp = 30, kSteps = 60;
  Tensor w, u, b, xs;
  {
    manual_seed(0);
    EagerGuard eager;
    w = randn({kHidden, kHidden}) * 0.125;
    u = randn({kHidden, kHidden}) * 0.125;
    b = randn({1, kHidden}) * 0.1;
    xs = randn({4, 1, kHidden});
  }
  std::printf("W %p %zu\nU %p %zu\nmarker %p\n", w.data_ptr(), w.nbytes(), u.data_ptr(), u.nbytes(),
              static_cast<void*>(const_cast<long*>(&marker)));
  std::fflush(stdout);
  Tensor h = zeros({1, kHidden});
  float sum = 0;
  for (int64_t t = 0; t < kSteps; ++t) {
    if (t >= kWarmUp) marker = t;
    h = (matmul(xs[t % 4], w) + matmul(h, u) + b).tanh();
    sum += h.norm().item<float>();
    if (t % 4 == 3) h = zeros({1, kHidden});  // a new run, as the benchmark's loop starts one
  }
  std::printf("sum %f\n", sum);
}
