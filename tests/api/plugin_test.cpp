// Plugins (nnvm/plugin.h): the example plugin (examples/plugin/) loads once;
// its op runs eagerly as its reference composition does, differentiates, fuses
// into one x86 pointwise kernel with its neighbours, its pass rewrites the
// pattern and its backend takes the op alone. Libraries that must be refused
// (tests/plugin/) are, by name and reason, with nothing of theirs registered.
#include <atomic>
#include <cstdlib>
#include <stdexcept>

#include "nnvm/jit/op_lowering.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/jit/x86_backend.h"
#include "nnvm/nnvm.h"
#include "nnvm/plugin.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/pass_points.h"
#include "nnvm/trace/pipeline.h"
#include "reference.h"

namespace nnvm {
namespace {

constexpr double kBeta = 1.702;

const plugin::Plugin& example() { return load_plugin(NNVM_EXAMPLE_PLUGIN); }

const OpDef& gate() {
  example();
  return find_op("example::sigmoid_gate");
}

// The op as built-in ops compose it, run eagerly.
Tensor reference_gate(const Tensor& x, const Tensor& g, double beta) {
  EagerGuard eager;
  return x * sigmoid(g * beta);
}

bool has_backend(std::string_view name) {
  for (const auto& b : trace::backends())
    if (b->name() == name) return true;
  return false;
}

int count_op(const trace::Trace& t, std::string_view op) {
  int n = 0;
  for (const trace::Node& node : t.nodes()) n += node.op->name == op;
  return n;
}

TEST(Plugin, LoadsOnceAndRegistersItsOpPassLoweringAndBackend) {
  const plugin::Plugin& p = example();
  EXPECT_EQ(&load_plugin(NNVM_EXAMPLE_PLUGIN), &p);  // the same library again: the same plugin
  EXPECT_EQ(p.path, NNVM_EXAMPLE_PLUGIN);
  EXPECT_EQ(p.ops, std::vector<std::string>{"example::sigmoid_gate"});
  EXPECT_EQ(p.passes, std::vector<std::string>{"example::gate_pattern"});
  EXPECT_EQ(p.backends, std::vector<std::string>{"example-tiny"});
  EXPECT_TRUE(has_op("example::sigmoid_gate"));
  EXPECT_TRUE(trace::has_pass("example::gate_pattern"));
  EXPECT_TRUE(jit::has_lowering("example::sigmoid_gate"));
  EXPECT_TRUE(has_backend("example-tiny"));
  const std::vector<const plugin::Plugin*> all = loaded_plugins();
  EXPECT_NE(std::find(all.begin(), all.end(), &p), all.end());
}

TEST(Plugin, EagerKernelMatchesItsReference) {
  EagerGuard eager;
  struct Case {
    DimVector x, g;
  };
  const Case cases[] = {{{7}, {7}},       {{3, 5}, {1, 5}},   {{4, 1, 3}, {5, 1}},
                        {{1}, {13}},      {{2, 33}, {2, 33}}, {{17, 9}, {9}}};
  uint64_t seed = 1;
  for (DType dtype : {kFloat32, kFloat64})
    for (const Case& c : cases)
      for (double beta : {kBeta, -0.5}) {
        const Tensor x = testing::random(c.x, dtype, seed++, -4, 4), g = testing::random(c.g, dtype, seed++, -4, 4);
        const Tensor y = call1(gate(), {x, g}, {Scalar(beta)});
        EXPECT_EQ(dims(y.sizes()), broadcast_shapes(c.x, c.g, "test"));
        testing::expect_tensors_close(y, reference_gate(x, g, beta), testing::rtol_for(dtype), 1e-6);
      }
  // a strided input: the transposed view of x
  const Tensor x = testing::random({6, 11}, kFloat32, 99), g = testing::random({11, 6}, kFloat32, 100);
  testing::expect_tensors_close(call1(gate(), {x.t(), g}, {Scalar(kBeta)}), reference_gate(x.t(), g, kBeta));
  testing::expect_error([] { call1(gate(), {ones({3}, kInt64), ones({3}, kInt64)}, {Scalar(1.0)}); },
                        {"example::sigmoid_gate", "expects floating inputs"});
}

TEST(Plugin, GradientMatchesFiniteDifferences) {
  const OpDef& op = gate();
  const Tensor x = testing::leaf({3, 4}, 1), g = testing::leaf({1, 4}, 2);
  auto fn = [&op](const std::vector<Tensor>& in) { return call1(op, {in[0], in[1]}, {Scalar(kBeta)}); };
  testing::gradcheck(fn, {x, g});
  testing::gradgradcheck(fn, {x, g});
}

// tanh(gate(x + b, g)): the op between two neighbours.
trace::Trace gate_chain(const Tensor& x, const Tensor& b, const Tensor& g) {
  trace::Trace t;
  const trace::ValueId xv = t.add_input(x), bv = t.add_input(b), gv = t.add_input(g);
  trace::ValueId v = t.add_node1(find_op("add"), {xv, bv}, {Scalar(1)});
  v = t.add_node1(gate(), {v, gv}, {Scalar(kBeta)});
  t.mark_output(t.add_node1(find_op("tanh"), {v}));
  return t;
}

TEST(Plugin, TheJitFusesTheOpWithItsNeighboursIntoOneKernel) {
  gate();
  EagerGuard eager;
  struct Case {
    DimVector x, b, g;
  };
  const Case cases[] = {{{37, 5}, {1, 5}, {37, 5}}, {{3, 129}, {129}, {3, 1}}, {{1}, {1}, {1}},
                        {{2, 7, 19}, {7, 1}, {19}}};
  uint64_t seed = 10;
  for (const Case& c : cases) {
    const Tensor x = testing::random(c.x, kFloat32, seed++), b = testing::random(c.b, kFloat32, seed++),
                 g = testing::random(c.g, kFloat32, seed++);
    const trace::Trace t = gate_chain(x, b, g);
    const trace::FusedPlan plan(t);
    ASSERT_EQ(plan.fusion().groups.size(), 1u) << plan.to_string();
    EXPECT_EQ(plan.fusion().groups[0].nodes.size(), 3u) << plan.to_string();
    const trace::GroupProgram& program = plan.program(0);
    if (jit::active_isa() != jit::Isa::kPortable) {
      const jit::PointwiseJit* kernel = jit::pointwise_jit(program);
      ASSERT_NE(kernel, nullptr) << plan.to_string();
      EXPECT_EQ(program.backend(), "x86");
      EXPECT_NE(program.kernel()->describe().find("x86 pointwise"), std::string::npos) << program.kernel()->describe();
      const std::string ir = kernel->ir().to_string();
      EXPECT_NE(ir.find("sigmoid"), std::string::npos) << ir;
      EXPECT_NE(ir.find("tanh"), std::string::npos) << ir;
    }
    const Tensor want = reference_gate(x + b, g, kBeta).tanh();
    testing::expect_tensors_close(plan.run({x, b, g}, t.scalars())[0], want);
    testing::expect_tensors_close(trace::interpret(t, {x, b, g}, t.scalars())[0], want);
    // beta is a run-time Scalar: a new one runs the same kernel
    std::vector<Scalar> scalars = t.scalars();
    for (Scalar& s : scalars)
      if (s.to_double() == kBeta) s = Scalar(-0.25);
    testing::expect_tensors_close(plan.run({x, b, g}, scalars)[0], reference_gate(x + b, g, -0.25).tanh());
  }
}

TEST(Plugin, ThePassRewritesThePatternIntoTheOp) {
  gate();
  EagerGuard eager;
  const Tensor x = testing::random({5, 23}, kFloat32, 30), g = testing::random({23}, kFloat32, 31);
  trace::Trace t;
  const trace::ValueId xv = t.add_input(x), gv = t.add_input(g);
  const trace::ValueId s = t.add_node1(find_op("sigmoid"), {t.add_node1(find_op("mul.Scalar"), {gv}, {Scalar(kBeta)})});
  t.mark_output(t.add_node1(find_op("exp"), {t.add_node1(find_op("mul"), {xv, s})}));
  const trace::Trace optimised = trace::optimise(t);
  EXPECT_EQ(count_op(optimised, "example::sigmoid_gate"), 1) << optimised.to_string();
  EXPECT_EQ(count_op(optimised, "sigmoid"), 0) << optimised.to_string();
  EXPECT_EQ(count_op(optimised, "mul.Scalar"), 0) << optimised.to_string();
  const auto plan = trace::compile_plan(t);
  testing::expect_tensors_close(plan->run({x, g}, t.scalars())[0], reference_gate(x, g, kBeta).exp());
}

TEST(Plugin, ItsBackendTakesTheOpAlone) {
  gate();
  EagerGuard eager;
  for (const DimVector& gs : {DimVector{8, 31}, DimVector{31}}) {
    const Tensor x = testing::random({8, 31}, kFloat32, 40), g = testing::random(gs, kFloat32, 41);
    trace::Trace t;
    const trace::ValueId xv = t.add_input(x), gv = t.add_input(g);
    t.mark_output(t.add_node1(gate(), {xv, gv}, {Scalar(kBeta)}));
    const trace::FusedPlan plan(t);
    const trace::GroupProgram& program = plan.program(0);
    ASSERT_NE(program.kernel(), nullptr) << plan.to_string();
    EXPECT_EQ(program.backend(), "example-tiny");
    EXPECT_NE(plan.to_string().find("example-tiny: sigmoid_gate loop"), std::string::npos) << plan.to_string();
    // g broadcast: the loop refuses the run and the portable program runs it
    testing::expect_tensors_close(plan.run({x, g}, t.scalars())[0], reference_gate(x, g, kBeta));
  }
}

TEST(Plugin, TracedRunsEqualEagerOnes) {
  const OpDef& op = gate();
  testing::expect_traced_equals_eager(
      [] {
        return std::vector<Tensor>{testing::random({9, 31}, kFloat32, 50), testing::random({31}, kFloat32, 51),
                                   testing::random({9, 1}, kFloat32, 52)};
      },
      [&op](std::vector<Tensor>& in) {
        return std::vector<Tensor>{call1(op, {in[0] + in[2], in[1]}, {Scalar(kBeta)}).tanh(),
                                   in[0] * sigmoid(in[1] * kBeta)};
      });
}

TEST(Plugin, AMissingLibraryIsAnError) {
  testing::expect_error([] { load_plugin("/nonexistent/libnone.so"); },
                        {"load_plugin /nonexistent/libnone.so", "the library does not load"});
}

TEST(Plugin, ALibraryWithoutEntryPointsIsRefused) {
  testing::expect_error([] { load_plugin(NNVM_TEST_PLUGIN_NO_ENTRY); },
                        {NNVM_TEST_PLUGIN_NO_ENTRY, "no entry point nnvm_plugin_abi_version", "not an nnvm plugin"});
}

TEST(Plugin, AnotherAbiVersionIsRefused) {
  const std::string built = absl::StrCat("built against plugin ABI version ", NNVM_PLUGIN_ABI_VERSION + 1);
  const std::string ours = absl::StrCat("this nnvm's is ", NNVM_PLUGIN_ABI_VERSION);
  testing::expect_error([] { load_plugin(NNVM_TEST_PLUGIN_ABI_MISMATCH); },
                        {NNVM_TEST_PLUGIN_ABI_MISMATCH, built, ours});
  EXPECT_FALSE(has_op("abi_mismatch::never"));
}

TEST(Plugin, ANameTakenLeavesNothingOfThePluginRegistered) {
  example();
  const size_t loaded = loaded_plugins().size();
  for (int attempt = 0; attempt < 2; ++attempt)
    testing::expect_error([] { load_plugin(NNVM_TEST_PLUGIN_CLASH); },
                          {NNVM_TEST_PLUGIN_CLASH, "an op named 'example::sigmoid_gate' is already registered"});
  EXPECT_FALSE(has_op("clash::fresh"));
  EXPECT_FALSE(jit::has_lowering("clash::fresh"));
  EXPECT_FALSE(trace::has_pass("clash::fresh_pass"));
  EXPECT_FALSE(has_backend("clash-fresh"));
  EXPECT_EQ(loaded_plugins().size(), loaded);
}

// A registration function staging a complete unary op named `name`.
OpDef& stage_op(plugin::Registry& r, const char* name) {
  return r.op(name)
      .inputs(1)
      .is_elementwise()
      .infer_with([](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs {
        return {{dims(in[0].sizes()), in[0].dtype()}};
      })
      .kernel(DeviceType::CPU, [](absl::Span<const Tensor>, absl::Span<const Tensor>, const Attrs&) {});
}

TEST(Plugin, RegistrationIsAllOrNone) {
  struct Case {
    const char* what;
    std::function<void(plugin::Registry&)> fn;
    std::vector<std::string> message;
  };
  const trace::PassFn noop = [](trace::Trace&) { return 0; };
  const std::vector<Case> cases = {
      {"a built-in op's name", [](plugin::Registry& r) { stage_op(r, "plugin_test::a"); stage_op(r, "relu"); },
       {"an op named 'relu' is already registered"}},
      {"a pass at no point",
       [&](plugin::Registry& r) { stage_op(r, "plugin_test::a"); r.pass("nowhere", "plugin_test::pass", noop); },
       {"the pipeline has no point 'nowhere'"}},
      {"a built-in pass's name",
       [&](plugin::Registry& r) { stage_op(r, "plugin_test::a"); r.pass("after_passes", "cse", noop); },
       {"a pass named 'cse' is already registered"}},
      {"an expression for another op",
       [](plugin::Registry& r) {
         stage_op(r, "plugin_test::a");
         plugin::Pointwise e;
         e.relu(e.input(0));
         r.pointwise("relu", e);
       },
       {"pointwise expression for 'relu', which is not an op of this plugin"}},
      {"an expression for an op not elementwise",
       [](plugin::Registry& r) {
         stage_op(r, "plugin_test::a").elementwise = false;
         plugin::Pointwise e;
         e.exp(e.input(0));
         r.pointwise("plugin_test::a", e);
       },
       {"which is not elementwise"}},
      {"an expression reading a missing input",
       [](plugin::Registry& r) {
         stage_op(r, "plugin_test::a");
         plugin::Pointwise e;
         e.add(e.input(0), e.input(1));
         r.pointwise("plugin_test::a", e);
       },
       {"reads input 1 of 1"}},
      {"the x86 backend's name",
       [](plugin::Registry& r) {
         stage_op(r, "plugin_test::a");
         for (const auto& b : trace::backends())
           if (b->name() == "x86") r.backend(b);
       },
       {"a backend named 'x86' is already registered"}},
      {"an op without a kernel", [](plugin::Registry& r) { stage_op(r, "plugin_test::a").kernels = {}; },
       {"op 'plugin_test::a' has no CPU kernel"}},
      {"an op staged twice", [](plugin::Registry& r) { stage_op(r, "plugin_test::a"); stage_op(r, "plugin_test::a"); },
       {"the op 'plugin_test::a' is registered twice"}},
      {"a function that throws",
       [](plugin::Registry& r) {
         stage_op(r, "plugin_test::a");
         throw std::runtime_error("out of ideas");
       },
       {"its registration function threw: out of ideas"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    try {
      register_plugin("plugin_test", c.fn);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("plugin plugin_test: "), std::string::npos) << what;
      for (const std::string& piece : c.message) EXPECT_NE(what.find(piece), std::string::npos) << what;
    }
    EXPECT_FALSE(has_op("plugin_test::a"));
    EXPECT_FALSE(jit::has_lowering("plugin_test::a"));
    EXPECT_FALSE(trace::has_pass("plugin_test::pass"));
  }
}

TEST(Plugin, APassAtBeforePassesSeesTheTraceAsRecorded) {
  static std::atomic<int> nodes_seen{-1};
  static const bool registered = [] {
    register_plugin("plugin_test_before", [](plugin::Registry& r) {
      r.pass("before_passes", "plugin_test::count", [](trace::Trace& t) {
        nodes_seen = int(t.nodes().size());
        return 0;
      });
    });
    return true;
  }();
  ASSERT_TRUE(registered);
  EagerGuard eager;
  trace::Trace t;
  const trace::ValueId x = t.add_input(testing::random({4}, kFloat32, 60));
  const trace::ValueId dead = t.add_node1(find_op("exp"), {x});
  (void)dead;  // dce removes it; the pass before dce still sees it
  t.mark_output(t.add_node1(find_op("neg"), {x}));
  const trace::Trace optimised = trace::optimise(t);
  EXPECT_EQ(nodes_seen.load(), 2);
  EXPECT_EQ(optimised.nodes().size(), 1u);
}

// Run by ctest's plugin_startup with NNVM_PLUGINS naming the example plugin.
TEST(PluginStartup, NnvmPluginsLoadsThemWhenTheLibraryStarts) {
  const char* list = std::getenv("NNVM_PLUGINS");
  if (list == nullptr || *list == '\0') GTEST_SKIP() << "NNVM_PLUGINS is not set (ctest plugin_startup sets it)";
  const std::vector<const plugin::Plugin*> loaded = loaded_plugins();
  ASSERT_FALSE(loaded.empty());
  EXPECT_EQ(loaded[0]->path, list);
  ASSERT_TRUE(has_op("example::sigmoid_gate"));
  EXPECT_EQ(&load_plugin(list), loaded[0]);
  const Tensor x = testing::random({3, 4}, kFloat32, 70), g = testing::random({4}, kFloat32, 71);
  testing::expect_tensors_close(call1(find_op("example::sigmoid_gate"), {x, g}, {Scalar(kBeta)}),
                                reference_gate(x, g, kBeta));
}

}  // namespace
}  // namespace nnvm
