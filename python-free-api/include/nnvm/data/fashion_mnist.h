// Fashion-MNIST (Xiao et al., 2017): 60,000 training and 10,000 test 28x28
// grey images of clothing in 10 classes, read from the four IDX files of the
// original release, plain or gzipped. The Debian package dataset-fashion-mnist
// installs them under kDefaultRoot. Mirrors libtorch's datasets::MNIST.
#pragma once

#include <string>

#include "nnvm/data/example.h"

namespace nnvm::data {

class FashionMNIST {
 public:
  enum class Mode { kTrain, kTest };

  static constexpr const char* kDefaultRoot = "/usr/share/datasets/fashion-mnist";
  static constexpr const char* kClassNames[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  // Mean and standard deviation of the training images' pixels in [0, 1].
  static constexpr double kMean = 0.2860, kStd = 0.3530;

  // Reads {train,t10k}-images-idx3-ubyte and -labels-idx1-ubyte from `root`,
  // each plain or with a .gz suffix. Throws nnvm::Error naming the file for a
  // missing or malformed file, images that are not 28x28, labels outside 0..9,
  // or image and label counts that differ.
  explicit FashionMNIST(const std::string& root = kDefaultRoot, Mode mode = Mode::kTrain);

  // Replaces the images by (x - mean) / std; returns *this for chaining.
  FashionMNIST& normalize(double mean = kMean, double std = kStd);

  // Image `index` as float32 [1, 28, 28] and its label as an int64 scalar.
  Example<> get(int64_t index) const;
  int64_t size() const { return images_.size(0); }
  bool is_train() const { return mode_ == Mode::kTrain; }
  const Tensor& images() const { return images_; }    // float32 [N, 1, 28, 28], in [0, 1] unless normalized
  const Tensor& targets() const { return targets_; }  // int64 [N]

 private:
  Mode mode_;
  Tensor images_, targets_;
};

}  // namespace nnvm::data
