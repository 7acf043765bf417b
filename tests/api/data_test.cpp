// IDX reading, the Fashion-MNIST data set and the DataLoader, on small IDX
// files written here (plain and gzipped); one test reads the real files of
// the Debian package when it is installed.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "api/idx_files.h"
#include "reference.h"

namespace nnvm::testing {
namespace {

namespace fs = std::filesystem;
using data::DataLoader;
using data::DataLoaderOptions;
using data::FashionMNIST;

class DataTest : public IdxFiles {};

TEST_F(DataTest, ReadsUint8ImagesPlainAndGzipped) {
  std::vector<uint8_t> bytes = idx_header(0x08, {3, 2, 5});
  for (int i = 0; i < 30; ++i) bytes.push_back(uint8_t(i * 9));
  std::vector<double> expected(30);
  for (int i = 0; i < 30; ++i) expected[size_t(i)] = double(uint8_t(i * 9));
  for (bool gzip : {false, true}) {
    const Tensor t = data::read_idx_images(write(gzip ? "a.gz" : "a", bytes, gzip));
    EXPECT_EQ(t.dtype(), kUInt8);
    EXPECT_EQ(t.sizes(), IntArrayRef({3, 2, 5}));
    expect_values(t, expected, 0, 0);
  }
}

TEST_F(DataTest, ReadsLabelsAndEmptyFiles) {
  const Tensor labels = data::read_idx_labels(write("l", labels_file(13, 4), true));
  EXPECT_EQ(labels.sizes(), IntArrayRef({13}));
  std::vector<double> expected;
  for (int i = 0; i < 13; ++i) expected.push_back((4 + i) % 10);
  expect_values(labels, expected, 0, 0);
  EXPECT_EQ(data::read_idx_labels(write("e", labels_file(0))).numel(), 0);
}

TEST_F(DataTest, ReadsMultiByteTypesBigEndian) {
  std::vector<uint8_t> i32 = idx_header(0x0C, {2, 2}), f32 = idx_header(0x0D, {4}), f64 = idx_header(0x0E, {1, 4});
  std::vector<double> i32_vals = {-1, 70000, -2000000000, 5}, f_vals = {1.5, -0.25, 0x1p40, -7};
  for (size_t i = 0; i < 4; ++i) {
    put(i32, int32_t(i32_vals[i]));
    put(f32, float(f_vals[i]));
    put(f64, double(f_vals[i]));
  }
  const Tensor a = data::read_idx(write("i32", i32)), b = data::read_idx(write("f32", f32, true));
  const Tensor c = data::read_idx(write("f64", f64));
  EXPECT_EQ(a.dtype(), kInt32);
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_EQ(c.dtype(), kFloat64);
  EXPECT_EQ(c.sizes(), IntArrayRef({1, 4}));
  expect_values(a, i32_vals, 0, 0);
  expect_values(b, f_vals, 0, 0);
  expect_values(c, f_vals, 0, 0);
}

TEST_F(DataTest, BadFilesRaiseErrorsNamingTheFile) {
  const std::string missing = (dir_ / "missing-idx3").string();
  expect_error([&] { data::read_idx_images(missing); }, {"read_idx_images", missing, "cannot open"});

  std::vector<uint8_t> images = images_file(2);
  std::vector<uint8_t> cut(images.begin(), images.end() - 5);
  for (bool gzip : {false, true}) {
    const std::string path = write(gzip ? "cut.gz" : "cut", cut, gzip);
    expect_error([&] { data::read_idx_images(path); }, {path, "truncated", "1563 data bytes, expected 1568"});
  }
  const std::string short_header = write("hdr", {0, 0, 8, 3, 0, 0});
  expect_error([&] { data::read_idx_images(short_header); }, {short_header, "truncated header", "expected 16"});
  const std::string tiny = write("tiny", {0, 0});
  expect_error([&] { data::read_idx(tiny); }, {tiny, "truncated", "magic number"});

  const std::string labels = write("labels", labels_file(3));
  expect_error([&] { data::read_idx_images(labels); },
               {"read_idx_images", labels, "0x00000801", "expected 0x00000803"});
  const std::string images_path = write("images", images);
  expect_error([&] { data::read_idx_labels(images_path); }, {images_path, "0x00000803", "expected 0x00000801"});
  const std::string text = write("text", {'h', 'e', 'l', 'l', 'o'});
  expect_error([&] { data::read_idx(text); }, {text, "0x68656c6c", "is not IDX"});
  const std::string int16 = write("int16", idx_header(0x0B, {1}));
  expect_error([&] { data::read_idx(int16); }, {int16, "unsupported IDX type code 0x0b"});
  const std::string rank0 = write("rank0", idx_header(0x08, {}));
  expect_error([&] { data::read_idx(rank0); }, {rank0, "rank 0"});

  std::vector<uint8_t> longer = labels_file(3);
  longer.push_back(1);
  const std::string trailing = write("trailing", longer);
  expect_error([&] { data::read_idx_labels(trailing); }, {trailing, "past the 3 bytes"});
  // A header announcing far more than the file holds fails as truncated, without allocating it.
  const std::string huge = write("huge", idx_header(0x08, {0xFFFF, 0xFFFF, 16}));
  expect_error([&] { data::read_idx(huge); }, {huge, "truncated", "0 data bytes"});
}

TEST_F(DataTest, CorruptGzipStreamIsAnError) {
  const std::string path = write("c.gz", images_file(4), true);
  std::vector<char> raw(fs::file_size(path));
  std::ifstream(path, std::ios::binary).read(raw.data(), std::streamsize(raw.size()));
  raw.resize(raw.size() / 2);  // cut the deflate stream in the middle
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(raw.data(), std::streamsize(raw.size()));
  expect_error([&] { data::read_idx_images(path); }, {"read_idx_images", path});
}

TEST_F(DataTest, FashionMnistReadsBothSplits) {
  write("train-images-idx3-ubyte.gz", images_file(5), true);
  write("train-labels-idx1-ubyte", labels_file(5, 3));
  write("t10k-images-idx3-ubyte", images_file(2));
  write("t10k-labels-idx1-ubyte.gz", labels_file(2, 9), true);

  const FashionMNIST train(dir_.string());
  EXPECT_TRUE(train.is_train());
  ASSERT_EQ(train.size(), 5);
  EXPECT_EQ(train.images().dtype(), kFloat32);
  EXPECT_EQ(train.images().sizes(), IntArrayRef({5, 1, 28, 28}));
  EXPECT_EQ(train.targets().dtype(), kInt64);
  std::vector<double> pixels, labels;
  for (int i = 0; i < 5; ++i) {
    labels.push_back((3 + i) % 10);
    for (int p = 0; p < 784; ++p) pixels.push_back(double((i * 7 + p) % 256) / 255.0);
  }
  expect_values(train.images(), pixels, 1e-6, 1e-7);
  expect_values(train.targets(), labels, 0, 0);

  const auto [image, label] = train.get(2);
  EXPECT_EQ(image.sizes(), IntArrayRef({1, 28, 28}));
  EXPECT_EQ(label.item<int64_t>(), 5);
  expect_values(image, std::vector<double>(pixels.begin() + 2 * 784, pixels.begin() + 3 * 784), 1e-6, 1e-7);
  expect_error([&] { train.get(5); }, {"FashionMNIST::get", "index 5", "0..4"});

  FashionMNIST test(dir_.string(), FashionMNIST::Mode::kTest);
  EXPECT_FALSE(test.is_train());
  ASSERT_EQ(test.size(), 2);
  expect_values(test.targets(), {9, 0}, 0, 0);
  test.normalize();
  std::vector<double> normalized;
  for (int i = 0; i < 2; ++i)
    for (int p = 0; p < 784; ++p)
      normalized.push_back((double((i * 7 + p) % 256) / 255.0 - FashionMNIST::kMean) / FashionMNIST::kStd);
  expect_values(test.images(), normalized, 1e-5, 1e-6);
  expect_error([&] { test.normalize(0.5, 0.0); }, {"normalize", "std 0", "expected > 0"});
}

TEST_F(DataTest, FashionMnistRejectsInconsistentFiles) {
  const std::string root = dir_.string();
  expect_error([&] { FashionMNIST ds(root); },
               {"FashionMNIST", "train-images-idx3-ubyte", "train-images-idx3-ubyte.gz", "dataset-fashion-mnist"});

  const std::string images = write("train-images-idx3-ubyte", images_file(4));
  const std::string labels = write("train-labels-idx1-ubyte", labels_file(3));
  expect_error([&] { FashionMNIST ds(root); },
               {"FashionMNIST", images, "4 images", labels, "3 labels", "expected the same count"});

  write("train-labels-idx1-ubyte", labels_file(4));
  write("train-images-idx3-ubyte", images_file(4, 8));
  expect_error([&] { FashionMNIST ds(root); }, {"FashionMNIST", images, "8x8", "expected 28x28"});

  write("train-images-idx3-ubyte", images_file(4));
  std::vector<uint8_t> bad_label = labels_file(4);
  bad_label.back() = 10;
  write("train-labels-idx1-ubyte", bad_label);
  expect_error([&] { FashionMNIST ds(root); }, {"FashionMNIST", labels, "label 10 at index 3", "expected 0..9"});
}

// data[i] = i in every element, target[i] = 100 + i: a batch shows which samples it holds.
std::pair<Tensor, Tensor> numbered(int64_t n) {
  const Tensor data = arange(n, kFloat32).view({n, 1, 1}).expand({n, 2, 3}).contiguous();
  return {data, arange(n, kInt64) + 100};
}

std::vector<int64_t> drain(DataLoader& loader, std::vector<int64_t>* sizes = nullptr) {
  std::vector<int64_t> seen;
  for (const auto& [x, y] : loader) {
    EXPECT_EQ(x.size(0), y.size(0));
    EXPECT_EQ(x.dim(), 3);
    if (sizes) sizes->push_back(x.size(0));
    const std::vector<int64_t> targets = y.to_vector<int64_t>();
    const std::vector<float> values = x.to_vector<float>();
    for (size_t i = 0; i < targets.size(); ++i) {
      for (size_t k = 0; k < 6; ++k) EXPECT_EQ(int64_t(values[i * 6 + k]) + 100, targets[i]);
      seen.push_back(targets[i] - 100);
    }
  }
  return seen;
}

TEST(DataLoaderTest, SequentialBatchesWithTailOrDropLast) {
  const auto [data, targets] = numbered(10);
  DataLoader loader(data, targets, DataLoaderOptions(4));
  EXPECT_EQ(loader.num_batches(), 3);
  std::vector<int64_t> sizes;
  const std::vector<int64_t> seen = drain(loader, &sizes);
  std::vector<int64_t> all(10);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(seen, all);
  EXPECT_EQ(sizes, std::vector<int64_t>({4, 4, 2}));

  DataLoader dropping(data, targets, DataLoaderOptions(4).drop_last(true));
  EXPECT_EQ(dropping.num_batches(), 2);
  sizes.clear();
  EXPECT_EQ(drain(dropping, &sizes), std::vector<int64_t>(all.begin(), all.begin() + 8));
  EXPECT_EQ(sizes, std::vector<int64_t>({4, 4}));

  DataLoader exact(data, targets, DataLoaderOptions(5));
  sizes.clear();
  drain(exact, &sizes);
  EXPECT_EQ(sizes, std::vector<int64_t>({5, 5}));
  DataLoader big(data, targets, DataLoaderOptions(64).drop_last(true));
  EXPECT_EQ(big.num_batches(), 0);
  EXPECT_TRUE(drain(big).empty());
}

TEST(DataLoaderTest, BatchesAreCopies) {
  const auto [data, targets] = numbered(4);
  DataLoader loader(data, targets, DataLoaderOptions(2));
  for (auto [x, y] : loader) x.fill_(-1);
  expect_values(data.select(1, 0).select(1, 0), {0, 1, 2, 3}, 0, 0);
}

TEST(DataLoaderTest, ShuffleIsAPermutationFixedBySeedAndEpoch) {
  const auto [data, targets] = numbered(37);
  const auto options = DataLoaderOptions(8).shuffle(true).seed(42);
  DataLoader a(data, targets, options), b(data, targets, options);
  DataLoader other(data, targets, DataLoaderOptions(8).shuffle(true).seed(43));
  std::vector<int64_t> all(37);
  std::iota(all.begin(), all.end(), 0);

  const std::vector<int64_t> a0 = drain(a), a1 = drain(a), b0 = drain(b), b1 = drain(b), c0 = drain(other);
  for (const auto* order : {&a0, &a1, &c0}) {
    std::vector<int64_t> sorted = *order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, all);
    EXPECT_NE(*order, all);
  }
  EXPECT_EQ(a0, b0);
  EXPECT_EQ(a1, b1);
  EXPECT_NE(a0, a1);
  EXPECT_NE(a0, c0);
  EXPECT_EQ(a.epoch(), 2);
  EXPECT_EQ(a0, a.permutation(0));
  EXPECT_EQ(a1, a.permutation(1));
}

TEST(DataLoaderTest, ShuffleVisitsEveryPositionEvenly) {
  // Over many epochs each sample lands in each position about equally often.
  const auto [data, targets] = numbered(5);
  DataLoader loader(data, targets, DataLoaderOptions(5).shuffle(true).seed(7));
  constexpr int kEpochs = 5000;
  int counts[5][5] = {};
  for (int e = 0; e < kEpochs; ++e) {
    const std::vector<int64_t> order = loader.permutation(e);
    for (int pos = 0; pos < 5; ++pos) ++counts[order[size_t(pos)]][pos];
  }
  for (auto& row : counts)
    for (int c : row) EXPECT_NEAR(c, kEpochs / 5, 120);
}

TEST(DataLoaderTest, UnseededShuffleFollowsManualSeed) {
  const auto [data, targets] = numbered(20);
  manual_seed(3);
  DataLoader a(data, targets, DataLoaderOptions(4).shuffle(true));
  manual_seed(3);
  DataLoader b(data, targets, DataLoaderOptions(4).shuffle(true));
  EXPECT_EQ(drain(a), drain(b));
}

TEST(DataLoaderTest, BadOptionsAndShapes) {
  const auto [data, targets] = numbered(6);
  // init-captures: clang 14 cannot capture a structured binding
  expect_error([&data = data, &targets = targets] { DataLoader(data, targets, DataLoaderOptions(0)); },
               {"DataLoader", "batch_size 0", ">= 1"});
  expect_error([&data = data, &targets = targets] { DataLoader(data, targets.narrow(0, 0, 5)); },
               {"DataLoader", "[6, 2, 3]", "[5]", "same size in dim 0"});
  expect_error([&targets = targets] { DataLoader(scalar_tensor(1.0), targets); }, {"DataLoader", "at least 1 dim"});
}

TEST(FashionMnistFilesTest, DebianPackageFiles) {
  if (!fs::exists(std::string(FashionMNIST::kDefaultRoot) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const FashionMNIST train, test(FashionMNIST::kDefaultRoot, FashionMNIST::Mode::kTest);
  ASSERT_EQ(train.size(), 60000);
  ASSERT_EQ(test.size(), 10000);
  for (const FashionMNIST* ds : {&train, &test}) {
    EXPECT_EQ(ds->images().sizes(), IntArrayRef({ds->size(), 1, 28, 28}));
    EXPECT_GE(ds->images().min().item<float>(), 0.f);
    EXPECT_LE(ds->images().max().item<float>(), 1.f);
    // The release is balanced: every class holds a tenth of each split.
    const std::vector<int64_t> labels = ds->targets().to_vector<int64_t>();
    for (int64_t c = 0; c < 10; ++c)
      EXPECT_EQ(std::count(labels.begin(), labels.end(), c), ds->size() / 10) << "class " << c;
  }
  EXPECT_NEAR(train.images().mean().item<double>(), FashionMNIST::kMean, 5e-4);
  EXPECT_NEAR(train.images().std().item<double>(), FashionMNIST::kStd, 5e-4);
}

}  // namespace
}  // namespace nnvm::testing
