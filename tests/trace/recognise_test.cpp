// Recognition of composite ops: each decomposed form becomes its single op
// with the chain's results (interpret before == after on random inputs, up to
// reassociation), and every near miss is left alone with a reason.
#include <algorithm>
#include <cmath>

#include "nnvm/nnvm.h"
#include "nnvm/trace/recorder.h"
#include "recognise_util.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_tensors_close;

constexpr double kInvSqrt2 = 0.70710678118654752440;

constexpr DType kDtypes[] = {kFloat32, kFloat64};

// ---- softmax ----

Trace softmax_chain(DType dtype, DimVector shape, int64_t max_dim, int64_t sum_dim,
                    ScalarBinding scalars = ScalarBinding::kCompileTime) {
  Builder b{{}, scalars};
  const ValueId x = b.input(dtype, shape);
  const ValueId e = b.exp(b.sub(x, b.amax(x, max_dim)));
  b.t.mark_output(b.div(e, b.sum(e, sum_dim)));
  return std::move(b.t);
}

TEST(Recognise, SoftmaxOverAnyDim) {
  for (DType dtype : kDtypes) {
    for (auto [shape, dim] : {std::pair{DimVector{7, 13}, int64_t(-1)}, {DimVector{3, 5, 11}, 1}, {DimVector{9, 4}, 0}}) {
      Trace t = softmax_chain(dtype, shape, dim, dim);
      const Tensor x = testing::random(shape, dtype, 1, -30, 30);
      const RecogniseReport report = recognise_and_compare(t, {x});
      EXPECT_EQ(report.to_string(), "node 4: softmax\n");
      ASSERT_EQ(ops(t), "softmax");
      EXPECT_EQ(t.nodes()[0].attrs.i(0), dim < 0 ? dim + int64_t(shape.size()) : dim);
      EagerGuard eager;
      expect_tensors_close(interpret(t, {x})[0], softmax(x, dim), rtol(dtype), rtol(dtype));
    }
  }
}

// A recorded trace: the -1 of x - max is a run-time Scalar. softmax does not
// depend on it (the shift cancels), so a replay with another alpha still gets
// the chain's value wherever the chain does not overflow.
TEST(Recognise, SoftmaxWithARecordedSignIsShiftInvariant) {
  Trace t = softmax_chain(kFloat64, {5, 8}, 1, 1, ScalarBinding::kRunTime);
  const Trace chain = t;
  const Tensor x = testing::random({5, 8}, kFloat64, 2, -3, 3);
  recognise_and_compare(t, {x});
  ASSERT_EQ(ops(t), "softmax");
  std::vector<Scalar> plus = chain.scalars();
  ASSERT_EQ(plus.size(), 1u);
  plus[0] = Scalar(int64_t(1));
  expect_tensors_close(interpret(t, {x}, plus)[0], interpret(chain, {x}, plus)[0], 1e-12, 1e-12);
}

TEST(Recognise, SoftmaxNearMisses) {
  Builder unstable;
  const ValueId x = unstable.input(kFloat32, {4, 6});
  const ValueId e = unstable.exp(x);
  unstable.t.mark_output(unstable.div(e, unstable.sum(e, 1)));
  expect_declined(unstable.t, "softmax", "exp(x) / sum(exp(x)) without the max subtracted overflows");

  expect_declined(softmax_chain(kFloat32, {4, 6}, 1, 0), "softmax", "the sum reduces dims [0] but the max dims [1]");

  for (ScalarBinding scalars : {ScalarBinding::kCompileTime, ScalarBinding::kRunTime}) {
    Builder plus{{}, scalars};  // x + max, not the stabilised form; recorded, today's alpha decides
    const ValueId y = plus.input(kFloat32, {4, 6});
    const ValueId e2 = plus.exp(plus.add(y, plus.amax(y, 1)));
    plus.t.mark_output(plus.div(e2, plus.sum(e2, 1)));
    expect_declined(plus.t, "softmax", "x + 1 * max in node 1 (add) is not the max subtraction");
  }

  Builder reused;  // exp(x - max) is also an output
  const ValueId z = reused.input(kFloat64, {4, 6});
  const ValueId e3 = reused.exp(reused.sub(z, reused.amax(z, 1)));
  reused.t.mark_output(reused.div(e3, reused.sum(e3, 1)));
  reused.t.mark_output(e3);
  expect_declined(reused.t, "softmax", "node 2 (exp) is also used outside the pattern");

  Builder half;
  const ValueId h = half.input(kFloat16, {4, 6});
  const ValueId e4 = half.exp(half.sub(h, half.amax(h, 1)));
  half.t.mark_output(half.div(e4, half.sum(e4, 1)));
  expect_declined(half.t, "softmax", "x is float16: only float32 and float64");
}

