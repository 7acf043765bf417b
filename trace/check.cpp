// The checking mode and repro bundles at run time (trace/check.h).
#include "nnvm/trace/check.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/functions.h"
#include "nnvm/trace/repro.h"

namespace nnvm::trace {

namespace {

struct CheckState {
  std::atomic<bool> check{false};
  std::atomic<bool> on{false};  // check, or a repro directory
  std::mutex mutex;             // the rest
  std::string dir;
  CheckStats stats;
  std::set<std::pair<uint64_t, int32_t>> reported;  // (plan, first node) of each group reported
};

CheckState& state() {
  static CheckState* s = [] {
    auto* st = new CheckState;  // leaked: plans may run during static destruction
    st->check = knobs().check;
    st->dir = knobs().repro_dir;
    st->on = st->check || !st->dir.empty();
    return st;
  }();
  return *s;
}

void update_on(CheckState& s) { s.on.store(s.check.load() || !s.dir.empty(), std::memory_order_relaxed); }

uint64_t fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

std::string bundle_path(const std::string& dir, const std::string& kind, std::string_view key) {
  return (std::filesystem::path(dir) / absl::StrFormat("repro-%s-%016x.nnvmrepro", kind, fnv1a(key))).string();
}

void note_bundle(CheckState& s, const std::string& path) {
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.stats.bundles;
  s.stats.bundle_paths.push_back(path);
  if (s.stats.bundle_paths.size() > 16) s.stats.bundle_paths.erase(s.stats.bundle_paths.begin());
}

// ---- a fatal signal while a group's kernel runs ----

// The bundle of the group whose kernel runs now, made before it ran: the
// handler only opens, writes and closes (async-signal-safe calls). One slot
// for the process: with plans running on several threads at once, it holds
// the group started last.
struct Prepared {
  std::string path;
  std::string bytes;
};
std::atomic<const Prepared*> g_prepared{nullptr};
constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
struct sigaction g_previous[std::size(kSignals)];

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= size_t(w);
  }
}

void on_fatal_signal(int sig, siginfo_t*, void*) {
  if (const Prepared* p = g_prepared.exchange(nullptr)) {
    const int fd = ::open(p->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      write_all(fd, p->bytes.data(), p->bytes.size());
      ::close(fd);
      static const char kMessage[] = "nnvm: a fatal signal while a fused group's kernel ran; repro bundle: ";
      write_all(2, kMessage, sizeof kMessage - 1);
      write_all(2, p->path.c_str(), p->path.size());
      write_all(2, "\n", 1);
    }
  }
  // Whatever handled the signal before (the default action, a sanitizer's)
  // handles it now: raised again, it is delivered when this handler returns.
  for (size_t k = 0; k < std::size(kSignals); ++k)
    if (kSignals[k] == sig) ::sigaction(sig, &g_previous[k], nullptr);
  ::raise(sig);
}

void install_signal_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    for (size_t k = 0; k < std::size(kSignals); ++k) ::sigaction(kSignals[k], &action, &g_previous[k]);
  });
}

// Clears the prepared slot when the kernel returns or throws.
struct PreparedScope {
  std::unique_ptr<Prepared> prepared;
  ~PreparedScope() {
    if (prepared) {
      const Prepared* mine = prepared.get();
      g_prepared.compare_exchange_strong(mine, nullptr);
    }
  }
};

// ---- the reference run ----

std::string group_ops(const GroupProgram& program) {
  std::string ops;
  for (const GroupProgram::Step& s : program.steps()) absl::StrAppend(&ops, ops.empty() ? "" : "+", s.op->name);
  return ops;
}

ReproBundle group_bundle(std::string kind, std::string message, const Trace& t, const FusionGroup& g,
                         const GroupProgram& program, const GroupValues& values, absl::Span<const Attrs* const> attrs,
                         const std::vector<Tensor>& inputs) {
  ReproBundle b;
  b.kind = std::move(kind);
  b.engine = engine_version();
  b.message = std::move(message);
  b.unit = program.kernel() ? absl::StrCat(program.backend(), ": ", program.describe()) : program.describe();
  if (program.kernel()) b.code = program.kernel()->code();
  b.trace = group_trace(t, g, values, attrs, inputs);
  b.inputs = inputs;
  return b;
}

bool has_quantized(const std::vector<Tensor>& xs) {
  for (const Tensor& x : xs)
    if (is_quantized(x.dtype())) return true;
  return false;
}

}  // namespace

bool checking() { return state().on.load(std::memory_order_relaxed); }

void set_check(bool on) {
  CheckState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.check = on;
  update_on(s);
}

bool check_enabled() { return state().check.load(); }

void set_repro_dir(std::string dir) {
  CheckState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.dir = std::move(dir);
  update_on(s);
}

std::string repro_dir() {
  CheckState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.dir;
}

CheckStats check_stats() {
  CheckState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.stats;
}

void reset_check_stats() {
  CheckState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats = CheckStats();
  s.reported.clear();
}

