// libFuzzer target: any bytes as a .safetensors file. Every input must load or
// throw nnvm::Error; what loads must save to a file that loads to the same
// tensors and metadata. Seeds: fuzz/corpus/safetensors/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "nnvm/core/error.h"
#include "nnvm/nnvm.h"

namespace {

// The reader takes a path: each input goes through files of this process's
// own, removed when it exits.
struct Scratch {
  std::string in = path(".in"), out = path(".out");
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove(in, ec);
    std::filesystem::remove(out, ec);
  }
  static std::string path(const char* suffix) {
    return (std::filesystem::temp_directory_path() /
            ("nnvm_fuzz_safetensors_" + std::to_string(::getpid()) + suffix))
        .string();
  }
};

bool same(const nnvm::Tensor& a, const nnvm::Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Scratch scratch;
  const std::string &in_path = scratch.in, &out_path = scratch.out;
  {
    std::ofstream out(in_path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  nnvm::nn::SafetensorsFile file;
  try {
    file = nnvm::nn::read_safetensors(in_path);
  } catch (const nnvm::Error&) {
    return 0;
  }
  nnvm::nn::save_safetensors(file.tensors, out_path, file.metadata);
  const nnvm::nn::SafetensorsFile back = nnvm::nn::read_safetensors(out_path);
  if (back.metadata != file.metadata || back.tensors.size() != file.tensors.size()) std::abort();
  for (const auto& [name, t] : file.tensors) {
    const auto it = back.tensors.find(name);
    if (it == back.tensors.end() || !same(t, it->second)) std::abort();
  }
  return 0;
}
