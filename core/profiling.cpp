// The profiler's event sink (core/profiling.h): one buffer for the process,
// behind a lock, kept while any session records.
#include "nnvm/core/profiling.h"

#include <chrono>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/spin_lock.h"

namespace nnvm::profiling {

namespace detail {
std::atomic<int> sessions{0};
}

namespace {

// About 200 MB of events at most; a longer recording keeps its first ones.
constexpr size_t kMaxEvents = size_t(1) << 21;

struct Buffer {
  SpinLock mu;
  std::vector<Event> events;
  int64_t dropped = 0;
  int recording = 0;
};

Buffer& buffer() {
  static auto* b = new Buffer;  // never destroyed: threads may record during static destruction
  return *b;
}

}  // namespace

int64_t now_ns() {
  static const std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch).count();
}

uint32_t thread_id() {
  static std::atomic<uint32_t> next{1};
  thread_local const uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void record(Event event) {
  if (!on()) return;
  if (event.thread == 0) event.thread = thread_id();
  Buffer& b = buffer();
  std::lock_guard<SpinLock> lock(b.mu);
  if (b.recording == 0) return;  // the last session stopped after on() was read
  if (b.events.size() >= kMaxEvents) {
    ++b.dropped;
    return;
  }
  b.events.push_back(std::move(event));
}

void Scope::begin(const char* category, std::string_view name) {
  Event& e = event_.emplace();
  e.category = category;
  e.name = std::string(name);
  e.thread = thread_id();
  e.start_ns = now_ns();
}

void Scope::end() {
  event_->duration_ns = now_ns() - event_->start_ns;
  record(std::move(*event_));
}

void Scope::arg(std::string_view key, int64_t value) {
  if (!event_) return;
  absl::StrAppend(&event_->args, event_->args.empty() ? "" : ", ", "\"", json_escape(key), "\": ", value);
}

void Scope::arg(std::string_view key, std::string_view value) {
  if (!event_) return;
  absl::StrAppend(&event_->args, event_->args.empty() ? "" : ", ", "\"", json_escape(key), "\": \"",
                  json_escape(value), "\"");
}

size_t start() {
  Buffer& b = buffer();
  std::lock_guard<SpinLock> lock(b.mu);
  if (b.recording++ == 0) b.events.reserve(4096);
  detail::sessions.fetch_add(1, std::memory_order_relaxed);
  return b.events.size();
}

std::vector<Event> events_since(size_t from) {
  Buffer& b = buffer();
  std::lock_guard<SpinLock> lock(b.mu);
  if (from >= b.events.size()) return {};
  return std::vector<Event>(b.events.begin() + std::ptrdiff_t(from), b.events.end());
}

void stop() {
  Buffer& b = buffer();
  std::lock_guard<SpinLock> lock(b.mu);
  if (b.recording == 0) return;
  detail::sessions.fetch_sub(1, std::memory_order_relaxed);
  if (--b.recording == 0) {
    std::vector<Event>().swap(b.events);
    b.dropped = 0;
  }
}

int64_t dropped() {
  Buffer& b = buffer();
  std::lock_guard<SpinLock> lock(b.mu);
  return b.dropped;
}

std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out;
}

}  // namespace nnvm::profiling
