// The lock of the allocator's free lists and the trace cache (core/spin_lock.h).
#include "nnvm/core/spin_lock.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace nnvm {
namespace {

TEST(SpinLock, ExcludesOtherThreads) {
  SpinLock lock;
  int64_t count = 0;  // a plain counter: a lost update shows as a short count (and to TSan as a race)
  constexpr int kThreads = 4, kRounds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard<SpinLock> hold(lock);
        const int64_t seen = count;
        if (i % 64 == 0) std::this_thread::yield();  // hold it long enough for the others to wait
        count = seen + 1;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(count, int64_t(kThreads) * kRounds);
}

TEST(SpinLock, TryLockFailsWhileHeld) {
  SpinLock lock;
  ASSERT_TRUE(lock.try_lock());
  bool other = true;
  std::thread([&] { other = lock.try_lock(); }).join();
  EXPECT_FALSE(other);
  lock.unlock();
  std::thread([&] {
    other = lock.try_lock();
    if (other) lock.unlock();
  }).join();
  EXPECT_TRUE(other);
}

}  // namespace
}  // namespace nnvm
