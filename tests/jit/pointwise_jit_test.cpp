// The x86 pointwise JIT through FusedPlan: every ISA this CPU has (forced
// from code) against the interpreter's reference kernels on random shapes
// (empty, one element, odd, large), broadcasting and non-contiguous inputs,
// every primitive, register pressure past the register file; one compile per
// group signature and access pattern; no memory both writable and executable.
#include <fstream>

#include "jit_test_util.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using trace::Trace;
using trace::ValueId;

const OpDef& op(const char* name) { return find_op(name); }

// Runs `t`'s plan under `isa` and checks it against the interpreter; with a
// JIT ISA the group must have run machine code (a compile or a cached kernel).
void expect_matches(const Trace& t, const std::vector<Tensor>& inputs, Isa isa, double rtol = 2e-5,
                    double atol = 1e-5) {
  SCOPED_TRACE(isa_name(isa));
  IsaGuard guard(isa);
  EagerGuard eager;
  const trace::FusedPlan plan(t);
  ASSERT_EQ(plan.fusion().groups.size(), 1u) << plan.to_string();
  const PointwiseJit* jit = pointwise_jit(plan.program(0));
  ASSERT_NE(jit, nullptr) << plan.to_string();
  ASSERT_EQ(jit->declined(), "") << jit->ir().to_string();
  const std::vector<Tensor> expected = trace::interpret(t, inputs, {});
  const std::vector<Tensor> actual = plan.run(inputs, {});
  expect_variants_compiled(*jit, isa);
  ASSERT_EQ(actual.size(), expected.size());
  outputs_close(rtol, atol)(actual, expected);
}

// Every primitive: a chain reading a full tensor x, a row, a column and a scalar.
Trace every_primitive(const std::vector<Tensor>& in) {
  Trace t;
  const ValueId x = t.add_input(in[0]), row = t.add_input(in[1]), col = t.add_input(in[2]), s = t.add_input(in[3]);
  auto node = [&](const char* name, std::initializer_list<ValueId> args, Attrs attrs = {}) {
    return t.add_node1(op(name), std::vector<ValueId>(args), std::move(attrs));
  };
  ValueId v = node("add", {x, row}, {Scalar(0.75)});
  v = node("mul", {v, col});
  v = node("add", {v, s}, {Scalar(0.5)});
  v = node("div", {v, node("add.Scalar", {node("abs", {x})}, {Scalar(1.5), Scalar(2)})});
  const ValueId hi = node("maximum", {v, row});
  const ValueId lo = node("minimum.Scalar", {v}, {Scalar(0.5)});
  ValueId w = node("clamp", {node("add", {hi, lo}, {Scalar(-1)})}, {true, Scalar(-1.5), true, Scalar(1.25)});
  w = node("add", {w, node("relu", {node("neg", {lo})})}, {Scalar(1)});
  const ValueId pos = node("add.Scalar", {node("square", {v})}, {Scalar(0.1), Scalar(1)});
  ValueId u = node("mul", {node("sqrt", {pos}), node("rsqrt", {pos})});
  u = node("add", {u, node("log", {pos})}, {Scalar(1)});
  u = node("add", {u, node("reciprocal", {pos})}, {Scalar(-0.5)});
  u = node("mul", {u, node("exp", {node("minimum.Scalar", {v}, {Scalar(3.0)})})});
  u = node("add", {u, node("tanh", {v})}, {Scalar(1)});
  u = node("add", {u, node("sigmoid", {w})}, {Scalar(1)});
  u = node("add", {u, node("gelu_tanh", {v})}, {Scalar(1)});
  u = node("add", {u, node("silu", {w})}, {Scalar(1)});
  t.mark_output(u);
  t.mark_output(node("div.Scalar", {node("mul.Scalar", {w}, {Scalar(3)})}, {Scalar(7.0)}));
  return t;
}

