// record_function (function_trace.h): the ops of one call of a function, with
// the tensors they read.
//
// The recorder's traces do not say which tensor each of their inputs was
// (docs/DESIGN.md §3.4: a trace input is a run-time argument), and an export
// needs exactly that: which inputs are the function's and what the others
// hold. So for the call the thread's ops go to hooks of our own (core/mode.h
// TraceHooks) that run each op eagerly and append it to a trace keyed by the
// storages it reads and writes; other threads' ops go on to the recorder.
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/mode_state.h"
#include "function_trace.h"

namespace nnvm::model_detail {
namespace {

using trace::same_dims;
using trace::ValueId;

// The trace being recorded on this thread, and what its values are.
class FunctionTrace {
 public:
  trace::Trace trace;

  // An example input: a trace input whose storage is its own copy.
  void add_input(const Tensor& copy) { hold(copy, trace.add_input(copy)); }

  // The value of tensor t as an op reads it now.
  ValueId value_of(const Tensor& t, const OpDef& op) {
    NNVM_CHECK(t.defined(), "trace_graph", op.name, " reads an undefined tensor");
    if (auto it = held_.find(t.storage().get()); it != held_.end()) {
      const Held& h = it->second;
      if (t.storage_offset() == 0 && t.dtype() == h.dtype && same_dims(t.sizes(), h.shape) && t.is_contiguous())
        return h.value;
      static const OpDef& as_strided = find_op("as_strided");
      return trace.add_node1(as_strided, {h.value}, {dims(t.sizes()), dims(t.strides()), t.storage_offset()},
                             trace::ScalarBinding::kCompileTime);
    }
    // A tensor fn did not compute: a constant, one per storage and layout.
    const ConstantKey key{t.storage().get(), t.storage_offset(), dims(t.sizes()), dims(t.strides()), t.dtype()};
    auto [it, fresh] = constants_.try_emplace(key, -1);
    if (fresh) {
      it->second = trace.add_constant(t.is_contiguous() ? t.detach() : t.detach().contiguous());
      alive_.push_back(t.storage());  // its address stays this storage's
    }
    return it->second;
  }

  void record(const OpDef& op, TensorRefs inputs, const Attrs& attrs, detail::LazyOutputs& outs) {
    detail::RunEagerly eager;
    std::vector<ValueId> ins;
    for (const Tensor& t : inputs) ins.push_back(value_of(t, op));
    std::vector<Tensor> results = call(op, inputs, attrs);
    if (ins.empty()) {  // a creation op (full, arange, randn): what it made is a constant
      for (const Tensor& r : results) hold(r, trace.add_constant(r));
    } else {
      const std::vector<ValueId> ids = trace.add_node(op, ins, attrs, trace::ScalarBinding::kCompileTime);
      for (size_t k = 0; k < results.size(); ++k) hold(results[k], ids[k]);
    }
    for (Tensor& r : results) outs.push_back(std::move(r));
  }

  // An in-place op or out= variant: out's storage takes the new value, whole
  // or through a strided_update of its old one.
  void record_into(const OpDef& op, TensorRefs inputs, const Attrs& attrs, const Tensor& out) {
    detail::RunEagerly eager;
    auto it = held_.find(out.storage().get());
    NNVM_CHECK(it != held_.end(), "trace_graph", op.name, " writes into a tensor of shape ", shape_str(out.sizes()),
               " that the function did not compute (a parameter or a captured tensor): an exported graph cannot "
               "change its initializers; write into a copy (clone()) instead");
    std::vector<ValueId> ins;
    for (const Tensor& t : inputs) ins.push_back(value_of(t, op));
    call_into(op, inputs, attrs, out);
    ValueId v;
    if (ins.empty()) {
      v = trace.add_constant(out.clone());
    } else {
      v = trace.add_node1(op, ins, attrs, trace::ScalarBinding::kCompileTime);
      if (trace.value(v).dtype != out.dtype()) {
        static const OpDef& copy = find_op("copy");
        v = trace.add_node1(copy, {v}, {out.dtype()}, trace::ScalarBinding::kCompileTime);
      }
    }
    Held& h = it->second;
    if (out.storage_offset() == 0 && out.dtype() == h.dtype && same_dims(out.sizes(), h.shape) &&
        out.is_contiguous()) {
      h.value = v;
      return;
    }
    static const OpDef& update = find_op("strided_update");
    h.value = trace.add_node1(update, {h.value, v}, {dims(out.sizes()), dims(out.strides()), out.storage_offset()},
                              trace::ScalarBinding::kCompileTime);
  }

