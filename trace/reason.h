// Why something did not happen (a kernel fell back to the reference, a plan
// declined to replay), kept for diagnostics and tests. Runs set and clear it;
// a run with nothing to clear reads one atomic flag and takes no lock.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

namespace nnvm::trace {

class Reason {
 public:
  void set(std::string why) {
    std::lock_guard<std::mutex> lock(mutex_);
    why_ = std::move(why);
    set_.store(true);
  }
  void clear() {
    if (!set_.load()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    why_.clear();
    set_.store(false);
  }
  bool is_set() const { return set_.load(std::memory_order_relaxed); }
  std::string get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return why_;
  }

 private:
  mutable std::mutex mutex_;
  std::string why_;
  std::atomic<bool> set_{false};  // why_ is not empty
};

}  // namespace nnvm::trace
