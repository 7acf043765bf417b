// libtorch's spellings of the types its data API passes around
// (torch::ArrayRef, torch::optional), so datasets written for libtorch port
// with a namespace change: nnvm::optional<size_t> size() const override.
#pragma once

#include <optional>

#include "absl/types/span.h"

namespace nnvm {

template <class T> using ArrayRef = absl::Span<const T>;
using std::nullopt;
using std::optional;

}  // namespace nnvm
