// nnvm::save / nnvm::load of tensors: a file of kind "tensor" holds the entry
// "tensor"; one of kind "tensors" holds "0" ... "n-1" in the vector's order.
#include "nnvm/serialize.h"

#include <map>

namespace nnvm {

namespace {

constexpr std::string_view kLoad = "nnvm::load";

}  // namespace

void save(const Tensor& tensor, const std::string& path) { nn::save_checkpoint({{"tensor", tensor}}, path, "tensor"); }

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  std::map<std::string, Tensor> entries;
  for (size_t i = 0; i < tensors.size(); ++i) entries.emplace(std::to_string(i), tensors[i]);
  nn::save_checkpoint(entries, path, "tensors");
}

void load(Tensor& tensor, const std::string& path) {
  const nn::SafetensorsFile file = nn::read_checkpoint(path, "tensor", kLoad);
  const auto found = file.tensors.find("tensor");
  NNVM_CHECK(file.tensors.size() == 1 && found != file.tensors.end(), kLoad, path,
             ": expected one entry named \"tensor\", found ", file.tensors.size(), " entries");
  tensor = found->second;
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  const nn::SafetensorsFile file = nn::read_checkpoint(path, "tensors", kLoad);
  std::vector<Tensor> loaded;
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const auto found = file.tensors.find(std::to_string(i));
    NNVM_CHECK(found != file.tensors.end(), kLoad, path, ": entry \"", i, "\" of ", file.tensors.size(),
               " is missing (entries are named by their position)");
    loaded.push_back(found->second);
  }
  tensors = std::move(loaded);
}

}  // namespace nnvm
