#include "nnvm/trace/flush.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/container/inlined_vector.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/memory_monitor.h"
#include "nnvm/core/mode_state.h"
#include "nnvm/trace/check.h"
#include "nnvm/trace/interpreter.h"

namespace nnvm::trace {

namespace {

bool log_trace() {
  static const bool on = log_enabled("trace");
  return on;
}

// Plan::replay of a flush whose every output is a lazy storage.
bool replay(const Plan& plan, absl::Span<const Tensor> inputs, absl::Span<const FlushOutput> outputs) {
  absl::InlinedVector<Storage*, 4> storages;
  for (const FlushOutput& o : outputs) {
    if (!o.storage) return false;  // a write into a materialised tensor: run_into's
    storages.push_back(o.storage.get());
  }
  return plan.replay(inputs, storages);
}

// Gives a lazy storage the value r (its memory when nothing else holds it),
// or writes r into a materialised target.
void bind(const FlushOutput& out, Tensor& r, const KernelFn& copy_kernel) {
  if (!out.storage) {
    copy_kernel({r}, {out.target}, {});
    return;
  }
  Storage& s = *out.storage;
  if (s.nbytes() == 0) return;
  const bool movable = r.storage_offset() == 0 && r.is_contiguous() && r.impl_ptr().use_count() == 1 &&
                       r.storage().use_count() == 1 && r.storage()->nbytes() == s.nbytes() &&
                       r.storage()->device() == s.device();
  if (movable) {
    s.take_memory(*r.storage());
    return;
  }
  s.allocate();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = out.storage;
  impl->shape = dims(r.sizes());
  impl->strides = contiguous_strides(r.sizes());
  impl->dtype = r.dtype();
  impl->device = s.device();
  copy_kernel({r}, {Tensor(std::move(impl))}, {});
}

// Hands the flush to the thread's FlushCapture, if any: what it ran
// (`plan` null: the interpreter) with which Scalars and inputs, and where its
// outputs went.
void capture(const Flush& f, const std::shared_ptr<const Plan>* plan, absl::Span<const Scalar> scalars) {
  FlushCapture* c = FlushCapture::active();
  if (!c) return;
  CapturedFlush& out = c->flushes.emplace_back();
  if (plan) out.plan = *plan;
  // Scalars the plan holds are none: the same whichever way the flush ran it.
  if (out.plan && !scalars.empty() && !out.plan->holds_scalars(scalars))
    out.scalars.assign(scalars.begin(), scalars.end());
  out.inputs.assign(f.inputs.begin(), f.inputs.end());
  for (const FlushOutput& o : f.outputs) out.outputs.push_back(o.storage);
}

}  // namespace

void run_flush(const Flush& f, FlushBuffers& buffers) {
  // A trace that repeats a compiled entry whole runs its plan with the
  // entry's Scalars (the cursor took them bit for bit), never built; with
  // the plan's own Scalars and every output lazy, it replays the plan's
  // captured kernel calls, which need none of what follows (unless a
  // profiler session records: then each group's kernel is timed; or the
  // checking mode is on: each group is checked, trace/check.h; or the memory
  // monitor watches: each group's blocks are named).
  std::optional<TraceCursor::Compiled> compiled;
  if (f.unbuilt && f.repeated && !f.observer && !log_trace()) {
    try {
      compiled = f.cursor.look_up_compiled(global_trace_cache());
      if (compiled && compiled->scalars.empty() && !profiling::on() && !checking() && !memory::monitoring() &&
          replay(*compiled->plan, f.inputs, f.outputs)) {
        ++f.stats.flushes_unbuilt;
        ++f.stats.flushes_replayed;
        f.profile.arg("ran", "replay");
        capture(f, compiled->owner, {});
        return;
      }
    } catch (const std::exception&) {  // nothing ran: the run below looks it up again
      compiled.reset();
    }
  }
  // The materialised tensors this flush writes (recorded in-place results)
  // are being rewritten until it ends (Storage::begin_rewrite).
  struct Rewrites {
    const Flush& f;
    explicit Rewrites(const Flush& flush) : f(flush) {
      for (const FlushOutput& o : f.outputs)
        if (!o.storage) o.target.storage()->begin_rewrite();
    }
    ~Rewrites() {
      for (const FlushOutput& o : f.outputs)
        if (!o.storage) o.target.storage()->end_rewrite();
    }
  } rewrites(f);
  detail::RunEagerly eager;
  NoGradGuard no_grad;
  std::vector<Tensor>& results = buffers.results;
  std::vector<Tensor>& targets = buffers.targets;
  for (const FlushOutput& o : f.outputs) targets.push_back(o.storage ? Tensor() : o.target);
  WrittenFlags& written_into = buffers.written_into;  // results a plan computed straight into their target
  written_into.assign(f.outputs.size(), 0);
  std::vector<std::shared_ptr<const std::string>> failure;
  std::shared_ptr<const std::string> first_failure;
  const Trace* t = nullptr;  // the trace, once built
  std::shared_ptr<const Plan> found_plan;  // a lookup's, alive to the end (a FlushCapture may keep it)
  const std::shared_ptr<const Plan>* ran = nullptr;  // the plan that ran, for a FlushCapture
  absl::Span<const Scalar> ran_scalars;
  try {
    if (compiled) {
      ++f.stats.flushes_unbuilt;
      f.profile.arg("ran", "plan");
      compiled->plan->run_into(f.inputs, compiled->scalars, targets, written_into, results,
                               /*recorded_layouts=*/true);
      ran = compiled->owner;
      ran_scalars = compiled->scalars;
    } else {
      t = &f.build(f.cursor.entry());
      if (f.observer) f.observer(*t);
      const CacheLookup found = f.cursor.look_up(global_trace_cache(), *t, f.repeated);
      if (log_trace())
        std::fprintf(stderr, "trace flush %s %016llx\n%s", found.plan ? "plan" : "interpret",
                     static_cast<unsigned long long>(found.hash), t->to_string().c_str());
      f.profile.arg("ran", found.plan ? "plan" : "interpreter");
      if (found.plan) {
        found.plan->run_into(f.inputs, t->scalars(), targets, written_into, results, /*recorded_layouts=*/true);
        found_plan = found.plan;
        ran = &found_plan;
        ran_scalars = t->scalars();
      } else {
        ++f.stats.flushes_interpreted;
        results = interpret(*t, f.inputs);
      }
    }
  } catch (const std::exception&) {
    // Run it again node by node: what does not depend on the failing op
    // keeps its value, as it would have in eager mode.
    if (!t) t = &f.build(compiled ? compiled->entry : f.cursor.entry());
    PartialRun partial = interpret_partial(*t, f.inputs);
    results = std::move(partial.outputs);
    failure = std::move(partial.failure);
    first_failure = std::move(partial.first_failure);
    written_into.assign(f.outputs.size(), 0);
  }
  static const OpDef& copy = find_op("copy");
  const KernelFn& copy_kernel = copy.kernels[size_t(kCPU)];
  // A plan may return one of its inputs (simplify turns copy(x) into x), and
  // that input may share memory with a tensor written below: copy it out
  // first, or the writes would read what they have just written.
  std::vector<const Storage*>& written = buffers.written;
  for (const FlushOutput& o : f.outputs)
    if (!o.storage) written.push_back(o.target.storage().get());
  for (size_t i = 0; i < results.size(); ++i)
    if (!written_into[i] && results[i].defined() &&
        std::find(written.begin(), written.end(), results[i].storage().get()) != written.end())
      results[i] = results[i].clone();
  for (size_t i = 0; i < f.outputs.size(); ++i) {
    if (written_into[i]) continue;
    if (!failure.empty() && failure[i]) {
      if (f.outputs[i].storage) f.fail(f.outputs[i], failure[i]);
      continue;
    }
    bind(f.outputs[i], results[i], copy_kernel);
  }
  if (first_failure) throw Error(*first_failure);
  capture(f, ran, ran_scalars);
}

}  // namespace nnvm::trace