TEST(PointwiseJit, EveryPrimitiveOnEveryIsaAndShape) {
  const std::vector<DimVector> shapes = {{0, 5}, {1}, {7}, {16}, {17}, {3, 33}, {2, 5, 129}, {4, 1 << 16}};
  for (Isa isa : jit_isas()) {
    for (const DimVector& shape : shapes) {
      SCOPED_TRACE(shape_str(shape));
      DimVector col(shape.size(), 1);
      col[0] = shape[0];
      const std::vector<Tensor> in = {testing::random(shape, kFloat32, 1), testing::random({shape.back()}, kFloat32, 2),
                                      testing::random(col, kFloat32, 3), testing::random({}, kFloat32, 4)};
      expect_matches(every_primitive(in), in, isa);
    }
  }
}

TEST(PointwiseJit, NonContiguousInputsAreGathered) {
  for (Isa isa : jit_isas()) {
    for (testing::Layout layout : testing::kLayouts) {
      for (const DimVector& shape : {DimVector{9, 23}, DimVector{40, 3, 77}, DimVector{130, 70}}) {
        SCOPED_TRACE(::testing::Message() << testing::layout_name(layout) << shape_str(shape));
        const Tensor x = testing::with_layout(testing::random(shape, kFloat32, 5), layout);
        const Tensor y = testing::random(shape, kFloat32, 6);
        const Tensor z = testing::with_layout(testing::random(shape, kFloat32, 7), layout);
        Trace t;
        const ValueId xv = t.add_input(x), yv = t.add_input(y), zv = t.add_input(z);
        const ValueId p = t.add_node1(op("mul"), {xv, yv});
        t.mark_output(t.add_node1(op("tanh"), {t.add_node1(op("add"), {p, zv}, {Scalar(-2)})}));
        t.mark_output(t.add_node1(op("exp"), {p}));
        expect_matches(t, {x, y, z}, isa);
      }
    }
  }
}

TEST(PointwiseJit, SpillsWhenValuesOutnumberTheRegisters) {
  // 40 values live at once: every e^(x c_k) is computed before the sum starts
  const Tensor x = testing::random({3, 1001}, kFloat32, 8, -1, 1);
  Trace t;
  const ValueId xv = t.add_input(x);
  std::vector<ValueId> terms;
  for (int k = 0; k < 40; ++k)
    terms.push_back(t.add_node1(op("sigmoid"), {t.add_node1(op("mul.Scalar"), {xv}, {Scalar(0.05 * k)},
                                                            trace::ScalarBinding::kCompileTime)}));
  ValueId sum = terms[0];
  for (int k = 1; k < 40; ++k)
    sum = t.add_node1(op("add"), {sum, terms[size_t(k)]}, {Scalar(1)}, trace::ScalarBinding::kCompileTime);
  t.mark_output(sum);
  for (Isa isa : jit_isas()) expect_matches(t, {x}, isa, 1e-5, 1e-4);
}

TEST(PointwiseJit, ForcedPortableRunsTheTileProgram) {
  const Tensor x = testing::random({5, 40}, kFloat32, 9);
  Trace t;
  const ValueId xv = t.add_input(x);
  t.mark_output(t.add_node1(op("exp"), {t.add_node1(op("mul.Scalar"), {xv}, {Scalar(1.25)})}));
  IsaGuard portable(Isa::kPortable);
  const trace::FusedPlan plan(t);
  const std::vector<Tensor> expected = trace::interpret(t, {x}, {});
  const int64_t before = pointwise_compiles();
  testing::expect_tensors_close(plan.run({x}, {})[0], expected[0]);
  EXPECT_EQ(pointwise_compiles(), before);
}

