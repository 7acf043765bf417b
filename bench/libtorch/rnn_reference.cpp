// bench/trace_bench.cpp's BM_RnnDynamic program in libtorch, timed with a
// steady clock and no benchmark library, so that it builds against any
// libtorch, including the pre-C++11-ABI wheels of the 1.x releases (whose
// std::string cannot cross into a library built with the new ABI, as
// Debian's Google Benchmark is). tools/rnn_reference.sh runs it.
//
// Prints the median, least and greatest microseconds a step of
// rnn_program.h's run over ROUNDS rounds (argument 1, default 15) of at
// least 0.3 s each, after one round of warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rnn_program.h"

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  const TorchRnn rnn;
  std::vector<double> us_per_step;
  for (int round = 0; round <= rounds; ++round) {
    int64_t steps = 0;
    double seconds = 0;
    const auto start = std::chrono::steady_clock::now();
    do {
      for (int run = 0; run < 1000; ++run) steps += rnn.run();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < 0.3);
    if (round > 0) us_per_step.push_back(seconds * 1e6 / double(steps));  // round 0 warms up
  }
  std::sort(us_per_step.begin(), us_per_step.end());
  std::printf("libtorch %s RnnDynamic: median %.3f us/step, range %.3f-%.3f over %zu rounds, %d threads\n",
              TORCH_VERSION, us_per_step[us_per_step.size() / 2], us_per_step.front(), us_per_step.back(),
              us_per_step.size(), torch::get_num_threads());
}
