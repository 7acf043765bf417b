// Sequential (modules applied in order) and ModuleList (modules held by index).
// Children are named "0", "1", ... so parameters read "features.0.weight".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nnvm/nn/module.h"

namespace nnvm::nn {

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
    register_module(std::move(name), module);
    layers_.push_back({module, [raw](const Tensor& x) { return raw->forward(x); }});
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
  };
  std::vector<Layer> layers_;
};
NNVM_MODULE(Sequential);

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

}  // namespace nnvm::nn
