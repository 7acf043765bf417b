// A Model's calls that record nothing (call_capture.h).
#include "call_capture.h"

#include <algorithm>
#include <cstring>

#include "nnvm/core/autocast_state.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/memory_monitor.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/mode_state.h"
#include "nnvm/core/profiling.h"
#include "nnvm/trace/check.h"
#include "nnvm/trace/ir.h"
#include "nnvm/trace/plan.h"
#include "nnvm/trace/recorder.h"

namespace nnvm::model_detail {

namespace {

using Capture = CallCaptures::Capture;
using Source = CallCaptures::Source;

// At most this many input layouts captured per model; past it the table
// starts again (a model fed ever new shapes records each call, as before).
constexpr size_t kMaxCaptures = 64;

// The inputs' dtypes, shapes and strides; nullopt where two inputs share a
// storage (a capture would read one through the other's offset).
std::optional<std::vector<int64_t>> key_of(const std::vector<Tensor>& inputs) {
  std::vector<int64_t> key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorImpl& x = *inputs[i].impl();
    for (size_t j = 0; j < i; ++j)
      if (inputs[j].impl()->storage == x.storage) return std::nullopt;
    key.push_back(int64_t(x.dtype));
    key.push_back(int64_t(x.shape.size()));
    key.insert(key.end(), x.shape.begin(), x.shape.end());
    key.insert(key.end(), x.strides.begin(), x.strides.end());
  }
  return key;
}

// Whether the call must record: it needs gradients, or something watches
// each op (profiler, checking mode, memory monitor), or autocast rewrites
// them, or a capture is recording around it.
bool must_record(const Program& program, const std::vector<Tensor>& inputs) {
  if (!detail::recording() || trace::FlushCapture::active() || detail::t_autocast_on || profiling::on() ||
      trace::checking() || memory::monitoring())
    return true;
  if (!autograd::grad_enabled()) return false;
  for (const Tensor& x : inputs)
    if (x.requires_grad()) return true;
  for (const auto& [slot, value] : program.constants)
    if (value.defined() && value.requires_grad()) return true;
  return false;
}

// Every initializer of the program and its subgraphs, stamped.
void stamp(const Program& program, std::vector<CallCaptures::Stamp>& out) {
  for (const auto& [slot, value] : program.constants)
    if (value.defined()) out.push_back({value.impl(), value.impl()->storage.get(), value.impl()->storage->version()});
  for (const Step& step : program.steps)
    for (const auto& [name, sub] : step.subgraphs) stamp(*sub, out);
}

// Whether what the capture assumed still holds: its initializers' storages
// and versions, and its held tensors' layouts.
bool holds(const Capture& c) {
  for (const CallCaptures::Stamp& s : c.stamps)
    if (s.impl->storage.get() != s.storage || s.storage->version() != s.version) return false;
  auto held_moved = [](const Source& s) { return s.kind == Source::kHeld && s.held.impl()->layout_id != s.layout; };
  for (const CallCaptures::Step& step : c.steps)
    if (std::any_of(step.inputs.begin(), step.inputs.end(), held_moved)) return false;
  return std::none_of(c.outputs.begin(), c.outputs.end(), held_moved);
}

// Where t comes from: a call input, an earlier flush's output, or held.
Source source_of(const Tensor& t, const std::vector<Tensor>& inputs,
                 const absl::flat_hash_map<const Storage*, std::pair<int32_t, int32_t>>& flushed) {
  const TensorImpl& x = *t.impl();
  Source s;
  s.sizes = x.shape;
  s.strides = x.strides;
  s.dtype = x.dtype;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].impl()->storage == x.storage) {
      s.kind = Source::kInput;
      s.index = int32_t(i);
      s.offset = x.offset - inputs[i].impl()->offset;
      return s;
    }
  if (auto it = flushed.find(x.storage.get()); it != flushed.end()) {
    s.kind = Source::kFlush;
    s.index = it->second.first;
    s.output = it->second.second;
    s.offset = x.offset;
    return s;
  }
  s.kind = Source::kHeld;
  s.held = t;
  s.layout = x.layout_id;
  return s;
}

