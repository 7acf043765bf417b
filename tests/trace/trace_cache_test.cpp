// The trace cache: hot detection, scalar-free hits, miss reasons, LRU
// eviction, stats, concurrent lookups and the NNVM_LOG=cache lines.
#include "nnvm/trace/trace_cache.h"

#include <atomic>
#include <chrono>
#include <regex>
#include <thread>

#include "absl/strings/str_format.h"
#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/passes/cse.h"
#include "nnvm/trace/passes/dce.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_tensors_close;

const OpDef& op(const char* name) { return find_op(name); }

// x: [rows, cols], b: [cols]: exp(x + lr * b) computed twice, summed over
// dim 1, plus a dead node.
Trace program(int64_t rows, int64_t cols, double lr = 0.5, DType dtype = kFloat32) {
  Trace t;
  const ValueId x = t.add_input(dtype, {rows, cols}, {cols, 1});
  const ValueId b = t.add_input(dtype, {cols}, {1});
  const ValueId e1 = t.add_node1(op("exp"), {t.add_node1(op("add"), {x, b}, {Scalar(lr)})});
  const ValueId e2 = t.add_node1(op("exp"), {t.add_node1(op("add"), {x, b}, {Scalar(lr)})});
  t.add_node1(op("neg"), {e1});
  const ValueId s = t.add_node1(op("add"), {e1, e2}, {Scalar(1)});
  t.mark_output(t.add_node1(op("sum"), {s}, {DimVector{1}, false, dtype}));
  return t;
}

Trace other_program(int64_t n) {
  Trace t;
  const ValueId x = t.add_input(kFloat32, {n}, {1});
  t.mark_output(t.add_node1(op("sin"), {x}));
  return t;
}

struct CountingPipeline {
  std::atomic<int> calls{0};
  std::chrono::milliseconds delay{0};
  TraceCache::Compile compile() {
    return [this](const Trace& t) {
      ++calls;
      std::this_thread::sleep_for(delay);
      Trace plan = t;
      cse(plan);
      dce(plan);
      return std::make_shared<const InterpretedPlan>(std::move(plan));
    };
  }
};

TEST(TraceCache, TurnsHotAfterNSightingsAndCompilesOnce) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), 16, /*hot=*/3);
  const Trace t = program(4, 3);
  for (int i = 1; i <= 2; ++i) {
    const CacheLookup r = cache.lookup(t);
    EXPECT_EQ(r.hit, i > 1);
    EXPECT_FALSE(r.hot);
    EXPECT_EQ(r.count, i);
    EXPECT_EQ(r.plan, nullptr);
  }
  EXPECT_EQ(pipeline.calls, 0);
  const CacheLookup hot = cache.lookup(t);
  EXPECT_TRUE(hot.hit && hot.hot);
  ASSERT_NE(hot.plan, nullptr);
  EXPECT_EQ(pipeline.calls, 1);
  EXPECT_LT(hot.plan->trace().nodes().size(), t.nodes().size());  // the pipeline ran
  for (int i = 0; i < 5; ++i) EXPECT_EQ(cache.lookup(t).plan, hot.plan);
  EXPECT_EQ(pipeline.calls, 1);
  // the cached plan computes what the trace computes
  const Tensor x = testing::random({4, 3}, kFloat32, 1), b = testing::random({3}, kFloat32, 2);
  expect_tensors_close(hot.plan->run({x, b}, t.scalars())[0], interpret(t, {x, b})[0]);
}

TEST(TraceCache, HotThresholdOfOneCompilesOnFirstSight) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), 16, /*hot=*/1);
  const CacheLookup r = cache.lookup(program(2, 2));
  EXPECT_FALSE(r.hit);
  EXPECT_TRUE(r.hot);
  EXPECT_NE(r.plan, nullptr);
  EXPECT_EQ(pipeline.calls, 1);
}

