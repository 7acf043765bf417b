// libFuzzer target: any bytes as a repro bundle (trace/repro.h). Every input
// must read or throw nnvm::Error; what reads must write to bytes that read
// back to the same trace and input values. Nothing is run: a bundle's trace
// is built (each node through its op's shape inference), not executed.
// Seeds: fuzz/corpus/repro/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "nnvm/core/error.h"
#include "nnvm/nnvm.h"
#include "nnvm/trace/repro.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nnvm::EagerGuard eager;
  nnvm::trace::ReproBundle b;
  try {
    b = nnvm::trace::parse_repro_bundle(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const nnvm::Error&) {
    return 0;
  }
  const nnvm::trace::ReproBundle back = nnvm::trace::parse_repro_bundle(nnvm::trace::repro_bundle_bytes(b));
  if (back.trace.to_string() != b.trace.to_string() || back.kind != b.kind || back.inputs.size() != b.inputs.size())
    std::abort();
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    const nnvm::Tensor &x = b.inputs[i], &y = back.inputs[i];
    if (x.dtype() != y.dtype() || x.sizes() != y.sizes() || x.strides() != y.strides()) std::abort();
    if (x.numel() > 0 && !nnvm::trace::compare_results(y, x).agrees) std::abort();
  }
  return 0;
}
