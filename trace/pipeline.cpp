#include "nnvm/trace/pipeline.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"
#include "nnvm/trace/check.h"
#include "nnvm/core/profiling.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/kernel_cache.h"
#include "nnvm/trace/pass_points.h"
#include "nnvm/trace/passes/constant_fold.h"
#include "nnvm/trace/passes/cse.h"
#include "nnvm/trace/passes/dce.h"
#include "nnvm/trace/passes/recognise.h"
#include "nnvm/trace/passes/simplify.h"
#include "nnvm/trace/signature.h"

namespace nnvm::trace {

namespace {

// Where NNVM_LOG=pipeline's lines go (set_pipeline_log).
struct LogSink {
  std::mutex mutex;
  std::function<void(const std::string&)> write;
  std::atomic<bool> on{false};
};

LogSink& log_sink() {
  static LogSink* sink = [] {
    auto* s = new LogSink;  // never destroyed: compiles may run during exit
    if (log_enabled("pipeline")) {
      s->write = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
      s->on = true;
    }
    return s;
  }();
  return *sink;
}

// One line per stage of a compile, after the stage ran (NNVM_LOG=pipeline),
// and a "stage" event per stage for a profiler session.
class StageLog {
 public:
  // Names the compile by `name`, or by the signature hash of `t` when it is 0.
  StageLog(const Trace& t, uint64_t name)
      : log_(log_sink().on.load(std::memory_order_relaxed)), profile_(profiling::on()) {
    if (on()) name_ = name ? name : signature(t).hash;
  }
  uint64_t name() const { return name_; }
  bool on() const { return log_ || profile_; }
  // Starts timing the next stage.
  void start() {
    if (on()) start_ns_ = profiling::now_ns();
  }
  void done(const char* stage, const std::string& what) const {
    if (!on()) return;
    const int64_t end_ns = profiling::now_ns();
    if (profile_) {
      profiling::Event e;
      e.name = stage;
      e.category = "stage";
      e.start_ns = start_ns_;
      e.duration_ns = end_ns - start_ns_;
      e.args = absl::StrCat("\"trace\": \"", absl::Hex(name_, absl::kZeroPad16), "\", \"what\": \"",
                            profiling::json_escape(what), "\"");
      profiling::record(std::move(e));
    }
    if (!log_) return;
    const double ms = double(end_ns - start_ns_) / 1e6;
    const std::string line = absl::StrFormat("pipeline %016x %-11s %8.3f ms  %s", name_, stage, ms, what);
    LogSink& sink = log_sink();
    std::lock_guard<std::mutex> lock(sink.mutex);
    if (sink.write) sink.write(line);
  }

