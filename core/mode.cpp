#include "nnvm/core/mode.h"

#include <atomic>

#include "nnvm/core/knobs.h"
#include "nnvm/core/mode_state.h"

namespace nnvm {

namespace detail {

std::atomic<bool> g_traced{knobs().traced};
std::atomic<int64_t> g_trace_cap{knobs().trace_cap};
std::atomic<const TraceHooks*> g_hooks{nullptr};
NNVM_HOT_TLS thread_local int t_eager_depth = 0;

}  // namespace detail

using detail::g_hooks;
using detail::g_trace_cap;
using detail::g_traced;
using detail::t_eager_depth;

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

bool is_recording() { return detail::recording(); }

void mark_step() {
  if (const detail::TraceHooks* h = detail::trace_hooks()) h->flush();
}

void set_trace_cap(int64_t nodes) {
  NNVM_CHECK(nodes > 0, "set_trace_cap", "the cap must be positive, got ", nodes);
  g_trace_cap.store(nodes);
}
int64_t trace_cap() { return detail::recorded_cap(); }

namespace detail {

void install_trace_hooks(const TraceHooks* hooks) { g_hooks.store(hooks); }
const TraceHooks* trace_hooks() { return hooks(); }

}  // namespace detail

}  // namespace nnvm
