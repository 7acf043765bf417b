// The layout of an int8 matrix packed for the INT8 GEMM's dot-product units
// (kernels/cpu/gemm_int8.h): panels of kInt8PanelCols columns; within a
// panel, k in quads, each quad a row of kInt8PanelCols × 4 bytes holding
// each column's four k values side by side; columns past n and k past the
// last quad are zero. Here, below the kernels, because a packed weight is a
// tensor the op table checks ("quantized_linear_dynamic").
#pragma once

#include <cstdint>

namespace nnvm {

inline constexpr int64_t kInt8PanelCols = 32;
// int32 sums of k products of |uint8 · int8| < 2^15 are exact up to 2^16 terms.
inline constexpr int64_t kInt8MaxK = int64_t(1) << 16;

// Bytes of a k × n matrix packed.
inline constexpr int64_t int8_packed_bytes(int64_t k, int64_t n) {
  return (n + kInt8PanelCols - 1) / kInt8PanelCols * ((k + 3) / 4) * kInt8PanelCols * 4;
}

}  // namespace nnvm
