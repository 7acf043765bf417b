// The profiler's event sink (docs/PROFILING.md). The engine's rooms call the
// hooks below at the places worth timing — an op, a flush, a trace-cache
// lookup, a compile stage, a fusion group's kernel, the allocator — and a
// public nnvm::profiler::Session (python-free-api/include/nnvm/profiler.h)
// collects what they record. With no session recording, each hook is one
// relaxed load and a branch that predicts "off".
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnvm::profiling {

namespace detail {
extern std::atomic<int> sessions;  // how many sessions are recording
}
inline bool on() { return detail::sessions.load(std::memory_order_relaxed) != 0; }

// Chrome's trace event phases that the profiler writes.
enum class Phase : char { kComplete = 'X', kInstant = 'i', kCounter = 'C' };

struct Event {
  std::string name;
  const char* category = "";  // static text: "op", "flush", "cache", "compile", "kernel", "memory"
  Phase phase = Phase::kComplete;
  int64_t start_ns = 0;     // since the process's profiling epoch
  int64_t duration_ns = 0;  // complete events
  uint32_t thread = 0;      // 1 for the first thread that recorded, 2 for the next, ...
  std::string args;         // the members of a JSON object, braces left out: "\"nodes\": 12"
  double bytes = 0;         // kernel events: bytes read and written
  double flops = 0;         // kernel events: floating-point operations, when known
};

int64_t now_ns();
uint32_t thread_id();
// Appends an event (when on(); a no-op otherwise). Past the buffer's limit
// events are counted as dropped instead.
void record(Event event);

// A complete event from construction to destruction, recorded only when a
// session was on at construction (off, it constructs no Event).
class Scope {
 public:
  Scope(const char* category, std::string_view name) {
    if (on()) [[unlikely]]
      begin(category, name);
  }
  ~Scope() {
    if (event_) [[unlikely]]
      end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  bool active() const { return event_.has_value(); }
  // Only when active(): the event's arguments and counts.
  Event& event() { return *event_; }
  void arg(std::string_view key, int64_t value);
  void arg(std::string_view key, std::string_view value);

 private:
  void begin(const char* category, std::string_view name);
  void end();
  std::optional<Event> event_;
};

// The collector's side (nnvm::profiler::Session).
size_t start();               // one more session recording; returns the buffer position it starts at
std::vector<Event> events_since(size_t from);
void stop();                  // one session fewer; the buffer empties when none is left
int64_t dropped();            // events not kept since the buffer was last emptied

// JSON string contents with quotes, backslashes and control characters escaped.
std::string json_escape(std::string_view text);

}  // namespace nnvm::profiling