TEST(TraceCache, NewLearningRateHitsTheSameEntry) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), 16, /*hot=*/2);
  uint64_t hash = 0;
  for (int step = 0; step < 100; ++step) {
    // never a pinned constant (0.5, 1, ...: trace/ir.h), which would be part of the key
    const CacheLookup r = cache.lookup(program(8, 5, 0.0137 * (step + 1)));
    if (step == 0) hash = r.hash;
    EXPECT_EQ(r.hash, hash);
    EXPECT_EQ(r.hit, step > 0);
  }
  const TraceCacheStats s = cache.stats();
  EXPECT_EQ(pipeline.calls, 1);
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.hits, 99);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.entries, 1);
}

TEST(TraceCache, EveryMissSaysWhy) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), 16, /*hot=*/2);
  EXPECT_EQ(cache.lookup(program(4, 3)).miss_reason, "new structure");
  EXPECT_EQ(cache.lookup(program(4, 3)).miss_reason, "");
  EXPECT_EQ(cache.lookup(program(6, 3)).miss_reason, "shape changed at input 0: [4, 3] -> [6, 3]");
  // explained against the most recent trace of that structure, [6, 3]
  EXPECT_EQ(cache.lookup(program(6, 3, 0.5, kFloat64)).miss_reason,
            "dtype changed at input 0: float32 -> float64");
  EXPECT_EQ(cache.lookup(other_program(7)).miss_reason, "new structure");
  EXPECT_EQ(cache.lookup(other_program(9)).miss_reason, "shape changed at input 0: [7] -> [9]");
  const TraceCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 5);
  ASSERT_EQ(s.recent_misses.size(), 5u);
  EXPECT_EQ(s.recent_misses[1].reason, "shape changed at input 0: [4, 3] -> [6, 3]");
  EXPECT_EQ(s.recent_misses[1].hash, signature(program(6, 3)).hash);
}

TEST(TraceCache, EvictsTheLeastRecentlyUsedEntry) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), /*capacity=*/2, /*hot=*/2);
  // three shape classes (size 1 is a class of its own): nothing compiles at first sight
  const Trace a = program(1, 3), b = program(2, 3), c = program(3, 1);
  cache.lookup(a);
  cache.lookup(b);
  cache.lookup(a);  // b is now the least recently used
  EXPECT_FALSE(cache.lookup(c).hit);
  EXPECT_EQ(cache.stats().evictions, 1);
  EXPECT_TRUE(cache.lookup(a).hit);
  const CacheLookup again = cache.lookup(b);  // evicts c
  EXPECT_FALSE(again.hit);
  EXPECT_EQ(again.miss_reason, "evicted after 1 sightings");
  // a new entry counts from zero; b's shape class has been seen twice (b
  // itself), so it compiles at once, as if seen `hot` times
  EXPECT_EQ(again.count, 2);
  EXPECT_TRUE(again.first_sight);
  EXPECT_TRUE(cache.lookup(a).hit);
  EXPECT_EQ(cache.lookup(c).miss_reason, "evicted after 1 sightings");
  const TraceCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 2);
  EXPECT_EQ(s.evictions, 3);
  // a compiled a once, its plan surviving every eviction of the others; b and
  // c compiled at their second sighting
  EXPECT_EQ(pipeline.calls, 3);
}

TEST(TraceCache, StatsCountCompileTime) {
  CountingPipeline pipeline;
  pipeline.delay = std::chrono::milliseconds(5);
  TraceCache cache(pipeline.compile(), 16, /*hot=*/2);
  for (int i = 0; i < 3; ++i) cache.lookup(program(4, 3));
  for (int i = 0; i < 2; ++i) cache.lookup(other_program(4));
  const TraceCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 3);
  EXPECT_EQ(s.misses, 2);
  EXPECT_EQ(s.compiles, 2);
  EXPECT_EQ(s.entries, 2);
  EXPECT_EQ(s.evictions, 0);
  EXPECT_GE(s.compile_seconds, 0.010);
  EXPECT_GE(cache.lookup(program(4, 3)).compile_seconds, 0.005);
}