// ---- log_softmax ----

TEST(Recognise, LogSoftmaxBothForms) {
  for (DType dtype : kDtypes) {
    const Tensor in = testing::random({6, 9, 5}, dtype, 3, -40, 40);
    {  // x - logsumexp(x)
      Builder b;
      const ValueId x = b.input(dtype, {6, 9, 5});
      b.t.mark_output(b.sub(x, b.node("logsumexp", {x}, {DimVector{-2}, true})));
      recognise_and_compare(b.t, {in});
      ASSERT_EQ(ops(b.t), "log_softmax");
      EXPECT_EQ(b.t.nodes()[0].attrs.i(0), 1);
    }
    for (bool shared : {true, false}) {  // x - m - log(sum(exp(x - m))), x - m written once or twice
      Builder b;
      const ValueId x = b.input(dtype, {6, 9, 5});
      const ValueId xm = b.sub(x, b.amax(x, 2));
      const ValueId inner = shared ? xm : b.sub(x, b.amax(x, 2));
      b.t.mark_output(b.sub(xm, b.node("log", {b.sum(b.exp(inner), 2)})));
      recognise_and_compare(b.t, {in});
      ASSERT_EQ(ops(b.t), "log_softmax");
      EagerGuard eager;
      expect_tensors_close(interpret(b.t, {in})[0], log_softmax(in, 2), rtol(dtype), rtol(dtype));
    }
  }
}

TEST(Recognise, LogSoftmaxNearMisses) {
  {  // recorded: the -1 of x - logsumexp is a pinned constant (trace/ir.h), part of the key
    Builder recorded{{}, ScalarBinding::kRunTime};
    const ValueId x = recorded.input(kFloat32, {3, 7});
    recorded.t.mark_output(recorded.sub(x, recorded.node("logsumexp", {x}, {DimVector{1}, true})));
    recognise_and_compare(recorded.t, {testing::random({3, 7}, kFloat32, 50)});
    EXPECT_EQ(ops(recorded.t), "log_softmax");
  }
  {  // recorded with a sign that is not pinned: a later trace may bring another
    Builder recorded{{}, ScalarBinding::kRunTime};
    const ValueId x = recorded.input(kFloat32, {3, 7});
    recorded.t.mark_output(
        recorded.node("add", {x, recorded.node("logsumexp", {x}, {DimVector{1}, true})}, {Scalar(int64_t(-4))}));
    expect_declined(recorded.t, "log_softmax",
                    "the sign of x - logsumexp(x) in node 1 (add) is a run-time Scalar (now -4): a later trace");
  }

  Builder unstable;
  const ValueId y = unstable.input(kFloat32, {3, 7});
  unstable.t.mark_output(unstable.sub(y, unstable.node("log", {unstable.sum(unstable.exp(y), 1)})));
  expect_declined(unstable.t, "log_softmax", "log(sum(exp(x))) without the max subtracted on both sides");

  Builder dims;
  const ValueId z = dims.input(kFloat64, {3, 7});
  const ValueId zm = dims.sub(z, dims.amax(z, 1));
  dims.t.mark_output(dims.sub(zm, dims.node("log", {dims.sum(dims.exp(zm), 0)})));
  expect_declined(dims.t, "log_softmax", "node 3 (sum) reduces dims [0], not [1]");
}

// ---- layer_norm ----

enum class Variance { kMulMean, kSquareMean, kPowMean, kVar };

