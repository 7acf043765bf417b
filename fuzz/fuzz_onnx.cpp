// libFuzzer target: ONNX model and TensorProto bytes (tools/fuzz.sh onnx).
// Any input must give a Model or an nnvm::Error: no crash, leak or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nnvm/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    nnvm::Graph graph = nnvm::read_onnx(bytes, "fuzz", "/nonexistent");
    (void)nnvm::unsupported_ops(graph);
    nnvm::Model model(graph);
  } catch (const nnvm::Error&) {
  }
  try {
    (void)nnvm::read_onnx_tensor(bytes, "fuzz", "/nonexistent");
  } catch (const nnvm::Error&) {
  }
  return 0;
}
