// nn::Module: registration, recursive traversal with dotted names, modes,
// dtype conversion and state dicts.
#include "nnvm/nn/module.h"

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"

namespace nnvm::nn {

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// A parameter's name is a path component: dots would make state_dict keys ambiguous.
void check_name(const std::string& name, std::string_view what) {
  NNVM_CHECK(!name.empty() && name.find('.') == std::string::npos, what, "name '", name,
             "' must be non-empty and contain no '.'");
}

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}

template <class Fn> void Module::visit(const std::string& prefix, bool recurse, Fn&& fn) const {
  fn(prefix, *this);
  if (!recurse) return;
  for (const auto& child : children_) child.value()->visit(join(prefix, child.key()), true, fn);
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  visit("", recurse, [&](const std::string& prefix, const Module& m) {
    for (const auto& p : m.parameters_)
      if (p.value().defined()) out.insert(join(prefix, p.key()), p.value());
  });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  visit("", recurse, [&](const std::string& prefix, const Module& m) {
    for (const auto& b : m.buffers_)
      if (b.value().defined()) out.insert(join(prefix, b.key()), b.value());
  });
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const { return children_; }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(bool include_self) {
  OrderedDict<std::string, std::shared_ptr<Module>> out;
  if (include_self) {
    // A module built on the stack has no owner; name it without one.
    const std::weak_ptr<Module> self = weak_from_this();
    out.insert("", self.expired() ? std::shared_ptr<Module>(this, [](Module*) {}) : shared_from_this());
  }
  for (const auto& child : children_) {
    out.insert(child.key(), child.value());
    for (const auto& item : child.value()->named_modules(false))
      out.insert(join(child.key(), item.key()), item.value());
  }
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  return named_modules(include_self).values();
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const Tensor& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  is_training_ = on;
  for (const auto& child : children_) child.value()->train(on);
}

void Module::to(DType dtype) {
  NNVM_CHECK(is_floating(dtype), "Module::to", "expected a floating dtype, got ", dtype);
  NoGradGuard no_grad;
  for (Tensor& p : parameters())
    if (p.is_floating_point() && p.dtype() != dtype) {
      p.set_data(p.to(dtype));
      if (p.grad().defined()) p.mutable_grad() = Tensor();  // a gradient of the old dtype
    }
  for (const Tensor& b : buffers())
    if (b.is_floating_point() && b.dtype() != dtype) b.set_data(b.to(dtype));
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  for (Tensor& p : parameters())
    if (p.device() != device) p.set_data(p.to(device));
  for (const Tensor& b : buffers())
    if (b.device() != device) b.set_data(b.to(device));
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none)
      p.mutable_grad() = Tensor();
    else
      p.mutable_grad() = zeros_like(p.grad());
  }
}

OrderedDict<std::string, Tensor> Module::state_dict() const {
  OrderedDict<std::string, Tensor> out;
  for (const auto& p : named_parameters()) out.insert(p.key(), p.value());
  for (const auto& b : named_buffers()) out.insert(b.key(), b.value());
  return out;
}

void Module::load_state_dict(const OrderedDict<std::string, Tensor>& state) {
  const OrderedDict<std::string, Tensor> own = state_dict();
  for (const auto& item : own) {
    const Tensor* src = state.find(item.key());
    NNVM_CHECK(src != nullptr, "load_state_dict", "missing entry '", item.key(), "' (expected shape ",
               shape_str(item.value().sizes()), ")");
    NNVM_CHECK(src->sizes() == item.value().sizes(), "load_state_dict", "'", item.key(), "' has shape ",
               shape_str(src->sizes()), " but the module expects ", shape_str(item.value().sizes()));
    NNVM_CHECK(src->dtype() == item.value().dtype(), "load_state_dict", "'", item.key(), "' has dtype ",
               src->dtype(), " but the module expects ", item.value().dtype());
  }
  for (const auto& item : state)
    NNVM_CHECK(own.contains(item.key()), "load_state_dict", "unexpected entry '", item.key(), "' of shape ",
               shape_str(item.value().sizes()));
  NoGradGuard no_grad;
  for (const auto& item : own) Tensor(item.value()).copy_(state[item.key()]);
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_name(name, "register_parameter");
  if (tensor.defined()) {
    if (!tensor.is_leaf()) tensor = tensor.detach();
    tensor.requires_grad_(requires_grad);
  }
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_name(name, "register_buffer");
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_name(name, "register_module");
  NNVM_CHECK(module != nullptr, "register_module", "submodule '", name, "' is empty");
  children_.insert(std::move(name), std::move(module));
}

void Module::unregister_module(const std::string& name) {
  NNVM_CHECK(children_.contains(name), "unregister_module", "no submodule named '", name, "'");
  children_.pop(name);
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
  NNVM_CHECK(module != nullptr, "replace_module", "submodule '", name, "' is empty");
  children_[name] = std::move(module);
}

}  // namespace nnvm::nn