// xc = x - mean; v; xc / sqrt(v + eps) or xc * rsqrt(v + eps); then * w, + b
ValueId layer_norm_chain(Builder& b, ValueId x, DimVector dims, Variance variance, bool rsqrt, double eps,
                         ValueId w = -1, ValueId bias = -1) {
  const ValueId xc = b.sub(x, b.mean(x, dims));
  ValueId v;
  switch (variance) {
    case Variance::kMulMean: v = b.mean(b.mul(xc, xc), dims); break;
    case Variance::kSquareMean: v = b.mean(b.node("square", {xc}), dims); break;
    case Variance::kPowMean: v = b.mean(b.node("pow.Scalar", {xc}, {Scalar(int64_t(2))}), dims); break;
    case Variance::kVar: v = b.node("var", {x}, {dims, true, int64_t(0)}); break;
  }
  const ValueId ve = b.plus(v, eps);
  ValueId y = rsqrt ? b.mul(b.node("rsqrt", {ve}), xc) : b.div(xc, b.node("sqrt", {ve}));
  if (w >= 0) y = b.mul(w, y);
  if (bias >= 0) y = b.add(y, bias);
  return y;
}

TEST(Recognise, LayerNormEveryForm) {
  int seed = 10;
  for (DType dtype : kDtypes) {
    for (Variance variance : {Variance::kMulMean, Variance::kSquareMean, Variance::kPowMean, Variance::kVar}) {
      for (int affine = 0; affine < 4; ++affine) {
        const bool rsqrt = (affine + int(variance)) % 2 == 1, has_w = affine & 1, has_b = affine & 2;
        Builder b;
        const ValueId x = b.input(dtype, {3, 5, 7});
        const ValueId w = has_w ? b.input(dtype, {5, 7}) : -1;
        const ValueId bias = has_b ? b.input(dtype, {5, 7}) : -1;
        b.t.mark_output(layer_norm_chain(b, x, {-1, 1}, variance, rsqrt, 1e-3, w, bias));
        std::vector<Tensor> in;
        in.reserve(3);
        in.push_back(testing::random({3, 5, 7}, dtype, uint64_t(++seed), -3, 5));
        if (has_w) in.push_back(testing::random({5, 7}, dtype, uint64_t(++seed)));
        if (has_b) in.push_back(testing::random({5, 7}, dtype, uint64_t(++seed)));
        const RecogniseReport report = recognise_and_compare(b.t, in);
        ASSERT_EQ(ops(b.t), "layer_norm") << report.to_string() << b.t.to_string();
        const Node& n = b.t.nodes()[0];
        EXPECT_EQ(IntArrayRef(n.attrs.ints(0)), IntArrayRef(DimVector{5, 7}));
        EXPECT_EQ(n.attrs.b(1), has_w);
        EXPECT_EQ(n.attrs.b(2), has_b);
        EXPECT_EQ(n.attrs.d(3), 1e-3);
        EagerGuard eager;
        const Tensor want = layer_norm(in[0], {5, 7}, has_w ? in[1] : Tensor(), has_b ? in.back() : Tensor(), 1e-3);
        expect_tensors_close(interpret(b.t, in)[0], want, rtol(dtype), rtol(dtype));
      }
    }
  }
}

// A copy of `t` in which Scalar attribute `attr` of node `n` is a compile-time
// value, as a signature that keyed its value would make it.
Trace pin_scalar(const Trace& t, size_t n, int32_t attr) {
  Trace out;
  out.copy_scalars_from(t);
  std::vector<ValueId> mapped(t.values().size(), -1);
  for (ValueId v : t.inputs()) {
    const Value& x = t.value(v);
    mapped[size_t(v)] = out.add_input(x.dtype, x.shape, x.strides);
  }
  for (size_t k = 0; k < t.nodes().size(); ++k) {
    Node like = t.nodes()[k];
    if (k == n)
      like.slots.erase(std::remove_if(like.slots.begin(), like.slots.end(),
                                      [&](const ScalarSlot& s) { return s.attr == attr; }),
                       like.slots.end());
    std::vector<ValueId> ins;
    for (ValueId v : like.inputs) ins.push_back(mapped[size_t(v)]);
    mapped[size_t(like.outputs[0])] = out.copy_node(like, ins)[0];
  }
  for (ValueId v : t.outputs()) out.mark_output(mapped[size_t(v)]);
  return out;
}

