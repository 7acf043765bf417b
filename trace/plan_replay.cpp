// A hot plan's replay (trace/executor.h FusedPlan::replay): the kernel calls
// one run captured (trace/replay.h), kept with each operand named by where
// its address comes from, and called again with another run's addresses.
#include <algorithm>

#include "nnvm/trace/backend.h"
#include "nnvm/trace/executor.h"

namespace nnvm::trace {

// A run's calls with each operand named by where its address comes from:
// bases[base] + offset, the bases being the run's inputs' first elements, the
// thread's arena, the outputs' memory, then the trace's constants.
struct FusedPlan::Replay {
  uint64_t variant = 0;  // the backends' variant the calls' code is of (trace/backend.h)
  int64_t arena_bytes = 0;
  std::vector<int64_t> output_bytes;
  std::vector<const char*> constants;
  struct Operand {
    int32_t base;
    int64_t offset;
  };
  struct Call {
    ReplayCall::Fn run;
    std::shared_ptr<const void> state;
    std::vector<Operand> operands;
  };
  std::vector<Call> calls;
};

namespace {
constexpr size_t kMaxReplayOperands = 16;
}  // namespace

FusedPlan::~FusedPlan() { delete replay_.load(); }

std::string FusedPlan::replay_declined() const { return replay_declined_.get(); }

void FusedPlan::decline_replay(std::string why) const { replay_declined_.set(std::move(why)); }

void FusedPlan::keep_replay(ReplayCapture& capture) const {
  if (capture.declined()) return decline_replay(capture.why());
  if (arena_escapes_) return decline_replay("an output is a view of the arena");
  if (memory_.arena_bytes > kKeptArenaBytes) return decline_replay("the arena is larger than a thread keeps");
  const Trace& t = trace_;
  const size_t inputs = t.inputs().size(), outputs = t.outputs().size();
  auto r = std::make_unique<Replay>();
  // Where each value's first element lies: base index and offset (-1: not known to a replay).
  std::vector<Replay::Operand> at(t.values().size(), {-1, 0});
  for (size_t i = 0; i < inputs; ++i) at[size_t(t.inputs()[i])] = {int32_t(i), 0};
  for (const ArenaValue& a : arena_values_) at[size_t(a.value)] = {int32_t(inputs), memory_.offsets[size_t(a.value)]};
  // Each output a value a group computes into memory of its own, and each such value an output.
  std::vector<bool> own(t.values().size(), false);
  for (const std::vector<OwnValue>& step : own_values_)
    for (const OwnValue& o : step) own[size_t(o.value)] = true;
  for (size_t i = 0; i < outputs; ++i) {
    const ValueId v = t.outputs()[i];
    const Value& val = t.value(v);
    if (!own[size_t(v)] || at[size_t(v)].base >= 0)
      return decline_replay("an output is not a value of its own (an input, a constant, a view, another output's)");
    const int64_t bytes = numel_of(val.shape) * int64_t(itemsize(val.dtype));
    if (bytes == 0) return decline_replay("an output is empty");
    at[size_t(v)] = {int32_t(inputs + 1 + i), 0};
    r->output_bytes.push_back(bytes);
  }
  for (size_t v = 0; v < own.size(); ++v)
    if (own[v] && at[v].base < int32_t(inputs + 1)) return decline_replay("a value of its own is not an output");
  for (ValueId c : t.constants()) {
    const Tensor& value = t.constant_value(c);
    at[size_t(c)] = {int32_t(inputs + 1 + outputs + r->constants.size()), 0};
    r->constants.push_back(static_cast<const char*>(value.storage()->data()) +
                           value.storage_offset() * int64_t(itemsize(value.dtype())));
  }
  for (ReplayCall& call : capture.calls()) {
    if (call.operands.size() > kMaxReplayOperands) return decline_replay("a call has too many operands");
    Replay::Call c{call.run, std::move(call.state), {}};
    for (const ReplayOperand& o : call.operands) {
      const Replay::Operand where = at[size_t(o.value)];
      if (where.base < 0) return decline_replay("a call reads a value no replay has");
      c.operands.push_back({where.base, where.offset + o.offset});
    }
    r->calls.push_back(std::move(c));
  }
  r->variant = backends_variant();
  r->arena_bytes = memory_.arena_bytes;
  const Replay* none = nullptr;
  if (replay_.compare_exchange_strong(none, r.get())) r.release();  // else another thread's run kept its own
}

bool FusedPlan::replay(absl::Span<const Tensor> inputs, absl::Span<Storage* const> outputs) const {
  const Replay* r = replay_.load(std::memory_order_acquire);
  if (!r || r->variant != backends_variant() || inputs.size() != trace_.inputs().size() ||
      outputs.size() != r->output_bytes.size())
    return false;
  const size_t first_output = inputs.size() + 1, first_constant = first_output + outputs.size();
  absl::InlinedVector<const char*, 16> bases(first_constant + r->constants.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) return false;
    const TensorImpl& x = *inputs[i].impl();
    if (!x.storage->has_memory() || !x.storage->device().is_cpu()) return false;
    bases[i] = static_cast<const char*>(x.storage->data()) + x.offset * int64_t(itemsize(x.dtype));
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i]->has_memory() || int64_t(outputs[i]->nbytes()) != r->output_bytes[i] ||
        !outputs[i]->device().is_cpu())
      return false;
  std::copy(r->constants.begin(), r->constants.end(), bases.begin() + ptrdiff_t(first_constant));
  bases[inputs.size()] = r->arena_bytes > 0 ? replay_arena(r->arena_bytes) : nullptr;
  for (size_t i = 0; i < outputs.size(); ++i) {
    try {
      outputs[i]->allocate();
    } catch (...) {  // gives back what it took: nothing ran
      for (size_t j = 0; j < i; ++j) {
        Storage none(outputs[j]->nbytes(), outputs[j]->device(), Storage::Lazy{});
        none.take_memory(*outputs[j]);
      }
      throw;
    }
    bases[first_output + i] = static_cast<const char*>(outputs[i]->data());
  }
  const char* ptrs[kMaxReplayOperands];
  for (const Replay::Call& call : r->calls) {
    for (size_t k = 0; k < call.operands.size(); ++k)
      ptrs[k] = bases[size_t(call.operands[k].base)] + call.operands[k].offset;
    call.run(call.state.get(), ptrs);
  }
  return true;
}

}  // namespace nnvm::trace
