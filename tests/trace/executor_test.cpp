// The portable executor: FusedPlan must compute what the interpreter computes
// on the same trace, for every group kind, layout, size and dtype, with
// run-time Scalars and inputs at any offset; outputs are tensors of their own.
#include <random>

#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/recorder.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_tensors_close;

const OpDef& op(const char* name) { return find_op(name); }

// The plan of `t` (no passes: the executor alone) against the interpreter,
// twice: a second run gives the same bits.
std::shared_ptr<const FusedPlan> expect_matches_interpreter(const Trace& t, const std::vector<Tensor>& inputs,
                                                            const std::vector<Scalar>& scalars = {}) {
  EagerGuard eager;
  auto plan = std::make_shared<const FusedPlan>(t);
  const std::vector<Tensor> expected = interpret(t, inputs, scalars);
  const std::vector<Tensor> actual = plan->run(inputs, scalars);
  const std::vector<Tensor> again = plan->run(inputs, scalars);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size() && i < actual.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "output " << i << "\n" << plan->to_string());
    EXPECT_EQ(actual[i].dtype(), expected[i].dtype());
    EXPECT_EQ(actual[i].sizes(), expected[i].sizes());
    expect_tensors_close(actual[i], expected[i], testing::rtol_for(expected[i].dtype()), 1e-6);
    expect_tensors_close(again[i], actual[i], 0, 0);
  }
  return plan;
}

int count_groups(const FusedPlan& p, GroupKind kind, bool tiled) {
  int n = 0;
  for (size_t g = 0; g < p.fusion().groups.size(); ++g)
    n += p.fusion().groups[g].kind == kind && p.program(int32_t(g)).tiled() == tiled;
  return n;
}

TEST(FusedPlan, PointwiseChainWithBroadcastingRunsAsOneTiledLoop) {
  // [2, 300, 30] splits at dim 1 into tiles of 136 rows (the last of 28): six tiles
  for (const DimVector& shape : {DimVector{2, 300, 30}, DimVector{37, 129}, DimVector{5000}}) {
    Trace t;
    const Tensor x = testing::random(shape, kFloat32, 1);
    const Tensor a = testing::random({shape.back()}, kFloat32, 2);
    DimVector col(shape.size(), 1);
    col[0] = shape[0];
    const Tensor b = testing::random(col, kFloat32, 3);
    const Tensor c = testing::random({}, kFloat32, 4);
    const ValueId xv = t.add_input(x), av = t.add_input(a), bv = t.add_input(b), cv = t.add_input(c);
    ValueId v = t.add_node1(op("mul"), {xv, av});
    v = t.add_node1(op("add"), {v, bv}, {Scalar(0.5)});
    v = t.add_node1(op("gelu"), {t.add_node1(op("mul"), {v, cv})});
    t.mark_output(t.add_node1(op("tanh"), {v}));
    auto plan = expect_matches_interpreter(t, {x, a, b, c});
    ASSERT_EQ(plan->fusion().groups.size(), 1u);
    EXPECT_TRUE(plan->program(0).tiled());
    EXPECT_EQ(plan->arena_bytes(), 0) << "a fused chain keeps its values in scratch";
    if (shape.size() == 3) {
      EXPECT_NE(plan->to_string().find("6 tiles of 4080 elements (136 rows of dim 1)"), std::string::npos)
          << plan->to_string();
    }
  }
}

TEST(FusedPlan, OddEmptyAndScalarSizes) {
  for (const DimVector& shape : {DimVector{0, 5}, DimVector{5, 0}, DimVector{1, 1}, DimVector{}, DimVector{1},
                                 DimVector{3, 1, 7}}) {
    Trace t;
    const Tensor x = testing::random(shape, kFloat32, 5), y = testing::random(shape, kFloat32, 6);
    const ValueId xv = t.add_input(x), yv = t.add_input(y);
    const ValueId e = t.add_node1(op("sigmoid"), {t.add_node1(op("mul"), {xv, yv})});
    t.mark_output(t.add_node1(op("neg"), {e}));
    if (!shape.empty()) t.mark_output(t.add_node1(op("sum"), {t.add_node1(op("abs"), {xv})},
                                                  {DimVector{-1}, false, kFloat32}));
    SCOPED_TRACE(shape_str(shape));
    expect_matches_interpreter(t, {x, y});
  }
}

