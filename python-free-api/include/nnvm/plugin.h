// Plugins (docs/PLUGINS.md): shared libraries that add ops, graph passes and
// backends to a running nnvm without a rebuild of it.
//
//   nnvm::load_plugin("libmyops.so");          // or NNVM_PLUGINS=a.so:b.so at start-up
//
// A plugin includes this header and defines its registration function with
// NNVM_PLUGIN, which also exports the ABI version it was built against:
//
//   NNVM_PLUGIN(registry) {
//     registry.op("myops::gate").inputs(2).is_elementwise().infer_with(...)
//         .kernel(DeviceType::CPU, ...).grad_with(...);
//     registry.pointwise("myops::gate", expr);          // the JIT fuses it with its neighbours
//     registry.pass("after_passes", "myops::rewrite", fn);
//     registry.backend(std::make_shared<MyBackend>(), 10);
//   }
//
// What the function stages registers all or none: every name is checked
// against the ops, passes, backends and JIT lowerings already registered
// (and against each other) before anything is committed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nnvm/core/op.h"
#include "nnvm/trace/backend.h"
#include "nnvm/trace/pass_manager.h"

// Bumped whenever a type a plugin sees (OpDef, Trace, Backend, Registry,
// Pointwise) changes layout or meaning: a plugin built against another
// version is refused at load.
#define NNVM_PLUGIN_ABI_VERSION 2

namespace nnvm::plugin {

// The primitives of a pointwise expression, on float32 values (the JIT's
// own, with the reference kernels' semantics, NaN handling included).
enum class Prim : uint8_t {
  kInput,     // the op's input `index`
  kAttr,      // the op's Scalar attribute `index`, read at each run
  kConst,     // `value`
  kAdd, kSub, kMul, kDiv,
  kMax, kMin,  // NaN-propagating (torch.maximum)
  kNeg, kAbs, kRelu, kSqrt, kExp, kLog, kTanh, kSigmoid, kErf,
};

// A pointwise expression: how the JIT computes an elementwise op with one
// output, element by element. A tiny DAG; each builder call returns a Ref
// to the node it adds, and the last node added is the result.
//
//   Pointwise e;                                // x * sigmoid(beta * g)
//   e.mul(e.input(0), e.sigmoid(e.mul(e.attr(0), e.input(1))));
class Pointwise {
 public:
  using Ref = int32_t;
  struct Node {
    Prim prim;
    Ref a = -1, b = -1;  // operands: earlier nodes
    int32_t index = -1;  // kInput, kAttr
    float value = 0;     // kConst
  };

