// The traced RNN step of bench/trace_bench.cpp (BM_RnnDynamic) as a plain
// program, for the scripts beside it. A warm-up compiles the step's traces
// (the benchmark's runs of four steps, each from h = 0, so two traces
// alternate as there); then `measured` runs STEPS steps (argument 1, default
// 2000), storing to `marker` before each, so a count of one function
// (step_cost.py) or a memory trace split at the marker (step_footprint.py)
// sees the steps alone. Prints the addresses of W, U, the marker and matmul.
// With a second argument `time` (step_time.py) it runs the STEPS steps five
// times instead and prints, per step, the time-stamp counter's ticks from a
// step's first op to its last (the recording) and in item() (the flush).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <x86intrin.h>

#include "nnvm/core/thread_pool.h"
#include "nnvm/nnvm.h"

using namespace nnvm;

volatile long marker = 0;

namespace {

constexpr int64_t kHidden = 64;
Tensor w, u, b, xs;
float sum = 0;

struct Ticks {
  unsigned long long record = 0, flush = 0;
};

template <bool kTimed>
void steps(int64_t n, bool mark, Ticks* ticks = nullptr) {
  Tensor h = zeros({1, kHidden});
  for (int64_t t = 0; t < n; ++t) {
    if (mark) marker = t;
    unsigned long long start = 0;
    if constexpr (kTimed) start = __rdtsc();
    h = (matmul(xs[t % 4], w) + matmul(h, u) + b).tanh();
    const Tensor norm = h.norm();
    if constexpr (kTimed) {
      const unsigned long long recorded = __rdtsc();
      sum += norm.item<float>();
      ticks->record += recorded - start;
      ticks->flush += __rdtsc() - recorded;
    } else {
      sum += norm.item<float>();
    }
    if (t % 4 == 3) h = zeros({1, kHidden});  // a new run, as the benchmark's loop starts one
  }
}

}  // namespace

__attribute__((noinline)) void measured(int64_t n) { steps<false>(n, true); }

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
  // Where libnnvm is loaded: step_footprint.py names the code that touches each line.
  Tensor (*mm)(const Tensor&, const Tensor&) = &matmul;
  std::printf("matmul %p\n", reinterpret_cast<void*>(mm));
  std::fflush(stdout);
  steps<false>(40, false);
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 2000;
  if (argc > 2 && std::strcmp(argv[2], "time") == 0) {
    for (int run = 0; run < 5; ++run) {
      Ticks ticks;
      const unsigned long long start = __rdtsc();
      steps<true>(n, false, &ticks);
      const double all = double(__rdtsc() - start);
      std::printf("ticks a step: recording %.0f, flush %.0f, all %.0f\n", double(ticks.record) / double(n),
                  double(ticks.flush) / double(n), all / double(n));
    }
  } else {
    measured(n);
  }
  std::printf("sum %f\n", sum);
}