TEST(FusedPlan, NonContiguousInputsAndMixedDtypes) {
  for (testing::Layout layout : testing::kLayouts) {
    Trace t;
    const Tensor x = testing::with_layout(testing::random({6, 70}, kFloat32, 7), layout);
    const Tensor i = testing::with_layout(testing::random({6, 70}, kInt32, 8, -5, 5), layout);
    const Tensor d = testing::random({70}, kFloat64, 9);
    const ValueId xv = t.add_input(x), iv = t.add_input(i), dv = t.add_input(d);
    const ValueId sum = t.add_node1(op("add"), {xv, iv}, {Scalar(1)});  // float32
    const ValueId wide = t.add_node1(op("mul"), {sum, dv});              // float64
    const ValueId positive = t.add_node1(op("gt.Scalar"), {iv}, {Scalar(0)});
    t.mark_output(t.add_node1(op("where"), {positive, wide, t.add_node1(op("neg"), {wide})}));
    t.mark_output(t.add_node1(op("copy"), {sum}, {kFloat16}));
    SCOPED_TRACE(testing::layout_name(layout));
    auto plan = expect_matches_interpreter(t, {x, i, d});
    EXPECT_EQ(count_groups(*plan, GroupKind::kPointwise, true), 1) << plan->to_string();
  }
}

TEST(FusedPlan, ReductionsWithAPrologue) {
  struct Case {
    const char* op;
    DimVector dims;
    bool keepdim;
    bool tiled;  // reductions over the first dim run node by node
  };
  const Case cases[] = {{"sum", {-1}, false, true}, {"mean", {1}, true, true},  {"amax", {2}, false, true},
                        {"sum", {1, 2}, true, true}, {"sum", {0}, false, false}, {"mean", {0, 2}, true, false},
                        {"amax", {}, false, false}};
  for (const Case& c : cases) {
    for (testing::Layout layout : {testing::Layout::Contiguous, testing::Layout::Transposed}) {
      Trace t;
      const Tensor x = testing::with_layout(testing::random({40, 3, 77}, kFloat32, 10), layout);
      const Tensor b = testing::random({77}, kFloat32, 11);
      const ValueId xv = t.add_input(x), bv = t.add_input(b);
      const ValueId e = t.add_node1(op("exp"), {t.add_node1(op("add"), {xv, bv}, {Scalar(-1)})});
      Attrs attrs{c.dims, c.keepdim};
      if (std::string_view(c.op) != "amax") attrs.push_back(kFloat32);
      t.mark_output(t.add_node1(op(c.op), {e}, attrs));
      SCOPED_TRACE(::testing::Message() << c.op << shape_str(c.dims) << " " << testing::layout_name(layout));
      auto plan = expect_matches_interpreter(t, {x, b});
      ASSERT_EQ(plan->fusion().groups.size(), 1u) << plan->to_string();
      EXPECT_EQ(plan->program(0).tiled(), c.tiled) << plan->to_string();
    }
  }
}

TEST(FusedPlan, SoftmaxDecomposition) {
  Trace t;
  const Tensor x = testing::random({33, 250}, kFloat32, 12, -8, 8);
  const ValueId xv = t.add_input(x);
  const ValueId m = t.add_node1(op("amax"), {xv}, {DimVector{-1}, true});
  const ValueId e = t.add_node1(op("exp"), {t.add_node1(op("add"), {xv, m}, {Scalar(-1)})});
  const ValueId s = t.add_node1(op("sum"), {e}, {DimVector{-1}, true, kFloat32});
  const ValueId y = t.add_node1(op("div"), {e, s});
  t.mark_output(y);
  auto plan = expect_matches_interpreter(t, {x});
  EagerGuard eager;
  expect_tensors_close(plan->run({x}, {})[0], softmax(x, -1));
}

