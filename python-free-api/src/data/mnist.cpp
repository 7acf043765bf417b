#include "nnvm/data/datasets/mnist.h"

#include "mnist_files.h"

namespace nnvm::data::datasets {

MNIST::MNIST(const std::string& root, Mode mode) : mode_(mode) {
  MnistSplit split = read_mnist_split(root, mode == Mode::kTrain, "MNIST",
                                      "expected the directory holding the four IDX files of MNIST or Fashion-MNIST");
  images_ = std::move(split.images);
  targets_ = std::move(split.targets);
}

Example<> MNIST::get(size_t index) { return mnist_example({images_, targets_}, int64_t(index), "MNIST::get"); }

std::optional<size_t> MNIST::size() const { return size_t(images_.size(0)); }

}  // namespace nnvm::data::datasets
