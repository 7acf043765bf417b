// libtorch's data pipeline: custom datasets, map with transforms, samplers,
// make_data_loader with and without worker threads, and datasets::MNIST on
// small IDX files written here.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include "api/idx_files.h"
#include "reference.h"

namespace nnvm::testing {
namespace {

namespace fs = std::filesystem;
using data::DataLoaderOptions;
using data::Example;
using data::make_data_loader;
using data::datasets::Dataset;
using data::samplers::RandomSampler;
using data::samplers::SequentialSampler;
using data::transforms::Normalize;
using data::transforms::Stack;

// Example i: data {i, -i}, target i * i.
class Squares : public Dataset<Squares> {
 public:
  explicit Squares(size_t n) : n_(n) {}
  Example<> get(size_t i) override {
    return {tensor<float>({float(i), -float(i)}), scalar_tensor(int64_t(i * i), kInt64)};
  }
  nnvm::optional<size_t> size() const override { return n_; }

 private:
  size_t n_;
};

// What a batch of Stack<> holds, in plain values.
struct Flat {
  std::vector<float> data;
  std::vector<int64_t> targets;
  bool operator==(const Flat&) const = default;
};

template <class Loader> std::vector<Flat> drain(Loader& loader) {
  std::vector<Flat> batches;
  for (auto& batch : loader) {
    auto& [data, target] = batch;
    EXPECT_EQ(data.size(0), target.size(0));
    batches.push_back({data.template to_vector<float>(), target.template to_vector<int64_t>()});
  }
  return batches;
}

// The targets of every batch, in order.
std::vector<int64_t> targets_of(const std::vector<Flat>& batches) {
  std::vector<int64_t> all;
  for (const Flat& b : batches) all.insert(all.end(), b.targets.begin(), b.targets.end());
  return all;
}

std::vector<int64_t> iota_vector(int64_t n, int64_t step = 1) {
  std::vector<int64_t> v(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = i * step;
  return v;
}

TEST(DataPipeline, CustomDatasetThroughStack) {
  auto loader = make_data_loader<SequentialSampler>(Squares(10).map(Stack<>()), DataLoaderOptions().batch_size(4));
  std::vector<int64_t> sizes;
  std::vector<float> data;
  std::vector<int64_t> targets;
  for (auto& batch : *loader) {
    EXPECT_EQ(batch.data.dim(), 2);
    EXPECT_EQ(batch.data.size(1), 2);
    EXPECT_EQ(batch.target.dtype(), kInt64);
    sizes.push_back(batch.data.size(0));
    for (float v : batch.data.to_vector<float>()) data.push_back(v);
    for (int64_t t : batch.target.to_vector<int64_t>()) targets.push_back(t);
  }
  EXPECT_EQ(sizes, std::vector<int64_t>({4, 4, 2}));
  std::vector<float> expected_data;
  std::vector<int64_t> expected_targets;
  for (int i = 0; i < 10; ++i) {
    expected_data.insert(expected_data.end(), {float(i), -float(i)});
    expected_targets.push_back(i * i);
  }
  EXPECT_EQ(data, expected_data);
  EXPECT_EQ(targets, expected_targets);
  EXPECT_EQ(loader->options().batch_size, 4u);
  EXPECT_EQ(loader->options().workers, 0u);
}

TEST(DataPipeline, UncollatedBatchesAreVectorsOfExamples) {
  auto loader = make_data_loader<SequentialSampler>(Squares(5), 2);
  std::vector<size_t> sizes;
  for (std::vector<Example<>>& batch : *loader) {
    sizes.push_back(batch.size());
    for (const auto& [data, target] : batch)
      EXPECT_EQ(data.to_vector<float>()[0] * data.to_vector<float>()[0], float(target.item<int64_t>()));
  }
  EXPECT_EQ(sizes, std::vector<size_t>({2, 2, 1}));
}

TEST(DataPipeline, DefaultSamplerVisitsEveryExampleOnce) {
  manual_seed(1);
  auto loader = make_data_loader(Squares(23).map(Stack<>()), 5);
  std::vector<int64_t> seen = targets_of(drain(*loader));
  EXPECT_NE(seen, iota_vector(23));  // RandomSampler
  for (int64_t& t : seen) t = int64_t(std::lround(std::sqrt(double(t))));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, iota_vector(23));
}

// A 2-channel 2x2 image per example: channel c of image i holds i + 10 * c + k for pixel k.
class Images : public Dataset<Images> {
 public:
  Example<> get(size_t i) override {
    std::vector<float> pixels;
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 4; ++k) pixels.push_back(float(i) + 10.f * float(c) + float(k));
    return {tensor(pixels).view({2, 2, 2}), scalar_tensor(int64_t(i), kInt64)};
  }
  std::optional<size_t> size() const override { return 3; }
};

TEST(DataPipeline, MapNormalizeStackMatchesHandComputation) {
  const double mean[2] = {0.5, 3.0}, stddev[2] = {2.0, 4.0};
  auto ds = Images().map(Normalize<>({mean[0], mean[1]}, {stddev[0], stddev[1]})).map(Stack<>());
  auto loader = make_data_loader<SequentialSampler>(std::move(ds), DataLoaderOptions().batch_size(3));
  int batches = 0;
  for (auto& [data, target] : *loader) {
    ++batches;
    EXPECT_EQ(data.sizes(), IntArrayRef({3, 2, 2, 2}));
    std::vector<double> expected;
    for (int i = 0; i < 3; ++i)
      for (int c = 0; c < 2; ++c)
        for (int k = 0; k < 4; ++k) expected.push_back((i + 10.0 * c + k - mean[c]) / stddev[c]);
    expect_values(data, expected, 1e-6, 1e-6);
    expect_values(target, {0, 1, 2}, 0, 0);
  }
  EXPECT_EQ(batches, 1);

  // One mean and stddev for every channel, then a per-example Lambda and a TensorLambda.
  auto chained = Images()
                     .map(Normalize<>(0.1307, 0.3081))
                     .map(data::transforms::Lambda<Example<>>([](Example<> e) {
                       e.target = e.target + 100;
                       return e;
                     }))
                     .map(data::transforms::TensorLambda<>([](Tensor x) { return x * 2.0; }))
                     .map(Stack<>());
  const Example<> batch = chained.get_batch(std::vector<size_t>{2, 0});
  std::vector<double> expected;
  for (int i : {2, 0})
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 4; ++k) expected.push_back((i + 10.0 * c + k - 0.1307) / 0.3081 * 2.0);
  expect_values(batch.data, expected, 1e-5, 1e-5);
  expect_values(batch.target, {102, 100}, 0, 0);
  EXPECT_EQ(chained.size(), std::optional<size_t>(3));
}