TEST(FusedPlan, MatmulWithBiasAndRelu) {
  Trace t;
  const Tensor x = testing::random({19, 33}, kFloat32, 13), w = testing::random({33, 7}, kFloat32, 14);
  const Tensor bias = testing::random({7}, kFloat32, 15);
  const ValueId xv = t.add_input(x), wv = t.add_input(w), bv = t.add_input(bias);
  const ValueId mm = t.add_node1(op("matmul"), {xv, wv});
  t.mark_output(t.add_node1(op("relu"), {t.add_node1(op("add"), {mm, bv}, {Scalar(1)})}));
  auto plan = expect_matches_interpreter(t, {x, w, bias});
  EXPECT_EQ(count_groups(*plan, GroupKind::kMatmulEpilogue, false), 1) << plan->to_string();
}

// An epilogue group's 2-D float32 matmul or matmul_sum runs straight through
// the GEMM (GroupProgram::run_gemm): the same bits as the reference kernel,
// run after run, for transposed and column-sliced operands, odd sizes, one
// row or column, k = 0, no rows and a vector-matrix product too long for the
// few-row GEMM (whose products must keep their order); a batched product and
// float64 take the reference kernel.
TEST(FusedPlan, AnEpiloguesMatmulThroughTheGemmHasTheKernelsBits) {
  struct Case {
    int64_t m, n, k, k2;
    bool transposed;
    DType dtype = kFloat32;
    int64_t batch = 0;
  };
  const Case cases[] = {{1, 64, 64, 64, false}, {7, 13, 5, 9, true}, {1, 1, 3, 1, true}, {5, 1, 17, 4, false},
                        {6, 33, 0, 3, false},   {0, 8, 4, 4, false}, {3, 70, 2, 0, true}, {1, 64, 4100, 4100, false},
                        {4, 9, 6, 6, false, kFloat64},
                        {3, 5, 4, 2, false, kFloat32, 2}};
  uint64_t seed = 40;
  for (const Case& c : cases) {
    for (bool sum : {false, true}) {
      SCOPED_TRACE(::testing::Message() << c.m << "x" << c.k << " @ " << c.k << "x" << c.n << (sum ? " + a product" : "")
                                        << (c.transposed ? ", transposed" : "") << " batch " << c.batch);
      auto operand = [&](int64_t rows, int64_t cols) {
        DimVector shape = c.transposed ? DimVector{cols, rows} : DimVector{rows, cols};
        if (c.batch) shape.insert(shape.begin(), c.batch);
        Tensor x = testing::random(shape, c.dtype, ++seed);
        return c.transposed ? x.transpose(-1, -2) : x;
      };
      Trace t;
      std::vector<Tensor> inputs(sum ? 5 : 3);  // the products' operands, then the bias
      for (size_t p = 0; p + 1 < inputs.size(); p += 2) {
        inputs[p] = operand(c.m, p == 0 ? c.k : c.k2);
        inputs[p + 1] = operand(p == 0 ? c.k : c.k2, c.n);
      }
      inputs.back() = testing::random({c.n}, c.dtype, ++seed);
      std::vector<ValueId> v;
      for (const Tensor& x : inputs) v.push_back(t.add_input(x));
      const ValueId product = sum ? t.add_node1(op("matmul_sum"), {v[0], v[1], v[2], v[3]})
                                  : t.add_node1(op("matmul"), {v[0], v[1]});
      // an exact epilogue: the comparison sees the GEMM's bits
      t.mark_output(t.add_node1(op("relu"), {t.add_node1(op("add"), {product, v.back()}, {Scalar(1)})}));
      EagerGuard eager;
      const FusedPlan plan(t);
      ASSERT_EQ(count_groups(plan, GroupKind::kMatmulEpilogue, false), 1) << plan.to_string();
      const std::vector<Tensor> expected = interpret(t, inputs);
      // run_gemm takes matmul_sum's products in the other order every other
      // run where that changes no bit: each run has the kernel's bits
      for (int run = 0; run < 3; ++run) {
        const std::vector<Tensor> actual = plan.run(inputs, {});
        ASSERT_EQ(actual.size(), 1u);
        expect_tensors_close(actual[0], expected[0], 0, 0);
      }
    }
  }
}

