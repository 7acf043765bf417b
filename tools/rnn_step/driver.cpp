// The traced RNN step of bench/trace_bench.cpp (BM_RnnDynamic) as a plain
// program, for the scripts beside it. A warm-up compiles the step's traces
// (the benchmark's runs of four steps, each from h = 0, so two traces
// alternate as there); then `measured` runs STEPS steps (argument 1, default
// 2000), storing to `marker` before each, so a count of one function
// (step_cost.py) or a memory trace split at the marker (step_footprint.py)
// sees the steps alone. Prints the addresses of W, U and the marker.
#include <cstdio>
#include <cstdlib>

#include "nnvm/core/thread_pool.h"
#include "nnvm/nnvm.h"

using namespace nnvm;

volatile long marker = 0;

namespace {

constexpr int64_t kHidden = 64;
Tensor w, u, b, xs;
float sum = 0;

void steps(int64_t n, bool mark) {
  Tensor h = zeros({1, kHidden});
  for (int64_t t = 0; t < n; ++t) {
    if (mark) marker = t;
    h = (matmul(xs[t % 4], w) + matmul(h, u) + b).tanh();
    sum += h.norm().item<float>();
    if (t % 4 == 3) h = zeros({1, kHidden});  // a new run, as the benchmark's loop starts one
  }
}

}  // namespace

__attribute__((noinline)) void measured(int64_t n) { steps(n, true); }

int main(int argc, char** argv) {
  set_num_threads(get_num_threads());  // as the benchmark binary: the worker pool started
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
  steps(40, false);
  measured(argc > 1 ? std::atoll(argv[1]) : 2000);
  std::printf("sum %f\n", sum);
}
