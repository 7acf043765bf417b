// The kernel cache: one compile per key, LRU eviction, concurrent lookups, and
// fusion groups shared between traces and batch sizes.
#include "nnvm/trace/kernel_cache.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "nnvm/trace/executor.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

struct Dummy final : CompiledKernel {};

TEST(KernelCache, CompilesEachKeyOnceAndEvictsTheLeastRecentlyUsed) {
  KernelCache cache(2);
  int compiles = 0;
  const KernelCache::Compile make = [&] {
    ++compiles;
    return std::make_shared<const Dummy>();
  };
  const auto a = cache.get("a", make);
  EXPECT_EQ(cache.get("a", make), a);
  cache.get("b", make);
  cache.get("a", make);  // now b is the least recently used
  cache.get("c", make);
  EXPECT_EQ(compiles, 3);
  EXPECT_EQ(cache.get("a", make), a);
  cache.get("b", make);  // evicted: compiled again
  EXPECT_EQ(compiles, 4);
  const KernelCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 3);
  EXPECT_EQ(s.misses, 4);
  EXPECT_EQ(s.compiles, 4);
  EXPECT_EQ(s.evictions, 2);
  EXPECT_EQ(s.entries, 2);
  // every miss says why: a, b, c new; b again after its eviction, used twice before it
  ASSERT_EQ(s.recent_misses.size(), 4u);
  EXPECT_EQ(s.recent_misses[0].reason, "new kernel");
  EXPECT_EQ(s.recent_misses[0].hash, std::hash<std::string>()("a"));
  EXPECT_EQ(s.recent_misses[2].reason, "new kernel");
  EXPECT_EQ(s.recent_misses[3].reason, "evicted after 1 uses");
  EXPECT_EQ(s.recent_misses[3].hash, std::hash<std::string>()("b"));
}

TEST(KernelCache, ConcurrentLookupsCompileOnceAndFailuresRetry) {
  KernelCache cache;
  std::atomic<int> compiles{0};
  std::vector<std::shared_ptr<const CompiledKernel>> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      got[i] = cache.get("k", [&] {
        ++compiles;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return std::make_shared<const Dummy>();
      });
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(compiles, 1);
  for (const auto& k : got) EXPECT_EQ(k, got[0]);
  testing::expect_error([&] { cache.get("bad", [] () -> std::shared_ptr<const CompiledKernel> {
                          throw Error("compile: no"); }); },
                        {"compile: no"});
  EXPECT_NE(cache.get("bad", [] { return std::make_shared<const Dummy>(); }), nullptr);
  EXPECT_EQ(cache.stats().compiles, 2);
}

const OpDef& op(const char* name) { return find_op(name); }

// softplus(x * a) * erf(x): the shared chain, then `tail` reads it.
trace::Trace with_chain(int64_t batch, bool matmul_tail) {
  trace::Trace t;
  const trace::ValueId x = t.add_input(kFloat64, {batch, 11}, {11, 1});
  const trace::ValueId a = t.add_input(kFloat64, {11}, {1});
  const trace::ValueId chain =
      t.add_node1(op("mul"), {t.add_node1(op("softplus"), {t.add_node1(op("mul"), {x, a})}, {Scalar(1.0), Scalar(20.0)}),
                              t.add_node1(op("erf"), {x})});
  t.mark_output(chain);
  if (matmul_tail) {
    const trace::ValueId w = t.add_input(kFloat64, {11, 3}, {3, 1});
    t.mark_output(t.add_node1(op("matmul"), {chain, w}));
  } else {
    t.mark_output(t.add_node1(op("transpose"), {chain}, {int64_t(0), int64_t(1)}));
  }
  return t;
}

const trace::GroupProgram& chain_program(const trace::FusedPlan& p) {
  for (size_t g = 0; g < p.fusion().groups.size(); ++g)
    if (p.fusion().groups[g].kind == trace::GroupKind::kPointwise) return p.program(int32_t(g));
  ADD_FAILURE() << p.to_string();
  return p.program(0);
}

TEST(KernelCache, TracesSharingAFusionGroupCompileItOnce) {
  EagerGuard eager;
  KernelCache& cache = global_kernel_cache();
  const trace::FusedPlan first(with_chain(8, false));
  const KernelCacheStats before = cache.stats();
  const trace::FusedPlan other(with_chain(8, true));  // differs outside the chain
  const KernelCacheStats after = cache.stats();
  EXPECT_EQ(&chain_program(first), &chain_program(other));
  EXPECT_TRUE(chain_program(first).tiled());
  EXPECT_LE(after.compiles - before.compiles, int64_t(other.fusion().groups.size()) - 1);
  EXPECT_GE(after.hits - before.hits, 1);
  // a new batch size re-plans memory and tiles but compiles nothing
  const trace::FusedPlan bigger(with_chain(300, true));
  EXPECT_EQ(cache.stats().compiles, after.compiles);
  EXPECT_EQ(&chain_program(bigger), &chain_program(first));
  for (int64_t batch : {int64_t(8), int64_t(300)}) {
    const Tensor x = testing::random({batch, 11}, kFloat64, 1), a = testing::random({11}, kFloat64, 2);
    const Tensor w = testing::random({11, 3}, kFloat64, 3);
    const std::vector<Tensor> out = (batch == 8 ? other : bigger).run({x, a, w}, {});
    const Tensor chain = softplus(x * a) * x.erf();
    testing::expect_tensors_close(out[0], chain);
    testing::expect_tensors_close(out[1], chain.matmul(w));
  }
}

}  // namespace
}  // namespace nnvm::trace
