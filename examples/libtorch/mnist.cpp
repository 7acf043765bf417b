// A convolutional classifier for MNIST-format images, as a libtorch user writes
// one: the dataset pipeline (MNIST -> Normalize -> Stack) fed by a data loader
// with worker threads, a small CNN trained with SGD and momentum, a checkpoint
// saved after training and loaded back into a fresh model for the test.
//
//   libtorch_mnist            the full run (kNumberOfEpochs epochs)
//   libtorch_mnist --quick    a few hundred batches and a test subset; exits
//                             non-zero unless the test accuracy is well above chance
#include <nnvm/nnvm.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <unistd.h>

// Where to find the MNIST-format IDX files (Fashion-MNIST here: ten classes of
// clothing, harder than the digits).
// port: Debian ships the files gzipped; nnvm's MNIST reads them as they are, libtorch's
// reads un-gzipped files only (run gunzip there first).
const char* kDataRoot = "/usr/share/datasets/fashion-mnist";

// The batch size for training.
const int64_t kTrainBatchSize = 64;

// The batch size for testing.
const int64_t kTestBatchSize = 1000;

// The number of epochs to train.
const int64_t kNumberOfEpochs = 10;

// After how many batches to log a new update with the loss value.
const int64_t kLogInterval = 20;

// What --quick trains on and tests on, in batches.
const int64_t kQuickTrainBatches = 150;
const int64_t kQuickTestBatches = 2;

// The test accuracy a run must reach to count as having learned (chance is 10%).
const double kMinimumAccuracy = 0.5;

struct Net : nnvm::nn::Module {
  Net()
      : conv1(nnvm::nn::Conv2dOptions(1, 16, /*kernel_size=*/5)),
        conv2(nnvm::nn::Conv2dOptions(16, 32, /*kernel_size=*/5)),
        conv2_drop(nnvm::nn::Dropout2dOptions(0.2)),
        fc1(32 * 4 * 4, 64),
        fc1_drop(nnvm::nn::DropoutOptions(0.5)),
        fc2(64, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc1_drop", fc1_drop);
    register_module("fc2", fc2);
  }

  nnvm::Tensor forward(nnvm::Tensor x) {
    namespace F = nnvm::nn::functional;
    // [N, 1, 28, 28] -> [N, 16, 12, 12] -> [N, 32, 4, 4]
    x = F::relu(F::max_pool2d(conv1->forward(x), F::MaxPool2dFuncOptions(2)));
    x = F::relu(F::max_pool2d(conv2_drop->forward(conv2->forward(x)), F::MaxPool2dFuncOptions(2)));
    x = x.view({-1, 32 * 4 * 4});
    x = F::relu(fc1->forward(x));
    x = fc1_drop->forward(x);
    x = fc2->forward(x);
    return F::log_softmax(x, /*dim=*/1);
  }

  nnvm::nn::Conv2d conv1;
  nnvm::nn::Conv2d conv2;
  nnvm::nn::Dropout2d conv2_drop;
  nnvm::nn::Linear fc1;
  nnvm::nn::Dropout fc1_drop;
  nnvm::nn::Linear fc2;
};

template <typename DataLoader>
void train(size_t epoch, Net& model, nnvm::Device device, DataLoader& data_loader,
           nnvm::optim::Optimizer& optimizer, size_t dataset_size, int64_t max_batches) {
  namespace F = nnvm::nn::functional;
  model.train();
  int64_t batch_idx = 0;
  size_t seen = 0;
  for (auto& batch : data_loader) {
    if (batch_idx == max_batches) break;
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model.forward(data);
    auto loss = F::nll_loss(output, targets);
    NNVM_CHECK(!std::isnan(loss.template item<float>()), "the loss is NaN");
    loss.backward();
    optimizer.step();
    seen += batch.data.size(0);

    if (++batch_idx % kLogInterval == 0) {
      std::printf("\rTrain Epoch: %zu [%5zu/%5zu] Loss: %.4f", epoch, seen, dataset_size,
                  loss.template item<float>());
      std::fflush(stdout);
    }
  }
  std::printf("\n");
}