// Inputs without targets collate too.
class Unlabeled : public Dataset<Unlabeled, data::TensorExample> {
 public:
  data::TensorExample get(size_t i) override { return full({3}, double(i)); }
  std::optional<size_t> size() const override { return 4; }
};

TEST(DataPipeline, TensorExamplesAndBatchLambda) {
  auto ds = Unlabeled().map(Stack<data::TensorExample>()).map(
      data::transforms::BatchLambda<data::TensorExample, Tensor>([](data::TensorExample e) { return e.data.sum(); }));
  auto loader = make_data_loader<SequentialSampler>(std::move(ds), 2);
  std::vector<double> sums;
  for (Tensor& sum : *loader) sums.push_back(sum.item<double>());
  EXPECT_EQ(sums, std::vector<double>({3.0, 15.0}));  // 3 * (0 + 1), 3 * (2 + 3)
}

TEST(DataPipeline, SequentialSamplerOrder) {
  SequentialSampler sampler(7);
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_EQ(sampler.next(3), std::optional(std::vector<size_t>({0, 1, 2})));
    EXPECT_EQ(sampler.next(3), std::optional(std::vector<size_t>({3, 4, 5})));
    EXPECT_EQ(sampler.index(), 6u);
    EXPECT_EQ(sampler.next(3), std::optional(std::vector<size_t>({6})));
    EXPECT_EQ(sampler.next(3), std::nullopt);
    sampler.reset();
  }
  sampler.reset(2);
  EXPECT_EQ(sampler.next(5), std::optional(std::vector<size_t>({0, 1})));
  EXPECT_EQ(sampler.next(5), std::nullopt);
}