TEST(PointwiseJit, ANewBatchSizeReusesTheKernel) {
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  IsaGuard guard(jit_isas()[0]);
  // a group of its own here: the Scalars' kinds and the ops' order are this test's
  auto f = [](const Tensor& x) { return ((x * 1.5 + 0.25).sigmoid() * x).abs().tanh().relu(); };
  const int64_t before = pointwise_compiles();
  for (int64_t batch : {8, 16, 24, 8, 16})
    for (int k = 0; k < 3; ++k) {
      const Tensor x = testing::random({batch, 96}, kFloat32, uint64_t(batch + k));
      Tensor expected;
      {
        EagerGuard eager;
        expected = f(x);
      }
      testing::expect_tensors_close(f(x), expected, 1e-5, 1e-6);
    }
  EXPECT_EQ(pointwise_compiles() - before, 1) << "one kernel for every batch size";
}

TEST(PointwiseJit, NoMappingIsWritableAndExecutable) {
  const Tensor x = testing::random({100}, kFloat32, 10);
  for (Isa isa : jit_isas()) {
    Trace t;
    const ValueId xv = t.add_input(x);
    t.mark_output(t.add_node1(op("log"), {t.add_node1(op("abs"), {xv})}));
    expect_matches(t, {x}, isa, 2e-5, 1e-5);
  }
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int lines = 0;
  while (std::getline(maps, line)) {
    ++lines;
    const std::string perms = line.substr(line.find(' ') + 1, 4);
    EXPECT_FALSE(perms[1] == 'w' && perms[2] == 'x') << line;
  }
  EXPECT_GT(lines, 0);
}

}  // namespace
}  // namespace nnvm::jit

namespace nnvm::jit {
namespace {

// Streaming (non-temporal) stores: forced on (kAlways), a variant
// of its own, taken only where every output vector is 64-byte aligned (in
// guard mode a block is aligned as far as its byte size allows).
TEST(PointwiseJit, StreamingStoresMatchAndNeedAlignedOutputs) {
  set_stream_stores(StreamStores::kAlways);
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    for (const DimVector& shape : {DimVector{8, 1024}, DimVector{3, 64}, DimVector{5, 333}, DimVector{1000}}) {
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << shape_str(shape));
      const Tensor x = testing::random(shape, kFloat32, 11), y = testing::random(shape, kFloat32, 12);
      EagerGuard eager;
      Trace t;
      const ValueId xv = t.add_input(x), yv = t.add_input(y);
      const ValueId d = t.add_node1(op("square"), {t.add_node1(op("add"), {xv, yv}, {Scalar(-1)})});
      t.mark_output(t.add_node1(op("sigmoid"), {t.add_node1(op("add"), {d, xv}, {Scalar(0.25)})}));
      const trace::FusedPlan plan(t);
      const std::vector<Tensor> actual = plan.run({x, y}, {});
      testing::expect_tensors_close(actual[0], trace::interpret(t, {x, y}, {})[0], 1e-5, 1e-6);
      const bool aligned = reinterpret_cast<uintptr_t>(actual[0].data_ptr()) % 64 == 0 && shape.back() % 16 == 0;
      // plans of one group signature share its program, so variants accumulate over the shapes
      const std::vector<std::string> variants = pointwise_jit(plan.program(0))->variant_names();
      const std::string streaming = std::string(isa_name(isa)) + "-ccc-nt", plain = streaming.substr(0, streaming.size() - 3);
      auto has = [&](const std::string& name) { return std::find(variants.begin(), variants.end(), name) != variants.end(); };
      EXPECT_TRUE(has(aligned ? streaming : plain)) << ::testing::PrintToString(variants);
      if (shape == DimVector{8, 1024}) {
        EXPECT_FALSE(has(plain)) << "the aligned shape comes first";
      }
    }
  }
  set_stream_stores(StreamStores::kAuto);
}
// The default (kAuto) streams a memory-bound group's output only once it is
// as big as the last-level cache; a compute-bound group (a tanh per element)
// keeps ordinary stores at any size.
TEST(PointwiseJit, AutoStreamsOnlyLargeOutputsOfMemoryBoundGroups) {
  ASSERT_EQ(stream_stores(), StreamStores::kAuto);
  auto variants_of = [](bool heavy, int64_t n) {
    const Tensor x = testing::random({n}, kFloat32, 5);
    EagerGuard eager;
    Trace t;
    ValueId v = t.add_node1(op("mul.Scalar"), {t.add_input(x)}, {Scalar(1.5)});
    if (heavy) v = t.add_node1(op("tanh"), {v});
    t.mark_output(t.add_node1(op("add.Scalar"), {v}, {Scalar(0.25), Scalar(1)}));
    const trace::FusedPlan plan(t);
    testing::expect_tensors_close(plan.run({x}, {})[0], trace::interpret(t, {x}, {})[0], 1e-5, 1e-6);
    return pointwise_jit(plan.program(0))->variant_names();
  };
  const int64_t large = stream_store_bytes() / 4;
  // a group's variants accumulate over its runs, the ISAs' included
  auto has = [](const std::vector<std::string>& variants, const std::string& name) {
    return std::find(variants.begin(), variants.end(), name) != variants.end();
  };
  for (Isa isa : jit_isas()) {
    IsaGuard guard(isa);
    const std::string streaming = std::string(isa_name(isa)) + "-cc-nt";
    EXPECT_FALSE(has(variants_of(false, 4096), streaming));
    EXPECT_TRUE(has(variants_of(false, large), streaming));
    EXPECT_FALSE(has(variants_of(true, large), streaming));
  }
}

