// The containers: Sequential (modules applied in order), ModuleList and
// ParameterList (held by index: children and parameters named "0", "1", ...,
// so names read "features.0.weight"), ModuleDict (held by key, the child's
// name), and Functional (a function as a module, for Sequential).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nnvm/nn/module.h"

namespace nnvm::nn {

// A module of its own with `m`'s structure, parameters, buffers and training
// mode (libtorch's clone()): a Sequential layer by layer; any other module
// rebuilt from its `options`, or copied when it holds no state and no
// children (an activation, a Functional), or made by its default
// constructor, then given m's state. Throws nnvm::Error when none applies or
// the rebuilt module's state does not match m's (load_state_dict's check).
template <class M> std::shared_ptr<M> clone_module(const M& m);

// Each module must have `Tensor forward(const Tensor&)`; forward chains them.
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <class... Modules> explicit SequentialImpl(Modules&&... modules) : Module("Sequential") {
    (push_back(std::forward<Modules>(modules)), ...);
  }

  template <class M> void push_back(std::shared_ptr<M> module) {
    push_back(std::to_string(layers_.size()), std::move(module));
  }
  template <class M> void push_back(std::string name, std::shared_ptr<M> module) {
    M* raw = module.get();
    register_module(name, module);
    layers_.push_back({module, [raw](const Tensor& x) { return raw->forward(x); },
                       [raw, name](SequentialImpl& into) { into.push_back(name, clone_module(*raw)); }});
  }
  template <class Holder> void push_back(Holder holder)
    requires requires { typename Holder::ContainedType; }
  {
    push_back(holder.ptr());
  }
  template <class Holder> void push_back(std::string name, Holder holder)
    requires requires { typename Holder::ContainedType; }
  {
    push_back(std::move(name), holder.ptr());
  }

  Tensor forward(const Tensor& x);
  // A Sequential of its own: each layer cloned (clone_module), under its name.
  std::shared_ptr<SequentialImpl> clone() const;
  size_t size() const { return layers_.size(); }
  bool is_empty() const { return layers_.empty(); }
  // Throws nnvm::Error when i is out of range.
  const std::shared_ptr<Module>& ptr(size_t i) const;
  const std::shared_ptr<Module>& operator[](size_t i) const { return ptr(i); }
  // The i-th module as its concrete type; throws nnvm::Error when it is another type.
  template <class T> auto* at(size_t i) const {
    auto* m = ptr(i)->template as<T>();
    NNVM_CHECK(m != nullptr, "Sequential", "module ", i, " is a ", ptr(i)->name(), ", not the requested type");
    return m;
  }

 private:
  struct Layer {
    std::shared_ptr<Module> module;
    std::function<Tensor(const Tensor&)> forward;
    std::function<void(SequentialImpl&)> clone_into;  // pushes a clone of the layer
  };
  std::vector<Layer> layers_;
};
NNVM_MODULE(Sequential);

template <class M> std::shared_ptr<M> clone_module(const M& m) {
  std::shared_ptr<M> copy;
  if constexpr (std::is_same_v<M, SequentialImpl>) {
    return m.clone();
  } else if constexpr (requires { std::make_shared<M>(m.options); }) {
    copy = std::make_shared<M>(m.options);
  } else if (std::is_copy_constructible_v<M> && m.children().empty() && m.parameters().empty() &&
             m.buffers().empty()) {
    if constexpr (std::is_copy_constructible_v<M>) return std::make_shared<M>(m);
  } else if constexpr (std::is_default_constructible_v<M>) {
    copy = std::make_shared<M>();
  }
  NNVM_CHECK(copy != nullptr, "clone", "cannot clone a ", m.name(),
             ": expected an `options` member or a default constructor to rebuild it from");
  copy->load_state_dict(m.state_dict());
  copy->train(m.is_training());
  return copy;
}

