// The memory monitor (core/memory_monitor.h): a ring of allocator events, the
// live blocks and each phase's peak, behind one lock; the HTML timeline.
#include "nnvm/core/memory_monitor.h"

#include <algorithm>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/allocator.h"
#include "nnvm/core/error.h"
#include "nnvm/core/profiling.h"
#include "nnvm/core/spin_lock.h"
#include "nnvm/core/text_file.h"

namespace nnvm::memory {

namespace detail {
std::atomic<bool> monitoring{false};
}

namespace {

thread_local Phase t_phase = Phase::kForward;
thread_local const char* t_op = "";
thread_local uint64_t t_trace = 0;

struct Monitor {
  SpinLock mu;
  std::vector<Event> ring;
  size_t next = 0;        // where the next event goes
  int64_t recorded = 0;   // events since start
  absl::flat_hash_map<uintptr_t, Block> live;
  int64_t untracked_bytes = 0;
  std::array<int64_t, kNumPhases> peaks{};

  void push(const Event& e) {
    if (ring.empty()) return;
    ring[next] = e;
    next = (next + 1) % ring.size();
    ++recorded;
  }
  void note_peak(Phase phase, int64_t in_use) {
    int64_t& peak = peaks[size_t(phase)];
    peak = std::max(peak, in_use);
  }
};

Monitor& monitor() {
  static auto* m = new Monitor;  // never destroyed: the allocator may call in during static destruction
  return *m;
}

}  // namespace

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kOptimizer: return "optimizer";
  }
  return "?";
}

Phase current_phase() { return t_phase; }

PhaseGuard::PhaseGuard(Phase phase) : previous_(t_phase) {
  t_phase = phase;
  if (monitoring()) [[unlikely]] {
    const int64_t in_use = cpu_memory_stats().bytes_in_use;
    Monitor& m = monitor();
    std::lock_guard<SpinLock> lock(m.mu);
    m.note_peak(phase, in_use);  // a phase that allocates nothing still held what was in use
  }
}

PhaseGuard::~PhaseGuard() {
  if (monitoring()) [[unlikely]] {
    const int64_t in_use = cpu_memory_stats().bytes_in_use;
    Monitor& m = monitor();
    std::lock_guard<SpinLock> lock(m.mu);
    m.note_peak(t_phase, in_use);
  }
  t_phase = previous_;
}

OpScope::OpScope(const char* op, uint64_t trace) : op_(t_op), trace_(t_trace) {
  t_op = op;
  t_trace = trace;
}

OpScope::~OpScope() {
  t_op = op_;
  t_trace = trace_;
}

void start_monitoring(size_t events) {
  NNVM_CHECK(events > 0, "start_monitoring", "the ring needs room for at least one event");
  const int64_t in_use = cpu_memory_stats().bytes_in_use;
  Monitor& m = monitor();
  std::lock_guard<SpinLock> lock(m.mu);
  m.ring.assign(events, Event{});
  m.next = 0;
  m.recorded = 0;
  m.live.clear();
  m.untracked_bytes = in_use;
  m.peaks = {};
  m.note_peak(t_phase, in_use);
  detail::monitoring.store(true, std::memory_order_relaxed);
}

void stop_monitoring() { detail::monitoring.store(false, std::memory_order_relaxed); }

std::vector<Event> events() {
  Monitor& m = monitor();
  std::lock_guard<SpinLock> lock(m.mu);
  std::vector<Event> out;
  const size_t n = std::min<size_t>(size_t(m.recorded), m.ring.size());
  out.reserve(n);
  const size_t first = m.recorded > int64_t(m.ring.size()) ? m.next : 0;
  for (size_t k = 0; k < n; ++k) out.push_back(m.ring[(first + k) % m.ring.size()]);
  return out;
}

int64_t events_dropped() {
  Monitor& m = monitor();
  std::lock_guard<SpinLock> lock(m.mu);
  return std::max<int64_t>(0, m.recorded - int64_t(m.ring.size()));
}

Snapshot snapshot() {
  Snapshot s;
  const int64_t in_use = cpu_memory_stats().bytes_in_use;
  Monitor& m = monitor();
  std::lock_guard<SpinLock> lock(m.mu);
  s.blocks.reserve(m.live.size());
  for (const auto& [address, block] : m.live) s.blocks.push_back(block);
  std::sort(s.blocks.begin(), s.blocks.end(), [](const Block& a, const Block& b) { return a.time_ns < b.time_ns; });
  s.untracked_bytes = m.untracked_bytes;
  s.in_use = in_use;
  return s;
}

std::array<int64_t, kNumPhases> phase_peaks() {
  Monitor& m = monitor();
  std::lock_guard<SpinLock> lock(m.mu);
  return m.peaks;
}

namespace detail {

void on_allocate(void* p, size_t bytes, bool from_cache, int64_t in_use) {
  Event e;
  e.kind = EventKind::kAllocate;
  e.from_cache = from_cache;
  e.bytes = int64_t(bytes);
  e.address = reinterpret_cast<uintptr_t>(p);
  e.time_ns = profiling::now_ns();
  e.phase = t_phase;
  e.op = t_op;
  e.trace = t_trace;
  e.in_use = in_use;
  Monitor& m = monitor();
  std::lock_guard<SpinLock> lock(m.mu);
  m.live[e.address] = Block{e.address, e.bytes, e.op, e.trace, e.phase, e.time_ns};
  m.note_peak(t_phase, in_use);
  m.push(e);
}

void on_free(void* p, size_t bytes, int64_t in_use) {
  Event e;
  e.kind = EventKind::kFree;
  e.bytes = int64_t(bytes);
  e.address = reinterpret_cast<uintptr_t>(p);
  e.time_ns = profiling::now_ns();
  e.in_use = in_use;
  Monitor& m = monitor();
  std::lock_guard<SpinLock> lock(m.mu);
  auto it = m.live.find(e.address);
  if (it == m.live.end()) {
    e.tracked = false;
    m.untracked_bytes -= e.bytes;
  } else {
    e.phase = it->second.phase;
    e.op = it->second.op;
    e.trace = it->second.trace;
    m.live.erase(it);
  }
  m.push(e);
}

void on_release(size_t bytes, int64_t in_use) {
  Event e;
  e.kind = EventKind::kRelease;
  e.bytes = int64_t(bytes);
  e.time_ns = profiling::now_ns();
  e.phase = t_phase;
  e.in_use = in_use;
  Monitor& m = monitor();
  std::lock_guard<SpinLock> lock(m.mu);
  m.push(e);
}

}  // namespace detail