// eps is an argument of the new node: replaying another eps uses it.
TEST(Recognise, LayerNormKeepsARunTimeEps) {
  Builder b;
  const ValueId x = b.input(kFloat32, {4, 33});
  const ValueId xc = b.sub(x, b.mean(x, {1}));
  const ValueId v = b.mean(b.mul(xc, xc), {1});
  b.scalars = ScalarBinding::kRunTime;
  const ValueId ve = b.plus(v, 1e-5);  // eps and its alpha recorded; the alpha is pinned below
  b.scalars = ScalarBinding::kCompileTime;
  b.t.mark_output(b.div(xc, b.node("sqrt", {ve})));
  Trace t = pin_scalar(b.t, size_t(b.t.value(ve).node), 1);
  const Trace chain = t;
  const Tensor in = testing::random({4, 33}, kFloat32, 20, -0.2, 0.2);  // var ~ 0.01: eps matters
  recognise_and_compare(t, {in});
  ASSERT_EQ(ops(t), "layer_norm");
  ASSERT_EQ(t.nodes()[0].slots.size(), 1u);
  EXPECT_EQ(t.nodes()[0].slots[0].attr, 3);
  std::vector<Scalar> replay = chain.scalars();
  ASSERT_EQ(replay.size(), 2u);  // eps, and the pinned alpha's now unused slot
  replay[0] = Scalar(0.5);
  const Tensor got = interpret(t, {in}, replay)[0];
  expect_tensors_close(got, interpret(chain, {in}, replay)[0], 2e-5, 2e-5);
  EagerGuard eager;
  expect_tensors_close(got, layer_norm(in, {33}, Tensor(), Tensor(), 0.5), 2e-5, 2e-5);
  EXPECT_GT((got - interpret(t, {in})[0]).abs().max().item<float>(), 0.1f);
}

TEST(Recognise, LayerNormNearMisses) {
  {  // recorded: the -1 of x - mean and the 1 of + eps are pinned constants, eps a run-time one
    Builder b{{}, ScalarBinding::kRunTime};
    const ValueId x = b.input(kFloat32, {4, 6});
    b.t.mark_output(layer_norm_chain(b, x, {1}, Variance::kMulMean, false, 1e-5));
    recognise_and_compare(b.t, {testing::random({4, 6}, kFloat32, 51)});
    EXPECT_EQ(ops(b.t), "layer_norm");
  }
  {
    Builder b;
    const ValueId x = b.input(kFloat32, {4, 6, 5});
    b.t.mark_output(layer_norm_chain(b, x, {1}, Variance::kVar, false, 1e-5));
    expect_declined(b.t, "layer_norm", "layer_norm normalises trailing dims; the mean reduces dims [1] of a rank-3");
  }
  {
    Builder b;
    const ValueId x = b.input(kFloat32, {4, 6});
    const ValueId xc = b.sub(x, b.mean(x, {1}));
    const ValueId v = b.node("var", {x}, {DimVector{1}, true, int64_t(1)});
    b.t.mark_output(b.div(xc, b.node("sqrt", {b.plus(v, 1e-5)})));
    expect_declined(b.t, "layer_norm", "var with correction 1 is not layer_norm's biased variance");
  }
  {  // the mean is an output too
    Builder b;
    const ValueId x = b.input(kFloat64, {4, 6});
    b.t.mark_output(layer_norm_chain(b, x, {1}, Variance::kSquareMean, true, 1e-5));
    b.t.mark_output(ValueId(b.t.nodes()[0].outputs[0]));
    expect_declined(b.t, "layer_norm", "node 0 (mean) is also used outside the pattern");
  }
}

// A weight that only broadcasts to the normalised shape stays a multiply.
TEST(Recognise, LayerNormLeavesABroadcastWeightOutside) {
  Builder b;
  const ValueId x = b.input(kFloat32, {4, 6});
  const ValueId w = b.input(kFloat32, {1, 6});
  b.t.mark_output(layer_norm_chain(b, x, {1}, Variance::kMulMean, false, 1e-5, w));
  const RecogniseReport report =
      recognise_and_compare(b.t, {testing::random({4, 6}, kFloat32, 30), testing::random({1, 6}, kFloat32, 31)});
  EXPECT_EQ(ops(b.t), "layer_norm mul");
  EXPECT_FALSE(b.t.nodes()[0].attrs.b(1));
  EXPECT_EQ(report.applied(), 1);
}