std::vector<size_t> epoch_order(RandomSampler& sampler) {
  std::vector<size_t> order;
  while (auto batch = sampler.next(4)) order.insert(order.end(), batch->begin(), batch->end());
  return order;
}

TEST(DataPipeline, RandomSamplerIsAPermutationReproducibleWithASeed) {
  std::vector<size_t> all(50);
  std::iota(all.begin(), all.end(), 0);
  manual_seed(7);
  RandomSampler a(50);
  const std::vector<size_t> a0 = epoch_order(a);
  a.reset();
  const std::vector<size_t> a1 = epoch_order(a);
  manual_seed(7);
  RandomSampler b(50);
  const std::vector<size_t> b0 = epoch_order(b);
  b.reset();
  EXPECT_EQ(a0, b0);
  EXPECT_EQ(a1, epoch_order(b));
  EXPECT_NE(a0, a1);
  EXPECT_NE(a0, all);
  for (std::vector<size_t> order : {a0, a1}) {
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, all);
  }
  manual_seed(8);
  RandomSampler c(50);
  EXPECT_NE(epoch_order(c), a0);
  c.reset(3);
  EXPECT_EQ(epoch_order(c).size(), 3u);
}

// Records which threads ran get() and how often; later requests of a window
// are faster, so workers finish batches out of order.
struct Calls {
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> count{0};
};

class Recorded : public Dataset<Recorded> {
 public:
  Recorded(Tensor table, std::shared_ptr<Calls> calls, bool slow)
      : table_(std::move(table)), calls_(std::move(calls)), slow_(slow) {}
  Example<> get(size_t i) override {
    {
      std::lock_guard lock(calls_->mu);
      calls_->threads.insert(std::this_thread::get_id());
    }
    ++calls_->count;
    if (slow_) std::this_thread::sleep_for(std::chrono::microseconds(300 * (7 - int(i % 8))));
    return {table_[int64_t(i)] * 2.0 + 1.0, scalar_tensor(int64_t(i), kInt64)};
  }
  std::optional<size_t> size() const override { return size_t(table_.size(0)); }

 private:
  Tensor table_;
  std::shared_ptr<Calls> calls_;
  bool slow_;
};

// Batches of one epoch of a loader over 37 examples in batches of 4, shuffled with seed 3.
std::vector<Flat> seeded_epochs(DataLoaderOptions options, const std::shared_ptr<Calls>& calls, int epochs = 2) {
  // Pending in this thread's trace when the loader starts: workers must not see it unflushed.
  const Tensor table = arange(37 * 3, kFloat32).view({37, 3}) * 0.5;
  manual_seed(3);
  auto loader = make_data_loader(Recorded(table, calls, true).map(Stack<>()), options.batch_size(4));
  std::vector<Flat> all;
  for (int e = 0; e < epochs; ++e)
    for (Flat& b : drain(*loader)) all.push_back(std::move(b));
  return all;
}

