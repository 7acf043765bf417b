// The checking mode and repro bundles (trace/check.h, trace/repro.h): a
// fused group's wrong result found, reported, bundled and replayed; a crash
// in a kernel and a failed compile bundled; bundles round-trip their trace,
// layouts and values; damaged bundles are errors; `nnvm replay`.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "nlohmann/json.hpp"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/trace/backend.h"
#include "nnvm/trace/check.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/pipeline.h"
#include "nnvm/trace/repro.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

namespace fs = std::filesystem;

// The test backend's kernels: 0 right (the portable program), 1 wrong (one
// element off by one), 2 a fatal signal.
std::atomic<int> g_mode{0};
std::atomic<bool> g_accept{false};  // only while a test builds its plan: other tests keep the x86 kernels
std::atomic<bool> g_throw_in_pass{false};

class WrongKernel final : public GroupKernel {
 public:
  bool run(const GroupProgram& program, const GroupRun& r) const override {
    if (g_mode.load() == 2) std::raise(SIGSEGV);
    program.run_portable(r.ids, r.env, r.attrs, r.tiling);
    if (g_mode.load() == 1) {
      const Tensor& first_output = r.env[size_t(r.ids[first_output_of(program)])];
      if (first_output.numel() > 0) static_cast<float*>(first_output.data_ptr())[0] += 1.0f;
    }
    return true;
  }
  std::string describe() const override { return "test kernel"; }
  std::string code() const override { return "test code: portable program, then +1"; }

 private:
  // A group's values are its inputs, its outputs, then what only it reads:
  // the first value a step computes is its first output.
  static size_t first_output_of(const GroupProgram& program) {
    int32_t first = INT32_MAX;
    for (const GroupProgram::Step& s : program.steps())
      for (int32_t o : s.outputs) first = std::min(first, o);
    return size_t(first);
  }
};

// Takes groups with a log1p while g_accept is set.
class WrongBackend final : public Backend {
 public:
  std::string_view name() const override { return "test-wrong"; }
  std::unique_ptr<const GroupKernel> compile(const GroupSource& source, std::string* why_not) const override {
    if (g_accept.load())
      for (int32_t n : source.group.nodes)
        if (source.trace.nodes()[size_t(n)].op->name == "log1p") return std::make_unique<WrongKernel>();
    *why_not = "no log1p in the group";
    return nullptr;
  }
};

void register_once() {
  static const bool done = [] {
    // below backend_test's test-tan (10), above the x86 JIT
    register_backend(std::make_shared<WrongBackend>(), /*priority=*/5);
    global_passes().add("test-throw", [](Trace& t) {
      if (g_throw_in_pass.load())
        for (const Node& n : t.nodes())
          if (n.op->name == "log1p") throw Error("test-throw: this pass refuses log1p");
      return int64_t(0);
    });
    return true;
  }();
  (void)done;
}

// log1p(x) * x + 0.5, as one pointwise group: a chain no other test builds.
// Each test below gives it a rank of its own: the kernel cache keeps a
// group's program by its ops and its values' ranks, so one test's program
// (x86, or the test backend's) is not another's.
Trace log1p_chain(const Tensor& x) {
  Trace t;
  const ValueId xv = t.add_input(x);
  ValueId v = t.add_node1(find_op("log1p"), {xv});
  v = t.add_node1(find_op("mul"), {v, xv});
  t.mark_output(t.add_node1(find_op("add"), {v, t.add_constant(full({}, 0.5, kFloat32))}, {Scalar(1)}));
  return t;
}

// A directory of this test process's own (a death test's child, another
// process, names its parent's).
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             (name + "-" + std::to_string(::testing::internal::InDeathTestChild() ? ::getppid() : ::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    if (fs::exists(path))
      for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path());
    return out;
  }
};

// Restores the checking mode and the repro directory.
struct CheckScope {
  CheckScope(bool check, const std::string& dir) {
    set_check(check);
    set_repro_dir(dir);
    reset_check_stats();
  }
  ~CheckScope() {
    set_check(false);
    set_repro_dir("");
    g_mode = 0;
    g_accept = false;
    g_throw_in_pass = false;
  }
};

// `nnvm ARGS 2>&1`: its exit status and what it printed.
std::pair<int, std::string> run_cli(const std::string& args) {
  const std::string command = std::string(NNVM_CLI) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string printed;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) printed.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, printed};
}

