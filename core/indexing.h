// libtorch's tensor indexing (torch::indexing): x.index({Slice(), 0}),
// x.index({"...", None}), x.index_put_({mask}, 0). An index list reads as
// Python's x[:, 0]: integers select (the dim goes), Slices keep a strided
// range, None inserts a dim of size 1, Ellipsis stands for the dims no other
// index names, and tensors are advanced indices: integer tensors, broadcast
// together, each indexing one dim, and bool masks, each indexing as many dims
// as it has, read as the integer indices of its true elements (nonzero).
// As in libtorch, a bool (or a 0-dim bool tensor) inserts a dim of size 1 and
// indexes it with the advanced index [0] (true) or [] (false), so it
// broadcasts with the other tensor indices, and a 0-dim integer tensor is an
// integer. Integers, Slices and None make views; tensor indices copy.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "nnvm/core/tensor.h"

namespace nnvm::indexing {

// None is std::nullopt, as libtorch's is c10::nullopt: Slice(1, None, 2) reads
// as Python's 1::2.
inline constexpr std::nullopt_t None = std::nullopt;
struct EllipsisIndex {};
inline constexpr EllipsisIndex Ellipsis{};

// start:stop:step, each optional as in Python (Slice() is `:`).
struct Slice {
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start(start), stop(stop), step(step) {}
  std::optional<int64_t> start, stop, step;
};

class TensorIndex {
 public:
  TensorIndex(std::nullopt_t) : v_(std::monostate{}) {}  // NOLINT: implicit, as libtorch's
  TensorIndex(EllipsisIndex) : v_(EllipsisIndex{}) {}   // NOLINT
  TensorIndex(const char* s);                           // NOLINT: "..." is Ellipsis
  TensorIndex(int64_t i) : v_(i) {}                     // NOLINT
  TensorIndex(int i) : v_(int64_t(i)) {}                // NOLINT
  TensorIndex(bool b) : v_(b) {}                        // NOLINT
  TensorIndex(Slice s) : v_(s) {}                       // NOLINT
  TensorIndex(Tensor t) : v_(std::move(t)) {}           // NOLINT

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_ellipsis() const { return std::holds_alternative<EllipsisIndex>(v_); }
  bool is_integer() const { return std::holds_alternative<int64_t>(v_); }
  bool is_boolean() const { return std::holds_alternative<bool>(v_); }
  bool is_slice() const { return std::holds_alternative<Slice>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  int64_t integer() const { return std::get<int64_t>(v_); }
  bool boolean() const { return std::get<bool>(v_); }
  const Slice& slice() const { return std::get<Slice>(v_); }
  const Tensor& tensor() const { return std::get<Tensor>(v_); }
  // "0", "::2", "None", "...", "tensor[3]" (for error messages)
  std::string str() const;

 private:
  std::variant<std::monostate, EllipsisIndex, int64_t, bool, Slice, Tensor> v_;
};

}  // namespace nnvm::indexing