 private:
  bool log_, profile_;
  uint64_t name_ = 0;
  int64_t start_ns_ = 0;
};

// lower: the group's program from the kernel cache, built (and offered to the
// backends) on a miss; *built counts the programs this compile built.
std::shared_ptr<const GroupProgram> cached_program(const Trace& t, const FusionGroup& g, const GroupValues& values,
                                                   int* built) {
  std::shared_ptr<const CompiledKernel> kernel = global_kernel_cache().get(group_key(t, g, values), [&] {
    ++*built;
    return std::make_shared<const GroupProgram>(t, g, values);
  });
  auto program = std::dynamic_pointer_cast<const GroupProgram>(kernel);
  NNVM_CHECK(program != nullptr, "compile_plan", "the kernel cache holds another kind of kernel under a tile key");
  return program;
}

// schedule: groups in a topological order that keeps memory small. Of the
// ready groups, the earliest-numbered one that frees at least the bytes it
// allocates runs first (a view, a reduction, an optimizer update that is the
// last reader of its gradient); when none does, the earliest-numbered ready
// group. Freeing counts the computed values whose last reader the group is
// (a view's readers read its base). The order of first nodes is not always
// topological: a group may read a value of a group whose first node comes later.
std::vector<int32_t> topological_order(const Trace& t, const FusionPlan& f) {
  const size_t n = f.groups.size(), nv = t.values().size();
  std::vector<ValueId> base(nv);
  for (size_t v = 0; v < nv; ++v)
    base[v] = computed_by_view(t, ValueId(v)) ? base[size_t(t.nodes()[size_t(t.value(ValueId(v)).node)].inputs[0])] : ValueId(v);
  auto bytes = [&](ValueId v) {
    const Value& val = t.value(v);
    return val.node < 0 || computed_by_view(t, v) ? int64_t(0) : numel_of(val.shape) * int64_t(itemsize(val.dtype));
  };
  std::vector<bool> kept(nv, false);  // a trace output's memory outlives the plan
  for (ValueId out : t.outputs()) kept[size_t(base[size_t(out)])] = true;

  std::vector<std::vector<int32_t>> readers(n);
  std::vector<std::vector<ValueId>> reads(n);  // the bases each group reads, each once
  std::vector<int32_t> waiting(n, 0), pending_reads(nv, 0);
  for (size_t g = 0; g < n; ++g) {
    std::vector<int32_t> producers;
    for (ValueId in : f.groups[g].inputs) {
      const ValueId b = base[size_t(in)];
      if (std::find(reads[g].begin(), reads[g].end(), b) == reads[g].end()) {
        reads[g].push_back(b);
        ++pending_reads[size_t(b)];
      }
      const int32_t node = t.value(in).node;
      if (node < 0) continue;
      const int32_t p = f.group_of[size_t(node)];
      if (p != int32_t(g) && std::find(producers.begin(), producers.end(), p) == producers.end())
        producers.push_back(p);
    }
    for (int32_t p : producers) readers[size_t(p)].push_back(int32_t(g));
    waiting[g] = int32_t(producers.size());
  }
  auto shrinks = [&](int32_t g) {
    int64_t net = 0;
    for (ValueId out : f.groups[size_t(g)].outputs) net += bytes(out);
    for (ValueId b : reads[size_t(g)])
      if (pending_reads[size_t(b)] == 1 && !kept[size_t(b)]) net -= bytes(b);
    return net <= 0;
  };
  std::set<int32_t> ready;
  for (size_t g = 0; g < n; ++g)
    if (waiting[g] == 0) ready.insert(int32_t(g));
  std::vector<int32_t> order;
  while (!ready.empty()) {
    auto pick = std::find_if(ready.begin(), ready.end(), shrinks);
    const int32_t g = pick == ready.end() ? *ready.begin() : *pick;
    ready.erase(g);
    order.push_back(g);
    for (ValueId b : reads[size_t(g)]) --pending_reads[size_t(b)];
    for (int32_t r : readers[size_t(g)])
      if (--waiting[size_t(r)] == 0) ready.insert(r);
  }
  NNVM_CHECK(order.size() == n, "compile_plan", "the fusion groups form a cycle:\n", f.to_string(t), t.to_string());
  return order;
}

// plan_memory's schedule: each node's step in `order`; the arena holds every
// value a node computes (not a view) but the trace's outputs and the values a
// tiled group keeps in its per-tile scratch.
Schedule schedule_of(const Trace& t, const FusionPlan& f, const std::vector<LoweredGroup>& groups,
                     const std::vector<int32_t>& order, std::vector<bool>& computed) {
  Schedule schedule;
  schedule.step.resize(t.nodes().size());
  for (size_t k = 0; k < order.size(); ++k)
    for (int32_t n : f.groups[size_t(order[k])].nodes) schedule.step[size_t(n)] = int32_t(k);
  std::vector<bool> is_output(t.values().size(), false), scratch(t.values().size(), false);
  for (ValueId v : t.outputs()) is_output[size_t(v)] = true;
  for (const LoweredGroup& g : groups)
    if (g.program->tiled())
      for (size_t i = size_t(g.values.inputs + g.values.outputs); i < g.values.ids.size(); ++i)
        scratch[size_t(g.values.ids[i])] = true;
  schedule.in_arena.resize(t.values().size());
  computed.resize(t.values().size());
  for (size_t v = 0; v < t.values().size(); ++v) {
    const Value& val = t.value(ValueId(v));
    computed[v] = val.node >= 0 && t.nodes()[size_t(val.node)].op->view == nullptr && !scratch[v];
    schedule.in_arena[v] = computed[v] && !is_output[v];
  }
  return schedule;
}

std::string kinds_of(const FusionPlan& f) {
  std::map<std::string, int> kinds;
  for (const FusionGroup& g : f.groups) ++kinds[group_kind_name(g.kind)];
  std::string s;
  for (const auto& [kind, count] : kinds) absl::StrAppend(&s, s.empty() ? "" : ", ", count, " ", kind);
  return s;
}

}  // namespace

bool computed_by_view(const Trace& t, ValueId v) {
  const int32_t node = t.value(v).node;
  return node >= 0 && t.nodes()[size_t(node)].op->view != nullptr;
}

void set_pipeline_log(std::function<void(const std::string&)> sink) {
  LogSink& s = log_sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.on = sink != nullptr;
  s.write = std::move(sink);
}

namespace {

// The passes stage: the passes added at "before_passes", then the built-in
// ones and those added after them, and what guards them: compiles run them
// (a pass manager keeps statistics) while add_passes changes them, on any thread.
struct Passes {
  std::mutex mutex;
  PassManager before;
  PassManager main;
  std::set<std::string, std::less<>> names;
};

Passes& passes() {
  static Passes* p = [] {
    auto* s = new Passes;  // never destroyed: compiles may run during exit
    s->main.add("dce", [](Trace& t) { return dce(t); })
        .add("cse", [](Trace& t) { return cse(t); })
        .add("constant_fold", [](Trace& t) { return constant_fold(t); })
        .add("simplify", [](Trace& t) { return simplify(t); })
        .add("recognise", [](Trace& t) { return recognise(t); })
        .add("dce_after", [](Trace& t) { return dce(t); });
    s->names = {"dce", "cse", "constant_fold", "simplify", "recognise", "dce_after"};
    return s;
  }();
  return *p;
}

}  // namespace

PassManager& global_passes() { return passes().main; }

const std::vector<std::string>& pass_points() {
  static const std::vector<std::string> points = {"before_passes", "after_passes", "before_fuse"};
  return points;
}

void add_passes(std::vector<PointPass> added) {
  Passes& p = passes();
  std::lock_guard<std::mutex> lock(p.mutex);
  std::set<std::string, std::less<>> names;
  const std::vector<std::string>& points = pass_points();
  for (const PointPass& a : added) {
    NNVM_CHECK(std::find(points.begin(), points.end(), a.point) != points.end(), "add_pass", "pass '", a.name,
               "': the pipeline has no point '", a.point, "' (before_passes, after_passes, before_fuse)");
    NNVM_CHECK(!a.name.empty() && a.pass != nullptr, "add_pass", "a pass needs a name and a function");
    NNVM_CHECK(!p.names.contains(a.name) && names.insert(a.name).second, "add_pass", "a pass named '", a.name,
               "' is already registered");
  }
  for (PointPass& a : added) {
    p.names.insert(a.name);
    (a.point == "before_passes" ? p.before : p.main).add(std::move(a.name), std::move(a.pass));
  }
}

bool has_pass(std::string_view name) {
  Passes& p = passes();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.names.contains(name);
}

PlanParts plan_stages(Trace optimised, uint64_t name) {
  StageLog log(optimised, name);
  PlanParts p{std::move(optimised), {}, {}, {}, {}, {}, {}};
  const Trace& t = p.trace;

  log.start();
  p.fusion = fuse(t);
  log.done("fuse", absl::StrCat(t.nodes().size(), " nodes into ", p.fusion.groups.size(), " groups (",
                                kinds_of(p.fusion), "), ", p.fusion.not_fused.size(), " edges not fused"));

  log.start();
  int built = 0;
  for (const FusionGroup& g : p.fusion.groups) {
    LoweredGroup lowered;
    lowered.values = group_values(t, g);
    lowered.program = cached_program(t, g, lowered.values, &built);
    lowered.tiling = lowered.program->tiling(t, lowered.values.ids);
    p.groups.push_back(std::move(lowered));
  }
  if (log.on()) {
    std::map<std::string, int> by;
    for (const LoweredGroup& g : p.groups) ++by[g.program->kernel() ? g.program->backend() : "portable"];
    std::string to;
    for (const auto& [name, count] : by) absl::StrAppend(&to, to.empty() ? "" : ", ", name, " ", count);
    log.done("lower", absl::StrCat(p.groups.size(), " groups (", to, "), ", built, " programs built, ",
                                   p.groups.size() - size_t(built), " from the kernel cache"));
  }

  log.start();
  p.order = topological_order(t, p.fusion);
  p.schedule = schedule_of(t, p.fusion, p.groups, p.order, p.computed);
  log.done("schedule", absl::StrCat(p.order.size(), " steps"));

  log.start();
  p.memory = plan_memory(t, &p.schedule);
  log.done("plan_memory", absl::StrFormat("arena %d bytes (each value in a buffer of its own: %d)",
                                          p.memory.arena_bytes, p.memory.naive_bytes));
  return p;
}

namespace {

// The passes stage on a copy of t, logged as `log`'s compile.
Trace run_passes(const Trace& t, StageLog& log) {
  Trace optimised = t;
  log.start();
  std::vector<PassStats> ran;
  {
    Passes& p = passes();
    std::lock_guard<std::mutex> lock(p.mutex);
    ran = p.before.run(optimised);
    std::vector<PassStats> main = p.main.run(optimised);
    ran.insert(ran.end(), main.begin(), main.end());
  }
  if (log.on()) {
    std::string what = absl::StrCat(t.nodes().size(), " -> ", optimised.nodes().size(), " nodes");
    for (const PassStats& s : ran)
      if (s.changes) absl::StrAppend(&what, ", ", s.name, " ", s.changes);
    log.done("passes", what);
  }
  return optimised;
}

}  // namespace

Trace optimise(const Trace& t) {
  StageLog log(t, 0);
  return run_passes(t, log);
}

std::shared_ptr<const Plan> compile_plan(const Trace& t) {
  try {
    StageLog log(t, 0);
    PlanParts parts = plan_stages(run_passes(t, log), log.name());
    log.start();
    auto plan = std::make_shared<const FusedPlan>(std::move(parts));
    log.done("plan", absl::StrCat(plan->fusion().groups.size(), " groups ready"));
    return plan;
  } catch (const std::exception& e) {
    compile_failed(t, e.what());  // its repro bundle, under NNVM_REPRO (trace/check.h)
    throw;
  }
}

}  // namespace nnvm::trace
