// A dataset of one's own, as a libtorch user writes one: CustomDataset derives
// from nnvm::data::datasets::Dataset and answers get(index) and size() over
// images it holds in memory, decoded into 8-bit RGB pixels as an image library
// would hand them over. The images are drawn here, so the program needs no
// files: four classes of shapes (horizontal stripes, vertical stripes, a
// filled box, a ring) at random places, sizes and colours, over noise. A
// random flip and a per-channel Normalize transform them; a small CNN built as
// a Sequential learns to tell the shapes apart.
//
//   libtorch_custom_dataset            the full run (kNumberOfEpochs epochs)
//   libtorch_custom_dataset --quick    fewer images and epochs; exits non-zero
//                                      unless the test accuracy is well above chance
#include <nnvm/nnvm.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

// The side of the square images, in pixels.
const int64_t kImageSize = 32;

// The number of shape classes.
const int64_t kNumberOfClasses = 4;

struct Options {
  size_t train_size = 8000;
  size_t test_size = 1000;
  size_t train_batch_size = 32;
  size_t test_batch_size = 250;
  size_t epochs = 10;
  size_t log_interval = 25;
  // The test accuracy a run must reach to count as having learned (chance is 25%).
  double minimum_accuracy = 0.7;
  nnvm::DeviceType device = nnvm::kCPU;
};

static Options options;

// One decoded image: interleaved 8-bit RGB (height x width x 3), and its class.
struct Image {
  std::vector<uint8_t> pixels;
  int64_t label;
};

// Draws an image of class `label`: a shape in a bright colour inside a random
// box, over a dark background with noise.
Image draw_shape(int64_t label, std::mt19937& rng) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Image image{std::vector<uint8_t>(kImageSize * kImageSize * 3), label};
  const int background[3] = {uniform(0, 80), uniform(0, 80), uniform(0, 80)};
  const int colour[3] = {uniform(150, 255), uniform(150, 255), uniform(150, 255)};
  const int w = uniform(12, 24), h = uniform(12, 24);
  const int x0 = uniform(0, kImageSize - w), y0 = uniform(0, kImageSize - h);
  const int period = uniform(2, 4);
  const double cx = x0 + w / 2.0, cy = y0 + h / 2.0, radius = std::min(w, h) / 2.0;
  for (int y = 0; y < kImageSize; ++y) {
    for (int x = 0; x < kImageSize; ++x) {
      const bool in_box = x >= x0 && x < x0 + w && y >= y0 && y < y0 + h;
      bool on = false;
      switch (label) {
        case 0: on = in_box && (y - y0) / period % 2 == 0; break;
        case 1: on = in_box && (x - x0) / period % 2 == 0; break;
        case 2: on = in_box; break;
        case 3: on = std::abs(std::hypot(x + 0.5 - cx, y + 0.5 - cy) - (radius - 1.5)) < 1.5; break;
      }
      for (int c = 0; c < 3; ++c) {
        const int value = (on ? colour[c] : background[c]) + uniform(-20, 20);
        image.pixels[(y * kImageSize + x) * 3 + c] = static_cast<uint8_t>(std::clamp(value, 0, 255));
      }
    }
  }
  return image;
}

class CustomDataset : public nnvm::data::datasets::Dataset<CustomDataset> {
  using Example = nnvm::data::Example<>;

  std::vector<Image> images;

 public:
  // `count` images, as many of each class, in random order.
  CustomDataset(size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    images.reserve(count);
    for (size_t i = 0; i < count; ++i) images.push_back(draw_shape(static_cast<int64_t>(i % kNumberOfClasses), rng));
    std::shuffle(images.begin(), images.end(), rng);
  }

  Example get(size_t index) override {
    Image& image = images[index];
    // [H, W, 3] bytes -> [3, H, W] floats in [0, 1]
    nnvm::Tensor data = nnvm::from_blob(image.pixels.data(), {kImageSize, kImageSize, 3}, nnvm::kUInt8)
                             .permute({2, 0, 1})
                             .to(nnvm::kFloat)
                             .div(255);
    nnvm::Tensor label = nnvm::from_blob(&image.label, {1}, nnvm::kLong);
    return {data, label};
  }

  nnvm::optional<size_t> size() const override {
    return images.size();
  }
};

// Flips half the images left to right: no shape changes its class in a mirror.
nnvm::Tensor random_flip(nnvm::Tensor image) {
  return nnvm::rand(1).item<float>() < 0.5 ? image.flip({2}) : image;
}