// A node-by-node step that names one value twice (x @ x, then x @ x + x in
// the epilogue's matmul) gets it twice, and the value is still there for the
// steps after it and for a second run.
TEST(FusedPlan, AStepNamingOneValueTwice) {
  Trace t;
  const Tensor x = testing::random({9, 9}, kFloat32, 16);
  const ValueId xv = t.add_input(x);
  const ValueId square = t.add_node1(op("matmul"), {xv, xv});
  const ValueId again = t.add_node1(op("matmul"), {square, square});
  t.mark_output(t.add_node1(op("add"), {again, xv}, {Scalar(1)}));
  t.mark_output(square);
  auto plan = expect_matches_interpreter(t, {x});
  EXPECT_EQ(count_groups(*plan, GroupKind::kMatmulEpilogue, false), 1) << plan->to_string();
}

TEST(FusedPlan, ViewsInsideTheTraceAndSeveralOutputs) {
  Trace t;
  const Tensor x = testing::random({8, 12}, kFloat32, 16), y = testing::random({12, 8}, kFloat32, 17);
  const ValueId xv = t.add_input(x), yv = t.add_input(y);
  const ValueId e = t.add_node1(op("exp"), {xv});
  const ValueId tr = t.add_node1(op("transpose"), {e}, {int64_t(0), int64_t(1)});   // a view of an arena value
  const ValueId m = t.add_node1(op("mul"), {tr, yv});
  const ValueId sl = t.add_node1(op("slice"), {yv}, {int64_t(1), int64_t(2), int64_t(8), int64_t(3)});
  const ValueId part = t.add_node1(op("as_strided"), {m}, {DimVector{3, 4}, DimVector{8, 2}, int64_t(5)});
  t.mark_output(t.add_node1(op("sin"), {m}));
  t.mark_output(m);    // an output also read by another group
  t.mark_output(tr);   // an output that is a view
  t.mark_output(sl);   // a view of an input
  t.mark_output(yv);   // an input
  t.mark_output(t.add_node1(op("neg"), {part}));
  auto plan = expect_matches_interpreter(t, {x, y});
  EagerGuard eager;
  const std::vector<Tensor> expected = interpret(t, {x, y}, {});
  const Tensor x2 = testing::random({8, 12}, kFloat32, 18);
  const std::vector<Tensor> out = plan->run({x, y}, {});
  // an output the plan computes is a contiguous tensor of its own, for the recorder to adopt
  EXPECT_TRUE(out[0].is_contiguous() && out[0].storage_offset() == 0);
  EXPECT_EQ(out[0].storage().use_count(), 1);
  EXPECT_EQ(out[0].storage()->nbytes(), out[0].nbytes());
  EXPECT_TRUE(out[4].is_same(y) || out[4].storage() == y.storage());
  // the view of an arena value keeps its memory: the next run, which would take the same block, leaves it alone
  const std::vector<Tensor> other = plan->run({x2, y}, {});
  expect_tensors_close(out[2], expected[2], 0, 0);
}