// The capture of a call's flushes, or nullopt where the call cannot be
// captured (call_capture.h).
std::optional<Capture> capture_of(const trace::FlushCapture& fc, const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs) {
  if (fc.host_reads > 0) return std::nullopt;
  Capture c;
  absl::flat_hash_map<const Storage*, std::pair<int32_t, int32_t>> flushed;
  for (size_t j = 0; j < fc.flushes.size(); ++j) {
    const trace::CapturedFlush& f = fc.flushes[j];
    if (!f.plan) return std::nullopt;  // cold: the interpreter ran it
    CallCaptures::Step& step = c.steps.emplace_back();
    step.plan = f.plan;
    step.scalars = f.scalars;
    for (const Tensor& t : f.inputs) {
      if (!t.defined()) return std::nullopt;
      step.inputs.push_back(source_of(t, inputs, flushed));
    }
    for (size_t p = 0; p < f.outputs.size(); ++p) {
      if (!f.outputs[p]) return std::nullopt;  // a write into a materialised tensor
      flushed[f.outputs[p].get()] = {int32_t(j), int32_t(p)};
      step.outputs.push_back({f.outputs[p]->nbytes(), f.outputs[p]->device()});
    }
  }
  for (const Tensor& y : outputs) {
    if (!y.defined()) return std::nullopt;
    c.outputs.push_back(source_of(y, inputs, flushed));
  }
  return c;
}

// The same tensor: a held one by identity or, made anew by each call (a
// step run at once on constants), by value.
bool same_held(const Tensor& a, const Tensor& b) {
  if (a.impl() == b.impl()) return true;
  detail::RunEagerly eager;
  const Tensor x = a.contiguous(), y = b.contiguous();
  const size_t bytes = size_t(x.numel()) * itemsize(x.dtype());
  return x.device().is_cpu() && y.device().is_cpu() &&
         (bytes == 0 || std::memcmp(x.data_ptr(), y.data_ptr(), bytes) == 0);  // (empty: maybe no memory)
}

bool same_source(const Source& a, const Source& b) {
  return a.kind == b.kind && a.index == b.index && a.output == b.output && a.offset == b.offset &&
         a.dtype == b.dtype && a.sizes == b.sizes && a.strides == b.strides &&
         (a.kind != Source::kHeld || same_held(a.held, b.held));
}

bool same_scalars(const std::vector<Scalar>& a, const std::vector<Scalar>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!trace::identical(a[i], b[i])) return false;
  return true;
}

// Whether two calls ran the same plans with the same Scalars on the same sources.
bool agree(const Capture& a, const Capture& b) {
  if (a.steps.size() != b.steps.size() || a.outputs.size() != b.outputs.size()) return false;
  for (size_t j = 0; j < a.steps.size(); ++j) {
    const CallCaptures::Step &x = a.steps[j], &y = b.steps[j];
    if (x.plan != y.plan || !same_scalars(x.scalars, y.scalars) || x.inputs.size() != y.inputs.size() ||
        x.outputs.size() != y.outputs.size())
      return false;
    for (size_t p = 0; p < x.outputs.size(); ++p)
      if (x.outputs[p].bytes != y.outputs[p].bytes || !(x.outputs[p].device == y.outputs[p].device)) return false;
    for (size_t i = 0; i < x.inputs.size(); ++i)
      if (!same_source(x.inputs[i], y.inputs[i])) return false;
  }
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if (!same_source(a.outputs[i], b.outputs[i])) return false;
  return true;
}

// A tensor of `storage` with s's layout at `offset`.
Tensor view_of(std::shared_ptr<Storage> storage, const Source& s, int64_t offset,
               const std::shared_ptr<const Quantizer>& quantizer) {
  const Device device = storage->device();
  auto impl = std::make_shared<TensorImpl>(std::move(storage), s.sizes, s.strides, offset, s.dtype, device, true);
  impl->quantizer = quantizer;
  return Tensor(std::move(impl));
}

}  // namespace

std::vector<Tensor> CallCaptures::call(const Program& program, const std::vector<Tensor>& inputs) {
  if (must_record(program, inputs)) return run(program, inputs, nullptr);
  const std::optional<std::vector<int64_t>> key = key_of(inputs);
  if (!key) return run(program, inputs, nullptr);
  mark_step();  // the caller's pending work first: a capture's flushes are the call's own
  std::shared_ptr<const Capture> found;
  {
    std::lock_guard lock(mu_);
    if (auto it = table_.find(*key); it != table_.end()) found = it->second;
  }
  if (found && found->ready && holds(*found)) return replay(*found, inputs);
  return record(program, inputs, *key);
}

