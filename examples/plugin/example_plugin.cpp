// An example plugin (docs/PLUGINS.md): libnnvm_example_plugin.so adds
//   - an op, example::sigmoid_gate(x, g; beta) = x * sigmoid(beta * g), a
//     fused gating activation (GLU's family), with a CPU kernel, a gradient,
//     and its pointwise expression, so the JIT fuses it with its neighbours;
//   - a pass at "after_passes" that rewrites x * sigmoid(g * beta) into it;
//   - a tiny backend, "example-tiny", that takes the fusion groups holding
//     the op alone and runs them as a plain loop.
//
//   nnvm::load_plugin("libnnvm_example_plugin.so");        // or NNVM_PLUGINS=...
//   nnvm::Tensor y = nnvm::call1(nnvm::find_op("example::sigmoid_gate"), {x, g}, {nnvm::Scalar(1.702)});
#include <algorithm>
#include <cmath>
#include <optional>

#include "nnvm/kernels/cpu/pointwise.h"
#include "nnvm/nnvm.h"
#include "nnvm/plugin.h"
#include "nnvm/trace/group_program.h"
#include "nnvm/trace/ir.h"

namespace {

using nnvm::Tensor;
namespace trace = nnvm::trace;

constexpr const char* kGate = "example::sigmoid_gate";

nnvm::OutputSpecs infer_gate(absl::Span<const Tensor> in, const nnvm::Attrs& attrs) {
  NNVM_CHECK(attrs.size() == 1 && std::holds_alternative<nnvm::Scalar>(attrs[0]), kGate,
             "takes one Scalar attribute, beta");
  const nnvm::DType dtype = nnvm::promote_types(in[0].dtype(), in[1].dtype());
  NNVM_CHECK(nnvm::is_floating(dtype), kGate, "expects floating inputs, got ", nnvm::dtype_name(in[0].dtype()),
             " and ", nnvm::dtype_name(in[1].dtype()));
  return {{nnvm::broadcast_shapes(in[0].sizes(), in[1].sizes(), kGate), dtype}};
}

// d/dx = sigmoid(beta g) (the op itself on the incoming gradient);
// d/dg = x beta s (1 - s). Written with ops: recorded and differentiable again.
std::vector<Tensor> grad_gate(const nnvm::GradContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& g = ctx.inputs[1];
  const Tensor& go = ctx.grad_outputs[0];
  const nnvm::Scalar beta = ctx.attrs.s(0);
  std::vector<Tensor> grads(2);
  if (!go.defined()) return grads;
  if (ctx.needs_input_grad[0]) grads[0] = nnvm::call1(nnvm::find_op(kGate), {go, g}, {beta});
  if (ctx.needs_input_grad[1]) {
    const Tensor s = nnvm::sigmoid(g * beta);
    grads[1] = go * x * (s * (1.0 - s)) * beta;
  }
  return grads;
}

// The pass: x * sigmoid(g * beta) into sigmoid_gate(x, g; beta), where the
// sigmoid and the scaling have no other reader and x, g and the product share
// one floating dtype. beta keeps its Scalar slot: a new beta replays the plan.
struct GateMatch {
  trace::ValueId x, g;
  const trace::Node* scale;  // the mul.Scalar
  int32_t sigmoid_node, scale_node;
};

int rewrite_gates(trace::Trace& t) {
  std::vector<int> uses(t.values().size(), 0);
  for (const trace::Node& n : t.nodes())
    for (trace::ValueId v : n.inputs) ++uses[size_t(v)];
  for (trace::ValueId v : t.outputs()) ++uses[size_t(v)];
  auto producer = [&](trace::ValueId v, const char* op) -> const trace::Node* {
    const int32_t node = t.value(v).node;
    if (node < 0 || uses[size_t(v)] != 1) return nullptr;
    const trace::Node& n = t.nodes()[size_t(node)];
    return n.op->name == op ? &n : nullptr;
  };
  std::vector<std::optional<GateMatch>> at(t.nodes().size());
  std::vector<bool> dropped(t.nodes().size(), false);
  int found = 0;
  for (size_t k = 0; k < t.nodes().size(); ++k) {
    const trace::Node& mul = t.nodes()[k];
    if (mul.op->name != "mul" || mul.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const trace::Node* sig = producer(mul.inputs[size_t(side)], "sigmoid");
      const trace::Node* scale = sig ? producer(sig->inputs[0], "mul.Scalar") : nullptr;
      if (!scale) continue;
      const trace::ValueId x = mul.inputs[size_t(1 - side)], g = scale->inputs[0];
      const nnvm::DType dtype = t.value(mul.outputs[0]).dtype;
      if (!nnvm::is_floating(dtype) || t.value(x).dtype != dtype || t.value(g).dtype != dtype) continue;
      at[k] = GateMatch{x, g, scale, t.value(mul.inputs[size_t(side)]).node, t.value(sig->inputs[0]).node};
      dropped[size_t(at[k]->sigmoid_node)] = dropped[size_t(at[k]->scale_node)] = true;
      ++found;
      break;
    }
  }
  if (!found) return 0;
  trace::Trace out;
  out.copy_scalars_from(t);
  std::vector<trace::ValueId> mapped(t.values().size(), -1);
  for (trace::ValueId v : t.inputs()) {
    const trace::Value& in = t.value(v);
    mapped[size_t(v)] = out.add_input(in.dtype, in.shape, in.strides);
  }
  for (trace::ValueId v : t.constants()) mapped[size_t(v)] = out.add_constant(t.constant_value(v));
  for (size_t k = 0; k < t.nodes().size(); ++k) {
    const trace::Node& node = t.nodes()[k];
    if (dropped[k]) continue;
    std::vector<trace::ValueId> inputs;
    trace::Node like;
    const trace::Node* src = &node;
    if (at[k]) {
      like.op = &nnvm::find_op(kGate);
      like.attrs = nnvm::Attrs{at[k]->scale->attrs.s(0)};
      for (const trace::ScalarSlot& s : at[k]->scale->slots)
        if (s.attr == 0) like.slots.push_back({0, s.slot});
      src = &like;
      inputs = {mapped[size_t(at[k]->x)], mapped[size_t(at[k]->g)]};
    } else {
      for (trace::ValueId v : node.inputs) inputs.push_back(mapped[size_t(v)]);
    }
    const std::vector<trace::ValueId> outs = out.copy_node(*src, inputs);
    for (size_t o = 0; o < outs.size(); ++o) mapped[size_t(node.outputs[o])] = outs[o];
  }
  for (trace::ValueId v : t.outputs()) out.mark_output(mapped[size_t(v)]);
  t = std::move(out);
  return found;
}

// The tiny backend's kernel: one loop over contiguous float32 operands of one
// size; any other run (broadcast, strided, another dtype) it leaves to the
// group's portable program.
class GateLoop final : public trace::GroupKernel {
 public:
  GateLoop(int32_t x, int32_t g) : x_(x), g_(g) {}
  bool run(const trace::GroupProgram&, const trace::GroupRun& r) const override {
    const Tensor& x = r.env[size_t(r.ids[size_t(x_)])];
    const Tensor& g = r.env[size_t(r.ids[size_t(g_)])];
    const Tensor& out = r.env[size_t(r.ids.back())];
    for (const Tensor* t : {&x, &g, &out})
      if (t->dtype() != nnvm::kFloat32 || !t->is_contiguous() || t->numel() != out.numel()) return false;
    const float beta = float(r.attrs[0]->d(0));
    const float* xp = x.data_ptr<float>();
    const float* gp = g.data_ptr<float>();
    float* op = out.data_ptr<float>();
    for (int64_t i = 0; i < out.numel(); ++i) op[i] = xp[i] / (1.0f + std::exp(-beta * gp[i]));
    return true;
  }
  std::string describe() const override { return "example-tiny: sigmoid_gate loop"; }

