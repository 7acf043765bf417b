// A plugin whose last op takes the example plugin's name
// (examples/plugin/example_plugin.cpp): loaded after it, nothing it stages
// may stay registered, not its fresh op, pass, lowering or backend.
#include "nnvm/plugin.h"
#include "nnvm/trace/backend.h"

namespace {

class FreshBackend final : public nnvm::trace::Backend {
 public:
  std::string_view name() const override { return "clash-fresh"; }
  std::unique_ptr<const nnvm::trace::GroupKernel> compile(const nnvm::trace::GroupSource&,
                                                          std::string* why_not) const override {
    *why_not = "never compiles";
    return nullptr;
  }
};

nnvm::OpDef& unary(nnvm::plugin::Registry& registry, const char* name) {
  return registry.op(name)
      .inputs(1)
      .is_elementwise()
      .infer_with([](absl::Span<const nnvm::Tensor> in, const nnvm::Attrs&) -> nnvm::OutputSpecs {
        return {{nnvm::dims(in[0].sizes()), in[0].dtype()}};
      })
      .kernel(nnvm::DeviceType::CPU, [](absl::Span<const nnvm::Tensor>, absl::Span<const nnvm::Tensor>,
                                        const nnvm::Attrs&) {});
}

}  // namespace

NNVM_PLUGIN(registry) {
  unary(registry, "clash::fresh");
  nnvm::plugin::Pointwise e;
  e.neg(e.input(0));
  registry.pointwise("clash::fresh", e);
  registry.pass("before_passes", "clash::fresh_pass", [](nnvm::trace::Trace&) { return 0; });
  registry.backend(std::make_shared<FreshBackend>());
  unary(registry, "example::sigmoid_gate");
}