TEST(Repro, CompareResultsUsesTheDtypesTolerance) {
  EagerGuard eager;
  const Tensor a = testing::random({5, 7}, kFloat32, 1);
  EXPECT_TRUE(compare_results(a, a.clone()).agrees);
  Tensor b = a.clone();
  b.data_ptr<float>()[3] += 1e-7f * std::fabs(b.data_ptr<float>()[3]);  // within rtol
  EXPECT_TRUE(compare_results(b, a).agrees);
  b.data_ptr<float>()[8] += 0.25f;
  const Difference d = compare_results(b, a);
  EXPECT_FALSE(d.agrees);
  EXPECT_NEAR(d.max_abs, 0.25, 1e-6);
  EXPECT_NE(d.what.find("1 of 35 elements of float32[5, 7]"), std::string::npos) << d.what;
  EXPECT_NE(d.what.find("at [1, 1]"), std::string::npos) << d.what;
  // NaN agrees with NaN, not with a number
  Tensor n = full({2}, std::nan(""), kFloat32);
  EXPECT_TRUE(compare_results(n, n.clone()).agrees);
  EXPECT_FALSE(compare_results(n, zeros({2})).agrees);
  // integers exactly; another shape or dtype never agrees
  const Tensor i = arange(6, kInt64);
  EXPECT_TRUE(compare_results(i, i.clone()).agrees);
  EXPECT_FALSE(compare_results(i + 1, i).agrees);
  EXPECT_FALSE(compare_results(i.to(kInt32), i).agrees);
  EXPECT_FALSE(compare_results(a.t(), a).agrees);
  // a transposed view compares by element, not by memory
  EXPECT_TRUE(compare_results(a.t().contiguous(), a.t()).agrees);
}

// The same program: inputs of the same layouts, node by node the same ops
// reading the same values with the same attributes, the same outputs (value
// numbers may differ: a bundle's reader numbers constants before nodes).
void expect_same_program(const Trace& got, const Trace& want) {
  ASSERT_EQ(got.inputs().size(), want.inputs().size());
  for (size_t i = 0; i < want.inputs().size(); ++i) {
    const Value &x = got.value(got.inputs()[i]), &y = want.value(want.inputs()[i]);
    EXPECT_TRUE(x.dtype == y.dtype && x.shape == y.shape && x.strides == y.strides) << i;
  }
  ASSERT_EQ(got.constants().size(), want.constants().size());
  ASSERT_EQ(got.nodes().size(), want.nodes().size());
  // each value as (its kind, its index): input i, constant i, or output o of node k
  auto name = [](const Trace& t, ValueId v) {
    const Value& val = t.value(v);
    if (val.is_input()) return std::string("in") + std::to_string(val.index);
    if (val.is_constant()) return std::string("const") + std::to_string(val.index);
    for (size_t k = 0; k < t.nodes().size(); ++k)
      for (size_t o = 0; o < t.nodes()[k].outputs.size(); ++o)
        if (t.nodes()[k].outputs[o] == v) return "node" + std::to_string(k) + "." + std::to_string(o);
    return std::string("?");
  };
  for (size_t k = 0; k < want.nodes().size(); ++k) {
    const Node &x = got.nodes()[k], &y = want.nodes()[k];
    EXPECT_EQ(x.op, y.op) << k;
    ASSERT_EQ(x.inputs.size(), y.inputs.size()) << k;
    for (size_t i = 0; i < x.inputs.size(); ++i) EXPECT_EQ(name(got, x.inputs[i]), name(want, y.inputs[i])) << k;
    std::string ax, ay;
    const Attrs bx = bind_scalars(x, got.scalars()), by = bind_scalars(y, want.scalars());
    for (size_t i = 0; i < bx.size(); ++i) append_attr(ax, bx[i], true);
    for (size_t i = 0; i < by.size(); ++i) append_attr(ay, by[i], true);
    EXPECT_EQ(ax, ay) << k;
  }
  ASSERT_EQ(got.outputs().size(), want.outputs().size());
  for (size_t i = 0; i < want.outputs().size(); ++i)
    EXPECT_EQ(name(got, got.outputs()[i]), name(want, want.outputs()[i])) << i;
}

