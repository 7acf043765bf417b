// Sequential, ModuleList, ModuleDict, ParameterList and Functional.
#include "nnvm/nn/container.h"

namespace nnvm::nn {

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor y = x;
  for (const Layer& layer : layers_) y = layer.forward(y);
  return y;
}

std::shared_ptr<SequentialImpl> SequentialImpl::clone() const {
  auto copy = std::make_shared<SequentialImpl>();
  for (const Layer& layer : layers_) layer.clone_into(*copy);
  copy->train(is_training());
  return copy;
}

const std::shared_ptr<Module>& SequentialImpl::ptr(size_t i) const {
  NNVM_CHECK(i < layers_.size(), "Sequential", "index ", i, " is out of range for ", layers_.size(), " modules");
  return layers_[i].module;
}

const std::shared_ptr<Module>& ModuleListImpl::ptr(size_t i) const {
  NNVM_CHECK(i < modules_.size(), "ModuleList", "index ", i, " is out of range for ", modules_.size(), " modules");
  return modules_[i];
}

ModuleDictImpl::ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules)
    : ModuleDictImpl() {
  update(modules);
}

ModuleDictImpl::ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules) : ModuleDictImpl() {
  for (const auto& item : modules) insert(item.key(), item.value());
}

void ModuleDictImpl::insert(const std::string& key, std::shared_ptr<Module> module) {
  NNVM_CHECK(module != nullptr, "ModuleDict", "module '", key, "' is empty");
  if (modules_.contains(key)) {
    replace_child(key, module);
    modules_[key] = std::move(module);
    return;
  }
  register_module(key, module);
  modules_.insert(key, std::move(module));
}

void ModuleDictImpl::update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  for (const auto& [key, module] : modules) insert(key, module);
}

std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key) {
  NNVM_CHECK(modules_.contains(key), "ModuleDict", "no module under key '", key, "'");
  unregister_module(key);
  return modules_.pop(key);
}

void ModuleDictImpl::clear() {
  for (const std::string& key : modules_.keys()) unregister_module(key);
  modules_.clear();
}

const std::shared_ptr<Module>& ModuleDictImpl::operator[](const std::string& key) const {
  const std::shared_ptr<Module>* module = modules_.find(key);
  NNVM_CHECK(module != nullptr, "ModuleDict", "no module under key '", key, "'");
  return *module;
}

void ParameterListImpl::append(const Tensor& param) {
  NNVM_CHECK(param.defined(), "ParameterList", "parameter ", params_.size(), " is an undefined tensor");
  params_.push_back(register_parameter(std::to_string(params_.size()), param));
}

void ParameterListImpl::extend(const std::vector<Tensor>& params) {
  for (const Tensor& param : params) append(param);
}

const Tensor& ParameterListImpl::at(size_t i) const {
  NNVM_CHECK(i < params_.size(), "ParameterList", "index ", i, " is out of range for ", params_.size(),
             " parameters");
  return params_[i];
}

FunctionalImpl::FunctionalImpl(Function function) : Module("Functional"), function_(std::move(function)) {
  NNVM_CHECK(function_ != nullptr, "Functional", "the function is empty");
}

}  // namespace nnvm::nn
