// A fixed-size list of ints given as one number or N (libtorch's
// ExpandingArray): Conv2dOptions(1, 32, 3) means kernel 3x3, {3, 5} means 3x5.
#pragma once

#include <array>
#include <initializer_list>

#include "nnvm/core/error.h"
#include "nnvm/core/shape.h"

namespace nnvm::nn {

template <size_t N> class ExpandingArray {
 public:
  ExpandingArray(int64_t value) { values_.fill(value); }  // NOLINT: implicit, like libtorch
  ExpandingArray(std::initializer_list<int64_t> values) {  // NOLINT
    NNVM_CHECK(values.size() == N, "ExpandingArray", "expected ", N, " values, got ", values.size());
    std::copy(values.begin(), values.end(), values_.begin());
  }
  ExpandingArray(const std::array<int64_t, N>& values) : values_(values) {}  // NOLINT

  operator IntArrayRef() const { return IntArrayRef(values_.data(), N); }  // NOLINT
  int64_t operator[](size_t i) const { return values_[i]; }
  const std::array<int64_t, N>& operator*() const { return values_; }
  bool operator==(const ExpandingArray&) const = default;

 private:
  std::array<int64_t, N> values_{};
};

}  // namespace nnvm::nn
