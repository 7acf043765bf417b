// Reader for the IDX format of MNIST-style data sets (LeCun's page): a
// big-endian header — two zero bytes, a type code, the rank, then one uint32
// size per dim — followed by the row-major elements, also big-endian. Files
// may be plain or gzip-compressed; the content decides, not the name.
#pragma once

#include <string>

#include "nnvm/core/tensor.h"

namespace nnvm::data {

// Any IDX file: type codes 0x08 (uint8), 0x09 (int8), 0x0C (int32),
// 0x0D (float32) and 0x0E (float64), any rank >= 1.
// Throws nnvm::Error naming the file for a missing or unreadable file, a bad
// magic number, an unsupported type, a truncated body or trailing bytes.
Tensor read_idx(const std::string& path);

// idx3 unsigned-byte images (magic 0x00000803): uint8 [count, rows, cols].
Tensor read_idx_images(const std::string& path);
// idx1 unsigned-byte labels (magic 0x00000801): uint8 [count].
Tensor read_idx_labels(const std::string& path);

}  // namespace nnvm::data