TEST(DataPipeline, WorkersYieldTheBatchesOfTheMainThreadInOrder) {
  auto main_calls = std::make_shared<Calls>();
  const std::vector<Flat> expected = seeded_epochs(DataLoaderOptions(), main_calls);
  ASSERT_EQ(expected.size(), 20u);
  EXPECT_EQ(main_calls->threads, std::set<std::thread::id>({std::this_thread::get_id()}));
  for (size_t b = 0; b < expected.size(); ++b) {
    ASSERT_FALSE(expected[b].targets.empty());
    for (size_t k = 0; k < expected[b].data.size(); ++k)
      EXPECT_EQ(expected[b].data[k], float(expected[b].targets[k / 3] * 3 + int64_t(k % 3)) + 1.f);
  }

  for (const DataLoaderOptions& options :
       {DataLoaderOptions().workers(2), DataLoaderOptions().workers(3).max_jobs(5)}) {
    auto calls = std::make_shared<Calls>();
    EXPECT_EQ(seeded_epochs(options, calls), expected);
    EXPECT_EQ(calls->count, 2 * 37);
    EXPECT_FALSE(calls->threads.contains(std::this_thread::get_id()));
    EXPECT_GE(calls->threads.size(), 2u);
  }

  // Without enforce_ordering the same batches come, in any order.
  auto calls = std::make_shared<Calls>();
  std::vector<Flat> unordered = seeded_epochs(DataLoaderOptions().workers(2).enforce_ordering(false), calls);
  const auto by_targets = [](const Flat& a, const Flat& b) { return a.targets < b.targets; };
  std::vector<Flat> sorted_expected = expected;
  std::sort(unordered.begin(), unordered.end(), by_targets);
  std::sort(sorted_expected.begin(), sorted_expected.end(), by_targets);
  EXPECT_EQ(unordered, sorted_expected);
}

TEST(DataPipeline, WorkersPrefetchAtMostMaxJobsAhead) {
  auto calls = std::make_shared<Calls>();
  auto loader = make_data_loader<SequentialSampler>(Recorded(arange(40, kFloat32).view({20, 2}), calls, false),
                                                    DataLoaderOptions().batch_size(2).workers(2).max_jobs(3));
  auto it = loader->begin();
  // The first batch was taken, so one request more than max_jobs was made.
  const int requested = (3 + 1) * 2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (calls->count < requested && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls->count, requested);
  EXPECT_EQ(it->size(), 2u);
  EXPECT_EQ((*it)[0].target.item<int64_t>(), 0);

  // An epoch left early: the next begin() starts over.
  std::vector<int64_t> firsts;
  for (auto& batch : *loader) firsts.push_back(batch[0].target.item<int64_t>());
  EXPECT_EQ(firsts, iota_vector(10, 2));
}

TEST(DataPipeline, DropLast) {
  for (int64_t workers : {0, 2}) {
    auto dropping = make_data_loader<SequentialSampler>(
        Squares(10).map(Stack<>()), DataLoaderOptions().batch_size(4).drop_last(true).workers(workers));
    const std::vector<Flat> kept = drain(*dropping);
    ASSERT_EQ(kept.size(), 2u) << workers << " workers";
    EXPECT_EQ(targets_of(kept), std::vector<int64_t>({0, 1, 4, 9, 16, 25, 36, 49}));

    auto keeping = make_data_loader<SequentialSampler>(Squares(10).map(Stack<>()),
                                                       DataLoaderOptions().batch_size(4).workers(workers));
    const std::vector<Flat> all = drain(*keeping);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[2].targets, std::vector<int64_t>({64, 81}));
  }
}

class Faulty : public Dataset<Faulty> {
 public:
  Example<> get(size_t i) override {
    if (i == 5) throw std::runtime_error("example 5 is corrupt");
    return {full({2}, double(i)), scalar_tensor(int64_t(i), kInt64)};
  }
  std::optional<size_t> size() const override { return 8; }
};