struct NetworkImpl : nnvm::nn::SequentialImpl {
  NetworkImpl() {
    using namespace nnvm::nn;
    // [N, 3, 32, 32] -> [N, 16, 16, 16] -> [N, 32, 8, 8] -> [N, 64] -> [N, classes]
    push_back(Conv2d(Conv2dOptions(3, 16, 3).padding(1)));
    push_back(Functional(nnvm::relu));
    push_back(MaxPool2d(MaxPool2dOptions(2)));
    push_back(Conv2d(Conv2dOptions(16, 32, 3).padding(1)));
    push_back(Functional(nnvm::relu));
    push_back(MaxPool2d(MaxPool2dOptions(2)));
    push_back(Flatten());
    push_back(Linear(32 * 8 * 8, 64));
    push_back(Functional(nnvm::relu));
    push_back(Dropout(0.25));
    push_back(Linear(64, kNumberOfClasses));
    push_back(Functional(nnvm::log_softmax, 1, nnvm::nullopt));
  }
};
NNVM_MODULE(Network);

template <typename DataLoader>
void train(Network& network, DataLoader& loader, nnvm::optim::Optimizer& optimizer, size_t epoch,
           size_t data_size) {
  size_t index = 0, seen = 0;
  network->train();
  double total_loss = 0, correct = 0;

  for (auto& batch : loader) {
    auto data = batch.data.to(options.device);
    auto targets = batch.target.to(options.device).view({-1});

    if (epoch == 1 && index == 0)
      std::cout << "Batches of " << data.sizes() << ", targets " << targets.sizes() << std::endl;

    auto output = network->forward(data);
    auto loss = nnvm::nll_loss(output, targets);
    NNVM_ASSERT(!std::isnan(loss.template item<float>()));
    auto acc = output.argmax(1).eq(targets).sum();

    optimizer.zero_grad();
    loss.backward();
    optimizer.step();

    seen += data.size(0);
    total_loss += loss.template item<float>() * data.size(0);
    correct += acc.template item<float>();

    if (++index % options.log_interval == 0) {
      std::cout << "Train Epoch: " << epoch << " " << seen << "/" << data_size << "\tLoss: " << total_loss / seen
                << "\tAcc: " << correct / seen << std::endl;
    }
  }
}

template <typename DataLoader>
double test(Network& network, DataLoader& loader, size_t data_size) {
  network->eval();
  nnvm::NoGradGuard no_grad;
  double total_loss = 0, correct = 0;

  for (const auto& batch : loader) {
    auto data = batch.data.to(options.device);
    auto targets = batch.target.to(options.device).view({-1});

    auto output = network->forward(data);
    total_loss += nnvm::nll_loss(output, targets, {}, nnvm::Reduction::Sum).template item<float>();
    correct += output.argmax(1).eq(targets).sum().template item<float>();
  }

  std::cout << "Test Loss: " << total_loss / data_size << "\tAcc: " << correct / data_size << std::endl;
  return correct / data_size;
}

int main(int argc, const char* argv[]) {
  if (argc > 1 && std::strcmp(argv[1], "--quick") == 0) {
    options.train_size = 1600;
    options.test_size = 500;
    options.epochs = 2;
  }
  nnvm::manual_seed(1);

  if (nnvm::cuda::is_available()) options.device = nnvm::kCUDA;
  std::cout << "Running on: " << (options.device == nnvm::kCUDA ? "CUDA" : "CPU") << std::endl;

  auto train_set = CustomDataset(options.train_size, /*seed=*/1)
                       .map(nnvm::data::transforms::TensorLambda<>(random_flip))
                       .map(nnvm::data::transforms::Normalize<>({0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}))
                       .map(nnvm::data::transforms::Stack<>());
  auto train_size = train_set.size().value();
  auto train_loader = nnvm::data::make_data_loader<nnvm::data::samplers::RandomSampler>(
      std::move(train_set), nnvm::data::DataLoaderOptions().batch_size(options.train_batch_size).workers(2));

  auto test_set = CustomDataset(options.test_size, /*seed=*/2)
                      .map(nnvm::data::transforms::Normalize<>({0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}))
                      .map(nnvm::data::transforms::Stack<>());
  auto test_size = test_set.size().value();
  auto test_loader = nnvm::data::make_data_loader<nnvm::data::samplers::SequentialSampler>(
      std::move(test_set), options.test_batch_size);

  Network network;
  network->to(options.device);

  nnvm::optim::Adam optimizer(network->parameters(), nnvm::optim::AdamOptions(1e-3));

  double accuracy = 0;
  for (size_t i = 0; i < options.epochs; ++i) {
    train(network, *train_loader, optimizer, i + 1, train_size);
    accuracy = test(network, *test_loader, test_size);
  }

  if (accuracy < options.minimum_accuracy) {
    std::cerr << "the network did not learn: accuracy " << accuracy << " < " << options.minimum_accuracy
              << std::endl;
    return 1;
  }
  return 0;
}