// A trace with a transposed and a broadcast input, a constant, Scalar, dims,
// bool and dtype attributes and a view.
Trace mixed_trace(const Tensor& x, const Tensor& row) {
  Trace t;
  const ValueId xv = t.add_input(x), rv = t.add_input(row);
  ValueId v = t.add_node1(find_op("add"), {xv, rv}, {Scalar(0.5)});
  v = t.add_node1(find_op("mul"), {v, t.add_constant(full({1}, 3.0, kFloat32))});
  const ValueId s = t.add_node1(find_op("sum"), {v}, {dims({1}), true, kFloat64});
  t.mark_output(t.add_node1(find_op("view"), {s}, {dims({-1})}));
  t.mark_output(t.add_node1(find_op("tanh"), {v}));
  return t;
}

TEST(Repro, BundlesKeepTheTraceLayoutsAndValues) {
  EagerGuard eager;
  const Tensor x = testing::random({6, 5}, kFloat32, 2).t();        // strides [1, 5]
  const Tensor row = testing::random({1, 6}, kFloat32, 3).expand({5, 6});  // strides [0, 1]
  ReproBundle b;
  b.kind = "mismatch";
  b.engine = engine_version();
  b.message = "a message with \"quotes\" and\na newline";
  b.unit = "x86: x86 pointwise kernel";
  b.code = "LoopIR ...";
  b.trace = mixed_trace(x, row);
  b.inputs = {x, row};
  const std::string bytes = repro_bundle_bytes(b);
  const ReproBundle back = parse_repro_bundle(bytes);
  EXPECT_EQ(back.kind, b.kind);
  EXPECT_EQ(back.engine, b.engine);
  EXPECT_EQ(back.message, b.message);
  EXPECT_EQ(back.unit, b.unit);
  EXPECT_EQ(back.code, b.code);
  // the same program (the reader numbers constants before nodes), the same results
  expect_same_program(back.trace, b.trace);
  const std::vector<Tensor> want = interpret(b.trace, b.inputs), got = interpret(back.trace, back.inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) testing::expect_tensors_close(got[k], want[k], 0, 0);
  ASSERT_EQ(back.inputs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.inputs[i].strides(), b.inputs[i].strides()) << i;
    testing::expect_tensors_close(back.inputs[i], b.inputs[i], 0, 0);
  }
  EXPECT_EQ(engine_version().rfind("nnvm ", 0), 0u) << engine_version();
  // written again and read again: the same bytes
  const std::string again = repro_bundle_bytes(back);
  EXPECT_EQ(repro_bundle_bytes(parse_repro_bundle(again)), again);
  const ReplayReport r = replay_bundle(back);
  EXPECT_TRUE(r.agrees()) << r.to_string();
  EXPECT_EQ(r.outputs.size(), 2u);
  EXPECT_FALSE(r.units.empty());
}

// The header of a bundle as JSON, changed by `edit`, put back.
std::string edited(const std::string& bytes, const std::function<void(nlohmann::json&)>& edit) {
  uint64_t length = 0;
  for (int k = 0; k < 8; ++k) length |= uint64_t(uint8_t(bytes[size_t(8 + k)])) << (8 * k);
  nlohmann::json h = nlohmann::json::parse(bytes.substr(16, length));
  edit(h);
  const std::string text = h.dump();
  std::string out = bytes.substr(0, 8);
  for (int k = 0; k < 8; ++k) out.push_back(char(uint64_t(text.size()) >> (8 * k) & 0xff));
  return out + text + bytes.substr(16 + length);
}

