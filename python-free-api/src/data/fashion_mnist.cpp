#include "nnvm/data/fashion_mnist.h"

#include "mnist_files.h"
#include "nnvm/core/functions.h"

namespace nnvm::data {

FashionMNIST::FashionMNIST(const std::string& root, Mode mode) : mode_(mode) {
  MnistSplit split = read_mnist_split(root, mode == Mode::kTrain, "FashionMNIST",
                                      "install the Debian package dataset-fashion-mnist or pass the directory "
                                      "holding the IDX files");
  images_ = std::move(split.images);
  targets_ = std::move(split.targets);
}

FashionMNIST& FashionMNIST::normalize(double mean, double std) {
  NNVM_CHECK(std > 0, "FashionMNIST::normalize", "std ", std, ", expected > 0");
  images_ = (images_ - mean) / std;
  return *this;
}

Example<> FashionMNIST::get(int64_t index) const {
  return mnist_example({images_, targets_}, index, "FashionMNIST::get");
}

}  // namespace nnvm::data