TEST(TraceCache, ConcurrentLookupsCompileEachSignatureOnce) {
  CountingPipeline pipeline;
  pipeline.delay = std::chrono::milliseconds(2);  // widens the window for a second compile
  TraceCache cache(pipeline.compile(), 16, /*hot=*/2);
  const std::vector<Trace> programs = {program(4, 3), program(5, 3), other_program(6)};
  constexpr int kThreads = 4, kSteps = 200;
  std::vector<std::vector<const Plan*>> plans(kThreads, std::vector<const Plan*>(programs.size(), nullptr));
  std::atomic<int> mismatched{0};
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      for (int step = 0; step < kSteps; ++step) {
        const size_t p = size_t(step + id) % programs.size();
        const CacheLookup r = cache.lookup(programs[p]);
        if (!r.plan) continue;
        if (plans[size_t(id)][p] && plans[size_t(id)][p] != r.plan.get()) ++mismatched;
        plans[size_t(id)][p] = r.plan.get();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatched, 0);
  for (size_t p = 0; p < programs.size(); ++p)
    for (int id = 1; id < kThreads; ++id) EXPECT_EQ(plans[size_t(id)][p], plans[0][p]);
  const TraceCacheStats s = cache.stats();
  EXPECT_EQ(pipeline.calls, 3);
  EXPECT_EQ(s.compiles, 3);
  EXPECT_EQ(s.misses, 3);
  EXPECT_EQ(s.hits + s.misses, kThreads * kSteps);
  EXPECT_EQ(s.entries, 3);
}

TEST(TraceCache, LogsOneLinePerEvent) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), /*capacity=*/1, /*hot=*/2);
  std::vector<std::string> lines;
  cache.set_log([&](const std::string& line) { lines.push_back(line); });
  const uint64_t a = cache.lookup(program(4, 3)).hash;
  cache.lookup(program(4, 3));
  const uint64_t b = cache.lookup(program(6, 3)).hash;
  ASSERT_EQ(lines.size(), 7u);
  const std::string ha = absl::StrFormat("%016x", a), hb = absl::StrFormat("%016x", b);
  const std::string hc = absl::StrFormat("%016x", shape_class_hash(program(4, 3)));
  EXPECT_EQ(lines[0], "cache miss " + ha + " nodes=7: new structure");
  EXPECT_EQ(lines[1], "cache hit " + ha + " count=2 hot");
  // dce drops the neg; cse keeps both exp(x + lr * b): their learning rates are separate run-time slots
  EXPECT_TRUE(std::regex_match(lines[2], std::regex("cache compile " + ha + R"( nodes=7->4 \d+\.\d{3} ms)")))
      << lines[2];
  EXPECT_EQ(lines[3], "cache miss " + hb + " nodes=7: shape changed at input 0: [4, 3] -> [6, 3]");
  EXPECT_EQ(lines[4], "cache class " + hc + " input 0 dim 0 symbolic after sizes 4, 6");
  EXPECT_EQ(lines[5], "cache evict " + ha + " count=2");
  EXPECT_TRUE(std::regex_match(
      lines[6], std::regex("cache compile " + hb + R"( nodes=7->4 \d+\.\d{3} ms \(first sight: its shape class is hot\))")))
      << lines[6];
  cache.set_log(nullptr);
  cache.lookup(program(4, 3));
  EXPECT_EQ(lines.size(), 7u);
}

// A hint (the entry a lookup returned, for a trace of the same signature)
// finds the same entry without hashing; once that entry is evicted the hinted
// lookup is a miss like any other, and re-enters the trace under its own hash.
TEST(TraceCache, HintedLookupsFindTheHintedEntryOrMiss) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), 1, /*hot=*/2);
  const CacheLookup first = cache.lookup(program(4, 3, 0.3));
  ASSERT_NE(first.entry, nullptr);
  EXPECT_EQ(first.hash, signature_hash(program(4, 3, 0.7)));
  const CacheLookup hinted = cache.lookup(program(4, 3, 0.7), {first.entry.get(), first.hash});
  EXPECT_TRUE(hinted.hit && hinted.hot);
  EXPECT_EQ(hinted.count, 2);
  EXPECT_EQ(hinted.entry, first.entry);
  EXPECT_NE(hinted.plan, nullptr);
  cache.lookup(other_program(5));  // evicts the entry (capacity 1)
  const CacheLookup stale = cache.lookup(program(4, 3, 0.3), {first.entry.get(), first.hash});
  EXPECT_FALSE(stale.hit);
  EXPECT_EQ(stale.miss_reason, "evicted after 2 sightings");
  EXPECT_EQ(stale.count, 1);
  EXPECT_NE(stale.entry, first.entry);
  EXPECT_TRUE(cache.lookup(program(4, 3, 0.3)).hit);  // under the same hash a plain lookup finds
}