TEST(Repro, DamagedBundlesAreErrors) {
  EagerGuard eager;
  const Tensor x = testing::random({4, 3}, kFloat32, 4), row = testing::random({3}, kFloat32, 5);
  ReproBundle b;
  b.kind = "crash";
  b.engine = engine_version();
  b.trace = mixed_trace(x, row);
  b.inputs = {x, row};
  const std::string bytes = repro_bundle_bytes(b);
  ASSERT_NO_THROW(parse_repro_bundle(bytes));
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 16)  // every truncation is an error
    EXPECT_THROW(parse_repro_bundle(bytes.substr(0, n)), Error) << n;
  EXPECT_THROW(parse_repro_bundle("NNVMREPX" + bytes.substr(8)), Error);
  EXPECT_THROW(read_repro_bundle("/nonexistent/bundle.nnvmrepro"), Error);
  using json = nlohmann::json;
  const std::vector<std::pair<const char*, std::function<void(json&)>>> edits = {
      {"format", [](json& h) { h["format"] = 2; }},
      {"kind", [](json& h) { h["kind"] = "other"; }},
      {"unknown op", [](json& h) { h["trace"]["nodes"][0]["op"] = "no_such_op"; }},
      {"input defined later", [](json& h) { h["trace"]["nodes"][0]["inputs"][0] = 40; }},
      {"negative input", [](json& h) { h["trace"]["nodes"][0]["inputs"][0] = -1; }},
      {"output count", [](json& h) { h["trace"]["nodes"][0]["outputs"] = 2; }},
      {"missing attributes", [](json& h) { h["trace"]["nodes"][2]["attrs"] = json::array(); }},
      {"attribute kind", [](json& h) { h["trace"]["nodes"][2]["attrs"][0] = json{{"str", "x"}}; }},
      {"attribute f64", [](json& h) { h["trace"]["nodes"][0]["attrs"][0] = json{{"f64", "zz"}}; }},
      {"shape mismatch", [](json& h) { h["trace"]["inputs"][0]["shape"] = json::array({4, 4}); }},
      {"huge shape", [](json& h) { h["trace"]["inputs"][0]["shape"] = json::array({int64_t(1) << 40, 3}); }},
      {"negative stride", [](json& h) { h["trace"]["inputs"][0]["strides"] = json::array({-1, 1}); }},
      {"rank", [](json& h) { h["trace"]["inputs"][0]["strides"] = json::array({1}); }},
      {"dtype", [](json& h) { h["trace"]["inputs"][0]["dtype"] = "float128"; }},
      {"quantized", [](json& h) { h["trace"]["inputs"][0]["dtype"] = "qint8"; }},
      {"data past the end", [](json& h) { h["trace"]["inputs"][1]["data"]["offset"] = 1 << 20; }},
      {"no data", [](json& h) { h["trace"]["inputs"][1].erase("data"); }},
      {"output id", [](json& h) { h["trace"]["outputs"][0] = 99; }},
      {"trace not an object", [](json& h) { h["trace"] = 3; }},
      {"nodes not an array", [](json& h) { h["trace"]["nodes"] = "x"; }},
  };
  for (const auto& [name, edit] : edits) {
    try {
      parse_repro_bundle(edited(bytes, edit));
      ADD_FAILURE() << name << ": read without an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("read_repro_bundle"), std::string::npos) << name << ": " << e.what();
    }
  }
}

TEST(Check, CorrectKernelsAgreeWithTheirReference) {
  EagerGuard eager;
  CheckScope scope(true, "");
  // a pointwise chain, a reduction with a prologue, a row-wise softmax, a
  // matmul with an epilogue: odd sizes, a broadcast, a transposed input
  const Tensor x = testing::random({7, 33}, kFloat32, 6), w = testing::random({33, 9}, kFloat32, 7);
  const Tensor b = testing::random({9}, kFloat32, 8), xt = testing::random({33, 7}, kFloat32, 9).t();
  Trace t;
  const ValueId xv = t.add_input(x), wv = t.add_input(w), bv = t.add_input(b), tv = t.add_input(xt);
  const ValueId e = t.add_node1(find_op("exp"), {t.add_node1(find_op("mul"), {xv, tv})});
  t.mark_output(t.add_node1(find_op("sum"), {t.add_node1(find_op("tanh"), {e})}, {dims({1}), false, kFloat32}));
  t.mark_output(t.add_node1(find_op("softmax"), {xv}, {int64_t(1), kFloat32}));
  t.mark_output(t.add_node1(find_op("relu"), {t.add_node1(find_op("add"), {t.add_node1(find_op("matmul"), {xv, wv}), bv}, {Scalar(1)})}));
  const FusedPlan plan(t);
  const std::vector<Tensor> out = plan.run({x, w, b, xt}, {});
  const std::vector<Tensor> want = interpret(t, {x, w, b, xt});
  for (size_t k = 0; k < out.size(); ++k) testing::expect_tensors_close(out[k], want[k], 1e-5, 1e-5);
  // what a bundle would hold as the x86 kernels' code: the LoopIR and the machine code run
  // (a variant's machine code once it has run; a small reduction may run its reference kernel)
  int with_machine_code = 0;
  for (int32_t g : plan.group_order()) {
    const GroupProgram& program = plan.program(g);
    if (!program.kernel() || program.backend() != "x86") continue;
    const std::string code = program.kernel()->code();
    EXPECT_FALSE(code.empty()) << program.describe();
    const bool ir = code.find("LoopIR\n") != std::string::npos;
    const bool row = code.rfind("row-wise kernel\nrow kernel ", 0) == 0;  // the softmax: no LoopIR
    EXPECT_TRUE(ir || row) << code;
    const bool machine_code = code.find("\nvariant ") != std::string::npos && code.find("\n0000:") != std::string::npos;
    with_machine_code += machine_code;
    if (row && jit::active_isa() != jit::Isa::kPortable) {
      EXPECT_TRUE(machine_code) << code;
    }
  }
  if (jit::active_isa() != jit::Isa::kPortable) {
    EXPECT_GE(with_machine_code, 1) << plan.to_string();
  }
  const CheckStats s = check_stats();
  EXPECT_GE(s.groups_checked, 3) << plan.to_string();
  EXPECT_EQ(s.mismatches, 0) << plan.to_string();
  EXPECT_EQ(s.bundles, 0);
}

