#include "mnist_files.h"

#include <filesystem>

#include "nnvm/core/functions.h"
#include "nnvm/data/idx.h"

namespace nnvm::data {
namespace {

constexpr int64_t kSide = 28, kClasses = 10;

// root/name, else root/name.gz.
std::string find_file(const std::string& root, const std::string& name, std::string_view op,
                      std::string_view missing_hint) {
  const std::filesystem::path plain = std::filesystem::path(root) / name;
  std::filesystem::path gz = plain;
  gz += ".gz";
  std::error_code ec;
  if (std::filesystem::is_regular_file(plain, ec)) return plain.string();
  if (std::filesystem::is_regular_file(gz, ec)) return gz.string();
  throw Error(detail::concat(op, ": neither ", plain.string(), " nor ", gz.string(), " exists (", missing_hint, ")"));
}

}  // namespace

MnistSplit read_mnist_split(const std::string& root, bool train, std::string_view op,
                            std::string_view missing_hint) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = find_file(root, prefix + "-images-idx3-ubyte", op, missing_hint);
  const std::string labels_path = find_file(root, prefix + "-labels-idx1-ubyte", op, missing_hint);
  const Tensor raw_images = read_idx_images(images_path);
  const Tensor raw_labels = read_idx_labels(labels_path);

  NNVM_CHECK(raw_images.size(1) == kSide && raw_images.size(2) == kSide, op, images_path, ": images of ",
             raw_images.size(1), "x", raw_images.size(2), ", expected ", kSide, "x", kSide);
  NNVM_CHECK(raw_images.size(0) == raw_labels.size(0), op, images_path, " holds ", raw_images.size(0),
             " images but ", labels_path, " holds ", raw_labels.size(0), " labels, expected the same count");
  const uint8_t* labels = raw_labels.data_ptr<uint8_t>();
  for (int64_t i = 0; i < raw_labels.numel(); ++i)
    NNVM_CHECK(labels[i] < kClasses, op, labels_path, ": label ", int(labels[i]), " at index ", i,
               ", expected 0..", kClasses - 1);

  return {raw_images.to(kFloat32).div_(255.0).unsqueeze(1), raw_labels.to(kInt64)};
}

Example<> mnist_example(const MnistSplit& split, int64_t index, std::string_view op) {
  const int64_t size = split.images.size(0);
  NNVM_CHECK(index >= 0 && index < size, op, "index ", index, " out of range, expected 0..", size - 1);
  return {split.images[index], split.targets[index]};
}

}  // namespace nnvm::data
