// The x86 row kernels through FusedPlan: softmax, log_softmax, layer_norm,
// layer_norm_backward, cross_entropy and cross_entropy_backward on every ISA
// this CPU has (forced from code) against the interpreter's reference kernels
// bit for bit,
// on empty, single and odd row lengths, strided rows, NaN and inf; the
// fallbacks (transposed input, dim not last, float64, portable) with their
// reasons; one compile per (ISA, op) across batch sizes and row lengths; the
// decomposed softmax and the layer_norm op of the public API reaching the kernel.
#include <cmath>

#include "guard_page.h"
#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;

// Runs `t`'s plan under `isa` against the interpreter, bit for bit. `jit`:
// whether the row kernel must have run (else it must have fallen back, with a reason).
void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, Isa isa, bool jit = true) {
  expect_plan_matches<RowKernel>(t, inputs, isa, jit, outputs_identical());
}

TEST(RowwiseJit, SoftmaxAndLogSoftmax) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kRowShapes)
      for (const char* name : {"softmax", "log_softmax"}) {
        SCOPED_TRACE(::testing::Message() << name << shape_str(shape));
        const Tensor x = testing::random(shape, kFloat32, 1, -8, 8);
        expect_plan_matches<RowKernel>(single(name, {x}, {int64_t(-1), kFloat32}), {x}, isa, true,
                                       outputs_identical());
      }
}

// Rows whose exps span every binade down to 0 (x - max from -120 to 0): the
// exps under FLT_MIN are 0 in both, the rest the same bits.
TEST(RowwiseJit, SoftmaxOfWideRowsIsTheReferenceBitForBit) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape :
         {DimVector{3, 4001}, DimVector{7, 16}, DimVector{5, 15}, DimVector{2, 9}, DimVector{4, 8}, DimVector{3, 24}})
      for (const char* name : {"softmax", "log_softmax"}) {
        SCOPED_TRACE(::testing::Message() << name << shape_str(shape));
        const Tensor x = testing::random(shape, kFloat32, 3, -120, 0);
        expect_plan_matches<RowKernel>(single(name, {x}, {int64_t(-1), kFloat32}), {x}, isa, true,
                                       outputs_identical());
      }
}

TEST(RowwiseJit, SoftmaxWithNanAndInfinities) {
  Tensor x = testing::random({6, 37}, kFloat32, 2);
  float* p = x.data_ptr<float>();
  p[0 * 37 + 3] = NAN;                                 // row 0: NaN everywhere
  p[1 * 37 + 36] = INFINITY;                           // row 1: +inf
  for (int j = 0; j < 37; ++j) p[2 * 37 + j] = -INFINITY;  // row 2: all -inf
  p[3 * 37 + 5] = -INFINITY;                           // row 3: one -inf, a zero
  p[4 * 37 + 20] = 1e30f;                              // row 4: one huge value
  for (Isa isa : jit_isas())
    for (const char* name : {"softmax", "log_softmax"}) {
      SCOPED_TRACE(name);
      expect_plan_matches<RowKernel>(single(name, {x}, {int64_t(1), kFloat32}), {x}, isa, true,
                                     outputs_identical());
    }
}

TEST(RowwiseJit, LayerNormWithAndWithoutAffine) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kRowShapes)
      for (int affine = 0; affine < 4; ++affine) {
        const bool w = affine & 1, b = affine & 2;
        SCOPED_TRACE(::testing::Message() << shape_str(shape) << " weight " << w << " bias " << b);
        std::vector<Tensor> in = {testing::random(shape, kFloat32, 3, -3, 5)};
        if (w) in.push_back(testing::random({shape.back()}, kFloat32, 4));
        if (b) in.push_back(testing::random({shape.back()}, kFloat32, 5));
        expect_matches(single("layer_norm", in, {DimVector{shape.back()}, w, b, Scalar(1e-5)}), in, isa, true);
      }
}

