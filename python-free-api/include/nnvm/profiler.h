// Where time goes (docs/PROFILING.md), with torch.profiler's names:
//
//   nnvm::profiler::Session session;        // records from here
//   for (int step = 0; step < 10; ++step) train_step();
//   session.stop();
//   session.export_chrome_trace("trace.json");   // Perfetto, chrome://tracing
//   std::cout << session.key_averages().table(10);
//
// A session records ops (recorded or run), flushes, trace-cache hits and
// misses with their reasons, each compile's pipeline stages, fusion groups'
// kernels (the unit that ran them, bytes moved, GB/s, GFLOP/s where known),
// replayed plans and the CPU allocator's memory in use, each with its thread
// and timestamps. NNVM_PROFILE=trace.json records a whole program the same
// way and writes the file (and the table, to stderr) at exit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnvm/core/profiling.h"

namespace nnvm::profiler {

using Event = profiling::Event;

// Complete events of one name and category, summed.
struct KeyAverage {
  std::string name;
  std::string category;
  int64_t count = 0;
  double total_ms = 0;
  double share = 0;  // of the summed time of complete events in the session's categories, 0..1
  double bytes = 0;
  double flops = 0;
  double avg_ms() const { return count ? total_ms / double(count) : 0; }
  double gb_per_s() const { return total_ms > 0 ? bytes / (total_ms * 1e6) : 0; }
  double gflop_per_s() const { return total_ms > 0 ? flops / (total_ms * 1e6) : 0; }
};

class KeyAverages : public std::vector<KeyAverage> {
 public:
  // torch.profiler's key_averages().table(): the rows with the most time
  // first, row_limit of them (0: all), with their share of the total.
  std::string table(size_t row_limit = 20) const;
};

class Session {
 public:
  Session();  // starts recording
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Stops recording (a second call does nothing); the events stay.
  void stop();
  bool recording() const { return recording_; }
  // What was recorded (up to now, while recording).
  std::vector<Event> events() const;
  // Events the buffer had no room for (it keeps about two million).
  int64_t dropped() const { return dropped_; }

  // Chrome's trace event format (JSON object form): one "X" event per timed
  // thing, "i" for cache hits and misses, "C" for memory in use; thread-name
  // metadata. Throws nnvm::Error when the file cannot be written.
  void export_chrome_trace(const std::string& path) const;
  std::string chrome_trace_json() const;
  // Ops, kernels, flushes and compile stages, each name summed over its calls.
  KeyAverages key_averages() const;

 private:
  bool recording_ = false;
  size_t from_ = 0;
  std::vector<Event> events_;  // after stop()
  int64_t dropped_ = 0;
};

}  // namespace nnvm::profiler