// ---- the timeline ----

namespace {

const char* const kColours[] = {"#9e9e9e", "#4c78a8", "#f58518", "#54a24b"};  // earlier, then per phase

}  // namespace

std::string memory_timeline_html() {
  const std::vector<Event> all = events();
  const std::array<int64_t, kNumPhases> peaks = phase_peaks();
  // Bytes live per category after each event: 0 = blocks from before the
  // ring's first event (what was in use then), 1 + phase = allocated in that phase.
  std::vector<std::array<double, 1 + kNumPhases>> levels;
  std::vector<double> times;
  std::array<double, 1 + kNumPhases> level{};
  if (!all.empty()) {
    const Event& first = all.front();
    const int64_t before = first.kind == EventKind::kAllocate ? first.in_use - first.bytes
                           : first.kind == EventKind::kFree   ? first.in_use + first.bytes
                                                              : first.in_use;
    level[0] = double(std::max<int64_t>(before, 0));
  }
  for (const Event& e : all) {
    if (e.kind == EventKind::kAllocate) level[1 + size_t(e.phase)] += double(e.bytes);
    if (e.kind == EventKind::kFree) {
      double& from = level[e.tracked ? 1 + size_t(e.phase) : 0];
      from -= double(e.bytes);
      if (from < 0) {  // a block allocated before the ring's first event, in a phase's category
        level[0] += from;
        from = 0;
      }
    }
    level[0] = std::max(level[0], 0.0);
    times.push_back(double(e.time_ns));
    levels.push_back(level);
  }
  const double width = 960, height = 360, left = 80, bottom = 30, top = 10;
  double max_bytes = 1;
  for (const auto& l : levels) {
    double sum = 0;
    for (double v : l) sum += v;
    max_bytes = std::max(max_bytes, sum);
  }
  const double t0 = times.empty() ? 0 : times.front(), t1 = times.empty() ? 1 : std::max(times.back(), t0 + 1);
  auto x = [&](double t) { return left + (t - t0) / (t1 - t0) * (width - left - 10); };
  auto y = [&](double b) { return top + (1 - b / max_bytes) * (height - top - bottom); };
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n", width,
      height, width, height);
  const char* names[] = {"before the ring", "forward", "backward", "optimizer"};
  // Stacked areas, bottom category first: each polygon runs along its top
  // edge forwards and its bottom edge backwards, as steps.
  for (size_t c = 0; c < 1 + kNumPhases && !levels.empty(); ++c) {
    std::string upper, lower;
    for (size_t k = 0; k < levels.size(); ++k) {
      double below = 0;
      for (size_t d = 0; d < c; ++d) below += levels[k][d];
      const double above = below + levels[k][c];
      const double xa = x(times[k]), xb = x(k + 1 < times.size() ? times[k + 1] : t1);
      absl::StrAppendFormat(&upper, "%.1f,%.1f %.1f,%.1f ", xa, y(above), xb, y(above));
      lower = absl::StrFormat("%.1f,%.1f %.1f,%.1f ", xb, y(below), xa, y(below)) + lower;
    }
    absl::StrAppendFormat(&svg, "<polygon class=\"area\" data-category=\"%s\" fill=\"%s\" points=\"%s%s\"/>\n",
                          names[c], kColours[c], upper, lower);
  }
  absl::StrAppendFormat(&svg,
                        "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#333\"/>\n"
                        "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#333\"/>\n",
                        left, top, left, height - bottom, left, height - bottom, width - 10, height - bottom);
  for (int tick = 0; tick <= 4; ++tick) {
    const double b = max_bytes * tick / 4;
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
                          left - 6, y(b) + 4, format_bytes(int64_t(b)));
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">time (%.2f ms in "
                        "all)</text>\n</svg>\n",
                        (left + width) / 2, height - 8, (t1 - t0) / 1e6);
  std::string legend;
  for (size_t c = 0; c < 1 + kNumPhases; ++c) {
    const std::string peak = c == 0 ? "" : absl::StrCat(" — peak ", format_bytes(peaks[c - 1]));
    absl::StrAppendFormat(&legend, "<li><span style=\"background:%s\"></span>%s%s</li>\n", kColours[c], names[c],
                          peak);
  }
  return absl::StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>nnvm memory timeline</title>\n"
      "<style>body{font-family:sans-serif;margin:20px}ul{list-style:none;padding:0}"
      "li span{display:inline-block;width:12px;height:12px;margin-right:6px}</style></head>\n<body>\n"
      "<h1>CPU memory in use, by the phase that allocated it</h1>\n<p>",
      all.size(), " allocator events (", events_dropped(), " older ones overwritten); peak ",
      format_bytes(int64_t(max_bytes)), ".</p>\n", svg, "<ul>\n", legend, "</ul>\n</body></html>\n");
}

void memory_timeline(const std::string& path) { write_text_file(path, memory_timeline_html(), "memory_timeline"); }

}  // namespace nnvm::memory