// Rows whose mean is large against their spread (1000 ± 1): the kernel's one
// pass shifted by each row's first element keeps the variance accurate. The
// output against layer norm computed in double from the same floats.
TEST(RowwiseJit, LayerNormOfRowsWithALargeMean) {
  for (int64_t cols : {1, 7, 100, 1000, 4099}) {
    SCOPED_TRACE(cols);
    const Tensor x = testing::random({3, cols}, kFloat32, 9, 999, 1001);
    for (Isa isa : jit_isas())
      expect_plan_matches<RowKernel>(
          single("layer_norm", {x}, {DimVector{cols}, false, false, Scalar(1e-5)}), {x}, isa, true,
          [&](const std::vector<Tensor>& actual, const std::vector<Tensor>&) {
            const float* px = x.data_ptr<float>();
            std::vector<double> want(size_t(3 * cols));
            for (int64_t r = 0; r < 3; ++r) {
              double mean = 0, var = 0;
              for (int64_t j = 0; j < cols; ++j) mean += px[r * cols + j];
              mean /= double(cols);
              for (int64_t j = 0; j < cols; ++j) var += (px[r * cols + j] - mean) * (px[r * cols + j] - mean);
              var /= double(cols);
              for (int64_t j = 0; j < cols; ++j)
                want[size_t(r * cols + j)] = (px[r * cols + j] - mean) / std::sqrt(var + 1e-5);
            }
            testing::expect_values(actual[0], want, 1e-4, 1e-4);
          });
  }
}

TEST(RowwiseJit, LayerNormOverTwoTrailingDims) {
  const Tensor x = testing::random({6, 5, 9}, kFloat32, 6);
  for (Isa isa : jit_isas())
    expect_matches(single("layer_norm", {x}, {DimVector{5, 9}, false, false, Scalar(1e-3)}), {x}, isa, true);
}

TEST(RowwiseJit, LayerNormBackward) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : kRowShapes)
      for (int affine = 0; affine < 4; ++affine) {
        const bool w = affine & 1, b = affine & 2;
        SCOPED_TRACE(::testing::Message() << shape_str(shape) << " weight " << w << " bias " << b);
        std::vector<Tensor> in = {testing::random(shape, kFloat32, 7), testing::random(shape, kFloat32, 8, -3, 5)};
        if (w) in.push_back(testing::random({shape.back()}, kFloat32, 9));
        expect_matches(single("layer_norm_backward", in, {DimVector{shape.back()}, w, b, Scalar(1e-5)}), in, isa,
                       true);
      }
}

Tensor targets(int64_t n, int64_t classes, int64_t ignore, uint64_t seed) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) t[size_t(r)] = int64_t((uint64_t(r) * 2654435761u + seed) % uint64_t(classes));
  if (n > 2) t[1] = ignore;
  return tensor(t, IntArrayRef{n});
}

TEST(RowwiseJit, CrossEntropyAndItsBackward) {
  for (Isa isa : jit_isas())
    for (const DimVector& shape : {DimVector{1, 1}, DimVector{3, 7}, DimVector{5, 17}, DimVector{2, 1000},
                                   DimVector{9, 1025}, DimVector{700, 10}, DimVector{4, 8}, DimVector{3, 24}})
      for (int64_t reduction : {0, 1, 2})
        for (bool weighted : {false, true})
          for (double smoothing : {0.0, 0.1}) {
            if (weighted && smoothing != 0) continue;  // a fallback, tested below
            SCOPED_TRACE(::testing::Message() << shape_str(shape) << " reduction " << reduction << " weight "
                                              << weighted << " smoothing " << smoothing);
            const int64_t n = shape[0], classes = shape[1];
            std::vector<Tensor> in = {testing::random(shape, kFloat32, 10, -6, 6), targets(n, classes, -100, 3)};
            if (weighted) in.push_back(testing::random({classes}, kFloat32, 11, 0.5, 2));
            const Attrs attrs{reduction, int64_t(-100), weighted, Scalar(smoothing)};
            expect_plan_matches<RowKernel>(single("cross_entropy", in, attrs), in, isa, true, outputs_identical());
            const DimVector loss_shape = reduction == 0 ? DimVector{n} : DimVector{};
            std::vector<Tensor> back = {testing::random(loss_shape, kFloat32, 12)};
            back.insert(back.end(), in.begin(), in.end());
            expect_plan_matches<RowKernel>(single("cross_entropy_backward", back, attrs), back, isa, true,
                                           outputs_identical());
          }
}

