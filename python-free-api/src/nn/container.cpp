// Sequential and ModuleList.
#include "nnvm/nn/container.h"

namespace nnvm::nn {

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor y = x;
  for (const Layer& layer : layers_) y = layer.forward(y);
  return y;
}

const std::shared_ptr<Module>& SequentialImpl::ptr(size_t i) const {
  NNVM_CHECK(i < layers_.size(), "Sequential", "index ", i, " is out of range for ", layers_.size(), " modules");
  return layers_[i].module;
}

const std::shared_ptr<Module>& ModuleListImpl::ptr(size_t i) const {
  NNVM_CHECK(i < modules_.size(), "ModuleList", "index ", i, " is out of range for ", modules_.size(), " modules");
  return modules_[i];
}

}  // namespace nnvm::nn
