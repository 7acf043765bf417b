// The backend interface (trace/backend.h): a registered backend is offered
// each group as its program is built, by priority; what it compiles runs
// the group, a run it refuses falls back to the portable program, and a
// group every backend declines keeps each reason.
#include <atomic>

#include "nnvm/trace/backend.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

std::atomic<int> g_runs{0};
std::atomic<bool> g_refuse{false};
std::atomic<bool> g_accept{false};  // only while a test builds its plan: other tests keep the x86 kernels

// Runs its group through the portable program, counting runs.
class CountingKernel final : public GroupKernel {
 public:
  bool run(const GroupProgram& program, const GroupRun& r) const override {
    if (g_refuse.load()) return false;
    ++g_runs;
    program.run_portable(r.ids, r.env, r.attrs, r.tiling);
    return true;
  }
  std::string describe() const override { return "test backend kernel"; }
};

// Takes groups that contain a tan while g_accept is set, declines everything else.
class TanBackend final : public Backend {
 public:
  std::string_view name() const override { return "test-tan"; }
  std::unique_ptr<const GroupKernel> compile(const GroupSource& source, std::string* why_not) const override {
    if (g_accept.load())
      for (int32_t n : source.group.nodes)
        if (source.trace.nodes()[size_t(n)].op->name == "tan") return std::make_unique<CountingKernel>();
    *why_not = "no tan in the group";
    return nullptr;
  }
};

void register_once() {
  static const bool done = [] {
    register_backend(std::make_shared<TanBackend>(), /*priority=*/10);
    return true;
  }();
  (void)done;
}

// expm1(tan(tan(x) * 0.25)): a chain no other test builds, so its program is built here.
Trace tan_chain(const Tensor& x) {
  Trace t;
  const ValueId xv = t.add_input(x);
  ValueId v = t.add_node1(find_op("tan"), {xv});
  v = t.add_node1(find_op("mul"), {v, t.add_constant(full({}, 0.25, kFloat32))});
  v = t.add_node1(find_op("tan"), {v});
  t.mark_output(t.add_node1(find_op("expm1"), {v}));
  return t;
}

TEST(Backend, AHigherPriorityBackendTakesTheGroupsItCompiles) {
  register_once();
  const std::vector<std::shared_ptr<const Backend>> all = backends();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0]->name(), "test-tan");  // priority 10 ahead of the built-in ones
  EagerGuard eager;
  const Tensor x = testing::random({37, 5}, kFloat32, 1);
  const Trace t = tan_chain(x);
  g_accept = true;
  const FusedPlan plan(t);
  g_accept = false;
  const GroupProgram& program = plan.program(0);
  ASSERT_NE(program.kernel(), nullptr) << plan.to_string();
  EXPECT_EQ(program.backend(), "test-tan");
  EXPECT_NE(plan.to_string().find("test backend kernel"), std::string::npos) << plan.to_string();
  const int before = g_runs.load();
  const std::vector<Tensor> out = plan.run({x}, {});
  EXPECT_EQ(g_runs.load(), before + 1);
  testing::expect_tensors_close(out[0], interpret(t, {x}, {})[0], 1e-6, 1e-6);

  g_refuse = true;  // a refused run: the portable program runs the group
  const std::vector<Tensor> fallback = plan.run({x}, {});
  g_refuse = false;
  EXPECT_EQ(g_runs.load(), before + 1);
  testing::expect_tensors_close(fallback[0], out[0], 1e-6, 1e-6);
}

TEST(Backend, DeclinesAreKeptWithTheBackendsName) {
  register_once();
  EagerGuard eager;
  const Tensor a = testing::random({3, 4}, kFloat32, 2), b = testing::random({4, 5}, kFloat32, 3);
  Trace t;
  t.mark_output(t.add_node1(find_op("matmul"), {t.add_input(a), t.add_input(b)}));
  const FusedPlan plan(t);
  // built here, not taken from the kernel cache: every backend registered now is asked
  const GroupProgram program(plan.trace(), plan.fusion().groups[0], group_values(plan.trace(), plan.fusion().groups[0]));
  const std::vector<std::string>& declined = program.declined();
  EXPECT_EQ(program.kernel(), nullptr);
  ASSERT_EQ(declined.size(), backends().size()) << plan.to_string();
  EXPECT_EQ(declined[0], "test-tan: no tan in the group");
  for (size_t i = 1; i < declined.size(); ++i) EXPECT_NE(declined[i].find(": "), std::string::npos) << declined[i];
}

TEST(Backend, ANameRegisteredTwiceIsAnError) {
  register_once();
  EXPECT_THROW(register_backend(std::make_shared<TanBackend>()), Error);
  EXPECT_THROW(register_backend(nullptr), Error);
}

}  // namespace
}  // namespace nnvm::trace