TEST(RowwiseJit, StridedRowsRunAndOtherLayoutsFallBack) {
  const Tensor wide = testing::random({12, 40}, kFloat32, 13);
  const Tensor rows = wide.narrow(1, 3, 29);  // unit-stride rows 40 apart
  const Tensor transposed = testing::random({29, 12}, kFloat32, 14).t();
  for (Isa isa : jit_isas()) {
    expect_matches(single("softmax", {rows}, {int64_t(1), kFloat32}), {rows}, isa);
    expect_matches(single("layer_norm", {rows}, {DimVector{29}, false, false, Scalar(1e-5)}), {rows}, isa, true);
    expect_matches(single("softmax", {transposed}, {int64_t(1), kFloat32}), {transposed}, isa, false);
    expect_matches(single("layer_norm_backward", {rows, transposed}, {DimVector{29}, false, false, Scalar(1e-5)}),
                   {rows, transposed}, isa, false);
  }
}

TEST(RowwiseJit, DeclinesWhatItDoesNotCompute) {
  const Tensor x = testing::random({4, 6, 5}, kFloat32, 15);
  const Tensor x64 = testing::random({4, 9}, kFloat64, 16);
  const Tensor target = targets(4, 6, -100, 1).reshape({4, 1}).expand({4, 5}).contiguous();
  const Tensor w = testing::random({9}, kFloat32, 17);
  for (Isa isa : jit_isas()) {
    expect_matches(single("softmax", {x}, {int64_t(1), kFloat32}), {x}, isa, false);
    expect_matches(single("log_softmax", {x64}, {int64_t(1), kFloat64}), {x64}, isa, false);
    expect_matches(single("cross_entropy", {x, target}, {int64_t(1), int64_t(-100), false, Scalar(0.0)}),
                   {x, target}, isa, false);
    const Tensor logits = testing::random({4, 9}, kFloat32, 18);
    const std::vector<Tensor> in = {logits, targets(4, 9, -100, 2), w};
    expect_matches(single("cross_entropy", in, {int64_t(1), int64_t(-100), true, Scalar(0.2)}), in, isa, false);
  }
}

TEST(RowwiseJit, ReadsNothingPastTheLastRow) {
  for (int64_t cols : {1, 7, 17, 1025}) {
    const testing::GuardedTensor x(testing::random({3, cols}, kFloat32, 30));
    const testing::GuardedTensor g(testing::random({3, cols}, kFloat32, 31));
    const testing::GuardedTensor w(testing::random({cols}, kFloat32, 32));
    for (Isa isa : jit_isas()) {
      SCOPED_TRACE(cols);
      expect_matches(single("log_softmax", {x.tensor()}, {int64_t(1), kFloat32}), {x.tensor()}, isa);
      const std::vector<Tensor> back = {g.tensor(), x.tensor(), w.tensor()};
      expect_matches(single("layer_norm_backward", back, {DimVector{cols}, true, true, Scalar(1e-5)}), back, isa, true);
      const std::vector<Tensor> ce = {x.tensor(), targets(3, cols, -100, 4), w.tensor()};
      const Attrs attrs{int64_t(1), int64_t(-100), true, Scalar(0.0)};
      expect_matches(single("cross_entropy", ce, attrs), ce, isa, true);
      const std::vector<Tensor> ce_back = {testing::random({}, kFloat32, 33), ce[0], ce[1], ce[2]};
      expect_matches(single("cross_entropy_backward", ce_back, attrs), ce_back, isa, true);
      const std::vector<Tensor> rms = {x.tensor(), w.tensor()};
      expect_matches(single("rms_norm", rms, {DimVector{cols}, true, Scalar(1e-5)}), rms, isa, true);
      expect_matches(single("rms_norm_backward", back, {DimVector{cols}, true, Scalar(1e-5)}), back, isa, true);
    }
  }
}

