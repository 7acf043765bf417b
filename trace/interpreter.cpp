#include "nnvm/trace/interpreter.h"

#include <optional>

#include "nnvm/core/autograd.h"
#include "nnvm/core/memory_monitor.h"

namespace nnvm::trace {

namespace {

// Runs node n on `args` into env: a computing op's kernel straight into
// outputs made from the node's values, whose shapes and dtypes the trace
// already inferred, so nothing is inferred again. A view, or an op with no
// kernel for the device (call() names the error), goes through call().
void run_node(const Trace& t, const Node& n, absl::Span<const Tensor> args, const Attrs& attrs,
              std::vector<Tensor>& env) {
  const Device device = args.empty() ? Device() : args[0].device();
  const KernelFn* kernel = n.op->view ? nullptr : &n.op->kernels[size_t(device.type)];
  if (!kernel || !*kernel) {
    std::vector<Tensor> outs = call(*n.op, args, attrs);
    for (size_t k = 0; k < n.outputs.size(); ++k) env[size_t(n.outputs[k])] = std::move(outs[k]);
    return;
  }
  absl::InlinedVector<Tensor, 2> outs;
  for (ValueId v : n.outputs) {
    const Value& val = t.value(v);
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = std::make_shared<Storage>(numel_of(val.shape) * itemsize(val.dtype), device);
    impl->shape = val.shape;
    impl->strides = contiguous_strides(val.shape);
    impl->dtype = val.dtype;
    impl->device = device;
    outs.emplace_back(std::move(impl));
  }
  (*kernel)(args, outs, attrs);
  for (size_t k = 0; k < n.outputs.size(); ++k) env[size_t(n.outputs[k])] = std::move(outs[k]);
}

}  // namespace

std::vector<Tensor> interpret(const Trace& t, absl::Span<const Tensor> inputs, absl::Span<const Scalar> scalars) {
  NNVM_CHECK(scalars.empty() || scalars.size() == t.scalars().size(), "interpret", "the trace has ",
             t.scalars().size(), " Scalar slots but got ", scalars.size(), " values");
  NNVM_CHECK(inputs.size() == t.inputs().size(), "interpret", "the trace takes ", t.inputs().size(),
             " inputs but got ", inputs.size());
  std::vector<Tensor> env(t.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = t.value(t.inputs()[i]);
    NNVM_CHECK(inputs[i].dtype() == v.dtype && inputs[i].sizes() == IntArrayRef(v.shape), "interpret", "input ", i,
               " is ", dtype_name(inputs[i].dtype()), shape_str(inputs[i].sizes()), "; the trace expects ",
               dtype_name(v.dtype), shape_str(v.shape));
    env[size_t(t.inputs()[i])] = inputs[i];
  }
  for (ValueId c : t.constants()) env[size_t(c)] = t.constant_value(c);
  // Each value is dropped after the last node that reads it, so the unfused
  // path needs the memory of its widest point, as eager mode does, not of
  // every value of the trace. (A view keeps its base's storage alive itself.)
  std::vector<int32_t> last_use(t.values().size(), -1);
  for (size_t i = 0; i < t.nodes().size(); ++i)
    for (ValueId v : t.nodes()[i].inputs) last_use[size_t(v)] = int32_t(i);
  for (ValueId v : t.outputs()) last_use[size_t(v)] = int32_t(t.nodes().size());
  NoGradGuard no_grad;  // a trace already holds its backward nodes
  std::vector<Tensor> args;
  for (size_t i = 0; i < t.nodes().size(); ++i) {
    const Node& n = t.nodes()[i];
    args.clear();
    for (ValueId v : n.inputs) args.push_back(env[size_t(v)]);
    // the memory monitor names the node's blocks by its op and the phase it was recorded in
    std::optional<memory::OpScope> memory_scope;
    std::optional<memory::PhaseGuard> memory_phase;
    if (memory::monitoring()) [[unlikely]] {
      memory_scope.emplace(n.op->name.c_str(), 0);
      memory_phase.emplace(memory::Phase(n.phase));
    }
    if (scalars.empty() || n.slots.empty()) run_node(t, n, args, n.attrs, env);
    else run_node(t, n, args, bind_scalars(n, scalars), env);
    args.clear();
    for (ValueId v : n.inputs)
      if (last_use[size_t(v)] == int32_t(i)) env[size_t(v)] = Tensor();
    for (ValueId v : n.outputs)
      if (last_use[size_t(v)] < 0) env[size_t(v)] = Tensor();  // never read: dead on arrival
  }
  std::vector<Tensor> result;
  for (ValueId v : t.outputs()) result.push_back(env[size_t(v)]);
  return result;
}

PartialRun interpret_partial(const Trace& t, absl::Span<const Tensor> inputs) {
  std::vector<Tensor> env(t.values().size());
  std::vector<std::shared_ptr<const std::string>> failed(t.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(t.inputs()[i])] = inputs[i];
  for (ValueId c : t.constants()) env[size_t(c)] = t.constant_value(c);
  NoGradGuard no_grad;
  PartialRun run;
  std::vector<Tensor> args;
  for (const Node& n : t.nodes()) {
    std::shared_ptr<const std::string> why;
    args.clear();
    for (ValueId v : n.inputs) {
      if (failed[size_t(v)] && !why) why = failed[size_t(v)];
      args.push_back(env[size_t(v)]);
    }
    if (!why) {
      try {
        run_node(t, n, args, n.attrs, env);
      } catch (const std::exception& e) {
        why = std::make_shared<const std::string>(e.what());
        if (!run.first_failure) run.first_failure = why;
      }
    }
    if (why)
      for (ValueId v : n.outputs) failed[size_t(v)] = why;
  }
  for (ValueId v : t.outputs()) {
    run.outputs.push_back(env[size_t(v)]);
    run.failure.push_back(failed[size_t(v)]);
  }
  return run;
}

}  // namespace nnvm::trace

#include "nnvm/trace/plan.h"

namespace nnvm::trace {

std::vector<Tensor> InterpretedPlan::run(absl::Span<const Tensor> inputs, absl::Span<const Scalar> scalars) const {
  return interpret(trace_, inputs, scalars);
}

}  // namespace nnvm::trace
