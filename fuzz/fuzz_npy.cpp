// libFuzzer target: any bytes as a .npy file. Every input must load or throw
// nnvm::Error; what loads must write back to a file that loads to the same
// bytes. Seeds: fuzz/corpus/npy/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "nnvm/core/error.h"
#include "nnvm/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nnvm::Tensor t;
  try {
    t = nnvm::npy_from_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const nnvm::Error&) {
    return 0;
  }
  const std::string written = nnvm::npy_to_bytes(t);
  if (nnvm::npy_to_bytes(nnvm::npy_from_bytes(written, "written")) != written) std::abort();
  return 0;
}