// hit_compiled counts a hit on a hinted entry only while it is cached and
// compiled, as a lookup would, and counts nothing otherwise.
TEST(TraceCache, HitCompiledCountsOnlyCachedCompiledEntries) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), /*capacity=*/1, /*hot=*/2);
  const CacheLookup cold = cache.lookup(program(4, 3));
  const LookupHint hint{cold.entry.get(), cold.hash};
  EXPECT_FALSE(cache.hit_compiled(hint));  // seen once: not compiled yet
  EXPECT_EQ(cache.stats().hits, 0);
  EXPECT_NE(cache.lookup(program(4, 3), hint).plan, nullptr);  // hot: compiled
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_TRUE(cache.hit_compiled(hint));
  EXPECT_EQ(cache.stats().hits, 2);
  EXPECT_EQ(cache.lookup(program(4, 3), hint).count, 4);  // the hit was a sighting
  EXPECT_FALSE(cache.hit_compiled({cold.entry.get(), cold.hash + 1}));  // another hash
  cache.lookup(other_program(5));  // evicts the entry (capacity 1)
  EXPECT_FALSE(cache.hit_compiled(hint));
  EXPECT_EQ(cache.stats().hits, 3);
}

// A repeating program's hinted lookups of the entry it found last skip the
// LRU bookkeeping: the entry and its structure are already the most recent,
// and stay so only until another signature is looked up.
TEST(TraceCache, RepeatedHintedHitsKeepTheLruOrderAndTheStructureIndex) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), /*capacity=*/2, /*hot=*/2);
  const Trace a = program(4, 3), b = program(6, 3), c = program(8, 3);
  const CacheLookup first = cache.lookup(a);
  const LookupHint hint{first.entry.get(), first.hash};
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(cache.lookup(a, hint).hit);
  EXPECT_EQ(cache.lookup(b).miss_reason, "shape changed at input 0: [4, 3] -> [6, 3]");
  // a is the least recently used until a hinted lookup makes it the most again
  EXPECT_EQ(cache.lookup(a, hint).count, 5);
  EXPECT_EQ(cache.lookup(a, hint).count, 6);
  // c is explained against a, the structure's latest trace, and evicts b
  EXPECT_EQ(cache.lookup(c).miss_reason, "shape changed at input 0: [4, 3] -> [8, 3]");
  // b's class was hot when b was new: it was compiled at first sight, as if seen `hot` times
  EXPECT_EQ(cache.lookup(b).miss_reason, "evicted after 2 sightings");  // evicts a
  const CacheLookup stale = cache.lookup(a, hint);
  EXPECT_FALSE(stale.hit);
  EXPECT_EQ(stale.miss_reason, "evicted after 6 sightings");
  EXPECT_EQ(cache.stats().evictions, 3);
}

