// A plugin built against another plugin ABI: its entry points are written
// out (not NNVM_PLUGIN) to claim the next version. load_plugin must refuse it
// before its registration function runs.
#include "nnvm/plugin.h"

extern "C" __attribute__((visibility("default"))) int nnvm_plugin_abi_version() { return NNVM_PLUGIN_ABI_VERSION + 1; }

extern "C" __attribute__((visibility("default"))) void nnvm_plugin_register(nnvm::plugin::Registry& registry) {
  registry.op("abi_mismatch::never").inputs(1);
}
