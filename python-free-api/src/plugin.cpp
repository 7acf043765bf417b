// Plugins (nnvm/plugin.h, docs/PLUGINS.md): loading, staging, and the all or
// none commit. The rooms below own each table (core/op_batch.h,
// trace/pass_points.h, trace/backend.h, jit/op_lowering.h); this file checks a
// plugin's names against all of them under one lock before it adds to any.
#include "nnvm/plugin.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/op_batch.h"
#include "nnvm/jit/op_lowering.h"
#include "nnvm/trace/pass_points.h"

namespace nnvm {

namespace plugin {

struct Registry::Staged {
  std::deque<OpDef> ops;  // stable: op() hands out references
  std::vector<jit::OpLowering> lowerings;
  std::vector<trace::PointPass> passes;
  std::vector<std::pair<std::shared_ptr<const trace::Backend>, int>> backends;
  bool committed = false;
};

namespace {

jit::Prim jit_prim(Prim p) {
  switch (p) {
    case Prim::kInput: return jit::Prim::kLoad;
    case Prim::kAttr: return jit::Prim::kArg;
    case Prim::kConst: return jit::Prim::kConst;
    case Prim::kAdd: return jit::Prim::kAdd;
    case Prim::kSub: return jit::Prim::kSub;
    case Prim::kMul: return jit::Prim::kMul;
    case Prim::kDiv: return jit::Prim::kDiv;
    case Prim::kMax: return jit::Prim::kMax;
    case Prim::kMin: return jit::Prim::kMin;
    case Prim::kNeg: return jit::Prim::kNeg;
    case Prim::kAbs: return jit::Prim::kAbs;
    case Prim::kRelu: return jit::Prim::kRelu;
    case Prim::kSqrt: return jit::Prim::kSqrt;
    case Prim::kExp: return jit::Prim::kExp;
    case Prim::kLog: return jit::Prim::kLog;
    case Prim::kTanh: return jit::Prim::kTanh;
    case Prim::kSigmoid: return jit::Prim::kSigmoid;
    case Prim::kErf: return jit::Prim::kErf;
  }
  throw Error(absl::StrCat("plugin: unknown pointwise primitive ", int(p)));
}

// Every plugin loaded or registered, and the lock that makes a plugin's
// check-then-commit one step. Recursive: a plugin's function may load another.
struct Plugins {
  std::recursive_mutex mutex;
  std::deque<Plugin> loaded;  // stable: load_plugin hands out references
  absl::flat_hash_map<void*, const Plugin*> by_handle;
};

Plugins& plugins() {
  static Plugins* p = new Plugins;  // never destroyed: what plugins registered outlives exit
  return *p;
}

[[noreturn]] void refuse(const std::string& plugin, const std::string& why) {
  throw Error(absl::StrCat("plugin ", plugin, ": ", why));
}

}  // namespace

Registry::Registry(std::string plugin) : plugin_(std::move(plugin)), staged_(std::make_unique<Staged>()) {}
Registry::~Registry() = default;

OpDef& Registry::op(std::string_view name) {
  if (name.empty()) refuse(plugin_, "an op needs a name");
  for (const OpDef& d : staged_->ops)
    if (d.name == name) refuse(plugin_, absl::StrCat("the op '", std::string(name), "' is registered twice"));
  OpDef& def = staged_->ops.emplace_back();
  def.name = std::string(name);
  return def;
}

void Registry::pointwise(std::string_view name, Pointwise expr) {
  const std::string op(name);
  jit::OpLowering l{op, {}};
  if (expr.nodes().empty()) refuse(plugin_, absl::StrCat("the pointwise expression of '", op, "' is empty"));
  for (size_t i = 0; i < expr.nodes().size(); ++i) {
    const Pointwise::Node& n = expr.nodes()[i];
    const bool leaf = n.prim == Prim::kInput || n.prim == Prim::kAttr || n.prim == Prim::kConst;
    const bool unary = n.prim >= Prim::kNeg;
    const bool operands_ok = leaf ? n.a < 0 && n.b < 0
                                  : n.a >= 0 && size_t(n.a) < i && (unary ? n.b < 0 : n.b >= 0 && size_t(n.b) < i);
    if (!operands_ok || ((n.prim == Prim::kInput || n.prim == Prim::kAttr) && n.index < 0))
      refuse(plugin_, absl::StrCat("the pointwise expression of '", op, "': node ", i,
                                   " reads no input or attribute, or a node not before it"));
    jit::Expr e{jit_prim(n.prim), n.a, n.b};
    if (n.prim == Prim::kInput || n.prim == Prim::kAttr) e.arg = n.index;
    if (n.prim == Prim::kConst) e.value = n.value;
    l.expr.push_back(e);
  }
  staged_->lowerings.push_back(std::move(l));
}

void Registry::pass(std::string_view point, std::string_view name, trace::PassFn fn) {
  staged_->passes.push_back(trace::PointPass{std::string(point), std::string(name), std::move(fn)});
}

void Registry::backend(std::shared_ptr<const trace::Backend> b, int priority) {
  if (b == nullptr) refuse(plugin_, "a backend is null");
  staged_->backends.emplace_back(std::move(b), priority);
}

void Registry::commit() {
  Staged& s = *staged_;
  if (s.committed) refuse(plugin_, "registered already");
  auto fail = [&](const std::string& why) { refuse(plugin_, why); };
  // The checks: each table's names, then what only this plugin can know.
  for (const OpDef& d : s.ops) {
    if (has_op(d.name)) fail(absl::StrCat("an op named '", d.name, "' is already registered"));
    if (!d.infer && !d.view) fail(absl::StrCat("op '", d.name, "' has no shape inference (infer_with)"));
    if (d.infer && !d.kernels[size_t(DeviceType::CPU)])
      fail(absl::StrCat("op '", d.name, "' has no CPU kernel (kernel(DeviceType::CPU, ...))"));
  }
  std::set<std::string, std::less<>> lowered;
  for (const jit::OpLowering& l : s.lowerings) {
    const OpDef* def = nullptr;
    for (const OpDef& d : s.ops)
      if (d.name == l.op) def = &d;
    if (!def) fail(absl::StrCat("a pointwise expression for '", l.op, "', which is not an op of this plugin"));
    if (!def->elementwise || def->view)
      fail(absl::StrCat("a pointwise expression for '", l.op, "', which is not elementwise (is_elementwise())"));
    for (const jit::Expr& e : l.expr)
      if (e.prim == jit::Prim::kLoad && def->num_inputs >= 0 && e.arg >= def->num_inputs)
        fail(absl::StrCat("the pointwise expression of '", l.op, "' reads input ", e.arg, " of ", def->num_inputs));
    if (!lowered.insert(l.op).second) fail(absl::StrCat("two pointwise expressions for '", l.op, "'"));
    if (jit::has_lowering(l.op)) fail(absl::StrCat("the JIT lowers an op named '", l.op, "' already"));
  }
  std::set<std::string, std::less<>> passes;
  const std::vector<std::string>& points = trace::pass_points();
  for (const trace::PointPass& p : s.passes) {
    if (p.name.empty() || !p.pass) fail("a pass needs a name and a function");
    if (std::find(points.begin(), points.end(), p.point) == points.end())
      fail(absl::StrCat("pass '", p.name, "': the pipeline has no point '", p.point,
                        "' (before_passes, after_passes, before_fuse)"));
    if (trace::has_pass(p.name) || !passes.insert(p.name).second)
      fail(absl::StrCat("a pass named '", p.name, "' is already registered"));
  }
  const std::vector<std::shared_ptr<const trace::Backend>> registered = trace::backends();
  std::set<std::string, std::less<>> backends;
  for (const auto& [b, priority] : s.backends) {
    const std::string name(b->name());
    for (const auto& r : registered)
      if (r->name() == name) fail(absl::StrCat("a backend named '", name, "' is already registered"));
    if (!backends.insert(name).second) fail(absl::StrCat("a backend named '", name, "' is registered twice"));
  }
  // Every check each table makes is made above, so each table's own add
  // (which checks again, all or none) succeeds: the plugins' lock keeps other
  // plugins out. Only an op, pass or backend registered directly, on another
  // thread, between the checks and here could still be refused (docs/PLUGINS.md).
  jit::register_lowerings(s.lowerings);
  trace::add_passes(s.passes);
  register_new_ops(std::vector<OpDef>(s.ops.begin(), s.ops.end()));
  for (const auto& [b, priority] : s.backends) trace::register_backend(b, priority);
  s.committed = true;
}

}  // namespace plugin

namespace plugin {

// Runs a registration function and commits what it staged, under the
// plugins' lock; records the plugin.
struct Loader {
  static const Plugin& run(const std::string& name, const std::function<void(Registry&)>& fn) {
    Registry registry(name);
    try {
      fn(registry);
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find(name) != std::string::npos) throw;
      throw Error(absl::StrCat("plugin ", name, ": its registration function threw: ", what));
    } catch (const std::exception& e) {
      throw Error(absl::StrCat("plugin ", name, ": its registration function threw: ", e.what()));
    }
    registry.commit();
    const Registry::Staged& s = *registry.staged_;
    Plugin p{name, {}, {}, {}};
    for (const OpDef& d : s.ops) p.ops.push_back(d.name);
    for (const trace::PointPass& pass : s.passes) p.passes.push_back(pass.name);
    for (const auto& b : s.backends) p.backends.emplace_back(b.first->name());
    return plugins().loaded.emplace_back(std::move(p));
  }
};

}  // namespace plugin