  Ref input(int32_t i) { return push({Prim::kInput, -1, -1, i, 0}); }
  Ref attr(int32_t k) { return push({Prim::kAttr, -1, -1, k, 0}); }
  Ref constant(float v) { return push({Prim::kConst, -1, -1, -1, v}); }
  Ref add(Ref a, Ref b) { return binary(Prim::kAdd, a, b); }
  Ref sub(Ref a, Ref b) { return binary(Prim::kSub, a, b); }
  Ref mul(Ref a, Ref b) { return binary(Prim::kMul, a, b); }
  Ref div(Ref a, Ref b) { return binary(Prim::kDiv, a, b); }
  Ref max(Ref a, Ref b) { return binary(Prim::kMax, a, b); }
  Ref min(Ref a, Ref b) { return binary(Prim::kMin, a, b); }
  Ref neg(Ref a) { return unary(Prim::kNeg, a); }
  Ref abs(Ref a) { return unary(Prim::kAbs, a); }
  Ref relu(Ref a) { return unary(Prim::kRelu, a); }
  Ref sqrt(Ref a) { return unary(Prim::kSqrt, a); }
  Ref exp(Ref a) { return unary(Prim::kExp, a); }
  Ref log(Ref a) { return unary(Prim::kLog, a); }
  Ref tanh(Ref a) { return unary(Prim::kTanh, a); }
  Ref sigmoid(Ref a) { return unary(Prim::kSigmoid, a); }
  Ref erf(Ref a) { return unary(Prim::kErf, a); }
  Ref unary(Prim p, Ref a) { return push({p, a, -1, -1, 0}); }
  Ref binary(Prim p, Ref a, Ref b) { return push({p, a, b, -1, 0}); }

  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  Ref push(Node n) {
    nodes_.push_back(n);
    return Ref(nodes_.size() - 1);
  }
  std::vector<Node> nodes_;
};

struct Loader;

// What one plugin registers: staged while its registration function runs,
// committed all or none by the loader when it returns (load_plugin,
// register_plugin), under the lock that serialises plugins.
class Registry {
 public:
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The plugin's name: its library's path as given to load_plugin (or
  // register_plugin's name).
  const std::string& plugin() const { return plugin_; }

  // A new op, set up with OpDef's fluent calls (core/op.h). Its name must
  // be new to nnvm.
  OpDef& op(std::string_view name);
  // How the JIT computes `op`, an elementwise op with one output this
  // plugin registers (OpDef::is_elementwise): without one, the op still
  // fuses into pointwise groups, but a group that holds it runs its tiles
  // through the op's kernel instead of a JIT kernel.
  void pointwise(std::string_view op, Pointwise expr);
  // A graph pass run on every hot trace at `point` of the compile pipeline:
  // "before_passes", "after_passes" or "before_fuse" (trace/pass_points.h).
  // It returns how many nodes it changed (0: none).
  void pass(std::string_view point, std::string_view name, trace::PassFn fn);
  // A backend offered fusion groups ahead of those of lower priority (the
  // x86 JIT's is 0; trace/backend.h).
  void backend(std::shared_ptr<const trace::Backend> b, int priority = 0);

 private:
  friend struct Loader;
  explicit Registry(std::string plugin);
  // Checks the staged registrations and commits them, all or none; throws
  // nnvm::Error naming the plugin and the problem.
  void commit();

  struct Staged;
  std::string plugin_;
  std::unique_ptr<Staged> staged_;
};

// A loaded plugin. Never unloaded: its code backs what it registered.
struct Plugin {
  std::string path;
  std::vector<std::string> ops, passes, backends;
};

}  // namespace nnvm::plugin

namespace nnvm {

// Loads the shared library at `path` (dlopen, RTLD_NOW | RTLD_LOCAL) and
// registers what its NNVM_PLUGIN function stages, all or none. Loading a
// library already loaded (the same file by any path) returns its Plugin
// again. Throws nnvm::Error naming the path and the problem: the library does
// not load, lacks the entry points, was built against another
// NNVM_PLUGIN_ABI_VERSION, its function throws, or a name it registers is
// taken. A library that failed stays mapped (its own static initialisers
// may have run), but nothing it staged is registered.
const plugin::Plugin& load_plugin(const std::string& path);

// Registers what `fn` stages under the name `name`, as load_plugin does for a
// library's function: all or none (extensions linked into the program, tests).
const plugin::Plugin& register_plugin(const std::string& name, const std::function<void(plugin::Registry&)>& fn);

// The plugins loaded so far, in load order.
std::vector<const plugin::Plugin*> loaded_plugins();

}  // namespace nnvm

// Defines the plugin's registration function and exports the ABI version:
//   NNVM_PLUGIN(registry) { registry.op(...)...; }
#define NNVM_PLUGIN(registry)                                                                        \
  extern "C" __attribute__((visibility("default"))) int nnvm_plugin_abi_version() {                 \
    return NNVM_PLUGIN_ABI_VERSION;                                                                  \
  }                                                                                                  \
  static void nnvm_plugin_register_impl(nnvm::plugin::Registry& registry);                          \
  extern "C" __attribute__((visibility("default"))) void nnvm_plugin_register(                      \
      nnvm::plugin::Registry& registry) {                                                            \
    nnvm_plugin_register_impl(registry);                                                             \
  }                                                                                                  \
  static void nnvm_plugin_register_impl(nnvm::plugin::Registry& registry)
