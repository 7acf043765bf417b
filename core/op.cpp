#include "nnvm/core/op.h"

#include <deque>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nnvm/core/autocast_state.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/block_pool.h"
#include "nnvm/core/memory_monitor.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/mode_state.h"
#include "nnvm/core/op_batch.h"
#include "nnvm/core/profiling.h"
#include "nnvm/core/quantize.h"

namespace nnvm {

void Attrs::missing(size_t k) const {
  throw Error(detail::concat("attribute ", k, " is read but the op has ", values_.size(), " attributes"));
}

namespace {

using Outputs = detail::OpOutputs;

struct Registry {
  std::mutex mu;
  std::deque<OpDef> defs;  // stable addresses
  absl::flat_hash_map<std::string, OpDef*> by_name;
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: ops are used during static destruction too
  return *r;
}

OpDef& entry_locked(Registry& r, std::string_view name) {
  auto it = r.by_name.find(std::string(name));
  if (it != r.by_name.end()) return *it->second;
  OpDef& def = r.defs.emplace_back();
  def.name = std::string(name);
  r.by_name.emplace(def.name, &def);
  return def;
}

std::string shapes_of(TensorRefs inputs) {
  return absl::StrJoin(inputs, ", ", [](std::string* out, const Tensor& t) {
    absl::StrAppend(out, t.defined() ? shape_str(t.sizes()) : "undefined");
  });
}

// Every op's inputs pass here: the checks inline, the messages not.
[[noreturn, gnu::noinline, gnu::cold]] void throw_bad_inputs(const OpDef& op, TensorRefs inputs) {
  NNVM_CHECK(op.num_inputs < 0 || int(inputs.size()) == op.num_inputs, op.name, "expected ",
             op.num_inputs, " inputs but got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorImpl* t = inputs[i].impl();
    NNVM_CHECK(t != nullptr, op.name, "an input is an undefined tensor (inputs: ", shapes_of(inputs), ")");
    const Device first = inputs[0].impl()->device;  // defined: checked at i == 0
    NNVM_CHECK(t->device == first, op.name, "inputs are on different devices (", first, " and ", t->device, ")");
  }
  // Not reached: check_inputs calls it only when one of the checks above fails.
  throw Error(detail::concat(op.name, ": invalid inputs (", shapes_of(inputs), ")"));
}

// A quantized input reaches only an op that takes it (OpDef::quantized_inputs).
// A tensor a trace made inside itself has no quantizer: the op that made it took it.
[[gnu::noinline, gnu::cold]] void check_quantized_input(const OpDef& op, TensorRefs inputs, size_t i) {
  const TensorImpl& t = *inputs[i].impl();
  if (op.quantized_inputs == QuantizedInputs::kAny) return;
  const bool per_channel = t.quantizer && t.quantizer->per_channel();
  if (op.quantized_inputs == QuantizedInputs::kPerTensor && !per_channel) return;
  throw Error(detail::concat(op.name, ": input ", i, " is a quantized tensor (",
                             t.quantizer ? t.quantizer->describe() : std::string(dtype_name(t.dtype)), ")",
                             per_channel && op.quantized_inputs == QuantizedInputs::kPerTensor
                                 ? absl::StrCat("; ", op.name, " takes per-tensor quantized tensors only")
                                 : std::string(),
                             "; dequantize() it first"));
}

void check_inputs(const OpDef& op, TensorRefs inputs) {
  const size_t n = inputs.size();
  if (op.num_inputs >= 0 && size_t(op.num_inputs) != n) [[unlikely]] throw_bad_inputs(op, inputs);
  if (n == 0) return;
  const TensorImpl* first = inputs[0].impl();
  if (first == nullptr) [[unlikely]] throw_bad_inputs(op, inputs);
  if (is_quantized(first->dtype)) [[unlikely]] check_quantized_input(op, inputs, 0);
  for (size_t i = 1; i < n; ++i) {
    const TensorImpl* t = inputs[i].impl();
    if (t == nullptr || !(t->device == first->device)) [[unlikely]] throw_bad_inputs(op, inputs);
    if (is_quantized(t->dtype)) [[unlikely]] check_quantized_input(op, inputs, i);
  }
}

// A copy of a quantized tensor to its own dtype means what the input means.
[[gnu::noinline]] void carry_quantizer(TensorRefs inputs, Outputs& outs) {
  const TensorImpl& in = *inputs[0].impl();
  if (in.quantizer == nullptr) return;
  for (Tensor& out : outs)
    if (out.impl()->dtype == in.dtype) out.impl()->quantizer = in.quantizer;
}

const KernelFn& kernel_for(const OpDef& op, Device device) {
  const KernelFn& k = op.kernels[size_t(device.type)];
  NNVM_CHECK(k != nullptr, op.name, "no kernel for device ", device);
  return k;
}

Tensor make_output(const OutputSpec& spec, Device device, std::string_view op_name) {
  auto storage = std::allocate_shared<Storage>(BlockPool<Storage>(),
                                               checked_nbytes(spec.shape, itemsize(spec.dtype), op_name), device);
  return pooled_tensor(std::move(storage), spec.shape, contiguous_strides(spec.shape), 0, spec.dtype, device);
}

}  // namespace

OpDef& register_op(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return entry_locked(r, name);
}

void register_kernel(std::string_view name, DeviceType device, KernelFn kernel) {
  register_op(name).kernels[size_t(device)] = std::move(kernel);
}

void register_new_ops(std::vector<OpDef> defs) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  absl::flat_hash_map<std::string, int> given;
  for (const OpDef& def : defs) {
    NNVM_CHECK(!def.name.empty(), "register_op", "an op needs a name");
    NNVM_CHECK(!r.by_name.contains(def.name), "register_op", "an op named '", def.name, "' is already registered");
    NNVM_CHECK(++given[def.name] == 1, "register_op", "the op '", def.name, "' is given twice");
  }
  for (OpDef& def : defs) {
    OpDef& entry = r.defs.emplace_back(std::move(def));
    r.by_name.emplace(entry.name, &entry);
  }
}

