// nnvm::save and nnvm::load, libtorch's torch::save / torch::load: one call
// for a module, an optimizer, a tensor or a vector of tensors, each written as
// a safetensors checkpoint whose metadata says what it holds (docs/NN.md).
//
//   nnvm::save(model, "model.safetensors");      nnvm::load(model, "model.safetensors");
//   nnvm::save(optimizer, "opt.safetensors");    nnvm::load(optimizer, "opt.safetensors");
//
// Loading throws nnvm::Error, naming the path, on a missing or damaged file,
// a file of another kind, or one that does not fit what it is loaded into.
#pragma once

#include <concepts>
#include <memory>
#include <string>
#include <vector>

#include "nnvm/core/tensor.h"
#include "nnvm/nn/module.h"
#include "nnvm/nn/serialize.h"
#include "nnvm/optim/optimizer.h"

namespace nnvm {

// A module's state dict (nn::save / nn::load). Loading copies into the
// parameters in place, so an optimizer built over them keeps updating them.
inline void save(const nn::Module& module, const std::string& path) { nn::save(module, path); }
inline void load(nn::Module& module, const std::string& path) { nn::load(module, path); }
template <class M> void save(const nn::ModuleHolder<M>& module, const std::string& path) { nn::save(*module, path); }
template <class M> void load(const nn::ModuleHolder<M>& module, const std::string& path) { nn::load(*module, path); }
template <std::derived_from<nn::Module> M> void save(const std::shared_ptr<M>& module, const std::string& path) {
  nn::save(*module, path);
}
template <std::derived_from<nn::Module> M> void load(const std::shared_ptr<M>& module, const std::string& path) {
  nn::load(*module, path);
}

// An optimizer's per-parameter state and its groups' options.
inline void save(const optim::Optimizer& optimizer, const std::string& path) { optimizer.save(path); }
inline void load(optim::Optimizer& optimizer, const std::string& path) { optimizer.load(path); }

// CPU tensors, with their shape and dtype. Loading replaces the handle (or
// the vector's contents) with new tensors, as assigning would.
void save(const Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);
void load(Tensor& tensor, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);

}  // namespace nnvm
