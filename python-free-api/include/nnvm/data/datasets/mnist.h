// MNIST-format image sets as a Dataset (libtorch's datasets::MNIST): the
// four IDX files {train,t10k}-{images-idx3,labels-idx1}-ubyte of LeCun's
// MNIST or of Fashion-MNIST (same names and layout), plain or gzipped.
//
//   datasets::MNIST train(data::FashionMNIST::kDefaultRoot);  // Debian's dataset-fashion-mnist
//   auto ds = train.map(transforms::Normalize<>(0.2860, 0.3530)).map(transforms::Stack<>());
#pragma once

#include <string>

#include "nnvm/data/datasets/base.h"

namespace nnvm::data::datasets {

class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };

  // Throws nnvm::Error naming the path for a missing or malformed file,
  // images that are not 28x28, labels outside 0..9 or counts that differ.
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

  // Image `index` as float32 [1, 28, 28] in [0, 1] and its label as an int64 scalar.
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;

  bool is_train() const noexcept { return mode_ == Mode::kTrain; }
  const Tensor& images() const { return images_; }    // float32 [N, 1, 28, 28]
  const Tensor& targets() const { return targets_; }  // int64 [N]

 private:
  Mode mode_;
  Tensor images_, targets_;
};

}  // namespace nnvm::data::datasets
