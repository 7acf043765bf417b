#include "nnvm/trace/trace_cache.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/profiling.h"

namespace nnvm::trace {

namespace {

// A lookup as an instant "cache" event for a profiler session.
void profile_lookup(bool hit, uint64_t hash, int64_t nodes, const std::string& reason) {
  profiling::Event e;
  e.name = hit ? "cache hit" : "cache miss";
  e.category = "cache";
  e.phase = profiling::Phase::kInstant;
  e.start_ns = profiling::now_ns();
  e.args = absl::StrCat("\"trace\": \"", absl::Hex(hash, absl::kZeroPad16), "\", \"nodes\": ", nodes);
  if (!hit) absl::StrAppend(&e.args, ", \"reason\": \"", profiling::json_escape(reason), "\"");
  profiling::record(std::move(e));
}

std::string hex(uint64_t hash) { return absl::StrFormat("%016x", hash); }

}  // namespace

TraceCache::TraceCache(Compile compile, size_t capacity, int hot)
    : compile_(std::move(compile)), hot_(hot > 0 ? hot : 1), entries_(capacity), structures_(capacity),
      evicted_(capacity), classes_(capacity) {
  if (log_enabled("cache")) log_ = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
}

void TraceCache::set_log(LogSink sink) {
  std::lock_guard<SpinLock> lock(mutex_);
  log_ = std::move(sink);
}

// Callers test log_ first: no line is built when nobody reads it.
void TraceCache::log(const std::string& line) { log_(line); }

std::string TraceCache::explain_miss(uint64_t hash, uint64_t structure, const Trace& t) {
  if (const int64_t* count = evicted_.find(hash)) return absl::StrCat("evicted after ", *count, " sightings");
  std::shared_ptr<const Trace>* before = structures_.find(structure);
  if (!before) return "new structure";
  std::string why = explain_difference(**before, t);
  return why.empty() ? "evicted" : why;
}

std::shared_ptr<TraceCache::ShapeClass> TraceCache::join_class(const Trace& t) {
  const uint64_t hash = shape_class_hash(t);
  std::shared_ptr<ShapeClass>* found = classes_.find(hash);
  if (!found) {
    auto fresh = std::make_shared<ShapeClass>();
    fresh->stats.hash = hash;
    fresh->stats.signatures = 1;  // its first trace is the entry's (lookup_hashed)
    classes_.put(hash, fresh);
    return fresh;
  }
  ShapeClass& c = **found;
  ++c.stats.signatures;
  // Where t's sizes differ from the class's first trace (one class: the
  // same ranks, ops and attribute kinds), each place once.
  const Trace& first = *c.first;
  auto differs = [&](std::string where, int64_t was, int64_t now) {
    if (was == now || c.stats.symbolic.size() >= kSymbolicPlaces ||
        std::find(c.places.begin(), c.places.end(), where) != c.places.end())
      return;
    c.stats.symbolic.push_back(absl::StrCat(where, " symbolic after sizes ", was, ", ", now));
    c.places.push_back(std::move(where));
    if (log_) log(absl::StrCat("cache class ", hex(hash), " ", c.stats.symbolic.back()));
  };
  for (size_t i = 0; i < t.inputs().size(); ++i) {
    const DimVector &was = first.value(first.inputs()[i]).shape, &now = t.value(t.inputs()[i]).shape;
    for (size_t d = 0; d < now.size() && d < was.size(); ++d) differs(absl::StrCat("input ", i, " dim ", d), was[d], now[d]);
  }
  for (size_t n = 0; n < t.nodes().size() && n < first.nodes().size(); ++n) {
    const Node &a = first.nodes()[n], &b = t.nodes()[n];
    for (size_t k = 0; k < a.attrs.size() && k < b.attrs.size(); ++k) {
      const std::string where = absl::StrCat("node ", n, " (", b.op->name, ") attribute ", k);
      if (const auto* x = std::get_if<int64_t>(&a.attrs[k]); x && std::holds_alternative<int64_t>(b.attrs[k]))
        differs(where, *x, std::get<int64_t>(b.attrs[k]));
      const auto* u = std::get_if<DimVector>(&a.attrs[k]);
      const auto* v = std::get_if<DimVector>(&b.attrs[k]);
      if (u && v)
        for (size_t e = 0; e < u->size() && e < v->size(); ++e) differs(absl::StrCat(where, "[", e, "]"), (*u)[e], (*v)[e]);
    }
  }
  return *found;
}

void TraceCache::drop(const Entry& entry) {
  if (entry.shape_class) --entry.shape_class->stats.entries;
}

CacheLookup TraceCache::lookup(const Trace& t) { return lookup_hashed(t, signature_hash(t), nullptr); }

// t has the hinted entry's signature, hence its hash, whether or not that entry is still cached.
CacheLookup TraceCache::lookup(const Trace& t, const LookupHint& hint) { return lookup_hashed(t, hint.hash, hint.entry); }

// `known`: a trace with t's signature, or null.
CacheLookup TraceCache::lookup_hashed(const Trace& t, uint64_t hash, const Trace* known) {
  CacheLookup result;
  result.hash = hash;
  std::shared_ptr<Slot> slot;
  std::shared_ptr<ShapeClass> shape_class;  // of a compile this lookup starts
  {
    std::lock_guard<SpinLock> lock(mutex_);
    bool again = false;
    Entry* entry = find(hash, known, again);
    result.hit = entry && ((known && entry->trace.get() == known) || same_signature(*entry->trace, t));
    if (!result.hit) {
      const uint64_t structure = structure_hash(t);
      result.miss_reason = entry ? "another signature with the same hash" : explain_miss(hash, structure, t);
      ++stats_.misses;
      stats_.recent_misses.push_back({hash, result.miss_reason});
      if (stats_.recent_misses.size() > kRecentMisses) stats_.recent_misses.pop_front();
      if (log_) log(absl::StrCat("cache miss ", hex(hash), " nodes=", t.nodes().size(), ": ", result.miss_reason));
      std::shared_ptr<ShapeClass> joined = join_class(t);
      // A class seen `hot` times compiles its new signatures at first sight.
      result.first_sight = joined->stats.signatures > 1 && joined->stats.sightings + 1 >= hot_;
      ++joined->stats.entries;
      if (entry) drop(*entry);  // replaced: another signature with the same hash
      auto trace = std::make_shared<const Trace>(t);
      if (!joined->first) joined->first = trace;  // a new class: one copy of t serves both
      Entry fresh{hash,
                  structure,
                  std::move(joined),
                  result.first_sight ? hot_ - 1 : 0,
                  std::move(trace),
                  std::make_shared<Slot>()};
      if (auto evicted = entries_.put(hash, std::move(fresh))) {
        drop(evicted->second);
        ++stats_.evictions;
        evicted_.put(evicted->second.hash, evicted->second.count);
        if (log_) log(absl::StrCat("cache evict ", hex(evicted->second.hash), " count=", evicted->second.count));
      }
      entry = entries_.find(hash);
    }
    count_sighting(*entry, result, again);
    if (result.hot && !result.plan) {
      slot = entry->slot;
      shape_class = entry->shape_class;
    }
  }
  if (profiling::on()) [[unlikely]]
    profile_lookup(result.hit, hash, int64_t(t.nodes().size()), result.miss_reason);
  if (!slot) return result;
  if (!slot->ready.load(std::memory_order_acquire)) {
    std::call_once(slot->once, [&] {
      const auto start = std::chrono::steady_clock::now();
      profiling::Scope profile("compile", "compile");
      if (profile.active()) profile.arg("trace", absl::StrCat(absl::Hex(hash, absl::kZeroPad16)));
      std::shared_ptr<const Plan> plan = compile_(t);
      NNVM_CHECK(plan != nullptr, "TraceCache", "the compile pipeline returned no plan");
      slot->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::lock_guard<SpinLock> lock(mutex_);
      ++stats_.compiles;
      stats_.compile_seconds += slot->seconds;
      if (result.first_sight) {
        ++stats_.first_sight_compiles;
        ++shape_class->stats.first_sight_compiles;
      }
      if (log_)
        log(absl::StrFormat("cache compile %s nodes=%d->%d %.3f ms%s", hex(hash), t.nodes().size(),
                            plan->trace().nodes().size(), slot->seconds * 1e3,
                            result.first_sight ? " (first sight: its shape class is hot)" : ""));
      slot->plan = std::move(plan);
      slot->ready.store(true, std::memory_order_release);
    });
  }
  result.plan = slot->plan;
  result.compile_seconds = slot->seconds;
  return result;
}

bool TraceCache::hit_compiled(const LookupHint& hint) {
  std::lock_guard<SpinLock> lock(mutex_);
  bool again = false;
  Entry* entry = find(hint.hash, hint.entry, again);
  if (!entry || entry->trace.get() != hint.entry || !entry->slot->ready.load(std::memory_order_acquire))
    return false;
  count(*entry, /*hit=*/true, again, hint.hash);
  if (profiling::on()) [[unlikely]]
    profile_lookup(true, hint.hash, int64_t(entry->trace->nodes().size()), {});
  return true;
}

// A repeating program's flush finds the entry its last lookup found: it is
// already the most recently used, and so is its structure (`again`).
TraceCache::Entry* TraceCache::find(uint64_t hash, const Trace* known, bool& again) {
  again = last_ && known && last_->hash == hash && last_->trace.get() == known;
  return again ? last_ : entries_.find(hash);
}

// Counts a sighting of `entry` (and a hit when `hit`: a miss has made the
// entry and counted itself); `again`: the last lookup found it too.
int64_t TraceCache::count(Entry& entry, bool hit, bool again, uint64_t hash) {
  if (hit) ++stats_.hits;
  if (!again) {
    // The structure's latest trace; most often it is this one already (a
    // program alternating two traces), and assigning it again would be two
    // atomic operations.
    std::shared_ptr<const Trace>* latest = structures_.find(entry.structure);
    if (!latest) structures_.put(entry.structure, entry.trace);
    else if (*latest != entry.trace) *latest = entry.trace;
  }
  last_ = &entry;
  ++entry.shape_class->stats.sightings;
  const int64_t count = ++entry.count;
  stats_.entries = int64_t(entries_.size());
  if (hit && log_)
    log(absl::StrCat("cache hit ", hex(hash), " count=", count, count >= hot_ ? " hot" : " cold"));
  return count;
}

// The same, into `result`: a hot entry already compiled gives its plan.
void TraceCache::count_sighting(Entry& entry, CacheLookup& result, bool again) {
  result.count = count(entry, result.hit, again, result.hash);
  result.hot = result.count >= hot_;
  result.entry = entry.trace;
  if (result.hot && entry.slot->ready.load(std::memory_order_acquire)) {
    result.plan = entry.slot->plan;
    result.compile_seconds = entry.slot->seconds;
  }
}

std::shared_ptr<const Trace> TraceCache::entry_trace(uint64_t hash) const {
  std::lock_guard<SpinLock> lock(mutex_);
  const Entry* entry = entries_.peek(hash);
  return entry ? entry->trace : nullptr;
}

TraceCacheStats TraceCache::stats() const {
  std::lock_guard<SpinLock> lock(mutex_);
  TraceCacheStats s = stats_;
  classes_.for_each([&](uint64_t, const std::shared_ptr<ShapeClass>& c) { s.classes.push_back(c->stats); });
  return s;
}

}  // namespace nnvm::trace
