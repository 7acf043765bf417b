// The mode state that core/mode.cpp owns, for the library's own hot paths:
// every op asks whether it is being recorded and where the recorder is, so
// the dispatcher (core/op.cpp) and the recorder read these inline, a load
// each, instead of calling is_recording(), trace_hooks() and trace_cap().
// Not for users: core/mode.h is the interface.
#pragma once

#include <atomic>
#include <cstdint>

#include "nnvm/core/autocast_state.h"
#include "nnvm/core/hot_tls.h"
#include "nnvm/core/mode.h"

namespace nnvm::detail {

extern std::atomic<bool> g_traced;
extern std::atomic<int64_t> g_trace_cap;
extern std::atomic<const TraceHooks*> g_hooks;
NNVM_HOT_TLS extern thread_local int t_eager_depth;

// is_recording(), inline.
inline bool recording() {
  return t_eager_depth == 0 && g_traced.load(std::memory_order_relaxed) &&
         g_hooks.load(std::memory_order_relaxed) != nullptr;
}
// Ops run eagerly for a scope, as under EagerGuard, without flushing first:
// for the library's own runs of a trace (a flush, a plan), which have
// nothing recorded before them to wait for. A lazy input is still computed
// when its data is read. Autocast is off meanwhile: recorded nodes run in the
// types they were recorded in (core/autocast.h).
class RunEagerly {
 public:
  RunEagerly() { ++t_eager_depth; }
  ~RunEagerly() { --t_eager_depth; }
  RunEagerly(const RunEagerly&) = delete;
  RunEagerly& operator=(const RunEagerly&) = delete;

 private:
  AutocastSuspend as_recorded_;
};

// trace_hooks(), inline.
inline const TraceHooks* hooks() { return g_hooks.load(std::memory_order_acquire); }
// trace_cap(), inline.
inline int64_t recorded_cap() { return g_trace_cap.load(std::memory_order_relaxed); }

}  // namespace nnvm::detail
