// The four IDX files of MNIST and Fashion-MNIST, read for both data set
// classes (FashionMNIST, datasets::MNIST): one split as tensors, and one
// example of it.
#pragma once

#include <string>
#include <string_view>

#include "nnvm/data/example.h"

namespace nnvm::data {

struct MnistSplit {
  Tensor images;   // float32 [N, 1, 28, 28] in [0, 1]
  Tensor targets;  // int64 [N]
};

// Reads {train,t10k}-images-idx3-ubyte and -labels-idx1-ubyte from `root`,
// each plain or with a .gz suffix. Errors start with `op`; a missing file's
// error names both paths tried and ends with `missing_hint`.
MnistSplit read_mnist_split(const std::string& root, bool train, std::string_view op,
                            std::string_view missing_hint);

// Image `index` ([1, 28, 28]) and its label; nnvm::Error when out of range.
Example<> mnist_example(const MnistSplit& split, int64_t index, std::string_view op);

}  // namespace nnvm::data