TEST(DataPipeline, AnExceptionInAWorkerSurfacesInTheLoop) {
  auto loader = make_data_loader<SequentialSampler>(Faulty().map(Stack<>()), DataLoaderOptions(2).workers(2));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> seen;
    expect_error(
        [&] {
          for (auto& batch : *loader) seen.push_back(batch.target[0].item<int64_t>());
        },
        {"DataLoader", "worker thread failed on batch 2", "indices 4, 5", "example 5 is corrupt"});
    EXPECT_EQ(seen, std::vector<int64_t>({0, 2}));
  }
  // After the failure the iteration goes on with the next batch.
  auto it = loader->begin();
  ++it;
  EXPECT_THROW(++it, Error);
  EXPECT_TRUE(it == loader->end());
  expect_error([&] { ++it; }, {"DataLoader", "past the end"});

  // On the loop's own thread the exception comes through as thrown.
  auto inline_loader = make_data_loader<SequentialSampler>(Faulty().map(Stack<>()), 2);
  EXPECT_THROW(drain(*inline_loader), std::runtime_error);
}

class NoSize : public Dataset<NoSize> {
 public:
  Example<> get(size_t) override { return {}; }
  std::optional<size_t> size() const override { return std::nullopt; }
};

class Slow : public Dataset<Slow> {
 public:
  Example<> get(size_t i) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return {full({1}, double(i)), scalar_tensor(int64_t(i), kInt64)};
  }
  std::optional<size_t> size() const override { return 2; }
};

TEST(DataPipeline, Errors) {
  expect_error([] { SequentialSampler s(0); }, {"SequentialSampler", "dataset size 0", "at least 1 example"});
  expect_error([] { RandomSampler s(0); }, {"RandomSampler", "dataset size 0", "at least 1 example"});
  SequentialSampler sampler(3);
  expect_error([&] { sampler.next(0); }, {"SequentialSampler::next", "batch_size 0", ">= 1"});
  expect_error([] { make_data_loader(Squares(0)); }, {"make_data_loader", "dataset size 0", "at least 1 example"});
  expect_error([] { make_data_loader(NoSize()); }, {"make_data_loader", "size() is empty", "expected a size"});
  expect_error([] { make_data_loader(Squares(4), DataLoaderOptions().batch_size(0)); },
               {"make_data_loader", "batch_size 0", ">= 1"});
  expect_error([] { make_data_loader(Squares(4), DataLoaderOptions(2).workers(1).max_jobs(0)); },
               {"make_data_loader", "max_jobs 0", "expected >= 1"});
  expect_error([] { make_data_loader(Squares(4), DataLoaderOptions(2).shuffle(true)); },
               {"make_data_loader", "shuffle", "RandomSampler"});
  expect_error([] { data::DataLoader(zeros({4, 2}), zeros({4}), DataLoaderOptions(2).workers(2)); },
               {"DataLoader", "workers 2", "make_data_loader"});
  expect_error([] { Normalize<>(0.5, 0.0); }, {"Normalize", "stddev 0", "> 0"});

  std::vector<Example<>> examples;
  for (const Tensor& data : {zeros({2, 3}), zeros({2, 3}), zeros({3, 2})})
    examples.push_back({data, scalar_tensor(int64_t(0), kInt64)});
  expect_error([&] { Stack<>().apply_batch(examples); },
               {"Stack", "example 2's data has shape [3, 2]", "example 0's has [2, 3]", "the same shape"});
  examples[2].data = zeros({2, 3});
  examples[1].target = zeros({2});
  expect_error([&] { Stack<>().apply_batch(examples); }, {"Stack", "example 1's target has shape [2]", "[]"});
  expect_error([] { Stack<>().apply_batch({}); }, {"Stack", "empty batch"});

  auto slow = make_data_loader<SequentialSampler>(
      Slow().map(Stack<>()), DataLoaderOptions(1).workers(1).timeout(std::chrono::milliseconds(10)));
  expect_error([&] { slow->begin(); }, {"DataLoader", "1 worker threads", "timeout of 10 ms"});
  slow->join();
  expect_error([&] { slow->begin(); }, {"DataLoader", "after join()"});
}

class MnistTest : public IdxFiles {
 protected:
  static double value(int64_t i, int64_t p) { return double(pixel(uint32_t(i), uint32_t(p))) / 255.0; }
};