TEST(RowwiseJit, ABadTargetRaisesTheReferenceError) {
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    EagerGuard eager;
    const std::vector<Tensor> in = {testing::random({3, 5}, kFloat32, 19), tensor<int64_t>({0, 7, 1})};
    const trace::FusedPlan plan(single("cross_entropy", in, {int64_t(1), int64_t(-100), false, Scalar(0.0)}));
    testing::expect_error([&] { plan.run(in, {}); }, {"cross_entropy", "target 7"});
  }
}

TEST(RowwiseJit, ForcedPortableRunsTheReferenceKernel) {
  const Tensor x = testing::random({5, 40}, kFloat32, 20);
  const int64_t compiles_before = rowwise_compiles();
  expect_matches(single("softmax", {x}, {int64_t(1), kFloat32}), {x}, Isa::kPortable, false);
  EXPECT_EQ(rowwise_compiles(), compiles_before);
}

TEST(RowwiseJit, ANewBatchSizeOrRowLengthReusesTheKernel) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  IsaGuard guard(jit_isas()[0]);
  auto f = [](const Tensor& x) { return layer_norm(x, {x.size(1)}, {}, {}, 1e-4) * 2; };
  Tensor x0 = testing::random({8, 96}, kFloat32, 21);
  for (int i = 0; i < 3; ++i) f(x0).data_ptr();  // hot from the 2nd: compiles what this ISA had not compiled yet
  const int64_t before = rowwise_compiles(), runs = rowwise_runs();
  for (int64_t batch : {8, 16, 24, 8})
    for (int64_t cols : {96, 33}) {
      const Tensor x = testing::random({batch, cols}, kFloat32, uint64_t(batch + cols));
      Tensor expected;
      {
        EagerGuard eager;
        expected = f(x);
      }
      testing::expect_tensors_close(f(x), expected, 5e-5, 5e-5);
    }
  EXPECT_EQ(rowwise_compiles(), before) << "no compile for a new batch size or row length";
  EXPECT_GT(rowwise_runs(), runs);
}

TEST(RowwiseJit, DecomposedSoftmaxAndLayerNormOfTheApiReachTheKernel) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  auto softmax_of = [](const Tensor& x) {
    const Tensor e = (x - x.amax({-1}, true)).exp();
    return e / e.sum({-1}, true);
  };
  // (a decomposed layer_norm records its `x - mean` alpha as a run-time
  // Scalar, which the recognise pass declines: the op itself here)
  auto layer_norm_of = [](const Tensor& x) { return layer_norm(x, {x.size(1)}, {}, {}, 1e-5); };
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    for (int step = 0; step < 3; ++step) {  // the third run replays the compiled plan
      const Tensor x = testing::random({33, 257}, kFloat32, uint64_t(22 + step), -4, 4);
      Tensor softmax_expected, norm_expected;
      {
        EagerGuard eager;
        softmax_expected = softmax_of(x);
        norm_expected = layer_norm_of(x);
      }
      const int64_t runs = rowwise_runs();
      const Tensor s = softmax_of(x), n = layer_norm_of(x);
      testing::expect_tensors_close(s, softmax_expected, 2e-5, 1e-6);
      testing::expect_tensors_close(n, norm_expected, 5e-5, 5e-5);
      if (step == 2) {
        EXPECT_EQ(rowwise_runs(), runs + 2);
      }
    }
  }
}

}  // namespace
}  // namespace nnvm::jit