// ---- gelu, silu ----

TEST(Recognise, GeluExactAndTanh) {
  for (DType dtype : kDtypes) {
    const Tensor in = testing::random({5, 17}, dtype, 40, -6, 6);
    for (int form = 0; form < 2; ++form) {  // 0.5 * x * (1 + erf(x * c)), (x * (1 + erf(x / sqrt 2))) * 0.5
      Builder b;
      const ValueId x = b.input(dtype, {5, 17});
      const ValueId z = form == 0 ? b.times(x, kInvSqrt2) : b.node("div.Scalar", {x}, {Scalar(std::sqrt(2.0))});
      const ValueId a = b.plus(b.node("erf", {z}), 1);
      b.t.mark_output(form == 0 ? b.mul(b.times(x, 0.5), a) : b.times(b.mul(x, a), 0.5));
      recognise_and_compare(b.t, {in});
      ASSERT_EQ(ops(b.t), "gelu");
      EagerGuard eager;
      expect_tensors_close(interpret(b.t, {in})[0], gelu(in), rtol(dtype), rtol(dtype));
    }
    for (bool pow : {true, false}) {  // x^3 as x.pow(3) or x * (x * x)
      Builder b;
      const ValueId x = b.input(dtype, {5, 17});
      const ValueId cube = pow ? b.node("pow.Scalar", {x}, {Scalar(int64_t(3))}) : b.mul(x, b.mul(x, x));
      const ValueId u = b.times(b.add(x, b.times(cube, 0.044715)), std::sqrt(2.0 / M_PI));
      b.t.mark_output(b.mul(b.plus(b.node("tanh", {u}), 1), b.times(x, 0.5)));
      recognise_and_compare(b.t, {in});
      ASSERT_EQ(ops(b.t), "gelu_tanh");
      EagerGuard eager;
      expect_tensors_close(interpret(b.t, {in})[0], gelu(in, "tanh"), rtol(dtype), rtol(dtype));
    }
  }
}

Trace gelu_chain(DType dtype, double inv_sqrt2, ScalarBinding scalars = ScalarBinding::kCompileTime) {
  Builder b{{}, scalars};
  const ValueId x = b.input(dtype, {8});
  // one statement per node: the order of a call's arguments is the compiler's choice
  const ValueId scaled = b.times(x, inv_sqrt2);
  const ValueId erf = b.node("erf", {scaled});
  const ValueId half = b.times(x, 0.5);
  b.t.mark_output(b.mul(half, b.plus(erf, 1)));
  return std::move(b.t);
}

// A constant counts when the kernels see the same number: float32 rounds it.
TEST(Recognise, GeluConstantsMustBeCompileTimeAndExact) {
  Trace recorded = gelu_chain(kFloat32, kInvSqrt2, ScalarBinding::kRunTime);  // pinned constants
  recognise_and_compare(recorded, {testing::random({8}, kFloat32, 42)});
  EXPECT_EQ(ops(recorded), "gelu");
  expect_declined(gelu_chain(kFloat32, 0.7071, ScalarBinding::kRunTime), "gelu",
                  "1/sqrt(2) in node 0 (mul.Scalar) is a run-time Scalar (now 0.7071): a later trace with this "
                  "signature may bring another value");
  expect_declined(gelu_chain(kFloat64, 0.7071), "gelu", "1/sqrt(2) in node 0 (mul.Scalar) is 0.7071, not 0.707107");
  const double as_float = double(float(kInvSqrt2));
  Trace f32 = gelu_chain(kFloat32, as_float);
  recognise_and_compare(f32, {testing::random({8}, kFloat32, 41)});
  EXPECT_EQ(ops(f32), "gelu");
  expect_declined(gelu_chain(kFloat64, as_float), "gelu", "1/sqrt(2) in node 0 (mul.Scalar) is 0.707107, not");
}