template <typename DataLoader>
double test(Net& model, nnvm::Device device, DataLoader& data_loader, int64_t max_batches) {
  namespace F = nnvm::nn::functional;
  nnvm::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int64_t correct = 0, seen = 0, batch_idx = 0;
  for (const auto& batch : data_loader) {
    if (batch_idx++ == max_batches) break;
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model.forward(data);
    test_loss += F::nll_loss(output, targets, F::NLLLossFuncOptions().reduction(nnvm::kSum))
                     .template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
    seen += data.size(0);
  }
  const double accuracy = static_cast<double>(correct) / seen;
  std::printf("Test set: Average loss: %.4f | Accuracy: %.3f (%ld/%ld)\n", test_loss / seen,
              accuracy, correct, seen);
  return accuracy;
}

int main(int argc, const char* argv[]) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  nnvm::manual_seed(1);

  nnvm::DeviceType device_type;
  if (nnvm::cuda::is_available()) {
    std::cout << "CUDA available! Training on GPU." << std::endl;
    device_type = nnvm::kCUDA;
  } else {
    std::cout << "Training on CPU." << std::endl;
    device_type = nnvm::kCPU;
  }
  nnvm::Device device(device_type);

  const std::filesystem::path images = std::filesystem::path(kDataRoot) / "train-images-idx3-ubyte";
  if (!std::filesystem::exists(images) && !std::filesystem::exists(images.string() + ".gz")) {
    std::cerr << "no MNIST-format data in " << kDataRoot
              << " (install Debian's dataset-fashion-mnist); skipping" << std::endl;
    return 77;
  }

  auto model = std::make_shared<Net>();
  model->to(device);

  auto train_dataset = nnvm::data::datasets::MNIST(kDataRoot)
                           .map(nnvm::data::transforms::Normalize<>(0.2860, 0.3530))
                           .map(nnvm::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader = nnvm::data::make_data_loader<nnvm::data::samplers::RandomSampler>(
      std::move(train_dataset), nnvm::data::DataLoaderOptions().batch_size(kTrainBatchSize).workers(2));

  auto test_dataset = nnvm::data::datasets::MNIST(kDataRoot, nnvm::data::datasets::MNIST::Mode::kTest)
                          .map(nnvm::data::transforms::Normalize<>(0.2860, 0.3530))
                          .map(nnvm::data::transforms::Stack<>());
  auto test_loader = nnvm::data::make_data_loader<nnvm::data::samplers::SequentialSampler>(
      std::move(test_dataset), nnvm::data::DataLoaderOptions().batch_size(kTestBatchSize).workers(2));

  nnvm::optim::SGD optimizer(model->parameters(), nnvm::optim::SGDOptions(0.01).momentum(0.9));

  const int64_t epochs = quick ? 1 : kNumberOfEpochs;
  const int64_t train_batches = quick ? kQuickTrainBatches : -1;
  const int64_t test_batches = quick ? kQuickTestBatches : -1;
  for (size_t epoch = 1; epoch <= static_cast<size_t>(epochs); ++epoch) {
    train(epoch, *model, device, *train_loader, optimizer, train_dataset_size, train_batches);
    test(*model, device, *test_loader, test_batches);
  }

  // Checkpoint the trained model, and test what a fresh model loads back from it.
  const std::string checkpoint =
      (std::filesystem::temp_directory_path() / nnvm::str("mnist-model-", ::getpid(), ".pt")).string();
  nnvm::save(model, checkpoint);
  auto restored = std::make_shared<Net>();
  nnvm::load(restored, checkpoint);
  restored->to(device);
  std::filesystem::remove(checkpoint);
  std::cout << "Loaded the checkpoint back: ";
  const double accuracy = test(*restored, device, *test_loader, test_batches);

  if (accuracy < kMinimumAccuracy) {
    std::cerr << "the model did not learn: accuracy " << accuracy << " < " << kMinimumAccuracy << std::endl;
    return 1;
  }
  return 0;
}