// Signatures that differ only in sizes share a shape class; once the class
// has been seen `hot` times, a new size is compiled at its first sighting.
// Sizes 0 and 1 are classes of their own (they change what broadcasting means).
TEST(TraceCache, ANewSizeOfAHotShapeClassCompilesAtFirstSight) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), 16, /*hot=*/2);
  EXPECT_EQ(shape_class_hash(program(4, 3)), shape_class_hash(program(9, 5)));
  EXPECT_NE(shape_class_hash(program(4, 3)), shape_class_hash(program(1, 3)));
  EXPECT_NE(shape_class_hash(program(4, 3)), shape_class_hash(program(0, 3)));
  EXPECT_NE(shape_class_hash(program(4, 3)), shape_class_hash(program(4, 3, 0.5, kFloat64)));
  EXPECT_NE(shape_class_hash(program(4, 3)), shape_class_hash(other_program(4)));

  const CacheLookup first = cache.lookup(program(4, 3));  // the class's first sighting: cold
  EXPECT_FALSE(first.hot || first.first_sight);
  const CacheLookup second = cache.lookup(program(6, 3));  // its second: hot at once
  EXPECT_FALSE(second.hit);
  EXPECT_EQ(second.miss_reason, "shape changed at input 0: [4, 3] -> [6, 3]");
  EXPECT_TRUE(second.hot && second.first_sight);
  ASSERT_NE(second.plan, nullptr);
  const CacheLookup third = cache.lookup(program(7, 5));
  EXPECT_TRUE(third.first_sight);
  ASSERT_NE(third.plan, nullptr);
  // the plan computes what the new sizes' trace computes
  const Trace t = program(7, 5);
  const Tensor x = testing::random({7, 5}, kFloat32, 1), b = testing::random({5}, kFloat32, 2);
  expect_tensors_close(third.plan->run({x, b}, t.scalars())[0], interpret(t, {x, b})[0]);
  // size 1 is another class, seen once: cold
  const CacheLookup one = cache.lookup(program(1, 5));
  EXPECT_FALSE(one.hot || one.first_sight);
  EXPECT_EQ(one.plan, nullptr);
  EXPECT_TRUE(cache.lookup(program(6, 3)).hit);

  const TraceCacheStats s = cache.stats();
  EXPECT_EQ(pipeline.calls, 2);
  EXPECT_EQ(s.compiles, 2);
  EXPECT_EQ(s.first_sight_compiles, 2);
  ASSERT_EQ(s.classes.size(), 2u);
  const ShapeClassStats& c = s.classes[1];  // the most recently seen first: the size-1 class, then this
  EXPECT_EQ(c.hash, shape_class_hash(program(4, 3)));
  EXPECT_EQ(c.entries, 3);
  EXPECT_EQ(c.signatures, 3);
  EXPECT_EQ(c.sightings, 4);
  EXPECT_EQ(c.first_sight_compiles, 2);
  EXPECT_EQ(c.symbolic, (std::vector<std::string>{"input 0 dim 0 symbolic after sizes 4, 6",
                                                 "input 0 dim 1 symbolic after sizes 3, 5",
                                                 "input 1 dim 0 symbolic after sizes 3, 5"}));
  EXPECT_EQ(s.classes[0].entries, 1);
  EXPECT_TRUE(s.classes[0].symbolic.empty());
}

// An attribute's sizes (a view's shape, a draw's shape) are sizes of the
// class too; an evicted entry leaves its class.
TEST(TraceCache, AttributeSizesAreSymbolicAndEvictionsLeaveTheClass) {
  CountingPipeline pipeline;
  TraceCache cache(pipeline.compile(), /*capacity=*/2, /*hot=*/2);
  auto reshaped = [](int64_t rows) {
    Trace t;
    const ValueId x = t.add_input(kFloat32, {rows * 4}, {1});
    t.mark_output(t.add_node1(op("exp"), {t.add_node1(op("view"), {x}, {DimVector{rows, 4}})}));
    return t;
  };
  EXPECT_EQ(shape_class_hash(reshaped(3)), shape_class_hash(reshaped(5)));
  for (int64_t rows : {3, 5, 6, 7}) cache.lookup(reshaped(rows));
  const TraceCacheStats s = cache.stats();
  EXPECT_EQ(s.first_sight_compiles, 3);
  EXPECT_EQ(s.evictions, 2);
  ASSERT_EQ(s.classes.size(), 1u);
  EXPECT_EQ(s.classes[0].entries, 2);
  EXPECT_EQ(s.classes[0].signatures, 4);
  EXPECT_EQ(s.classes[0].symbolic, (std::vector<std::string>{"input 0 dim 0 symbolic after sizes 12, 20",
                                                            "node 0 (view) attribute 0[0] symbolic after sizes 3, 5"}));
}

}  // namespace
}  // namespace nnvm::trace
