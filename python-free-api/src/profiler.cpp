// profiler::Session (nnvm/profiler.h): collecting core/profiling.h's events,
// Chrome's trace format, the summary table, NNVM_PROFILE.
#include "nnvm/profiler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/text_file.h"

namespace nnvm::profiler {

Session::Session() : recording_(true), from_(profiling::start()) {}

Session::~Session() { stop(); }

void Session::stop() {
  if (!recording_) return;
  events_ = profiling::events_since(from_);
  dropped_ = profiling::dropped();
  profiling::stop();
  recording_ = false;
}

std::vector<Event> Session::events() const { return recording_ ? profiling::events_since(from_) : events_; }

namespace {

std::string microseconds(int64_t ns) { return absl::StrFormat("%.3f", double(ns) / 1e3); }

// One event as a Chrome trace event object.
std::string chrome_event(const Event& e) {
  std::string args = e.args;
  if (e.bytes > 0 || e.flops > 0) {
    const double seconds = double(e.duration_ns) / 1e9;
    auto add = [&](const char* key, double value) {
      absl::StrAppend(&args, args.empty() ? "" : ", ", "\"", key, "\": ", absl::StrFormat("%.6g", value));
    };
    if (e.bytes > 0) add("bytes", e.bytes);
    if (e.bytes > 0 && seconds > 0) add("GB/s", e.bytes / seconds / 1e9);
    if (e.flops > 0) add("flops", e.flops);
    if (e.flops > 0 && seconds > 0) add("GFLOP/s", e.flops / seconds / 1e9);
  }
  std::string out = absl::StrCat("{\"name\": \"", profiling::json_escape(e.name), "\", \"cat\": \"", e.category,
                                 "\", \"ph\": \"", std::string(1, char(e.phase)), "\", \"ts\": ",
                                 microseconds(e.start_ns), ", \"pid\": 1, \"tid\": ", e.thread);
  if (e.phase == profiling::Phase::kComplete) absl::StrAppend(&out, ", \"dur\": ", microseconds(e.duration_ns));
  if (e.phase == profiling::Phase::kInstant) absl::StrAppend(&out, ", \"s\": \"t\"");
  absl::StrAppend(&out, ", \"args\": {", args, "}}");
  return out;
}

std::string milliseconds(double ms) {
  if (ms >= 1000) return absl::StrFormat("%.2f s", ms / 1000);
  if (ms >= 1) return absl::StrFormat("%.2f ms", ms);
  return absl::StrFormat("%.1f us", ms * 1000);
}

}  // namespace

std::string Session::chrome_trace_json() const {
  std::vector<Event> all = events();
  std::string out = "{\"traceEvents\": [\n";
  std::set<uint32_t> threads;
  for (const Event& e : all) {
    absl::StrAppend(&out, chrome_event(e), ",\n");
    threads.insert(e.thread);
  }
  absl::StrAppend(&out, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": \"nnvm\"}}");
  for (uint32_t t : threads)
    absl::StrAppend(&out, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": ", t,
                    ", \"args\": {\"name\": \"thread ", t, "\"}}");
  absl::StrAppend(&out, "\n], \"displayTimeUnit\": \"ms\", \"otherData\": {\"dropped_events\": ", dropped_, "}}\n");
  return out;
}

void Session::export_chrome_trace(const std::string& path) const {
  write_text_file(path, chrome_trace_json(), "export_chrome_trace");
}

KeyAverages Session::key_averages() const {
  std::map<std::pair<std::string, std::string>, KeyAverage> rows;
  std::map<std::string, double> category_ms;
  for (const Event& e : events()) {
    if (e.phase != profiling::Phase::kComplete) continue;
    KeyAverage& row = rows[{e.category, e.name}];
    row.name = e.name;
    row.category = e.category;
    ++row.count;
    const double ms = double(e.duration_ns) / 1e6;
    row.total_ms += ms;
    row.bytes += e.bytes;
    row.flops += e.flops;
    category_ms[e.category] += ms;
  }
  KeyAverages out;
  for (auto& [key, row] : rows) {
    const double total = category_ms[row.category];
    row.share = total > 0 ? row.total_ms / total : 0;
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(), [](const KeyAverage& a, const KeyAverage& b) { return a.total_ms > b.total_ms; });
  return out;
}

std::string KeyAverages::table(size_t row_limit) const {
  const size_t rows = row_limit == 0 ? size() : std::min(size(), row_limit);
  size_t name_width = 4;
  for (size_t i = 0; i < rows; ++i) name_width = std::max(name_width, std::min<size_t>((*this)[i].name.size(), 60));
  // Name and category left-aligned, the numbers right-aligned.
  const size_t widths[] = {name_width, 8, 7, 10, 10, 7, 9, 9};
  auto line = [&](std::vector<std::string> cells) {
    if (cells[0].size() > 60) cells[0] = cells[0].substr(0, 57) + "...";
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(widths[c] > cells[c].size() ? widths[c] - cells[c].size() : 0, ' ');
      absl::StrAppend(&out, c ? "  " : "", c < 2 ? cells[c] + pad : pad + cells[c]);
    }
    out.erase(out.find_last_not_of(' ') + 1);
    return out + "\n";
  };
  std::string out = line({"Name", "Category", "Calls", "Total", "Avg", "Share", "GB/s", "GFLOP/s"});
  size_t width = 2 * (std::size(widths) - 1);
  for (size_t w : widths) width += w;
  out += std::string(width, '-') + "\n";
  for (size_t i = 0; i < rows; ++i) {
    const KeyAverage& r = (*this)[i];
    out += line({r.name, r.category, absl::StrCat(r.count), milliseconds(r.total_ms), milliseconds(r.avg_ms()),
                 absl::StrFormat("%.1f%%", 100 * r.share), r.bytes > 0 ? absl::StrFormat("%.2f", r.gb_per_s()) : "",
                 r.flops > 0 ? absl::StrFormat("%.2f", r.gflop_per_s()) : ""});
  }
  if (rows < size()) absl::StrAppend(&out, "(", size() - rows, " more rows)\n");
  out += "Share: of the total time of the row's category (op, kernel, flush, compile, stage).\n";
  return out;
}

namespace {

// NNVM_PROFILE=file.json: a session for the whole process, written at exit.
struct WholeProgram {
  std::string path;
  Session* session = nullptr;
};

WholeProgram& whole_program() {
  static auto* w = new WholeProgram;
  return *w;
}

void write_whole_program() {
  WholeProgram& w = whole_program();
  if (!w.session) return;
  w.session->stop();
  try {
    w.session->export_chrome_trace(w.path);
    std::fprintf(stderr, "nnvm: profile written to %s\n%s", w.path.c_str(), w.session->key_averages().table(15).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nnvm: NNVM_PROFILE: %s\n", e.what());
  }
}

const bool whole_program_started = [] {
  const std::string& path = knobs().profile;
  if (path.empty()) return false;
  WholeProgram& w = whole_program();
  w.path = path;
  w.session = new Session;  // leaked: written by the exit handler
  std::atexit(write_whole_program);
  return true;
}();

}  // namespace

}  // namespace nnvm::profiler