TEST(Recognise, Silu) {
  for (DType dtype : kDtypes) {
    for (bool sigmoid_first : {true, false}) {
      Builder b{{}, ScalarBinding::kRunTime};  // no Scalars: recorded traces qualify
      const ValueId x = b.input(dtype, {3, 19});
      const ValueId s = b.node("sigmoid", {x});
      b.t.mark_output(sigmoid_first ? b.mul(s, x) : b.mul(x, s));
      const Tensor in = testing::random({3, 19}, dtype, 50, -9, 9);
      recognise_and_compare(b.t, {in});
      ASSERT_EQ(ops(b.t), "silu");
      EagerGuard eager;
      expect_tensors_close(interpret(b.t, {in})[0], silu(in), rtol(dtype), rtol(dtype));
    }
  }
  Builder other;  // sigmoid of another tensor
  const ValueId x = other.input(kFloat32, {4}), y = other.input(kFloat32, {4});
  other.t.mark_output(other.mul(x, other.node("sigmoid", {y})));
  RecogniseReport report;
  EXPECT_EQ(recognise(other.t, &report), 0);
  EXPECT_TRUE(report.decisions.empty()) << report.to_string();

  Builder reused;
  const ValueId z = reused.input(kFloat32, {4});
  const ValueId s = reused.node("sigmoid", {z});
  reused.t.mark_output(reused.mul(z, s));
  reused.t.mark_output(reused.exp(s));
  expect_declined(reused.t, "silu", "node 0 (sigmoid) is also used outside the pattern");

  Builder integral;
  const ValueId i = integral.input(kInt32, {4});
  integral.t.mark_output(integral.mul(i, integral.node("sigmoid", {i})));
  expect_declined(integral.t, "silu", "x is int32");
}

// Patterns feeding each other are each replaced; x, used elsewhere, stays.
TEST(Recognise, SeveralPatternsInOneTrace) {
  Builder b;
  const ValueId x = b.input(kFloat64, {6, 10});
  const ValueId act = b.mul(x, b.node("sigmoid", {x}));
  const ValueId e = b.exp(b.sub(act, b.amax(act, 1)));
  const ValueId p = b.div(e, b.sum(e, 1));
  b.t.mark_output(layer_norm_chain(b, p, {1}, Variance::kVar, true, 1e-5));
  b.t.mark_output(b.exp(x));
  const RecogniseReport report = recognise_and_compare(b.t, {testing::random({6, 10}, kFloat64, 60)});
  EXPECT_EQ(ops(b.t), "silu softmax layer_norm exp");
  EXPECT_EQ(report.to_string(), "node 1: silu\nnode 6: softmax\nnode 12: layer_norm\n");
  EXPECT_EQ(recognise(b.t), 0);
}

// ---- through the public API ----

bool has_op(const Trace& t, std::string_view name) {
  for (const Node& n : t.nodes())
    if (n.op->name == name) return true;
  return false;
}

// A softmax written with ops, in traced mode: hot from the second run, its
// plan runs the one softmax op and gives what eager mode gives.
TEST(Recognise, DecomposedSoftmaxRunsAsOneOpOnceHot) {
  if (mode() != Mode::Traced) GTEST_SKIP() << "traced mode only";
  Tensor x, expected;
  auto program = [&] {
    const Tensor e = (x - x.amax({1}, true)).exp();
    return e / e.sum({1}, true);
  };
  {
    EagerGuard eager;
    x = testing::random({9, 41}, kFloat32, 70, -50, 50);  // a shape no other test uses
    expected = program();
  }
  std::vector<Trace> flushed;
  mark_step();
  set_flush_observer([&](const Trace& t) { flushed.push_back(t); });
  const int64_t compiles = global_trace_cache().stats().compiles;
  for (int run = 0; run < std::max(3, knobs().hot + 1); ++run) {
    const Tensor got = program();
    EagerGuard eager;
    expect_tensors_close(got, expected, 1e-5, 1e-6);
  }
  set_flush_observer(nullptr);
  EXPECT_EQ(global_trace_cache().stats().compiles, compiles + 1);
  ASSERT_FALSE(flushed.empty());
  EXPECT_TRUE(has_op(flushed.back(), "exp"));
  const std::shared_ptr<const Plan> plan = compile_plan(flushed.back());
  EXPECT_EQ(ops(plan->trace()), "softmax") << plan->trace().to_string();
}

}  // namespace
}  // namespace nnvm::trace
