// nn::Module, the base of every layer, and the ModuleHolder pattern, following
// libtorch's C++ frontend so model code ports with a namespace change:
//
//   struct NetImpl : nnvm::nn::Module {
//     NetImpl() : fc(register_module("fc", nnvm::nn::Linear(3, 1))) {}
//     nnvm::Tensor forward(const nnvm::Tensor& x) { return fc->forward(x); }
//     nnvm::nn::Linear fc;
//   };
//   NNVM_MODULE(Net);  // Net is a shared-pointer holder of NetImpl, used with ->
//
// A module owns named parameters (leaves that require grad), buffers (state
// that is saved but not trained, e.g. batch norm's running statistics) and
// child modules. Names are dotted paths from the root ("features.0.weight"),
// the keys of state_dict() and of saved safetensors files.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "nnvm/arg.h"
#include "nnvm/core/tensor.h"
#include "nnvm/nn/ordered_dict.h"

namespace nnvm::nn {

class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string name = "");
  virtual ~Module() = default;
  Module(const Module&) = default;
  Module& operator=(const Module&) = default;

  // The module's type name ("Linear"), or the name given to the constructor.
  const std::string& name() const { return name_; }

  // Recursive over children unless recurse is false; undefined tensors (a
  // layer built without bias) are skipped.
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;
  // This module and all its descendants, depth first.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(bool include_self = true);

  // Number of parameter elements (only those that require grad when trainable_only).
  int64_t num_parameters(bool trainable_only = false) const;

  // Training mode, recursively (dropout drops and batch norm uses batch statistics only in training).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return is_training_; }

  // Converts floating parameters and buffers to `dtype` in place: every handle to them sees the new dtype.
  virtual void to(DType dtype);
  // Moves parameters and buffers to `device` (the CPU is the one device
  // today: another throws nnvm::Error naming it), then to `dtype`.
  virtual void to(Device device);
  void to(Device device, DType dtype) {
    to(device);
    to(dtype);
  }
  // Removes the child registered under `name`; throws nnvm::Error when there is none.
  void unregister_module(const std::string& name);

  // Resets every parameter's gradient (to undefined, as libtorch does by default; to zeros otherwise).
  void zero_grad(bool set_to_none = true);

  // Parameters and buffers by dotted name: what nn::save writes and nn::load reads.
  OrderedDict<std::string, Tensor> state_dict() const;
  // Copies `state` into the parameters and buffers. Names, shapes and dtypes
  // must match exactly; throws nnvm::Error, before changing anything, otherwise.
  void load_state_dict(const OrderedDict<std::string, Tensor>& state);

  // The concrete module, or null when it is of another type. T may be a holder (nn::Linear).
  template <class T> auto* as() {
    if constexpr (requires { typename T::ContainedType; })
      return dynamic_cast<typename T::ContainedType*>(this);
    else
      return dynamic_cast<T*>(this);
  }

 protected:
  // Registers `tensor` under `name`; it becomes a leaf that requires grad
  // (unless requires_grad is false). An undefined tensor reserves the name.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor);
  template <class M> std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }
  template <class Holder> Holder register_module(std::string name, Holder holder)
    requires requires { typename Holder::ContainedType; }
  {
    add_child(std::move(name), holder.ptr());
    return holder;
  }
  // Swaps the child registered under `name` for `module` (libtorch's replace_module).
  void replace_child(const std::string& name, std::shared_ptr<Module> module);

 private:
  void add_child(std::string name, std::shared_ptr<Module> module);
  template <class Fn> void visit(const std::string& prefix, bool recurse, Fn&& fn) const;

  std::string name_;
  OrderedDict<std::string, Tensor> parameters_{"Parameter"};
  OrderedDict<std::string, Tensor> buffers_{"Buffer"};
  OrderedDict<std::string, std::shared_ptr<Module>> children_{"Submodule"};
  bool is_training_ = true;
};

// A shared pointer to a module with the module's constructor: nn::Linear(3, 1)
// makes a LinearImpl; copies share it. `holder->` reaches the module,
// `holder(x)` calls its forward.
template <class Contained> class ModuleHolder {
 public:
  using ContainedType = Contained;

  // Builds the module with its default constructor, when it has one.
  ModuleHolder()
    requires std::is_default_constructible_v<Contained>
      : impl_(std::make_shared<Contained>()) {}
  // An empty holder, to be assigned later.
  ModuleHolder(std::nullptr_t) {}  // NOLINT: implicit, like libtorch
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}  // NOLINT
  template <class Head, class... Tail>
    requires(sizeof...(Tail) > 0 || (!std::is_convertible_v<Head, std::shared_ptr<Contained>> &&
                                      !std::is_base_of_v<ModuleHolder, std::decay_t<Head>>))
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Contained* operator->() const { return get(); }
  Contained& operator*() const { return *get(); }
  Contained* get() const {
    NNVM_CHECK(impl_ != nullptr, "ModuleHolder", "accessing an empty module holder");
    return impl_.get();
  }
  const std::shared_ptr<Contained>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }

  template <class... Args> decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }
  template <class Arg> decltype(auto) operator[](Arg&& arg) const { return (*get())[std::forward<Arg>(arg)]; }

 private:
  std::shared_ptr<Contained> impl_;
};

}  // namespace nnvm::nn

// Declares `Name`, a holder of `Name##Impl` (libtorch's TORCH_MODULE).
#define NNVM_MODULE(Name)                                                   \
  class Name : public ::nnvm::nn::ModuleHolder<Name##Impl> {               \
   public:                                                                  \
    using ::nnvm::nn::ModuleHolder<Name##Impl>::ModuleHolder;               \
    using Impl = Name##Impl;                                                \
  }
