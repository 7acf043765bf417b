// A lock for the few short critical sections every step of a traced loop
// passes (the caching allocator's free lists, the trace cache's lookup).
// Uncontended, lock() is one exchange and unlock() one plain store, where a
// std::mutex is a call into pthreads each way with an atomic operation in
// both (about 60 instructions a pair, five pairs in a traced RNN step). A
// waiter spins briefly and then yields its core, so a section that happens
// to run long (a compile's bookkeeping, a cache release) costs the waiter
// no more than a mutex would. Meets Lockable: std::lock_guard takes it.
#pragma once

#include <atomic>
#include <thread>

namespace nnvm {

class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) [[unlikely]]
      wait();
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  // Until the lock looks free: a few spins, then a yield per look.
  void wait() const {
    for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
      if (spins < kSpins) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        std::this_thread::yield();
      }
    }
  }
  static constexpr int kSpins = 64;
  std::atomic<bool> locked_{false};
};

}  // namespace nnvm
