// A small DCGAN on MNIST-format images, as a libtorch user writes one: a
// generator of transposed convolutions with batch norm, a discriminator of
// strided convolutions with leaky ReLUs, both trained with Adam on the binary
// cross-entropy, real labels smoothed into [0.8, 1], checkpoints of both models
// and optimizers, and sample images saved as tensors.
//
//   libtorch_dcgan            the full run (kNumberOfEpochs epochs)
//   libtorch_dcgan --quick    a few dozen batches; exits non-zero unless the losses
//                             stayed finite and the discriminator tells held-out real
//                             images from fresh fakes better than chance
#include <nnvm/nnvm.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

// Where to find the MNIST-format IDX files (Fashion-MNIST here).
// port: Debian ships the files gzipped; nnvm's MNIST reads them as they are, libtorch's
// reads un-gzipped files only (run gunzip there first).
const char* kDataRoot = "/usr/share/datasets/fashion-mnist";

// The size of the noise vector fed to the generator.
const int64_t kNoiseSize = 100;

// The batch size for training.
const int64_t kBatchSize = 64;

// The number of epochs to train.
const int64_t kNumberOfEpochs = 30;

// After how many batches to create a new checkpoint periodically.
const int64_t kCheckpointEvery = 200;

// How many images to sample at every checkpoint.
const int64_t kNumberOfSamplesPerCheckpoint = 10;

// After how many batches to log a new update with the loss value.
const int64_t kLogInterval = 10;

// How many batches --quick trains on.
const int64_t kQuickBatches = 40;

// The width of the networks: the channels of the generator's last hidden layer
// and of the discriminator's first.
const int64_t kWidth = 16;

struct DCGANGeneratorImpl : nnvm::nn::Module {
  DCGANGeneratorImpl(int64_t noise_size, int64_t width)
      : conv1(nnvm::nn::ConvTranspose2dOptions(noise_size, width * 4, 4).bias(false)),
        batch_norm1(width * 4),
        conv2(nnvm::nn::ConvTranspose2dOptions(width * 4, width * 2, 3).stride(2).padding(1).bias(false)),
        batch_norm2(width * 2),
        conv3(nnvm::nn::ConvTranspose2dOptions(width * 2, width, 4).stride(2).padding(1).bias(false)),
        batch_norm3(width),
        conv4(nnvm::nn::ConvTranspose2dOptions(width, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }

  // [N, noise, 1, 1] -> [N, 4w, 4, 4] -> [N, 2w, 7, 7] -> [N, w, 14, 14] -> [N, 1, 28, 28]
  nnvm::Tensor forward(nnvm::Tensor x) {
    x = nnvm::relu(batch_norm1(conv1(x)));
    x = nnvm::relu(batch_norm2(conv2(x)));
    x = nnvm::relu(batch_norm3(conv3(x)));
    x = nnvm::tanh(conv4(x));
    return x;
  }

  nnvm::nn::ConvTranspose2d conv1;
  nnvm::nn::BatchNorm2d batch_norm1;
  nnvm::nn::ConvTranspose2d conv2;
  nnvm::nn::BatchNorm2d batch_norm2;
  nnvm::nn::ConvTranspose2d conv3;
  nnvm::nn::BatchNorm2d batch_norm3;
  nnvm::nn::ConvTranspose2d conv4;
};
NNVM_MODULE(DCGANGenerator);

nnvm::nn::Sequential make_discriminator(int64_t width) {
  using namespace nnvm::nn;
  // [N, 1, 28, 28] -> [N, w, 14, 14] -> [N, 2w, 7, 7] -> [N, 4w, 3, 3] -> [N, 1, 1, 1]
  return Sequential(
      Conv2d(Conv2dOptions(1, width, 4).stride(2).padding(1).bias(false)),
      LeakyReLU(LeakyReLUOptions().negative_slope(0.2)),
      Conv2d(Conv2dOptions(width, width * 2, 4).stride(2).padding(1).bias(false)),
      BatchNorm2d(width * 2),
      LeakyReLU(LeakyReLUOptions().negative_slope(0.2)),
      Conv2d(Conv2dOptions(width * 2, width * 4, 4).stride(2).padding(1).bias(false)),
      BatchNorm2d(width * 4),
      LeakyReLU(LeakyReLUOptions().negative_slope(0.2)),
      Conv2d(Conv2dOptions(width * 4, 1, 3).stride(1).padding(0).bias(false)),
      Sigmoid());
}

int main(int argc, const char* argv[]) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  nnvm::manual_seed(1);

  nnvm::Device device(nnvm::kCPU);
  if (nnvm::cuda::is_available()) {
    std::cout << "CUDA is available! Training on GPU." << std::endl;
    device = nnvm::Device(nnvm::kCUDA);
  }

  const std::filesystem::path images = std::filesystem::path(kDataRoot) / "train-images-idx3-ubyte";
  if (!std::filesystem::exists(images) && !std::filesystem::exists(images.string() + ".gz")) {
    std::cerr << "no MNIST-format data in " << kDataRoot
              << " (install Debian's dataset-fashion-mnist); skipping" << std::endl;
    return 77;
  }

  DCGANGenerator generator(kNoiseSize, kWidth);
  generator->to(device);
  nnvm::nn::Sequential discriminator = make_discriminator(kWidth);
  discriminator->to(device);

