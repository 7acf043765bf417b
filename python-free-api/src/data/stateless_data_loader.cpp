// make_data_loader's options and errors (stateless_data_loader.h, worker_queue.h).
#include "nnvm/data/stateless_data_loader.h"

#include <algorithm>
#include <sstream>

namespace nnvm::data {

FullDataLoaderOptions::FullDataLoaderOptions(const DataLoaderOptions& options)
    : batch_size(size_t(options.batch_size_)),
      workers(size_t(options.workers_)),
      max_jobs(size_t(options.max_jobs_.value_or(2 * options.workers_))),
      timeout(options.timeout_),
      enforce_ordering(options.enforce_ordering_),
      drop_last(options.drop_last_) {
  const char* op = "make_data_loader";
  NNVM_CHECK(options.batch_size_ >= 1, op, "batch_size ", options.batch_size_, ", expected >= 1");
  NNVM_CHECK(options.workers_ >= 0, op, "workers ", options.workers_, ", expected >= 0");
  NNVM_CHECK(options.workers_ == 0 || !options.max_jobs_ || *options.max_jobs_ >= 1, op, "max_jobs ",
             options.max_jobs_.value_or(0), " with ", options.workers_, " workers, expected >= 1");
  NNVM_CHECK(!options.timeout_ || options.timeout_->count() > 0, op, "timeout ",
             options.timeout_.value_or(std::chrono::milliseconds(0)).count(), " ms, expected > 0");
  NNVM_CHECK(!options.shuffle_ && !options.seed_, op,
             "shuffle and seed are options of the in-memory DataLoader, expected a sampler to shuffle "
             "(make_data_loader<samplers::RandomSampler>, seeded by nnvm::manual_seed)");
}

namespace detail {

size_t sampler_size(std::optional<size_t> dataset_size) {
  NNVM_CHECK(dataset_size.has_value(), "make_data_loader",
             "the dataset's size() is empty, expected a size to build the sampler over "
             "(return one from size(), or pass a sampler)");
  NNVM_CHECK(*dataset_size >= 1, "make_data_loader", "dataset size 0, expected at least 1 example");
  return *dataset_size;
}

void throw_uncopyable_dataset(size_t workers) {
  throw Error(nnvm::detail::concat("make_data_loader: workers ", workers,
                     " each need a copy of the dataset, expected a copy-constructible dataset (or workers 0)"));
}

void throw_joined() {
  throw Error("DataLoader: begin() after join(), expected the worker threads to be running");
}

std::exception_ptr worker_error(size_t sequence, ArrayRef<size_t> indices) {
  std::ostringstream what;
  what << "DataLoader: worker thread failed on batch " << sequence;
  if (!indices.empty()) {
    constexpr size_t kShown = 8;
    what << " (indices";
    for (size_t i = 0; i < std::min(indices.size(), kShown); ++i) what << (i ? ", " : " ") << indices[i];
    if (indices.size() > kShown) what << ", ... " << indices.size() << " in all";
    what << ")";
  }
  try {
    throw;
  } catch (const std::exception& e) {
    what << ": " << e.what();
  } catch (...) {
    what << ": an exception that is not a std::exception";
  }
  return std::make_exception_ptr(Error(what.str()));
}

void throw_worker_timeout(std::chrono::milliseconds timeout, size_t workers) {
  throw Error(nnvm::detail::concat("DataLoader: no batch from the ", workers, " worker threads within the timeout of ",
                     timeout.count(), " ms"));
}

}  // namespace detail
}  // namespace nnvm::data