TEST_F(MnistTest, ReadsBothSplitsAndLoadsNormalizedBatches) {
  write("train-images-idx3-ubyte.gz", images_file(6), true);
  write("train-labels-idx1-ubyte", labels_file(6, 4));
  write("t10k-images-idx3-ubyte", images_file(3));
  write("t10k-labels-idx1-ubyte.gz", labels_file(3, 8), true);

  data::datasets::MNIST train(dir_.string());
  EXPECT_TRUE(train.is_train());
  ASSERT_EQ(train.size(), std::optional<size_t>(6));
  const auto [image, label] = train.get(4);
  EXPECT_EQ(image.sizes(), IntArrayRef({1, 28, 28}));
  EXPECT_EQ(image.dtype(), kFloat32);
  EXPECT_EQ(label.dtype(), kInt64);
  EXPECT_EQ(label.item<int64_t>(), 8);
  std::vector<double> expected;
  for (int64_t p = 0; p < 784; ++p) expected.push_back(value(4, p));
  expect_values(image, expected, 1e-6, 1e-7);
  expect_error([&] { train.get(6); }, {"MNIST::get", "index 6", "0..5"});

  const data::datasets::MNIST test(dir_.string(), data::datasets::MNIST::Mode::kTest);
  EXPECT_FALSE(test.is_train());
  expect_values(test.targets(), {8, 9, 0}, 0, 0);

  auto ds = train.map(Normalize<>(0.1307, 0.3081)).map(Stack<>());
  auto loader = make_data_loader<SequentialSampler>(std::move(ds), DataLoaderOptions().batch_size(4).workers(2));
  std::vector<int64_t> sizes, labels;
  std::vector<double> normalized, expected_normalized;
  for (auto& batch : *loader) {
    EXPECT_EQ(batch.data.dim(), 4);
    sizes.push_back(batch.data.size(0));
    for (int64_t t : batch.target.to_vector<int64_t>()) labels.push_back(t);
    for (float v : batch.data.to_vector<float>()) normalized.push_back(v);
  }
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t p = 0; p < 784; ++p) expected_normalized.push_back((value(i, p) - 0.1307) / 0.3081);
  EXPECT_EQ(sizes, std::vector<int64_t>({4, 2}));
  EXPECT_EQ(labels, std::vector<int64_t>({4, 5, 6, 7, 8, 9}));
  expect_values(tensor(normalized), expected_normalized, 1e-5, 1e-5);
}

TEST_F(MnistTest, MissingFileIsNamed) {
  const std::string images = (dir_ / "t10k-images-idx3-ubyte").string();
  expect_error([&] { data::datasets::MNIST ds(dir_.string(), data::datasets::MNIST::Mode::kTest); },
               {"MNIST", images, images + ".gz", "exists"});
  write("t10k-images-idx3-ubyte", images_file(2));
  const std::string labels = (dir_ / "t10k-labels-idx1-ubyte").string();
  expect_error([&] { data::datasets::MNIST ds(dir_.string(), data::datasets::MNIST::Mode::kTest); },
               {"MNIST", labels, labels + ".gz"});
}

TEST(MnistFilesTest, ReadsTheDebianFashionMnist) {
  if (!fs::exists(std::string(data::FashionMNIST::kDefaultRoot) + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  data::datasets::MNIST test(data::FashionMNIST::kDefaultRoot, data::datasets::MNIST::Mode::kTest);
  ASSERT_EQ(test.size(), std::optional<size_t>(10000));
  auto loader = make_data_loader<SequentialSampler>(
      std::move(test).map(Normalize<>(0.2860, 0.3530)).map(Stack<>()),
      DataLoaderOptions().batch_size(64).workers(2));
  int64_t batches = 0, examples = 0;
  for (auto& batch : *loader) {
    ++batches;
    examples += batch.data.size(0);
    EXPECT_EQ(batch.data.sizes().subspan(1), IntArrayRef({1, 28, 28}));
  }
  EXPECT_EQ(batches, 157);
  EXPECT_EQ(examples, 10000);
}

}  // namespace
}  // namespace nnvm::testing