  // Images scaled to [-1, 1], the range of the generator's tanh.
  auto dataset = nnvm::data::datasets::MNIST(kDataRoot)
                     .map(nnvm::data::transforms::Normalize<>(0.5, 0.5))
                     .map(nnvm::data::transforms::Stack<>());
  const int64_t batches_per_epoch =
      static_cast<int64_t>(std::ceil(dataset.size().value() / static_cast<double>(kBatchSize)));
  auto data_loader = nnvm::data::make_data_loader(
      std::move(dataset), nnvm::data::DataLoaderOptions().batch_size(kBatchSize).workers(2));

  nnvm::optim::Adam generator_optimizer(
      generator->parameters(), nnvm::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));
  nnvm::optim::Adam discriminator_optimizer(
      discriminator->parameters(), nnvm::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));

  const int64_t epochs = quick ? 1 : kNumberOfEpochs;
  // --quick checkpoints once, at its last batch.
  const int64_t checkpoint_every = quick ? kQuickBatches : kCheckpointEvery;
  int64_t checkpoint_counter = 1;
  bool finite = true;
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    int64_t batch_index = 0;
    for (nnvm::data::Example<>& batch : *data_loader) {
      if (quick && batch_index == kQuickBatches) break;
      const int64_t batch_size = batch.data.size(0);

      // Train the discriminator on real images, with their labels smoothed
      // into [0.8, 1] so that it does not grow overconfident.
      discriminator->zero_grad();
      nnvm::Tensor real_images = batch.data.to(device);
      nnvm::Tensor real_labels = nnvm::empty(batch_size, device).uniform_(0.8, 1.0);
      nnvm::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
      nnvm::Tensor d_loss_real = nnvm::binary_cross_entropy(real_output, real_labels);
      d_loss_real.backward();

      // ... and on fakes, which it should label 0.
      nnvm::Tensor noise = nnvm::randn({batch_size, kNoiseSize, 1, 1}, device);
      nnvm::Tensor fake_images = generator->forward(noise);
      nnvm::Tensor fake_labels = nnvm::zeros(batch_size, device);
      nnvm::Tensor fake_output = discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
      nnvm::Tensor d_loss_fake = nnvm::binary_cross_entropy(fake_output, fake_labels);
      d_loss_fake.backward();

      nnvm::Tensor d_loss = d_loss_real + d_loss_fake;
      discriminator_optimizer.step();

      // Train the generator to make the discriminator label its fakes 1.
      generator->zero_grad();
      fake_labels.fill_(1);
      fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
      nnvm::Tensor g_loss = nnvm::binary_cross_entropy(fake_output, fake_labels);
      g_loss.backward();
      generator_optimizer.step();

      ++batch_index;
      if (batch_index % kLogInterval == 0) {
        const float d = d_loss.item<float>(), g = g_loss.item<float>();
        finite = finite && std::isfinite(d) && std::isfinite(g);
        std::printf("\r[%2ld/%2ld][%4ld/%4ld] D_loss: %.4f | G_loss: %.4f", epoch, epochs, batch_index,
                    batches_per_epoch, d, g);
        std::fflush(stdout);
      }

      if (batch_index % checkpoint_every == 0) {
        // Checkpoint the models and optimizers, and save a few samples.
        nnvm::save(generator, "dcgan-generator-checkpoint.pt");
        nnvm::save(generator_optimizer, "dcgan-generator-optimizer-checkpoint.pt");
        nnvm::save(discriminator, "dcgan-discriminator-checkpoint.pt");
        nnvm::save(discriminator_optimizer, "dcgan-discriminator-optimizer-checkpoint.pt");
        nnvm::Tensor samples = generator->forward(nnvm::randn({kNumberOfSamplesPerCheckpoint, kNoiseSize, 1, 1}, device));
        nnvm::save((samples + 1.0) / 2.0, nnvm::str("dcgan-sample-", checkpoint_counter, ".pt"));
        std::cout << "\n-> checkpoint " << ++checkpoint_counter << '\n';
      }
    }
    std::cout << std::endl;
  }

  // Has the discriminator learned anything? Score it on real images it has not
  // trained on (the test set) against fresh fakes: chance is 50%.
  nnvm::NoGradGuard no_grad;
  generator->eval();
  discriminator->eval();
  auto test_dataset = nnvm::data::datasets::MNIST(kDataRoot, nnvm::data::datasets::MNIST::Mode::kTest)
                          .map(nnvm::data::transforms::Normalize<>(0.5, 0.5))
                          .map(nnvm::data::transforms::Stack<>());
  auto test_loader = nnvm::data::make_data_loader<nnvm::data::samplers::SequentialSampler>(
      std::move(test_dataset), nnvm::data::DataLoaderOptions().batch_size(256));
  nnvm::Tensor real = (*test_loader->begin()).data.to(device);
  nnvm::Tensor fake = generator->forward(nnvm::randn({real.size(0), kNoiseSize, 1, 1}, device));
  const double real_right = (discriminator->forward(real) > 0.5).to(nnvm::kFloat).mean().item<double>();
  const double fake_right = (discriminator->forward(fake) < 0.5).to(nnvm::kFloat).mean().item<double>();
  const double accuracy = (real_right + fake_right) / 2;
  std::printf("Discriminator on held-out real vs fresh fake images: %.3f (real %.3f, fake %.3f)\n", accuracy,
              real_right, fake_right);

  if (!finite || accuracy < 0.6) {
    std::cerr << "the GAN did not learn: " << (finite ? "" : "a loss was not finite; ")
              << "discriminator accuracy " << accuracy << std::endl;
    return 1;
  }
  std::cout << "Training complete!" << std::endl;
  return 0;
}
