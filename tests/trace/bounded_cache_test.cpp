// BoundedCache: the LRU map under the trace cache (and the kernel cache).
#include "nnvm/trace/bounded_cache.h"

#include <string>

#include "gtest/gtest.h"

namespace nnvm::trace {
namespace {

TEST(BoundedCache, EvictsTheLeastRecentlyUsed) {
  BoundedCache<std::string, int> cache(2);
  EXPECT_FALSE(cache.put("a", 1));
  EXPECT_FALSE(cache.put("b", 2));
  ASSERT_NE(cache.find("a"), nullptr);  // b is now the least recently used
  const auto evicted = cache.put("c", 3);
  ASSERT_TRUE(evicted);
  EXPECT_EQ(evicted->first, "b");
  EXPECT_EQ(evicted->second, 2);
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_FALSE(cache.put("a", 10));  // replacing keeps the size and makes a recent
  EXPECT_EQ(*cache.find("a"), 10);
  EXPECT_EQ(cache.put("d", 4)->first, "c");
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.capacity(), 2u);
}

}  // namespace
}  // namespace nnvm::trace
