// Options of both loaders, with libtorch's chained setters:
//   DataLoaderOptions().batch_size(64).workers(2).drop_last(true)
// The in-memory DataLoader reads batch_size, shuffle, seed and drop_last;
// make_data_loader reads batch_size, workers, max_jobs, enforce_ordering,
// timeout and drop_last (its sampler does the shuffling) and resolves them
// into a FullDataLoaderOptions.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace nnvm::data {

struct DataLoaderOptions {
  DataLoaderOptions() = default;
  explicit DataLoaderOptions(int64_t batch_size) : batch_size_(batch_size) {}
  DataLoaderOptions& batch_size(int64_t n) { batch_size_ = n; return *this; }
  DataLoaderOptions& shuffle(bool on) { shuffle_ = on; return *this; }
  // Without a seed, one is drawn from the default generator (nnvm::manual_seed governs it).
  DataLoaderOptions& seed(uint64_t s) { seed_ = s; return *this; }
  // Drop the last batch when it would be smaller than batch_size.
  DataLoaderOptions& drop_last(bool on) { drop_last_ = on; return *this; }
  // Threads that fetch batches ahead of the loop; 0 fetches on the loop's thread.
  DataLoaderOptions& workers(int64_t n) { workers_ = n; return *this; }
  // The most batches requested ahead of the loop (default 2 * workers).
  DataLoaderOptions& max_jobs(int64_t n) { max_jobs_ = n; return *this; }
  // Batches come out in the sampler's order (default); off, in the order workers finish them.
  DataLoaderOptions& enforce_ordering(bool on) { enforce_ordering_ = on; return *this; }
  // The longest the loop waits for a worker's batch before nnvm::Error.
  DataLoaderOptions& timeout(std::chrono::milliseconds t) { timeout_ = t; return *this; }

  int64_t batch_size_ = 1;
  bool shuffle_ = false;
  std::optional<uint64_t> seed_;
  bool drop_last_ = false;
  int64_t workers_ = 0;
  std::optional<int64_t> max_jobs_;
  bool enforce_ordering_ = true;
  std::optional<std::chrono::milliseconds> timeout_;
};

// What make_data_loader's loader runs with: every default resolved.
struct FullDataLoaderOptions {
  // Throws nnvm::Error for batch_size < 1, workers < 0, max_jobs < 1 with
  // workers, a timeout <= 0, and for shuffle or seed (make_data_loader
  // shuffles through its sampler: RandomSampler).
  explicit FullDataLoaderOptions(const DataLoaderOptions& options);

  size_t batch_size;
  size_t workers;
  size_t max_jobs;
  std::optional<std::chrono::milliseconds> timeout;
  bool enforce_ordering;
  bool drop_last;
};

}  // namespace nnvm::data