TEST(Check, AWrongKernelIsFoundReportedBundledAndReplayed) {
  register_once();
  EagerGuard eager;
  TempDir dir("nnvm-check-wrong");
  const Tensor x = testing::random({37, 5}, kFloat32, 10);
  const Trace t = log1p_chain(x);
  g_accept = true;
  const FusedPlan plan(t);
  g_accept = false;
  ASSERT_EQ(plan.program(plan.group_order()[0]).backend(), "test-wrong") << plan.to_string();
  const std::vector<Tensor> want = interpret(t, {x});
  CheckScope scope(false, "");
  g_mode = 1;
  // unchecked, the wrong value reaches the caller
  EXPECT_FALSE(compare_results(plan.run({x}, {})[0], want[0]).agrees);
  set_check(true);
  set_repro_dir(dir.path.string());
  ::testing::internal::CaptureStderr();
  const std::vector<Tensor> out = plan.run({x}, {});
  const std::string err = ::testing::internal::GetCapturedStderr();
  // checked, the run goes on with the reference's values
  testing::expect_tensors_close(out[0], want[0], 1e-6, 1e-6);
  EXPECT_NE(err.find("disagrees with its reference kernels"), std::string::npos) << err;
  EXPECT_NE(err.find("log1p+mul+add"), std::string::npos) << err;
  EXPECT_NE(err.find("repro bundle: "), std::string::npos) << err;
  CheckStats s = check_stats();
  EXPECT_EQ(s.mismatches, 1);
  ASSERT_EQ(s.bundles, 1);
  // a second run: counted, not reported or bundled again
  ::testing::internal::CaptureStderr();
  plan.run({x}, {});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  s = check_stats();
  EXPECT_EQ(s.mismatches, 2);
  EXPECT_EQ(s.bundles, 1);

  const std::vector<fs::path> files = dir.files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].string(), s.bundle_paths.back());
  EXPECT_EQ(files[0].filename().string().rfind("repro-mismatch-", 0), 0u) << files[0];
  const ReproBundle b = read_repro_bundle(files[0].string());
  EXPECT_EQ(b.kind, "mismatch");
  EXPECT_NE(b.unit.find("test-wrong"), std::string::npos) << b.unit;
  EXPECT_EQ(b.code, "test code: portable program, then +1");
  EXPECT_NE(b.message.find("max |fused - reference| 1"), std::string::npos) << b.message;
  EXPECT_EQ(b.trace.nodes().size(), 3u);
  ASSERT_EQ(b.inputs.size(), 2u);  // x and the constant 0.5, each an input of the group
  testing::expect_tensors_close(b.inputs[0], x, 0, 0);

  set_check(false);
  set_repro_dir("");
  g_accept = true;  // the replay's plan takes the wrong kernel again
  const ReplayReport wrong = replay_bundle(b);
  g_accept = false;
  EXPECT_FALSE(wrong.agrees()) << wrong.to_string();
  EXPECT_NE(wrong.to_string().find("DIFFERS"), std::string::npos) << wrong.to_string();
  g_mode = 0;  // fixed
  g_accept = true;
  const ReplayReport fixed = replay_bundle(b);
  g_accept = false;
  EXPECT_TRUE(fixed.agrees()) << fixed.to_string();

  // `nnvm replay`: another process has no test backend; the x86 JIT runs the group and agrees
  const auto [status, printed] = run_cli("replay " + files[0].string());
  EXPECT_EQ(status, 0) << printed;
  EXPECT_NE(printed.find("kind:     mismatch"), std::string::npos) << printed;
  EXPECT_NE(printed.find("fused and unfused agree"), std::string::npos) << printed;
  EXPECT_NE(printed.find("log1p"), std::string::npos) << printed;
}