 private:
  // A storage fn computed (or an example input's copy): its whole contents,
  // contiguous from offset 0, are the value `value`.
  struct Held {
    ValueId value;
    DimVector shape;
    DType dtype;
    std::shared_ptr<Storage> storage;  // kept: no other storage takes its address meanwhile
  };
  using ConstantKey = std::tuple<const Storage*, int64_t, DimVector, DimVector, DType>;

  void hold(const Tensor& t, ValueId v) {
    NNVM_DCHECK(t.storage_offset() == 0 && t.is_contiguous());
    held_[t.storage().get()] = Held{v, dims(t.sizes()), t.dtype(), t.storage()};
  }

  absl::flat_hash_map<const Storage*, Held> held_;
  std::map<ConstantKey, ValueId> constants_;
  std::vector<std::shared_ptr<Storage>> alive_;
};

thread_local FunctionTrace* t_recording = nullptr;
// The hooks that were installed when the recording began (the recorder's).
std::atomic<const detail::TraceHooks*> g_next{nullptr};
std::mutex g_one_at_a_time;

void hook_record(const OpDef& op, TensorRefs inputs, const Attrs& attrs, detail::LazyOutputs& outs) {
  if (t_recording) return t_recording->record(op, inputs, attrs, outs);
  g_next.load()->record(op, inputs, attrs, outs);
}
void hook_record_into(const OpDef& op, TensorRefs inputs, const Attrs& attrs, const OutputSpec& result,
                      const Tensor& out) {
  if (t_recording) return t_recording->record_into(op, inputs, attrs, out);
  g_next.load()->record_into(op, inputs, attrs, result, out);
}
void hook_materialize(Storage& s) { g_next.load()->materialize(s); }
void hook_flush() { g_next.load()->flush(); }
void hook_repoint(const TensorImpl& impl) { g_next.load()->repoint(impl); }

const detail::TraceHooks kFunctionHooks{hook_record, hook_record_into, hook_materialize, hook_flush, hook_repoint};

// Installs the hooks and the traced mode for one recording, and puts back
// what was there, whatever fn does.
class Recording {
 public:
  explicit Recording(FunctionTrace& into) : lock_(g_one_at_a_time) {
    NNVM_CHECK(t_recording == nullptr, "trace_graph", "cannot trace a function while tracing another");
    mark_step();  // what the caller recorded runs first: fn reads values
    const detail::TraceHooks* next = detail::trace_hooks();
    NNVM_CHECK(next != nullptr, "trace_graph", "no recorder is installed");
    g_next.store(next);
    detail::install_trace_hooks(&kFunctionHooks);
    traced_ = detail::g_traced.exchange(true);
    eager_depth_ = std::exchange(detail::t_eager_depth, 0);
    t_recording = &into;
  }
  ~Recording() {
    t_recording = nullptr;
    detail::t_eager_depth = eager_depth_;
    detail::g_traced.store(traced_);
    detail::install_trace_hooks(g_next.load());
  }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

 private:
  std::lock_guard<std::mutex> lock_;
  NoGradGuard no_grad_;
  bool traced_ = true;
  int eager_depth_ = 0;
};

}  // namespace

trace::Trace record_function(const TracedFunction& fn, const std::vector<Tensor>& example_inputs) {
  NNVM_CHECK(fn != nullptr, "trace_graph", "the function is empty");
  FunctionTrace recorded;
  std::vector<Tensor> copies;
  {
    NoGradGuard no_grad;
    detail::RunEagerly eager;
    for (size_t i = 0; i < example_inputs.size(); ++i) {
      NNVM_CHECK(example_inputs[i].defined(), "trace_graph", "example input ", i, " is undefined");
      // A copy of its own: fn's writes to it stay in the trace, and an input
      // sharing memory with another or with a parameter is still itself.
      copies.push_back(example_inputs[i].detach().clone());
      recorded.add_input(copies.back());
    }
  }
  std::vector<Tensor> results;
  {
    Recording recording(recorded);
    results = fn(copies);
  }
  detail::RunEagerly eager;
  for (size_t i = 0; i < results.size(); ++i) {
    NNVM_CHECK(results[i].defined(), "trace_graph", "the function's output ", i, " is undefined");
    static const OpDef& copy = find_op("copy");
    recorded.trace.mark_output(recorded.value_of(results[i], copy));
  }
  return std::move(recorded.trace);
}

}  // namespace nnvm::model_detail