 private:
  int32_t x_, g_;  // the group values the gate reads
};

// Takes a group that is the gate alone, over float32 values; declines the
// rest, which the x86 JIT (priority 0) then gets.
class TinyBackend final : public trace::Backend {
 public:
  std::string_view name() const override { return "example-tiny"; }
  std::unique_ptr<const trace::GroupKernel> compile(const trace::GroupSource& source,
                                                    std::string* why_not) const override {
    const trace::FusionGroup& group = source.group;
    const trace::Node& first = source.trace.nodes()[size_t(group.nodes[0])];
    if (group.nodes.size() != 1 || first.op->name != kGate) {
      *why_not = "takes example::sigmoid_gate alone";
      return nullptr;
    }
    for (trace::ValueId v : source.values.ids)
      if (source.trace.value(v).dtype != nnvm::kFloat32) {
        *why_not = "float32 only";
        return nullptr;
      }
    auto position = [&](trace::ValueId v) {
      const auto& ids = source.values.ids;
      return int32_t(std::find(ids.begin(), ids.end(), v) - ids.begin());
    };
    return std::make_unique<GateLoop>(position(first.inputs[0]), position(first.inputs[1]));
  }
};

}  // namespace

NNVM_PLUGIN(registry) {
  registry.op(kGate)
      .inputs(2)
      .is_elementwise()
      .infer_with(infer_gate)
      .kernel(nnvm::DeviceType::CPU,
              nnvm::cpu::pointwise_kernel<nnvm::ResultType::Floating, nnvm::cpu::Types::Floating, 2>(
                  0,
                  []<class T>(const nnvm::Attrs& a) {
                    const T beta = nnvm::cpu::scalar_as<T>(a.s(0));
                    return [beta](T x, T g) { return x / (T(1) + std::exp(-beta * g)); };
                  }))
      .grad_with(grad_gate);
  nnvm::plugin::Pointwise e;  // x * sigmoid(beta * g)
  e.mul(e.input(0), e.sigmoid(e.mul(e.attr(0), e.input(1))));
  registry.pointwise(kGate, e);
  registry.pass("after_passes", "example::gate_pattern", rewrite_gates);
  registry.backend(std::make_shared<TinyBackend>(), /*priority=*/5);  // ahead of the x86 JIT
}
