#include "nnvm/core/mode.h"

#include <atomic>

#include "nnvm/core/knobs.h"

namespace nnvm {

namespace {

std::atomic<bool> g_traced{knobs().traced};
std::atomic<int64_t> g_trace_cap{knobs().trace_cap};
std::atomic<const detail::TraceHooks*> g_hooks{nullptr};
thread_local int t_eager_depth __attribute__((tls_model("initial-exec"))) = 0;  // read by every op: no dynamic-linker call

}  // namespace

void set_mode(Mode m) {
  if (m == Mode::Eager && g_traced.load()) mark_step();
  g_traced.store(m == Mode::Traced);
}

Mode mode() { return g_traced.load(std::memory_order_relaxed) ? Mode::Traced : Mode::Eager; }

EagerGuard::EagerGuard() {
  // What was recorded runs first, so eager code sees every earlier op's effect.
  if (is_recording()) mark_step();
  ++t_eager_depth;
}
EagerGuard::~EagerGuard() { --t_eager_depth; }

bool is_recording() {
  return t_eager_depth == 0 && g_traced.load(std::memory_order_relaxed) &&
         g_hooks.load(std::memory_order_relaxed) != nullptr;
}

void mark_step() {
  if (const detail::TraceHooks* h = detail::trace_hooks()) h->flush();
}

void set_trace_cap(int64_t nodes) {
  NNVM_CHECK(nodes > 0, "set_trace_cap", "the cap must be positive, got ", nodes);
  g_trace_cap.store(nodes);
}
int64_t trace_cap() { return g_trace_cap.load(std::memory_order_relaxed); }

namespace detail {

void install_trace_hooks(const TraceHooks* hooks) { g_hooks.store(hooks); }
const TraceHooks* trace_hooks() { return g_hooks.load(std::memory_order_acquire); }

}  // namespace detail

}  // namespace nnvm
