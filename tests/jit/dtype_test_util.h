// Shared by the dtype tests (dtype_jit_test.cpp, int64_jit_test.cpp): one
// group run against the interpreter exactly, and one group lowered.
#pragma once

#include <vector>

#include "nnvm/nnvm.h"
#include "nnvm/jit/x86_backend.h"
#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {

// Runs `t`'s one group under `isa`: it must lower, run JIT code under a JIT
// ISA (unless `jit` is false: a kernel that declines leaves the tile
// program to run), and match the interpreter exactly, dtypes included
// (int64s as int64s, not through double).
inline void expect_exact(const trace::Trace& t, const std::vector<Tensor>& inputs, Isa isa, bool jit = true) {
  SCOPED_TRACE(isa_name(isa));
  IsaGuard guard(isa);
  EagerGuard eager;
  const trace::FusedPlan plan(t);
  ASSERT_EQ(plan.fusion().groups.size(), 1u) << plan.to_string();
  const PointwiseJit* program = pointwise_jit(plan.program(0));
  ASSERT_NE(program, nullptr) << plan.to_string();
  ASSERT_EQ(program->declined(), "") << program->ir().to_string();
  const std::vector<Tensor> expected = trace::interpret(t, inputs, {});
  const std::vector<Tensor> actual = plan.run(inputs, {});
  if (jit && isa != Isa::kPortable) {
    if (expected[0].numel() > 0) {
      EXPECT_FALSE(program->variant_names().empty());
    }
    expect_variants_compiled(*program, isa);
  }
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "output " << i << " " << shape_str(expected[i].sizes()));
    ASSERT_EQ(actual[i].dtype(), expected[i].dtype());
    if (expected[i].dtype() == kInt64) EXPECT_EQ(actual[i].to_vector<int64_t>(), expected[i].to_vector<int64_t>());
    else testing::expect_tensors_close(actual[i], expected[i], 0, 0);
  }
}

inline Lowering lower_only_group(const trace::Trace& t) {
  const trace::FusionPlan f = trace::fuse(t);
  EXPECT_EQ(f.groups.size(), 1u) << f.to_string(t);
  return lower_pointwise(t, f.groups[0], trace::group_values(t, f.groups[0]));
}

}  // namespace nnvm::jit
