#include "nnvm/trace/trace_cache.h"

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace nnvm::trace {

namespace {

// The ops and topology without shapes, dtypes or attributes: traces that
// share it differ in something explain_difference can name.
std::string structure_key(const Trace& t) {
  std::string key = absl::StrCat(t.inputs().size(), " in;");
  for (const Node& n : t.nodes()) {
    absl::StrAppend(&key, n.op->name, "(");
    for (ValueId v : n.inputs) absl::StrAppend(&key, v, ",");
    key += ");";
  }
  key += "out(";
  for (ValueId v : t.outputs()) absl::StrAppend(&key, v, ",");
  return key + ")";
}

std::string hex(uint64_t hash) { return absl::StrFormat("%016x", hash); }

}  // namespace

TraceCache::TraceCache(Compile compile, size_t capacity, int hot)
    : compile_(std::move(compile)), hot_(hot > 0 ? hot : 1), entries_(capacity), structures_(capacity),
      evicted_(capacity) {
  if (log_enabled("cache")) log_ = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
}

void TraceCache::set_log(LogSink sink) {
  std::lock_guard<std::mutex> lock(mutex_);
  log_ = std::move(sink);
}

void TraceCache::log(const std::string& line) {
  if (log_) log_(line);
}

std::string TraceCache::explain_miss(uint64_t hash, const std::string& structure, const Trace& t) {
  if (const int64_t* count = evicted_.find(hash)) return absl::StrCat("evicted after ", *count, " sightings");
  std::shared_ptr<const Trace>* before = structures_.find(structure);
  if (!before) return "new structure";
  std::string why = explain_difference(**before, t);
  return why.empty() ? "evicted" : why;
}

CacheLookup TraceCache::lookup(const Trace& t) {
  Signature sig = signature(t);
  const std::string structure = structure_key(t);
  CacheLookup result;
  result.hash = sig.hash;
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry* entry = entries_.find(sig.key);
    if (entry) {
      result.hit = true;
      ++stats_.hits;
    } else {
      result.miss_reason = explain_miss(sig.hash, structure, t);
      ++stats_.misses;
      stats_.recent_misses.push_back({sig.hash, result.miss_reason});
      if (stats_.recent_misses.size() > kRecentMisses) stats_.recent_misses.pop_front();
      log(absl::StrCat("cache miss ", hex(sig.hash), " nodes=", t.nodes().size(), ": ", result.miss_reason));
      Entry fresh{sig.hash, 0, std::make_shared<const Trace>(t), std::make_shared<Slot>()};
      if (auto evicted = entries_.put(sig.key, std::move(fresh))) {
        ++stats_.evictions;
        evicted_.put(evicted->second.hash, evicted->second.count);
        log(absl::StrCat("cache evict ", hex(evicted->second.hash), " count=", evicted->second.count));
      }
      entry = entries_.find(sig.key);
    }
    structures_.put(structure, entry->trace);
    result.count = ++entry->count;
    result.hot = result.count >= hot_;
    stats_.entries = int64_t(entries_.size());
    if (result.hit)
      log(absl::StrCat("cache hit ", hex(sig.hash), " count=", result.count, result.hot ? " hot" : " cold"));
    if (result.hot) slot = entry->slot;
  }
  if (!slot) return result;
  std::call_once(slot->once, [&] {
    const auto start = std::chrono::steady_clock::now();
    std::shared_ptr<const Plan> plan = compile_(t);
    NNVM_CHECK(plan != nullptr, "TraceCache", "the compile pipeline returned no plan");
    slot->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.compiles;
    stats_.compile_seconds += slot->seconds;
    log(absl::StrFormat("cache compile %s nodes=%d->%d %.3f ms", hex(sig.hash), t.nodes().size(),
                        plan->trace().nodes().size(), slot->seconds * 1e3));
    slot->plan = std::move(plan);
  });
  result.plan = slot->plan;
  result.compile_seconds = slot->seconds;
  return result;
}

TraceCacheStats TraceCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace nnvm::trace
