#include "nnvm/data/fashion_mnist.h"

#include <filesystem>

#include "nnvm/core/functions.h"
#include "nnvm/data/idx.h"

namespace nnvm::data {
namespace {

constexpr int64_t kSide = 28, kClasses = 10;

// root/name, else root/name.gz.
std::string find_file(const std::string& root, const std::string& name) {
  const std::filesystem::path plain = std::filesystem::path(root) / name;
  std::filesystem::path gz = plain;
  gz += ".gz";
  std::error_code ec;
  if (std::filesystem::is_regular_file(plain, ec)) return plain.string();
  if (std::filesystem::is_regular_file(gz, ec)) return gz.string();
  throw Error(detail::concat("FashionMNIST: neither ", plain.string(), " nor ", gz.string(),
                             " exists (install the Debian package dataset-fashion-mnist or pass the directory "
                             "holding the IDX files)"));
}

}  // namespace

FashionMNIST::FashionMNIST(const std::string& root, Mode mode) : mode_(mode) {
  const std::string prefix = mode == Mode::kTrain ? "train" : "t10k";
  const std::string images_path = find_file(root, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(root, prefix + "-labels-idx1-ubyte");
  const Tensor raw_images = read_idx_images(images_path);
  const Tensor raw_labels = read_idx_labels(labels_path);

  NNVM_CHECK(raw_images.size(1) == kSide && raw_images.size(2) == kSide, "FashionMNIST", images_path,
             ": images of ", raw_images.size(1), "x", raw_images.size(2), ", expected ", kSide, "x", kSide);
  NNVM_CHECK(raw_images.size(0) == raw_labels.size(0), "FashionMNIST", images_path, " holds ",
             raw_images.size(0), " images but ", labels_path, " holds ", raw_labels.size(0),
             " labels, expected the same count");
  const uint8_t* labels = raw_labels.data_ptr<uint8_t>();
  for (int64_t i = 0; i < raw_labels.numel(); ++i)
    NNVM_CHECK(labels[i] < kClasses, "FashionMNIST", labels_path, ": label ", int(labels[i]), " at index ", i,
               ", expected 0..", kClasses - 1);

  images_ = raw_images.to(kFloat32).div_(255.0).unsqueeze(1);
  targets_ = raw_labels.to(kInt64);
}

FashionMNIST& FashionMNIST::normalize(double mean, double std) {
  NNVM_CHECK(std > 0, "FashionMNIST::normalize", "std ", std, ", expected > 0");
  images_ = (images_ - mean) / std;
  return *this;
}

Example FashionMNIST::get(int64_t index) const {
  NNVM_CHECK(index >= 0 && index < size(), "FashionMNIST::get", "index ", index, " out of range, expected 0..",
             size() - 1);
  return {images_[index], targets_[index]};
}

}  // namespace nnvm::data