class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  template <class... Modules> explicit ModuleListImpl(Modules&&... modules) : Module("ModuleList") {
    (push_back(std::forward<Modules>(modules)), ...);
  }

  template <class M> void push_back(std::shared_ptr<M> module) {
    register_module(std::to_string(modules_.size()), module);
    modules_.push_back(std::move(module));
  }
  template <class Holder> void push_back(Holder holder)
    requires requires { typename Holder::ContainedType; }
  {
    push_back(holder.ptr());
  }

  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  const std::shared_ptr<Module>& ptr(size_t i) const;
  const std::shared_ptr<Module>& operator[](size_t i) const { return ptr(i); }
  template <class T> auto* at(size_t i) const {
    auto* m = ptr(i)->template as<T>();
    NNVM_CHECK(m != nullptr, "ModuleList", "module ", i, " is a ", ptr(i)->name(), ", not the requested type");
    return m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
NNVM_MODULE(ModuleList);

class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() : Module("ModuleDict") {}
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  explicit ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules);

  // Adds `module` under `key`, or replaces the module held there.
  void insert(const std::string& key, std::shared_ptr<Module> module);
  template <class Holder> void insert(const std::string& key, Holder holder)
    requires requires { typename Holder::ContainedType; }
  {
    insert(key, std::shared_ptr<Module>(holder.ptr()));
  }
  void update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  // Removes and returns the module under key; throws nnvm::Error when there is none.
  std::shared_ptr<Module> pop(const std::string& key);
  void clear();

  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.is_empty(); }
  bool contains(const std::string& key) const { return modules_.contains(key); }
  std::vector<std::string> keys() const { return modules_.keys(); }
  std::vector<std::shared_ptr<Module>> values() const { return modules_.values(); }
  const auto& items() const { return modules_.items(); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }
  // Throws nnvm::Error when key is absent.
  const std::shared_ptr<Module>& operator[](const std::string& key) const;
  template <class T> auto* at(const std::string& key) const {
    auto* m = (*this)[key]->template as<T>();
    NNVM_CHECK(m != nullptr, "ModuleDict", "module '", key, "' is a ", (*this)[key]->name(),
               ", not the requested type");
    return m;
  }

 private:
  OrderedDict<std::string, std::shared_ptr<Module>> modules_{"Module"};
};
NNVM_MODULE(ModuleDict);

// Parameters held by index, registered as "0", "1", ... (each a leaf that requires grad).
class ParameterListImpl : public Module {
 public:
  ParameterListImpl() : Module("ParameterList") {}
  template <class... Tensors>
    requires(std::is_convertible_v<Tensors, Tensor> && ...)
  explicit ParameterListImpl(Tensors&&... params) : Module("ParameterList") {
    (append(std::forward<Tensors>(params)), ...);
  }

  void append(const Tensor& param);
  void extend(const std::vector<Tensor>& params);
  size_t size() const { return params_.size(); }
  bool is_empty() const { return params_.empty(); }
  // Throws nnvm::Error when i is out of range.
  const Tensor& at(size_t i) const;
  const Tensor& operator[](size_t i) const { return at(i); }
  auto begin() const { return params_.begin(); }
  auto end() const { return params_.end(); }

 private:
  std::vector<Tensor> params_;
};
NNVM_MODULE(ParameterList);

// A function as a module: nn::Functional(nnvm::relu), or with arguments bound
// after the input, nn::Functional(nnvm::leaky_relu, 0.2) (libtorch's std::bind).
class FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;

  explicit FunctionalImpl(Function function);
  template <class Fn, class... Args>
    requires std::is_invocable_r_v<Tensor, Fn, Tensor, Args...>
  explicit FunctionalImpl(Fn function, Args&&... args)
      : FunctionalImpl(Function([function, ... bound = std::forward<Args>(args)](Tensor x) {
          return Tensor(function(std::move(x), bound...));
        })) {}

  Tensor forward(Tensor input) { return function_(std::move(input)); }

 private:
  Function function_;
};
NNVM_MODULE(Functional);

}  // namespace nnvm::nn
