// The hand-over between make_data_loader's loop and its worker threads: the
// loop pushes numbered batch requests, workers pop them and push back a batch
// or the exception that made one fail, and the loop pops results in request
// order (or in the order they finish). A new epoch drops whatever is still
// queued; a batch of an older epoch that a worker finishes later is dropped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "nnvm/data/types.h"

namespace nnvm::data::detail {

// Call inside a catch block: the current exception as nnvm::Error naming the
// batch's number and indices, to be rethrown in the loop.
std::exception_ptr worker_error(size_t sequence, ArrayRef<size_t> indices);
[[noreturn]] void throw_worker_timeout(std::chrono::milliseconds timeout, size_t workers);

template <class Request, class Batch>
class WorkerQueue {
 public:
  struct Job {
    uint64_t epoch;
    size_t sequence;
    Request request;
  };
  struct Result {
    std::optional<Batch> batch;
    std::exception_ptr error;
    // The batch, or the worker's error thrown here.
    Batch take() {
      if (error) std::rethrow_exception(error);
      return std::move(*batch);
    }
  };

  // ---- the loop's side ----
  void push_job(Request request) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back({epoch_, pushed_++, std::move(request)});
      ++in_flight_;
    }
    job_pushed_.notify_one();
  }

  // Jobs pushed this epoch whose result the loop has not popped.
  size_t in_flight() const {
    std::lock_guard lock(mu_);
    return in_flight_;
  }

  // Blocks until the next result: the lowest-numbered one when in_order,
  // else the first finished. Throws nnvm::Error after `timeout`.
  Result pop_result(bool in_order, std::optional<std::chrono::milliseconds> timeout, size_t workers) {
    std::unique_lock lock(mu_);
    const auto ready = [&] { return in_order ? results_.contains(popped_) : !results_.empty(); };
    if (!timeout) {
      result_pushed_.wait(lock, ready);
    } else if (!result_pushed_.wait_for(lock, *timeout, ready)) {
      throw_worker_timeout(*timeout, workers);
    }
    auto it = in_order ? results_.find(popped_) : results_.begin();
    Result result = std::move(it->second);
    results_.erase(it);
    ++popped_;
    --in_flight_;
    return result;
  }

  // Starts a new epoch: numbering restarts, queued jobs and results are dropped.
  void drain() {
    std::deque<Job> jobs;
    std::map<size_t, Result> results;
    std::lock_guard lock(mu_);
    ++epoch_;
    pushed_ = popped_ = in_flight_ = 0;
    jobs.swap(jobs_);  // destroyed after the lock, outside it
    results.swap(results_);
  }

  // Every worker's pop_job returns empty from now on.
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    job_pushed_.notify_all();
  }

  // ---- a worker's side ----
  // Blocks until a job; empty once the queue is closed.
  std::optional<Job> pop_job() {
    std::unique_lock lock(mu_);
    job_pushed_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
    if (closed_) return std::nullopt;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
  }

  void push_result(const Job& job, Result result) {
    {
      std::lock_guard lock(mu_);
      if (job.epoch != epoch_) return;  // `result` dies outside the lock
      results_.emplace(job.sequence, std::move(result));
    }
    result_pushed_.notify_one();
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable job_pushed_, result_pushed_;
  std::deque<Job> jobs_;
  std::map<size_t, Result> results_;  // by sequence number
  uint64_t epoch_ = 0;
  size_t pushed_ = 0, popped_ = 0, in_flight_ = 0;
  bool closed_ = false;
};

}  // namespace nnvm::data::detail
