// libFuzzer target: TensorFlow GraphDef bytes (tools/fuzz.sh fuzz_tensorflow).
// Any input must give a Model or an nnvm::Error: no crash, leak or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nnvm/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    nnvm::Model model(nnvm::read_tensorflow(bytes, "fuzz"));
  } catch (const nnvm::Error&) {
  }
  return 0;
}