const plugin::Plugin& register_plugin(const std::string& name, const std::function<void(plugin::Registry&)>& fn) {
  std::lock_guard<std::recursive_mutex> lock(plugin::plugins().mutex);
  return plugin::Loader::run(name, fn);
}

const plugin::Plugin& load_plugin(const std::string& path) {
  plugin::Plugins& p = plugin::plugins();
  std::lock_guard<std::recursive_mutex> lock(p.mutex);
  dlerror();
  // Never closed: a plugin's code backs what it registered, and a library
  // that failed may have registered things itself from static initialisers.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw Error(absl::StrCat("load_plugin ", path, ": the library does not load: ", why ? why : "(no reason given)"));
  }
  if (auto it = p.by_handle.find(handle); it != p.by_handle.end()) return *it->second;
  using Version = int (*)();
  using Register = void (*)(plugin::Registry&);
  auto version = reinterpret_cast<Version>(dlsym(handle, "nnvm_plugin_abi_version"));
  auto entry = reinterpret_cast<Register>(dlsym(handle, "nnvm_plugin_register"));
  if (version == nullptr || entry == nullptr)
    throw Error(absl::StrCat("load_plugin ", path, ": no entry point ",
                             version ? "nnvm_plugin_register" : "nnvm_plugin_abi_version",
                             ": not an nnvm plugin (define its registration with NNVM_PLUGIN from <nnvm/plugin.h>)"));
  const int abi = version();
  if (abi != NNVM_PLUGIN_ABI_VERSION)
    throw Error(absl::StrCat("load_plugin ", path, ": built against plugin ABI version ", abi, ", but this nnvm's is ",
                             NNVM_PLUGIN_ABI_VERSION, ": rebuild it against this nnvm's <nnvm/plugin.h>"));
  const plugin::Plugin& loaded = plugin::Loader::run(path, [entry](plugin::Registry& r) { entry(r); });
  p.by_handle.emplace(handle, &loaded);
  return loaded;
}

std::vector<const plugin::Plugin*> loaded_plugins() {
  plugin::Plugins& p = plugin::plugins();
  std::lock_guard<std::recursive_mutex> lock(p.mutex);
  std::vector<const plugin::Plugin*> out;
  for (const plugin::Plugin& plugin : p.loaded) out.push_back(&plugin);
  return out;
}

namespace {

// NNVM_PLUGINS: loaded while the library starts. This file's room (api) is
// linked after core, kernels, trace and jit (CMakeLists.txt), and static
// initialisers run in link order, so every built-in op, pass and backend is
// registered by now and a plugin's names are checked against all of them. A
// plugin that fails stops the program: it would fail later, less clearly.
[[maybe_unused]] const bool startup_plugins = [] {
  for (absl::string_view path : absl::StrSplit(knobs().plugins, ':', absl::SkipEmpty())) {
    try {
      load_plugin(std::string(path));
    } catch (const Error& e) {
      std::fprintf(stderr, "nnvm: NNVM_PLUGINS: %s\n", e.what());
      std::_Exit(1);
    }
  }
  return true;
}();

}  // namespace

}  // namespace nnvm
