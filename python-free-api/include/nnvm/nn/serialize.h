// Saving and loading tensors in the safetensors format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the raw little-endian data, offsets relative to its start. nnvm reads
// and writes it itself (no external library), so PyTorch checkpoints saved
// with safetensors load into nnvm modules whose parameter names match.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "nnvm/core/tensor.h"
#include "nnvm/nn/module.h"

namespace nnvm::nn {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Writes to a temporary file beside `path` and renames it over `path`, so a
// failure never leaves a half-written file. Throws nnvm::Error on an undefined
// tensor, a reserved name ("__metadata__") or an I/O failure.
void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata = {});
// Throws nnvm::Error on a truncated file, a bad header, an unsupported dtype,
// or data offsets that are out of range, overlap, leave gaps or do not match
// the shape.
SafetensorsFile read_safetensors(const std::string& path);
std::map<std::string, Tensor> load_safetensors(const std::string& path);

// nnvm's own checkpoints (nn::save, nnvm::save, optim::Optimizer::save) are
// safetensors files whose metadata entry "nnvm" names what they hold:
// "module", "optimizer", "tensor" or "tensors" (docs/NN.md).
void save_checkpoint(const std::map<std::string, Tensor>& tensors, const std::string& path, std::string_view kind,
                     std::map<std::string, std::string> metadata = {});
// Throws nnvm::Error naming `op`, the path and both kinds when the file holds
// another kind. A file without the entry passes only where `kind` is "module",
// so safetensors written by other tools load into modules.
SafetensorsFile read_checkpoint(const std::string& path, std::string_view kind, std::string_view op);

// A module's state_dict (parameters and buffers) to and from a safetensors file.
// load throws nnvm::Error, before changing the module, on missing or unexpected
// names and on shape or dtype mismatches. It copies into the tensors in place
// (every handle to them sees the values) and ends the trace (nnvm::mark_step).
void save(const Module& module, const std::string& path);
void load(Module& module, const std::string& path);
// Qualified calls: lookup by argument would also find nnvm::save for a module declared in namespace nnvm.
template <class M> void save(const ModuleHolder<M>& module, const std::string& path) { nn::save(*module, path); }
template <class M> void load(const ModuleHolder<M>& module, const std::string& path) { nn::load(*module, path); }

}  // namespace nnvm::nn