const OpDef& find_op(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_name.find(absl::string_view(name.data(), name.size()));  // no std::string made
  if (it == r.by_name.end()) throw Error(detail::concat("find_op: no op named '", name, "'"));
  return *it->second;
}

bool has_op(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.by_name.contains(std::string(name));
}

std::vector<std::string> op_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const OpDef& d : r.defs) names.push_back(d.name);
  return names;
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

namespace {

void run_op(const OpDef& op, TensorRefs inputs, const Attrs& attrs, Outputs& outs) {
  check_inputs(op, inputs);
  if (op.view) {
    NNVM_DCHECK(!inputs.empty());
    outs.push_back(view_of(inputs[0], op.view(inputs[0], attrs)));
    autograd::record(op, inputs, attrs, outs);
    return;
  }
  NNVM_CHECK(op.infer != nullptr, op.name, "op is declared but has no shape inference");
  if (detail::recording()) {
    kernel_for(op, inputs.empty() ? Device() : inputs[0].device());  // a missing kernel is the caller's error
    detail::hooks()->record(op, inputs, attrs, outs);
    if (op.quantized_inputs != QuantizedInputs::kNone) [[unlikely]] carry_quantizer(inputs, outs);
    autograd::record(op, inputs, attrs, outs);
    return;
  }
  const TensorSpan span(inputs);
  const OutputSpecs specs = op.infer(span, attrs);
  const Device device = inputs.empty() ? Device() : inputs[0].device();
  const KernelFn& kernel = kernel_for(op, device);
  for (const OutputSpec& s : specs) outs.push_back(make_output(s, device, op.name));
  kernel(span, outs, attrs);
  if (op.quantized_inputs != QuantizedInputs::kNone) [[unlikely]] carry_quantizer(inputs, outs);
  autograd::record(op, inputs, attrs, outs);
}

// With a profiler session on: the op as an "op" event, recorded into the
// trace or run by its kernel (then with the bytes it read and wrote); with
// the memory monitor on, the blocks it allocates name it.
[[gnu::noinline]] void run_profiled(const OpDef& op, TensorRefs inputs, const Attrs& attrs, Outputs& outs) {
  memory::OpScope memory_scope(op.name.c_str(), 0);  // the blocks it allocates name it
  profiling::Scope scope("op", op.name);
  const bool recorded = detail::recording();
  scope.arg("mode", recorded ? "recorded" : "ran");
  run_op(op, inputs, attrs, outs);
  if (recorded || op.view || !scope.active()) return;
  double bytes = 0;
  for (const Tensor& t : inputs) bytes += t.defined() ? double(t.nbytes()) : 0;
  for (const Tensor& t : outs) bytes += double(t.nbytes());
  scope.event().bytes = bytes;
}

void run(const OpDef& op, TensorRefs inputs, const Attrs& attrs, Outputs& outs) {
  if (detail::t_autocast_on) [[unlikely]] {  // core/autocast.h: the op's inputs cast first
    std::vector<Tensor> cast;
    Attrs cast_attrs;
    const bool changed = detail::autocast_inputs(op, inputs, attrs, cast, cast_attrs);
    detail::AutocastSuspend as_called;  // a kernel that calls ops runs them as it calls them
    return changed ? run(op, TensorRefs(cast), cast_attrs, outs) : run(op, inputs, attrs, outs);
  }
  if (profiling::on() || memory::monitoring()) [[unlikely]] {
    run_profiled(op, inputs, attrs, outs);
    return;
  }
  run_op(op, inputs, attrs, outs);
}

}  // namespace

