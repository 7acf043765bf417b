// libFuzzer target: any bytes as a torch.save / torch.jit.save archive. Every
// input must load or throw nnvm::Error; a crash, a sanitizer report, a leak or
// an allocation past libFuzzer's limit is a bug. Seeds: fuzz/corpus/pytorch/.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/pt/pytorch.h"
#include "nnvm/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nnvm::pt::load_state_dict_from_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const nnvm::Error&) {
  }
  return 0;
}
