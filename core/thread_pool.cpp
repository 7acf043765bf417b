#include "nnvm/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "nnvm/core/hot_tls.h"
#include "nnvm/core/mode.h"

#include "nnvm/core/knobs.h"

namespace nnvm {

namespace {

NNVM_HOT_TLS thread_local bool t_in_parallel = false;

// Workers wait for a job spinning, then asleep on a condition variable. A
// job lives on the caller's stack; a worker that takes it counts itself in
// `active`, under the mutex and while the job is published, and the caller
// unpublishes it, under the mutex, only when every chunk is done and no
// worker holds it: a worker never touches a finished job. The caller runs
// chunks too, so a pool of n threads has n - 1 workers.
//
// Spinning: a worker that finishes a job looks for the next for a while
// (kSpin) before it sleeps, and the caller looks for the last chunks'
// completion as long before it sleeps, so the parallel regions of a
// program that runs them back to back (a model's layers, each a few
// regions) neither wake a sleeping thread nor sleep themselves: waking one
// costs tens of microseconds on a virtual machine, and a ResNet-18 at batch
// one on 2 threads ran no faster than on one when every region paid it.
// Idle, the workers sleep after kSpin.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until ready() or kSpin has passed; whether ready() held.
template <class Ready> bool spin_until(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return ready();
  }
}

struct Job {
  const std::function<void(int64_t)>* fn;
  int64_t chunks;
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<int> active{0};  // workers holding the job: changed under the pool mutex
  std::exception_ptr error;    // guarded by the pool mutex
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { resize(threads); }
  ~ThreadPool() { stop(); }

  void resize(int threads) {
    std::lock_guard<std::mutex> run_lock(run_mu_);
    stop();
    stopping_.store(false);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] {
      EagerGuard eager;  // kernels run here; an op they call must not be recorded
      work();
    });
  }

  void run(int64_t chunks, const std::function<void(int64_t)>& fn) {
    std::lock_guard<std::mutex> run_lock(run_mu_);  // one job at a time
    Job job;
    job.fn = &fn;
    job.chunks = chunks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
      if (sleepers_ > 0) cv_.notify_all();
    }
    drain(job);
    auto finished = [&] { return job.done.load(std::memory_order_acquire) == chunks && job.active.load() == 0; };
    spin_until(finished);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, finished);  // (re-checked under the mutex: a worker may have taken the job late)
    job_ = nullptr;
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  void drain(Job& job) {
    t_in_parallel = true;
    for (int64_t c; (c = job.next.fetch_add(1)) < job.chunks;) {
      try {
        (*job.fn)(c);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!job.error) job.error = std::current_exception();
      }
      job.done.fetch_add(1, std::memory_order_acq_rel);
    }
    t_in_parallel = false;
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen || stopping_.load(); });
      Job* job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++sleepers_;
        cv_.wait(lock, [&] { return stopping_.load() || generation_.load() != seen; });
        --sleepers_;
        if (stopping_.load()) return;
        seen = generation_.load();
        job = job_;
        if (!job) continue;  // finished before this worker looked
        job->active.fetch_add(1);
      }
      drain(*job);
      std::lock_guard<std::mutex> lock(mu_);
      if (job->active.fetch_sub(1) == 1) done_cv_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_.store(true);
      cv_.notify_all();
    }
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex run_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  Job* job_ = nullptr;                   // guarded by mu_
  std::atomic<uint64_t> generation_{0};  // changed under mu_, read spinning
  std::atomic<bool> stopping_{false};
  int sleepers_ = 0;                     // workers waiting on cv_, guarded by mu_
};

std::mutex g_pool_mu;
std::atomic<int> g_threads{0};  // read without the lock: every parallel_for and kernel launch asks

ThreadPool& pool() {
  // Leaked on purpose: worker threads must not be joined during static destruction.
  static ThreadPool* p = new ThreadPool(get_num_threads());
  return *p;
}

}  // namespace

int get_num_threads() {
  if (const int n = g_threads.load(std::memory_order_acquire)) return n;
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (g_threads.load(std::memory_order_relaxed) == 0) g_threads.store(knobs().threads, std::memory_order_release);
  return g_threads.load(std::memory_order_relaxed);
}

void set_num_threads(int n) {
  n = std::max(1, n);
  {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    g_threads.store(n, std::memory_order_release);
  }
  pool().resize(n);
}

int parallel_threads() { return t_in_parallel ? 1 : get_num_threads(); }

int64_t parallel_chunks(int64_t n, int64_t grain) {
  if (n <= 0) return 0;
  grain = std::max<int64_t>(grain, 1);
  return std::max<int64_t>(1, std::min<int64_t>(parallel_threads(), (n + grain - 1) / grain));
}

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int64_t chunks = parallel_chunks(n, grain);
  if (chunks == 1) {
    fn(begin, end);
    return;
  }
  const int64_t per = (n + chunks - 1) / chunks;
  pool().run(chunks, [&](int64_t c) {
    const int64_t b = begin + c * per;
    const int64_t e = std::min(end, b + per);
    if (b < e) fn(b, e);
  });
}

}  // namespace nnvm
