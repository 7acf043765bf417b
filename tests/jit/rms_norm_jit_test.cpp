// The x86 row kernels of rms_norm and rms_norm_backward through FusedPlan on
// every ISA this CPU has, against the interpreter's reference kernels: empty,
// single and odd row lengths, two trailing dims, strided rows, rows that end
// against a guard page; one compile per (ISA, op) across sizes and eps; the
// API's decomposed RMS norm and the op's gradient reaching the kernels, hot == cold.
#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;

// Runs `t`'s plan under `isa` against the interpreter; `jit`: whether the row kernel must have run.
void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, Isa isa, bool jit = true, double tol = 5e-5) {
  expect_plan_matches<RowKernel>(t, inputs, isa, jit, outputs_close(tol, tol));
}

TEST(RmsNormJit, ForwardWithAndWithoutWeight) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kRowShapes)
      for (bool w : {false, true}) {
        SCOPED_TRACE(::testing::Message() << shape_str(shape) << " weight " << w);
        std::vector<Tensor> in = {testing::random(shape, kFloat32, 3, -3, 5)};
        if (w) in.push_back(testing::random({shape.back()}, kFloat32, 4));
        expect_matches(single("rms_norm", in, {DimVector{shape.back()}, w, Scalar(1e-5)}), in, isa);
      }
}

TEST(RmsNormJit, Backward) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kRowShapes)
      for (bool w : {false, true}) {
        SCOPED_TRACE(::testing::Message() << shape_str(shape) << " weight " << w);
        std::vector<Tensor> in = {testing::random(shape, kFloat32, 7), testing::random(shape, kFloat32, 8, -3, 5)};
        if (w) in.push_back(testing::random({shape.back()}, kFloat32, 9));
        // dweight sums over every row: its error grows with the row count
        expect_matches(single("rms_norm_backward", in, {DimVector{shape.back()}, w, Scalar(1e-5)}), in, isa, true,
                       2e-4);
      }
}

TEST(RmsNormJit, TwoTrailingDimsStridedRowsAndFallbacks) {
  const Tensor x = testing::random({6, 5, 9}, kFloat32, 6);
  const Tensor w = testing::random({5, 9}, kFloat32, 7);
  const Tensor rows = testing::random({12, 40}, kFloat32, 13).narrow(1, 3, 29);  // unit-stride rows 40 apart
  const Tensor transposed = testing::random({29, 12}, kFloat32, 14).t();
  const Tensor x64 = testing::random({4, 9}, kFloat64, 16);
  for (Isa isa : jit_isas()) {
    expect_matches(single("rms_norm", {x, w}, {DimVector{5, 9}, true, Scalar(1e-3)}), {x, w}, isa);
    expect_matches(single("rms_norm", {rows}, {DimVector{29}, false, Scalar(1e-5)}), {rows}, isa);
    expect_matches(single("rms_norm_backward", {rows, rows}, {DimVector{29}, false, Scalar(1e-5)}), {rows, rows}, isa,
                   true, 2e-4);
    expect_matches(single("rms_norm", {transposed}, {DimVector{29}, false, Scalar(1e-5)}), {transposed}, isa, false);
    expect_matches(single("rms_norm", {x64}, {DimVector{9}, false, Scalar(1e-5)}), {x64}, isa, false);
  }
  expect_matches(single("rms_norm", {x, w}, {DimVector{5, 9}, true, Scalar(1e-3)}), {x, w}, Isa::kPortable, false);
}

// The API's decomposed RMS norm (recognised into rms_norm when no gradient
// needs its intermediates) and the rms_norm op with its gradient
// (rms_norm_backward) in traced mode: the hot runs use the row kernels, with
// one compile per (ISA, op) across batch sizes, row lengths and eps, and
// agree with eager mode.
TEST(RmsNormJit, DecomposedApiFormAndTheOpsGradientReachTheKernels) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  auto decomposed = [](const Tensor& x, const Tensor& w, double eps) {
    return x * (x.square().mean({-1}, true) + eps).rsqrt() * w;
  };
  struct Config {
    int64_t rows, cols;
    double eps;
  };
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    int64_t compiles = -1;
    for (const Config& c : {Config{33, 257, 1e-5}, Config{20, 257, 1e-5}, Config{21, 64, 1e-5}, Config{21, 64, 1e-2}})
      for (int step = 0; step < 4; ++step) {  // the last runs replay compiled plans
        SCOPED_TRACE(::testing::Message() << c.rows << "x" << c.cols << " eps " << c.eps << " step " << step);
        const uint64_t seed = uint64_t(c.rows * 10 + step);
        const Tensor x = testing::random({c.rows, c.cols}, kFloat32, seed, -2, 2);
        const Tensor w = testing::random({c.cols}, kFloat32, seed + 1);
        const Tensor g = testing::random({c.rows, c.cols}, kFloat32, seed + 2);
        const Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
        std::vector<Tensor> expected;
        {
          EagerGuard eager;
          expected = autograd::grad({decomposed(xg, wg, c.eps)}, {xg, wg}, {g});
          expected.insert(expected.begin(), decomposed(x, w, c.eps));
        }
        int64_t runs = rowwise_runs();
        const Tensor y = decomposed(x, w, c.eps);
        testing::expect_tensors_close(y, expected[0], 5e-5, 5e-5);
        if (step == 3) {
          EXPECT_EQ(rowwise_runs(), runs + 1) << "the forward row kernel did not run";
        }
        runs = rowwise_runs();
        const Tensor y_op = rms_norm(xg, {c.cols}, wg, c.eps);
        const std::vector<Tensor> grads = autograd::grad({y_op}, {xg, wg}, {g});
        testing::expect_tensors_close(y_op, expected[0], 5e-5, 5e-5);
        testing::expect_tensors_close(grads[0], expected[1], 2e-4, 2e-4);
        testing::expect_tensors_close(grads[1], expected[2], 2e-4, 2e-4);
        if (step == 3) {
          EXPECT_EQ(rowwise_runs(), runs + 2) << "the forward and backward row kernels did not both run";
        }
        if (compiles < 0 && step == 3) compiles = rowwise_compiles();
      }
    EXPECT_EQ(rowwise_compiles(), compiles) << "no compile for a new batch size, row length or eps";
  }
}

}  // namespace
}  // namespace nnvm::jit
