// nnvm_bench's main. Every benchmark runs in the state a training program is
// in: the worker pool started (NNVM_THREADS - 1 threads). Once a process has
// a second thread, every shared_ptr copy and release is an atomic operation
// (libstdc++ counts without them while the process has one thread), which
// costs the tracing benchmarks about a tenth of their time. Without this the
// figures would depend on the filter: the jit benchmarks run before the trace
// benchmarks and start the pool with their first parallel kernel.
// NNVM_THREADS=1 measures the single-threaded process instead.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "nnvm/core/thread_pool.h"

namespace {
// The CPU's model name (/proc/cpuinfo), for the JSON output's context: the
// report (tools/bench_report) names the host its figures come from.
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}
}  // namespace

int main(int argc, char** argv) {
  nnvm::set_num_threads(nnvm::get_num_threads());  // starts the workers now
  benchmark::AddCustomContext("cpu_model", cpu_model());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