TEST(Check, AWrongCliReplayFailsWithTheReason) {
  TempDir dir("nnvm-check-cli");
  fs::create_directories(dir.path);
  const fs::path bad = dir.path / "bad.nnvmrepro";
  std::ofstream(bad) << "NNVMREPR not a bundle";
  const auto [status, printed] = run_cli("replay " + bad.string());
  EXPECT_EQ(status, 1) << printed;
  EXPECT_NE(printed.find("read_repro_bundle"), std::string::npos) << printed;
}

TEST(CheckDeathTest, ACrashInAKernelWritesItsBundle) {
  register_once();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir dir("nnvm-check-crash");
  const Tensor x = testing::random({11, 3, 2}, kFloat32, 11);  // a rank of its own: its own kernel-cache key
  auto crash = [&] {
    EagerGuard eager;
    const Trace t = log1p_chain(x);
    g_accept = true;
    const FusedPlan plan(t);
    g_accept = false;
    set_repro_dir(dir.path.string());
    g_mode = 2;
    plan.run({x}, {});
  };
  // the sanitizers' own handler may end the process with a status instead of the signal
  EXPECT_EXIT(crash(), [](int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; },
              "a fatal signal while a fused group's kernel ran; repro bundle: .*repro-crash-");
  const std::vector<fs::path> files = dir.files();
  ASSERT_EQ(files.size(), 1u);
  EagerGuard eager;
  const ReproBundle b = read_repro_bundle(files[0].string());
  EXPECT_EQ(b.kind, "crash");
  EXPECT_NE(b.message.find("fatal signal"), std::string::npos);
  EXPECT_NE(b.unit.find("test-wrong"), std::string::npos) << b.unit;
  ASSERT_EQ(b.inputs.size(), 2u);
  testing::expect_tensors_close(b.inputs[0], x, 0, 0);
  const ReplayReport r = replay_bundle(b);  // no test backend takes it now: the x86 JIT or the tiles
  EXPECT_TRUE(r.agrees()) << r.to_string();
}

TEST(Check, AFailedCompileWritesItsBundle) {
  register_once();
  EagerGuard eager;
  TempDir dir("nnvm-check-compile");
  const Tensor x = testing::random({13}, kFloat32, 12);  // a rank of its own: its own kernel-cache key
  const Trace t = log1p_chain(x);
  CheckScope scope(false, dir.path.string());
  g_throw_in_pass = true;
  ::testing::internal::CaptureStderr();
  EXPECT_THROW(compile_plan(t), Error);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("a trace failed to compile; repro bundle: "), std::string::npos) << err;
  const std::vector<fs::path> files = dir.files();
  ASSERT_EQ(files.size(), 1u);
  const ReproBundle b = read_repro_bundle(files[0].string());
  EXPECT_EQ(b.kind, "compile");
  EXPECT_NE(b.message.find("test-throw: this pass refuses log1p"), std::string::npos) << b.message;
  EXPECT_TRUE(b.inputs.empty());  // layouts only: compiling reads no data
  expect_same_program(b.trace, t);
  const ReplayReport still = replay_bundle(b);
  EXPECT_FALSE(still.compiled);
  EXPECT_NE(still.error.find("refuses log1p"), std::string::npos) << still.to_string();
  g_throw_in_pass = false;  // fixed: it compiles, and the drawn inputs agree
  set_repro_dir("");
  const ReplayReport fixed = replay_bundle(b);
  EXPECT_TRUE(fixed.agrees()) << fixed.to_string();
}

}  // namespace
}  // namespace nnvm::trace