Tensor view_of(const Tensor& in, ViewSpec v) {
  const TensorImpl& t = *in.impl();
  Tensor out = pooled_tensor(t.storage, std::move(v.shape), std::move(v.strides), v.offset, t.dtype, t.device,
                             /*is_view=*/true);
  if (t.quantizer) [[unlikely]] out.impl()->quantizer = t.quantizer;
  return out;
}

std::vector<Tensor> call(const OpDef& op, TensorRefs inputs, const Attrs& attrs) {
  Outputs outs;
  run(op, inputs, attrs, outs);
  return std::vector<Tensor>(std::make_move_iterator(outs.begin()), std::make_move_iterator(outs.end()));
}

Tensor call1(const OpDef& op, TensorRefs inputs, const Attrs& attrs) {
  Outputs outs;
  run(op, inputs, attrs, outs);
  NNVM_DCHECK(outs.size() == 1);
  return std::move(outs[0]);
}

void call_into(const OpDef& op, TensorRefs inputs, const Attrs& attrs, const Tensor& out) {
  check_inputs(op, inputs);
  NNVM_CHECK(out.defined(), op.name, "the output tensor is undefined");
  NNVM_CHECK(!out.is_quantized(), op.name, "cannot write into a quantized tensor (",
             out.impl()->quantizer ? out.impl()->quantizer->describe() : std::string(dtype_name(out.dtype())),
             "); quantize a result with quantize_per_tensor() or quantize_per_channel() instead");
  NNVM_CHECK(op.infer != nullptr, op.name, "a view op cannot write into an output");
  const TensorSpan span(inputs);
  const OutputSpecs specs = op.infer(span, attrs);
  NNVM_CHECK(specs.size() == 1, op.name, "writes ", specs.size(), " outputs; in-place needs exactly one");
  NNVM_CHECK(specs[0].shape == out.sizes(), op.name, "output with shape ", shape_str(out.sizes()),
             " does not match the result shape ", shape_str(specs[0].shape), " (inputs: ", shapes_of(inputs),
             ")");
  NNVM_CHECK(can_cast(specs[0].dtype, out.dtype()), op.name, "result type ", specs[0].dtype,
             " cannot be written into an output of type ", out.dtype());
  for (size_t d = 0; d < out.sizes().size(); ++d)
    NNVM_CHECK(out.sizes()[d] <= 1 || out.strides()[d] != 0, op.name,
               "cannot write into a tensor whose elements share memory (an expanded view, shape ",
               shape_str(out.sizes()), "); call .clone() or .contiguous() first");
  if (detail::recording()) {  // functional: the recorder rebinds out's storage to the result
    const std::optional<std::vector<Tensor>> saved = autograd::prepare_inplace(op, inputs, out);
    detail::hooks()->record_into(op, inputs, attrs, specs[0], out);
    out.storage()->bump_version();
    if (saved) autograd::record_inplace(op, *saved, inputs, attrs, out);
    return;
  }
  // Only an elementwise kernel writes any layout and dtype it is given; the
  // others write what the dispatcher allocates for them (call): contiguous,
  // of the inferred dtype.
  bool needs_temporary = !op.elementwise && (!out.is_contiguous() || out.dtype() != specs[0].dtype);
  for (const Tensor& in : inputs) {
    if (in.storage() != out.storage()) continue;
    const bool same_layout = in.storage_offset() == out.storage_offset() && in.sizes() == out.sizes() &&
                             in.strides() == out.strides() && in.dtype() == out.dtype();
    if (!op.elementwise || !same_layout) needs_temporary = true;
  }
  const std::optional<std::vector<Tensor>> saved = autograd::prepare_inplace(op, inputs, out);
  if (needs_temporary) {
    static const OpDef& copy = find_op("copy");
    const Tensor tmp = call1(op, inputs, attrs);
    kernel_for(copy, out.device())(absl::MakeConstSpan(&tmp, 1), absl::MakeConstSpan(&out, 1), {});
  } else {
    kernel_for(op, out.device())(span, absl::MakeConstSpan(&out, 1), attrs);
  }
  out.storage()->bump_version();
  if (saved) autograd::record_inplace(op, *saved, inputs, attrs, out);
}

}  // namespace nnvm