// float16 and bfloat16 operands: widened on load, rounded once on store.
// Against the interpreter (which rounds every op's result: the tolerance of
// the type) and, tighter, against the same group in float32 rounded once.
TEST(PointwiseJit, HalfTypesComputeInFloat32) {
  const std::vector<DimVector> shapes = {{1}, {7}, {15}, {17}, {33}, {3, 33}, {2, 5, 129}, {4, 1000}};
  for (DType dtype : {kFloat16, kBFloat16}) {
    const double rtol = dtype == kFloat16 ? 4e-3 : 3e-2, atol = dtype == kFloat16 ? 1e-3 : 1e-2;
    const double ulp = dtype == kFloat16 ? 1.0 / 1024 : 1.0 / 128;  // relative spacing at worst
    for (Isa isa : jit_isas()) {
      for (const DimVector& shape : shapes) {
        SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << shape_str(shape));
        DimVector col(shape.size(), 1);
        col[0] = shape[0];
        const std::vector<Tensor> in = {testing::random(shape, dtype, 21), testing::random(col, dtype, 22),
                                        testing::random(shape, kFloat32, 23)};
        auto build = [&](const std::vector<Tensor>& inputs) {
          Trace t;
          const ValueId x = t.add_input(inputs[0]), c = t.add_input(inputs[1]), y = t.add_input(inputs[2]);
          const ValueId v = t.add_node1(op("mul"), {x, c});  // a broadcast 16-bit column
          const ValueId w = t.add_node1(op("tanh"), {t.add_node1(op("add"), {v, x}, {Scalar(0.5)})});
          t.mark_output(w);                                                    // 16-bit
          t.mark_output(t.add_node1(op("add"), {y, t.add_node1(op("exp"), {w})}, {Scalar(1)}));  // float32
          return t;
        };
        expect_matches(build(in), in, isa, rtol, atol);
        // the same group on float32 copies, its 16-bit output rounded once
        IsaGuard guard(isa);
        EagerGuard eager;
        const std::vector<Tensor> wide = {in[0].to(kFloat32), in[1].to(kFloat32), in[2]};
        const Tensor once = trace::interpret(build(wide), wide, {})[0].to(dtype);
        const std::vector<Tensor> actual = trace::FusedPlan(build(in)).run(in, {});
        EXPECT_EQ(actual[0].dtype(), dtype);
        testing::expect_tensors_close(actual[0], once, ulp, 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace nnvm::jit
