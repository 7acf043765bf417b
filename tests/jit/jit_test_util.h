// Test helpers shared by the JIT kernel kinds' tests: a one-node trace, and
// a single-group plan run under a forced ISA against the interpreter, with
// the check that the group's kernel ran (or fell back with a reason).
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/jit/x86_backend.h"
#include "nnvm/jit/reduce_jit.h"
#include "nnvm/jit/rowwise_jit.h"
#include "nnvm/jit/x86/pointwise_kernel.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "isa_scope.h"
#include "reference.h"

namespace nnvm::jit {

// A trace of one node `name` over `inputs` with `attrs`, every output marked.
inline trace::Trace single(const char* name, const std::vector<Tensor>& inputs, Attrs attrs) {
  trace::Trace t;
  std::vector<trace::ValueId> in;
  for (const Tensor& x : inputs) in.push_back(t.add_input(x));
  for (trace::ValueId out : t.add_node(find_op(name), in, std::move(attrs))) t.mark_output(out);
  return t;
}

// The kernel kinds: a group program's kernel and the kind's run counter.
struct RowKernel {
  static constexpr const char* kName = "the row kernel";
  static const RowwiseJit* of(const auto& program) { return rowwise_jit(program); }
  static int64_t runs() { return rowwise_runs(); }
  static std::string describe(const RowwiseJit&) { return ""; }
};
struct ReduceKernel {
  static constexpr const char* kName = "the reduction kernel";
  static const ReduceJit* of(const auto& program) { return reduce_jit(program); }
  static int64_t runs() { return reduce_runs(); }
  static std::string describe(const ReduceJit& k) { return k.ir().to_string(); }
};

// Runs `t`'s plan under `isa` (eager) and the interpreter on `inputs`; the
// plan must be one group of kernel kind `Kind`. `jit`: whether the kernel
// must have run (else it must have fallen back, with a reason). Then
// compare(actual, expected), two lists of equal length.
template <class Kind, class Compare>
void expect_plan_matches(const trace::Trace& t, const std::vector<Tensor>& inputs, Isa isa, bool jit, Compare compare) {
  SCOPED_TRACE(isa_name(isa));
  IsaGuard guard(isa);
  EagerGuard eager;
  const trace::FusedPlan plan(t);
  ASSERT_EQ(plan.fusion().groups.size(), 1u) << plan.to_string();
  const auto* kernel = Kind::of(plan.program(0));
  ASSERT_NE(kernel, nullptr) << plan.to_string();
  const std::vector<Tensor> expected = trace::interpret(t, inputs, {});
  const int64_t runs = Kind::runs();
  const std::vector<Tensor> actual = plan.run(inputs, {});
  if (jit) {
    EXPECT_EQ(kernel->declined(), "");
    EXPECT_EQ(kernel->last_fallback(), "");
    EXPECT_EQ(Kind::runs(), runs + 1) << Kind::kName << " did not run\n" << Kind::describe(*kernel);
  } else {
    EXPECT_EQ(Kind::runs(), runs) << Kind::kName << " ran";
    EXPECT_TRUE(!kernel->declined().empty() || !kernel->last_fallback().empty()) << "a fallback without a reason";
  }
  ASSERT_EQ(actual.size(), expected.size());
  compare(actual, expected);
}

// Every variant of `jit` that ran ("<isa>-<accesses>[-nt]") is machine code:
// the kernel declines none of them, and generating their code failed for none.
inline void expect_variants_compiled(const PointwiseJit& jit, Isa isa) {
  EXPECT_TRUE(jit.declined_variants().empty()) << jit.declined_variants()[0];
  for (const std::string& v : jit.variant_names()) {
    const size_t dash = v.find('-');
    EXPECT_EQ(x86::PointwiseKernel::declines(jit.ir(), v.substr(dash + 1, v.find('-', dash + 1) - dash - 1), isa), "")
        << v;
  }
}

// A compare for expect_plan_matches: every output close to the interpreter's.
inline auto outputs_close(double rtol, double atol) {
  return [rtol, atol](const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "output " << i << " " << shape_str(expected[i].sizes()));
      testing::expect_tensors_close(actual[i], expected[i], rtol, atol);
    }
  };
}

// A compare for expect_plan_matches: every output the interpreter's bits
// (float32 or float64; NaN matching any NaN).
inline auto outputs_identical() {
  return [](const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "output " << i << " " << shape_str(expected[i].sizes()));
      ASSERT_EQ(actual[i].sizes(), expected[i].sizes());
      ASSERT_EQ(actual[i].dtype(), expected[i].dtype());
      ASSERT_TRUE(expected[i].dtype() == kFloat32 || expected[i].dtype() == kFloat64);
      const Tensor a = actual[i].to(kFloat64).contiguous(), e = expected[i].to(kFloat64).contiguous();
      const double *pa = a.data_ptr<double>(), *pe = e.data_ptr<double>();
      int64_t differ = 0;
      for (int64_t k = 0; k < a.numel(); ++k) {
        if (std::memcmp(pa + k, pe + k, 8) == 0 || (std::isnan(pa[k]) && std::isnan(pe[k]))) continue;
        if (differ++ < 3) ADD_FAILURE() << "element " << k << ": " << pa[k] << ", the reference's " << pe[k];
      }
      EXPECT_EQ(differ, 0) << "of " << a.numel();
    }
  };
}

// The row kernels' rows: empty, single and odd lengths, two trailing dims, long rows, many rows, one row.
inline const std::vector<DimVector> kRowShapes = {{0, 7},   {1, 1},     {3, 7},     {5, 17}, {2, 1000},
                                                  {4, 1025}, {2, 3, 33}, {64, 4096}, {300, 129}, {16}};

}  // namespace nnvm::jit