void run_group_checked(const Trace& t, const FusionGroup& g, const GroupProgram& program, const GroupValues& values,
                       std::vector<Tensor>& env, absl::Span<const Attrs* const> attrs, const Tiling& tiling,
                       uint64_t layouts, uint64_t plan_hash) {
  CheckState& s = state();
  const bool check = s.check.load(std::memory_order_relaxed);
  const std::string dir = repro_dir();
  const bool fused = program.kernel() != nullptr || program.tiled();  // else it runs node by node already
  if (!fused || (!check && dir.empty())) {
    program.run(values.ids, env, attrs, tiling, layouts);
    return;
  }
  // The inputs as they were: the kernel may write an output over one.
  std::vector<Tensor> inputs;
  for (int32_t i = 0; i < values.inputs; ++i) inputs.push_back(copy_with_layout(env[size_t(values.ids[size_t(i)])]));
  const std::string key = group_key(t, g, values);
  PreparedScope prepared;
  std::error_code dir_error;  // then no bundles: the run itself goes on
  if (!dir.empty()) std::filesystem::create_directories(dir, dir_error);
  const bool bundles = !dir.empty() && !dir_error && !has_quantized(inputs);
  if (bundles) {
    try {
      const ReproBundle b =
          group_bundle("crash", "a fatal signal (SIGSEGV, SIGBUS, SIGILL or SIGFPE) while the group's kernel ran", t,
                       g, program, values, attrs, inputs);
      prepared.prepared = std::make_unique<Prepared>(Prepared{bundle_path(dir, "crash", key), repro_bundle_bytes(b)});
      install_signal_handlers();
      g_prepared.store(prepared.prepared.get());
    } catch (const std::exception& e) {  // the run goes on without a crash bundle
      std::fprintf(stderr, "nnvm: no crash bundle for group %s: %s\n", group_ops(program).c_str(), e.what());
    }
  }
  program.run(values.ids, env, attrs, tiling, layouts);
  if (!check) return;

  // The same group unfused: its steps' reference kernels on the saved inputs.
  std::vector<Tensor> ref(env.size());
  for (int32_t i = 0; i < values.inputs; ++i) ref[size_t(values.ids[size_t(i)])] = inputs[size_t(i)];
  for (const GroupProgram::Step& step : program.steps()) {
    if (step.op->view) continue;  // the program makes views
    for (int32_t o : step.outputs) {
      const Value& v = t.value(values.ids[size_t(o)]);
      ref[size_t(values.ids[size_t(o)])] = empty(v.shape, TensorOptions(v.dtype));
    }
  }
  program.run_steps(values.ids, ref, attrs);
  std::string differences;
  for (int32_t j = 0; j < values.outputs; ++j) {
    const ValueId id = values.ids[size_t(values.inputs + j)];
    const Difference d = compare_results(env[size_t(id)], ref[size_t(id)]);
    if (d.agrees) continue;
    absl::StrAppend(&differences, differences.empty() ? "" : "; ", "output ", j, " (%", id, "): ", d.what);
    if (env[size_t(id)].defined() && ref[size_t(id)].defined() && env[size_t(id)].dtype() == ref[size_t(id)].dtype() &&
        same_dims(env[size_t(id)].sizes(), ref[size_t(id)].sizes()))
      env[size_t(id)].copy_(ref[size_t(id)]);  // the run goes on with the reference's values
  }
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.stats.groups_checked;
    if (!differences.empty()) {
      ++s.stats.mismatches;
      first = s.reported.insert({plan_hash, g.nodes.empty() ? -1 : g.nodes[0]}).second;
    }
  }
  if (!first) return;
  const std::string unit = program.kernel() ? absl::StrCat(program.backend(), ": ", program.describe())
                                            : program.describe();
  std::string where;
  if (bundles) {
    const std::string path = bundle_path(dir, "mismatch", key);
    try {
      write_repro_bundle(group_bundle("mismatch",
                                      absl::StrCat("the fused group ", group_ops(program), " (", unit,
                                                   ") disagrees with its reference kernels: ", differences),
                                      t, g, program, values, attrs, inputs),
                         path);
      note_bundle(s, path);
      where = absl::StrCat("; repro bundle: ", path);
    } catch (const std::exception& e) {
      where = absl::StrCat("; no repro bundle: ", e.what());
    }
  }
  std::fprintf(stderr, "nnvm check: plan %016llx group %s (%s) disagrees with its reference kernels: %s%s\n",
               static_cast<unsigned long long>(plan_hash), group_ops(program).c_str(), unit.c_str(),
               differences.c_str(), where.c_str());
}

void compile_failed(const Trace& t, const std::string& what) {
  const std::string dir = repro_dir();
  if (dir.empty()) return;
  try {
    std::filesystem::create_directories(dir);
    ReproBundle b;
    b.kind = "compile";
    b.engine = engine_version();
    b.message = absl::StrCat("the trace failed to compile: ", what);
    b.trace = t;
    const std::string path = bundle_path(dir, "compile", t.to_string());
    write_repro_bundle(b, path);
    note_bundle(state(), path);
    std::fprintf(stderr, "nnvm: a trace failed to compile; repro bundle: %s\n", path.c_str());
  } catch (const std::exception& e) {  // the compile's own error is what the caller gets
    std::fprintf(stderr, "nnvm: a trace failed to compile; no repro bundle: %s\n", e.what());
  }
}

}  // namespace nnvm::trace
