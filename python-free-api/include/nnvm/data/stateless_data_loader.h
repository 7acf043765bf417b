// libtorch's data loader: batches of any dataset, in the order a sampler
// picks, fetched on the loop's thread or ahead of it by worker threads.
//
//   auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
//       std::move(dataset), data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) { ... }
//
// Each begin() is an epoch: the sampler is reset and up to max_jobs batch
// requests are queued; each batch the loop takes queues one more. Requests
// are numbered in the sampler's order and, with enforce_ordering (default),
// handed out in that order, so workers(n) yields exactly the batches of
// workers(0). Every worker owns a copy of the dataset (libtorch does the
// same), so get() may keep state without locks.
//
// Tracing records ops per thread, and a tensor still pending in one thread's
// trace cannot be read by another: a worker calls mark_step() after each
// batch, and begin() calls it on the loop's thread before workers read the
// dataset's tensors. An exception in a worker's get() comes out of the
// loop's ++it (or begin()) as nnvm::Error naming the batch.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "nnvm/core/error.h"
#include "nnvm/core/mode.h"
#include "nnvm/data/dataloader_options.h"
#include "nnvm/data/samplers/random.h"
#include "nnvm/data/worker_queue.h"

namespace nnvm::data {

namespace detail {
// The size a sampler is built over: throws nnvm::Error for a dataset without
// a size or with none of its examples.
size_t sampler_size(std::optional<size_t> dataset_size);
// Workers need copies of the dataset: nnvm::Error for one that cannot be copied.
[[noreturn]] void throw_uncopyable_dataset(size_t workers);
[[noreturn]] void throw_joined();
}  // namespace detail

template <class Dataset, class Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : options_(options), sampler_(std::move(sampler)) {
    if (options_.workers == 0) {
      main_thread_dataset_.emplace(std::move(dataset));
      return;
    }
    if constexpr (std::is_copy_constructible_v<Dataset>) {
      try {
        for (size_t w = 0; w < options_.workers; ++w)
          workers_.emplace_back([this, dataset]() mutable { work(std::move(dataset)); });
      } catch (...) {
        join();  // a thread that failed to start leaves the others running
        throw;
      }
    } else {
      detail::throw_uncopyable_dataset(options_.workers);
    }
  }
  ~StatelessDataLoader() { join(); }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;

  // An input iterator over one epoch; *it is the batch, kept until ++it.
  class Iterator {
   public:
    using value_type = BatchType;
    using difference_type = std::ptrdiff_t;
    BatchType& operator*() { return *batch_; }
    BatchType* operator->() { return &*batch_; }
    Iterator& operator++() {
      NNVM_CHECK(batch_.has_value(), "DataLoader", "iterator incremented past the end of the epoch");
      batch_.reset();  // a worker's error leaves the iterator at the end
      batch_ = loader_->next();
      return *this;
    }
    bool operator==(const Iterator& other) const { return batch_.has_value() == other.batch_.has_value(); }

   private:
    friend class StatelessDataLoader;
    Iterator(StatelessDataLoader* loader, std::optional<BatchType> batch)
        : loader_(loader), batch_(std::move(batch)) {}
    StatelessDataLoader* loader_;
    std::optional<BatchType> batch_;  // empty: the end
  };

  // Starts an epoch; a previous one's pending batches are dropped.
  Iterator begin() {
    reset();
    return Iterator(this, next());
  }
  Iterator end() { return Iterator(this, std::nullopt); }

  // Stops and joins the workers (the destructor does it too).
  void join() {
    queue_.close();
    for (std::thread& w : workers_) w.join();
    workers_.clear();
  }

  const FullDataLoaderOptions& options() const noexcept { return options_; }

 private:
  void reset() {
    sampler_.reset(std::nullopt);
    sampler_done_ = false;
    if (options_.workers == 0) return;
    if (workers_.empty()) detail::throw_joined();
    mark_step();
    queue_.drain();
    prefetch(options_.max_jobs);
  }

  // The sampler's next request; empty at the end of the epoch, and for a
  // short last batch with drop_last.
  std::optional<BatchRequestType> next_request() {
    if (sampler_done_) return std::nullopt;
    std::optional<BatchRequestType> request = sampler_.next(options_.batch_size);
    if (!request || request->empty() || (options_.drop_last && request->size() < options_.batch_size)) {
      sampler_done_ = true;
      return std::nullopt;
    }
    return request;
  }

  void prefetch(size_t jobs) {
    for (; jobs > 0; --jobs) {
      std::optional<BatchRequestType> request = next_request();
      if (!request) return;
      queue_.push_job(std::move(*request));
    }
  }

  std::optional<BatchType> next() {
    if (options_.workers == 0) {
      std::optional<BatchRequestType> request = next_request();
      if (!request) return std::nullopt;
      return main_thread_dataset_->get_batch(std::move(*request));
    }
    if (queue_.in_flight() == 0) return std::nullopt;
    typename Queue::Result result = queue_.pop_result(options_.enforce_ordering, options_.timeout, options_.workers);
    prefetch(1);
    return result.take();
  }

  void work(Dataset dataset) {
    while (std::optional<typename Queue::Job> job = queue_.pop_job()) {
      typename Queue::Result result;
      try {
        result.batch.emplace(dataset.get_batch(job->request));
        mark_step();  // the loop's thread cannot read tensors pending in this thread's trace
      } catch (...) {
        if constexpr (std::is_convertible_v<const BatchRequestType&, ArrayRef<size_t>>)
          result.error = detail::worker_error(job->sequence, job->request);
        else
          result.error = detail::worker_error(job->sequence, {});
        result.batch.reset();
      }
      queue_.push_result(*job, std::move(result));
    }
  }

  using Queue = detail::WorkerQueue<BatchRequestType, BatchType>;

  const FullDataLoaderOptions options_;
  Sampler sampler_;
  bool sampler_done_ = false;
  std::optional<Dataset> main_thread_dataset_;  // workers(0) only
  Queue queue_;
  std::vector<std::thread> workers_;
};

// A loader over `dataset` with a Sampler built from the dataset's size
// (RandomSampler unless named).
template <class Sampler = samplers::RandomSampler, class Dataset>
  requires std::constructible_from<Sampler, size_t>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                        DataLoaderOptions options = {}) {
  Sampler sampler(detail::sampler_size(dataset.size()));
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler), options);
}

template <class Sampler = samplers::RandomSampler, class Dataset>
  requires std::constructible_from<Sampler, size_t>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, size_t batch_size) {
  return make_data_loader<Sampler>(std::move(dataset), DataLoaderOptions(int64_t(batch_size)));
}

// A loader over `dataset` in the order `sampler` picks.
template <class Dataset, class Sampler>
  requires requires(Sampler& s) { s.next(size_t{1}); }
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, Sampler sampler,
                                                                        DataLoaderOptions options = {}) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler), options);
}

}  // namespace nnvm::data