TEST(FusedPlan, ABroadcastInputIsNotOverwrittenByTheGroupReadingIt) {
  // exp(a) and the chain's output are both live while the chain runs tile by tile,
  // though no node reads exp(a) after the mul: they must not share bytes
  Trace t;
  const Tensor a = testing::random({128}, kFloat32, 18), y = testing::random({64, 128}, kFloat32, 19);
  const ValueId av = t.add_input(a), yv = t.add_input(y);
  const ValueId ea = t.add_node1(op("exp"), {av});
  const ValueId w = t.add_node1(op("neg"), {t.add_node1(op("mul"), {yv, ea})});
  t.mark_output(t.add_node1(op("sum"), {w}, {DimVector{0}, false, kFloat32}));
  t.mark_output(t.add_node1(op("amax"), {w}, {DimVector{0}, false}));
  auto plan = expect_matches_interpreter(t, {a, y});
  const MemoryPlan& m = plan->memory();
  ASSERT_GE(m.offsets[size_t(ea)], 0);
  ASSERT_GE(m.offsets[size_t(w)], 0);
  EXPECT_TRUE(m.offsets[size_t(ea)] + m.bytes[size_t(ea)] <= m.offsets[size_t(w)] ||
              m.offsets[size_t(w)] + m.bytes[size_t(w)] <= m.offsets[size_t(ea)])
      << m.to_string(plan->trace());
}

TEST(FusedPlan, ReplaysWithOtherScalars) {
  auto program = [](double lr, double decay) {
    Trace t;
    const ValueId p = t.add_input(kFloat32, {50, 90}, {90, 1});
    const ValueId g = t.add_input(kFloat32, {50, 90}, {90, 1});
    const ValueId decayed = t.add_node1(op("mul.Scalar"), {p}, {Scalar(decay)});
    t.mark_output(t.add_node1(op("add"), {decayed, g}, {Scalar(-lr)}));
    return t;
  };
  const Tensor p = testing::random({50, 90}, kFloat32, 20), g = testing::random({50, 90}, kFloat32, 21);
  const Trace first = program(0.1, 0.99), next = program(0.5, 0.9);
  auto plan = expect_matches_interpreter(first, {p, g});
  EagerGuard eager;
  const Tensor replayed = plan->run({p, g}, next.scalars())[0];
  expect_tensors_close(replayed, p * 0.9 - g * 0.5);
  expect_tensors_close(replayed, interpret(next, {p, g})[0], 0, 0);
  // one of the group's two Scalars differs (the other node keeps its recorded
  // attributes), then neither: no binding outlives its run
  for (const Trace& other : {program(0.1, 0.9), program(0.5, 0.99), first}) {
    const Tensor r = plan->run({p, g}, other.scalars())[0];
    expect_tensors_close(r, interpret(other, {p, g})[0]);  // a fused multiply-add rounds once
  }
}

TEST(FusedPlan, InputsAtOtherStorageOffsets) {
  Trace t;
  const Tensor big = testing::random({40, 30}, kFloat32, 22), b = testing::random({30}, kFloat32, 23);
  const ValueId xv = t.add_input(kFloat32, {8, 30}, {30, 1}), bv = t.add_input(b);
  const ValueId e = t.add_node1(op("exp"), {t.add_node1(op("add"), {xv, bv}, {Scalar(1)})});
  t.mark_output(t.add_node1(op("sum"), {e}, {DimVector{1}, false, kFloat32}));
  t.mark_output(t.add_node1(op("slice"), {xv}, {int64_t(0), int64_t(1), int64_t(4), int64_t(1)}));
  EagerGuard eager;
  const FusedPlan plan(t);
  for (int64_t offset : {0, 3, 17, 32}) {
    const Tensor x = big.narrow(0, offset, 8);  // the same storage, another offset
    const std::vector<Tensor> out = plan.run({x, b}, {});
    expect_tensors_close(out[0], (x + b).exp().sum({1}));
    expect_tensors_close(out[1], x.narrow(0, 1, 3), 0, 0);
  }
}

