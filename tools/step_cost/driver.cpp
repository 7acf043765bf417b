// The traced RNN step of bench/trace_bench.cpp (BM_RnnDynamic) as a plain
// program, for step_cost.py: `measured` runs the steps callgrind counts, after
// a warm-up that compiles the step's traces (the benchmark's runs of four
// steps, each from h = 0, so two traces alternate as there).
#include <cstdio>
#include <cstdlib>

#include "nnvm/core/thread_pool.h"
#include "nnvm/nnvm.h"

using namespace nnvm;

namespace {

constexpr int64_t kHidden = 64;
Tensor w, u, b, xs;
float sum = 0;

void steps(int64_t n) {
  Tensor h = zeros({1, kHidden});
  for (int64_t t = 0; t < n; ++t) {
    h = (matmul(xs[t % 4], w) + matmul(h, u) + b).tanh();
    sum += h.norm().item<float>();
    if (t % 4 == 3) h = zeros({1, kHidden});
  }
}

}  // namespace

__attribute__((noinline)) void measured(int64_t n) { steps(n); }

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
  steps(40);
  measured(argc > 1 ? std::atoll(argv[1]) : 2000);
  std::printf("sum %f\n", sum);
}
