// Model calls that record nothing (docs/MODELS.md, "Calls that record
// nothing"): once two calls with the same input layouts ran the same
// compiled plans, later ones run them at once. Checked: no node is recorded
// then, the outputs are the recording calls' bits, and whatever could make
// a capture wrong (values read on the host, random ops, weights changed in
// place or re-pointed, gradients, eager mode) makes the call record instead.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "nnvm/nnvm.h"
#include "model_node.h"
#include "nnvm/trace/recorder.h"

namespace nnvm {
namespace {

struct TracedMode {
  Mode saved = mode();
  TracedMode() { set_mode(Mode::Traced); }
  ~TracedMode() { set_mode(saved); }
};

using testing::mlp;

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  const size_t bytes = size_t(x.numel()) * itemsize(x.dtype());
  return bytes == 0 || std::memcmp(x.data_ptr(), y.data_ptr(), bytes) == 0;  // (an empty tensor may have no memory)
}

// Calls m until it replays (at most `calls` times); whether it did.
bool warm(const Model& m, const std::vector<Tensor>& inputs, int calls = 8) {
  const int64_t before = m.calls_replayed();
  for (int i = 0; i < calls && m.calls_replayed() == before; ++i) m(inputs);
  return m.calls_replayed() > before;
}

TEST(ModelCapture, RepeatedCallsRecordNothingAndGiveTheRecordedBits) {
  TracedMode traced;
  NoGradGuard no_grad;
  manual_seed(3);
  Tensor w = randn({4, 3}), b = randn({3});
  Model m = mlp(w, b);
  for (int64_t batch : {5, 1, 0, 37}) {
    Tensor x = randn({batch, 4});
    const Tensor recorded = m({x})[0].clone();
    ASSERT_TRUE(warm(m, {x})) << "batch " << batch;
    const trace::RecorderStats before = trace::recorder_stats();
    const int64_t replayed = m.calls_replayed();
    Tensor y = m({x})[0];
    const trace::RecorderStats after = trace::recorder_stats();
    EXPECT_EQ(m.calls_replayed(), replayed + 1);
    EXPECT_EQ(after.flushes, before.flushes) << "a replayed call flushed a trace";
    EXPECT_EQ(after.nodes_flushed, before.nodes_flushed) << "a replayed call recorded nodes";
    EXPECT_TRUE(same_bits(y, recorded)) << "batch " << batch;
    EXPECT_TRUE(allclose(y, (x.matmul(w) + b).relu(), 1e-5, 1e-6));
    // New values in the same layout replay too.
    Tensor x2 = randn({batch, 4});
    EXPECT_TRUE(allclose(m({x2})[0], (x2.matmul(w) + b).relu(), 1e-5, 1e-6));
    EXPECT_EQ(m.calls_replayed(), replayed + 2);
  }
  // A lazy input (the caller's own pending ops) is computed first.
  Tensor x = randn({5, 4});
  Tensor lazy = x * 2.0 + 1.0;
  EXPECT_TRUE(allclose(m({lazy})[0], (((x * 2.0 + 1.0)).matmul(w) + b).relu(), 1e-5, 1e-6));
  // A non-contiguous input is another layout: its own capture, the same values.
  Tensor xt = randn({4, 6}).t();
  warm(m, {xt});
  EXPECT_TRUE(allclose(m({xt})[0], (xt.matmul(w) + b).relu(), 1e-5, 1e-6));
}

TEST(ModelCapture, OutputsThatAreViewsInputsOrInitializersKeepTheirValues) {
  TracedMode traced;
  NoGradGuard no_grad;
  GraphBuilder g;
  auto x = g.input("x", kFloat32, {3, 4});
  auto c = g.initializer("c", arange(12, kFloat32).reshape({3, 4}));
  auto r = g.op("Relu", {g.op("Sub", {x, c})});
  g.output(g.op("Reshape", {r, g.initializer("shape", tensor({int64_t(4), int64_t(3)}))}));
  g.output(g.op("Transpose", {r}, {{"perm", std::vector<int64_t>{1, 0}}}));
  g.output(g.op("Identity", {x}));
  g.output(c);
  g.output(r);
  Model m = g.build();
  Tensor in = randn({3, 4}) * 10.0;
  ASSERT_TRUE(warm(m, {in}));
  for (int i = 0; i < 3; ++i) {
    Tensor xi = randn({3, 4}) * 10.0;
    const Tensor want = (xi - arange(12, kFloat32).reshape({3, 4})).relu();
    std::vector<Tensor> out = m({xi});
    ASSERT_EQ(out.size(), 5u);
    EXPECT_TRUE(same_bits(out[0], want.reshape({4, 3})));
    EXPECT_TRUE(same_bits(out[1], want.t()));
    EXPECT_TRUE(same_bits(out[2], xi));
    EXPECT_TRUE(same_bits(out[3], arange(12, kFloat32).reshape({3, 4})));
    EXPECT_TRUE(same_bits(out[4], want));
  }
  EXPECT_GE(m.calls_replayed(), 3);
}

TEST(ModelCapture, InputValuesReadOnTheHostAreNeverCaptured) {
  TracedMode traced;
  NoGradGuard no_grad;
  // Reshape's target is an input: each call's values decide the shape.
  GraphBuilder g;
  auto x = g.input("x", kFloat32, {6});
  auto s = g.input("s", kInt64, {2});
  g.output(g.op("Reshape", {g.op("Neg", {x}), s}));
  Model m = g.build();
  Tensor in = arange(6, kFloat32);
  for (int i = 0; i < 10; ++i) {  // the same shape five times, then the other
    const int64_t rows = i < 5 ? 2 : 3, cols = 6 / rows;
    Tensor y = m({in, tensor({rows, cols})})[0];
    EXPECT_TRUE(same_bits(y, (-in).reshape({rows, cols}))) << i;
  }
  EXPECT_EQ(m.calls_replayed(), 0);

  // If's condition is an input.
  auto branch = [](const char* op) {
    auto sub = std::make_shared<Graph>();
    GraphBuilder b;
    b.output(b.op(op, {"x"}, {}));
    *sub = b.graph();
    return std::shared_ptr<const Graph>(sub);
  };
  GraphBuilder h;
  auto hx = h.input("x", kFloat32, {4});
  auto cond = h.input("cond", kBool, {});
  h.output(h.op("If", {cond}, {{"then_branch", branch("Neg")}, {"else_branch", branch("Abs")}}));
  Model mi = h.build();
  Tensor v = randn({4});
  for (int i = 0; i < 10; ++i) {
    const bool flag = i >= 5;
    Tensor y = mi({v, scalar_tensor(flag, kBool)})[0];
    EXPECT_TRUE(same_bits(y, flag ? -v : v.abs())) << i;
  }
  EXPECT_EQ(mi.calls_replayed(), 0);
}

TEST(ModelCapture, RandomOpsDrawNewValuesEveryCall) {
  TracedMode traced;
  NoGradGuard no_grad;
  GraphBuilder g;
  auto x = g.input("x", kFloat32, {64});
  g.output(g.op("Add", {x, g.op("RandomUniformLike", {x})}));
  Model m = g.build();
  Tensor in = zeros({64});
  Tensor last = m({in})[0].clone();
  for (int i = 0; i < 6; ++i) {
    Tensor y = m({in})[0].clone();
    EXPECT_FALSE(same_bits(y, last)) << "call " << i << " repeated the last call's draws";
    last = y;
  }
  EXPECT_EQ(m.calls_replayed(), 0);
}

TEST(ModelCapture, WeightsChangedInPlaceOrRepointedAreRead) {
  TracedMode traced;
  NoGradGuard no_grad;
  manual_seed(5);
  Tensor w = randn({4, 3}), b = randn({3});
  Model m = mlp(w, b);
  Tensor x = randn({2, 4});
  ASSERT_TRUE(warm(m, {x}));
  Tensor p = m.parameters()[0];
  p.mul_(2.0);  // an optimizer's step
  EXPECT_TRUE(allclose(m({x})[0], (x.matmul(p) + b).relu(), 1e-5, 1e-6));
  warm(m, {x});
  EXPECT_TRUE(allclose(m({x})[0], (x.matmul(p) + b).relu(), 1e-5, 1e-6));
  Tensor fresh = randn({4, 3});
  p.set_data(fresh);  // other memory
  EXPECT_TRUE(allclose(m({x})[0], (x.matmul(fresh) + b).relu(), 1e-5, 1e-6));

  // A step run at once on constants (integer initializers: indices plus one,
  // into memory of its own): computed again when an initializer changes.
  GraphBuilder g;
  auto in = g.input("x", kFloat32, {6});
  auto idx = g.initializer("idx", tensor({int64_t(0), int64_t(2)}));
  auto shifted = g.op("Add", {idx, g.initializer("one", tensor({int64_t(1)}))});
  g.output(g.op("Gather", {in, shifted}));
  Model mg = g.build();
  Tensor v = arange(6, kFloat32);
  ASSERT_TRUE(warm(mg, {v}));
  EXPECT_TRUE(same_bits(mg({v})[0], tensor({1.0f, 3.0f})));
  Tensor indices = mg.graph().initializers[0].second;
  indices.add_(2);
  EXPECT_TRUE(same_bits(mg({v})[0], tensor({3.0f, 5.0f})));
  warm(mg, {v});
  EXPECT_TRUE(same_bits(mg({v})[0], tensor({3.0f, 5.0f})));
}

TEST(ModelCapture, CallsThatNeedGradientsOrRunEagerlyRecord) {
  TracedMode traced;
  manual_seed(7);
  Model m = mlp(randn({4, 3}), randn({3}));
  Tensor x = randn({3, 4});
  {
    NoGradGuard no_grad;
    ASSERT_TRUE(warm(m, {x}));
  }
  for (Tensor& p : m.parameters()) p.requires_grad_(true);
  const int64_t replayed = m.calls_replayed();
  Tensor y = m({x})[0];
  EXPECT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_TRUE(m.parameters()[0].grad().defined());
  EXPECT_EQ(m.calls_replayed(), replayed);
  for (Tensor& p : m.parameters()) p.requires_grad_(false);
  set_mode(Mode::Eager);
  for (int i = 0; i < 4; ++i) m({x});
  EXPECT_EQ(m.calls_replayed(), replayed);
}

TEST(ModelCapture, InputsSharingMemoryOrInTheProgramsMemoryStayCorrect) {
  TracedMode traced;
  NoGradGuard no_grad;
  GraphBuilder g;
  auto a = g.input("a", kFloat32, {8});
  auto b = g.input("b", kFloat32, {8});
  g.output(g.op("Mul", {g.op("Add", {a, b}), b}));
  Model m = g.build();
  Tensor same = randn({8});
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(allclose(m({same, same})[0], (same + same) * same));
  // Memory the program owns, written between calls.
  std::vector<float> buffer(8, 1.0f);
  Tensor blob = from_blob(buffer.data(), {8}, TensorOptions().dtype(kFloat32));
  Tensor other = randn({8});
  for (int i = 0; i < 6; ++i) {
    std::fill(buffer.begin(), buffer.end(), float(i));
    EXPECT_TRUE(allclose(m({blob, other})[0], (full({8}, double(i)) + other) * other)) << i;
  }
}

TEST(ModelCapture, ThreadsCallOneModelAtOnce) {
  manual_seed(11);
  Tensor w = randn({4, 3}), b = randn({3});
  Model m = mlp(w, b);
  const Mode saved = mode();
  set_mode(Mode::Traced);
  mark_step();  // w and b computed here: the threads read them
  std::vector<int> wrong(3, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      NoGradGuard no_grad;
      for (int i = 0; i < 20; ++i) {
        Tensor x = full({2 + t, 4}, double(i - t));
        if (!allclose(m({x})[0], (x.matmul(w) + b).relu(), 1e-5, 1e-6)) ++wrong[size_t(t)];
      }
    });
  for (std::thread& t : threads) t.join();
  set_mode(saved);
  EXPECT_EQ(wrong, std::vector<int>(3, 0));
  EXPECT_GT(m.calls_replayed(), 0);
}

TEST(ModelCapture, StaticLoopsReplay) {
  TracedMode traced;
  NoGradGuard no_grad;
  // y = x; repeat 3 times: y = y * 2 + 1
  GraphBuilder body;
  body.input("i", kInt64, {});
  body.input("cond", kBool, {});
  auto y = body.input("y", kFloat32, {4});
  auto two = body.initializer("two", full({4}, 2.0));
  auto one = body.initializer("one", full({4}, 1.0));
  body.output("cond");
  body.output(body.op("Add", {body.op("Mul", {y, two}), one}));
  auto body_graph = std::make_shared<const Graph>(body.graph());
  GraphBuilder g;
  auto x = g.input("x", kFloat32, {4});
  g.output(g.op("Loop", {g.initializer("M", tensor({int64_t(3)}).reshape({})), "", x}, {{"body", body_graph}}));
  Model m = g.build();
  Tensor in = randn({4});
  ASSERT_TRUE(warm(m, {in}));
  Tensor v = randn({4});
  EXPECT_TRUE(allclose(m({v})[0], ((v * 2.0 + 1.0) * 2.0 + 1.0) * 2.0 + 1.0));
}

}  // namespace
}  // namespace nnvm
