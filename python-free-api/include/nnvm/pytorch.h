// Reading PyTorch's own files: what torch.save(model.state_dict(), path)
// writes (the zip format of PyTorch 1.6 and later) and TorchScript archives
// written by torch.jit.save, into named tensors or straight into a module
// whose parameter names match (docs/NN.md, "PyTorch files and .npy").
//
//   nnvm::load_state_dict(model, "model.pt");            // in place, checked by name, shape and dtype
//   auto tensors = nnvm::load_state_dict("model.pt");    // "fc1.weight" -> Tensor, in the file's order
//
// The file's pickle is read by a restricted unpickler that runs nothing: a
// file that names any function or class besides those that rebuild tensors is
// refused. Every error is an nnvm::Error naming the file and the entry.
#pragma once

#include <concepts>
#include <memory>
#include <string>

#include "nnvm/core/tensor.h"
#include "nnvm/nn/module.h"
#include "nnvm/nn/ordered_dict.h"

namespace nnvm {

// The tensors of a state dict file (a dict of tensors, as torch.save wrote it)
// or a TorchScript archive's parameters and buffers under their dotted names.
// Tensors are CPU copies in the file's dtype; views of one storage come out
// with their own values, and identical views as one tensor.
OrderedDict<std::string, Tensor> load_state_dict(const std::string& path);

// Copies the file's tensors into the module's parameters and buffers of the
// same names, in place (without recording gradients), and ends the trace.
// Shapes must match; dtypes must match, except that a floating entry converts
// into a floating parameter (a float64 file into a float32 model). With
// `strict`, a name missing from the file or from the module is an error;
// without, those names are skipped. Checks everything before changing anything.
void load_state_dict(nn::Module& module, const std::string& path, bool strict = true);
template <class M>
void load_state_dict(const nn::ModuleHolder<M>& module, const std::string& path, bool strict = true) {
  load_state_dict(*module, path, strict);
}
template <std::derived_from<nn::Module> M>
void load_state_dict(const std::shared_ptr<M>& module, const std::string& path, bool strict = true) {
  load_state_dict(*module, path, strict);
}

}  // namespace nnvm
