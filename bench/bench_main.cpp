// nnvm_bench's main. Every benchmark runs in the state a training program is
// in: the worker pool started (NNVM_THREADS - 1 threads). Once a process has
// a second thread, every shared_ptr copy and release is an atomic operation
// (libstdc++ counts without them while the process has one thread), which
// costs the tracing benchmarks about a tenth of their time. Without this the
// figures would depend on the filter: the jit benchmarks run before the trace
// benchmarks and start the pool with their first parallel kernel.
// NNVM_THREADS=1 measures the single-threaded process instead.
#include <benchmark/benchmark.h>

#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/cpu_features.h"

int main(int argc, char** argv) {
  nnvm::set_num_threads(nnvm::get_num_threads());  // starts the workers now
  // The CPU's model (CPUID's brand string) in the JSON output's context: the
  // report (tools/bench_report) names the host its figures come from.
  const std::string& model = nnvm::cpu::cpu_features().model;
  benchmark::AddCustomContext("cpu_model", model.empty() ? "unknown CPU" : model);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
