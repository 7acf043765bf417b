// The per-op sweep (tests/sweep/sweep.h): every op of the op table has a
// case, and every case agrees with its reference on every path.
// NNVM_SWEEP_PERF=1 prints time and GB/s per op and path.
#include <cstdlib>
#include <set>

#include <gtest/gtest.h>

#include "sweep/sweep.h"

namespace nnvm::sweep {
namespace {

// The library's op table, read before any test registers ops of its own
// (libnnvm.so registers its ops when it loads, before this executable's
// static initialisation).
const std::vector<std::string> kLibraryOps = op_names();

bool perf() {
  const char* v = std::getenv("NNVM_SWEEP_PERF");
  return v && *v && std::string(v) != "0";
}

void expect_sweep_passes(void (*add)(std::vector<Case>&)) {
  std::vector<Case> cases;
  add(cases);
  const std::vector<std::string> failures = run_sweep(cases, perf());
  for (size_t i = 0; i < failures.size() && i < 100; ++i) ADD_FAILURE() << failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures";
}

TEST(Sweep, EveryOpHasACase) {
  std::set<std::string> swept;
  for (const Case& c : all_cases()) swept.insert(c.op);
  for (const std::string& name : kLibraryOps)
    EXPECT_TRUE(swept.count(name)) << "op '" << name << "' has no sweep case";
}

TEST(Sweep, Pointwise) { expect_sweep_passes(add_pointwise_cases); }
TEST(Sweep, Reductions) { expect_sweep_passes(add_reduction_cases); }
TEST(Sweep, Nn) { expect_sweep_passes(add_nn_cases); }
TEST(Sweep, Tensors) { expect_sweep_passes(add_tensor_cases); }

}  // namespace
}  // namespace nnvm::sweep