// A random pointwise program over broadcast inputs of random layouts and
// dtypes, with random outputs, closed by a reduction half the time.
Trace random_program(uint64_t seed, std::vector<Tensor>& inputs) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  const int64_t sizes[] = {1, 2, 5, 17, 64, 129};
  DimVector shape(1 + pick(3));
  for (int64_t& d : shape) d = sizes[pick(6)];
  Trace t;
  std::vector<ValueId> pool;
  for (size_t i = 0, n = 1 + pick(3); i < n; ++i) {
    DimVector s(shape.begin() + pick(shape.size()), shape.end());  // drop leading dims
    for (int64_t& d : s) d = pick(4) == 0 ? 1 : d;
    const DType dtype = pick(4) == 0 ? kFloat64 : kFloat32;
    inputs.push_back(testing::with_layout(testing::random(s, dtype, seed * 10 + i), testing::kLayouts[pick(3)]));
    pool.push_back(t.add_input(inputs.back()));
  }
  const char* unary[] = {"tanh", "sin", "sigmoid", "neg", "abs", "relu", "cos"};
  const char* binary[] = {"add", "mul", "maximum"};
  for (size_t k = 0, n = 2 + pick(6); k < n; ++k) {
    const ValueId a = pool[pick(pool.size())], b = pool[pick(pool.size())];
    if (pick(2) == 0) {
      pool.push_back(t.add_node1(op(unary[pick(7)]), {a}));
    } else {
      const char* name = binary[pick(3)];
      pool.push_back(t.add_node1(op(name), {a, b}, std::string_view(name) == "add" ? Attrs{Scalar(-0.5)} : Attrs{}));
    }
  }
  t.mark_output(pool.back());
  if (pick(2) == 0) t.mark_output(pool[pool.size() / 2]);
  const Value& last = t.value(pool.back());
  if (pick(2) == 0 && !last.shape.empty()) {
    const int64_t dim = pick(2) == 0 ? -1 : 0;
    t.mark_output(t.add_node1(op(pick(2) == 0 ? "sum" : "mean"), {t.add_node1(op("exp"), {pool.back()})},
                              {DimVector{dim}, pick(2) == 0, last.dtype}));
  }
  return t;
}

TEST(FusedPlan, RandomProgramsMatchTheInterpreter) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    std::vector<Tensor> inputs;
    Trace t;
    {
      EagerGuard eager;
      t = random_program(seed, inputs);
    }
    SCOPED_TRACE(::testing::Message() << "seed " << seed << "\n" << t.to_string());
    expect_matches_interpreter(t, inputs);
  }
}

// Through the public API in traced mode: once the program is hot, its trace
// runs as a FusedPlan and gives what eager mode gives.
TEST(FusedPlan, HotTracesOfThePublicApiMatchEager) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  Tensor x, w, b;
  {
    EagerGuard eager;
    x = testing::random({24, 40}, kFloat32, 30);
    w = testing::random({40, 10}, kFloat32, 31);
    b = testing::random({10}, kFloat32, 32);
  }
  // a shape no other test uses, so the signature is new to the process-wide cache
  auto program = [&](double scale) {
    const Tensor h = (x.matmul(w) + b).relu() * scale;
    const Tensor centred = h - h.mean({1}, true);
    return std::vector<Tensor>{softmax(centred, -1), centred.exp().sum({0}), h.t()};
  };
  std::vector<Tensor> expected;
  {
    EagerGuard eager;
    expected = program(0.75);
  }
  ASSERT_TRUE(is_recording());
  const int64_t compiles = global_trace_cache().stats().compiles;
  const int runs = std::max(3, knobs().hot + 1);
  // each run is one trace (the comparison runs eagerly: its own ops would be traces too)
  for (int run = 0; run < runs; ++run) {
    const std::vector<Tensor> got = program(0.75);
    EagerGuard eager;
    for (size_t i = 0; i < got.size(); ++i) expect_tensors_close(got[i], expected[i], 1e-5, 1e-5);
  }
  EXPECT_EQ(global_trace_cache().stats().compiles, compiles + 1);
  // the compiled plan replays a new Scalar without compiling again
  std::vector<Tensor> rescaled;
  {
    EagerGuard eager;
    rescaled = program(2.5);
  }
  const std::vector<Tensor> got = program(2.5);
  EagerGuard eager;
  for (size_t i = 0; i < got.size(); ++i) expect_tensors_close(got[i], rescaled[i], 1e-5, 1e-5);
  EXPECT_EQ(global_trace_cache().stats().compiles, compiles + 1);
}

}  // namespace
}  // namespace nnvm::trace