std::vector<Tensor> CallCaptures::record(const Program& program, const std::vector<Tensor>& inputs,
                                         const std::vector<int64_t>& key) {
  std::unique_lock recording(recording_, std::try_to_lock);
  if (!recording.owns_lock()) return run(program, inputs, nullptr);
  std::vector<Tensor> outputs;
  std::optional<Capture> made;
  {
    trace::FlushCapture flushes;
    for (const Tensor& x : inputs) flushes.watch(x.impl()->storage);
    outputs = run(program, inputs, nullptr);
    mark_step();
    made = capture_of(flushes, inputs, outputs);
  }
  if (!made) return outputs;
  stamp(program, made->stamps);
  std::shared_ptr<const Capture> before;
  {
    std::lock_guard lock(mu_);
    if (auto it = table_.find(key); it != table_.end()) before = it->second;
  }
  made->ready = before && agree(*before, *made);  // (agree may read held tensors: outside the lock)
  auto capture = std::make_shared<const Capture>(std::move(*made));
  if (capture->ready) captured_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  if (table_.size() >= kMaxCaptures && !table_.contains(key)) table_.clear();
  table_[key] = std::move(capture);
  return outputs;
}

std::vector<Tensor> CallCaptures::replay(const Capture& c, const std::vector<Tensor>& inputs) {
  detail::RunEagerly eager;
  NoGradGuard no_grad;
  // Each flush's outputs, whole in storages of their own as the flush bound them.
  std::vector<std::vector<std::shared_ptr<Storage>>> values(c.steps.size());
  auto tensor_of = [&](const Source& s) -> Tensor {
    switch (s.kind) {
      case Source::kInput: {
        const TensorImpl& x = *inputs[size_t(s.index)].impl();
        return view_of(x.storage, s, x.offset + s.offset, x.quantizer);
      }
      case Source::kFlush:
        return view_of(values[size_t(s.index)][size_t(s.output)], s, s.offset, nullptr);
      case Source::kHeld:
        break;
    }
    return s.held;
  };
  std::vector<Tensor> args, targets, ran;
  std::vector<Storage*> raw;
  trace::WrittenFlags written;
  for (size_t j = 0; j < c.steps.size(); ++j) {
    const Step& step = c.steps[j];
    args.clear();
    for (const Source& s : step.inputs) args.push_back(tensor_of(s));
    std::vector<std::shared_ptr<Storage>>& out = values[j];
    if (step.scalars.empty()) {  // the plan holds its Scalars: its captured kernel calls may do
      raw.clear();
      for (const Output& o : step.outputs) {
        out.push_back(std::make_shared<Storage>(o.bytes, o.device, Storage::Lazy{}));
        raw.push_back(out.back().get());
      }
      if (step.plan->replay(args, raw)) continue;
      out.clear();
    }
    targets.assign(step.outputs.size(), Tensor());
    step.plan->run_into(absl::MakeSpan(args), step.scalars, targets, written, ran, /*recorded_layouts=*/true);
    for (size_t p = 0; p < ran.size(); ++p) {
      Tensor& r = ran[p];
      // Memory of its own holding the value whole, or a copy: a plan may
      // return an input, or views of one block.
      bool own = r.is_contiguous() && r.impl()->offset == 0 && r.impl()->storage->nbytes() == step.outputs[p].bytes;
      for (const Tensor& a : args) own = own && !(a.defined() && a.impl()->storage == r.impl()->storage);
      for (const auto& earlier : out) own = own && earlier != r.impl()->storage;
      out.push_back(own ? r.impl()->storage : r.clone().impl()->storage);
    }
  }
  std::vector<Tensor> outputs;
  outputs.reserve(c.outputs.size());
  for (const Source& s : c.outputs) outputs.push_back(tensor_of(s));
  replayed_.fetch_add(1, std::memory_order_relaxed);
  return outputs;
}

}  // namespace nnvm::model_detail
