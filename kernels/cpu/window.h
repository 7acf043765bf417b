// One axis of a sliding window (convolution, pooling): output o's window
// reads input positions o·stride − pad + t·dilation for taps t < k, and only
// those inside [0, size) exist. Kernels work out which taps of a window, or
// which outputs of a tap, are inside once, so their inner loops test no
// bounds and run over contiguous ranges the compiler vectorises.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace nnvm::cpu {

struct WindowAxis {
  int64_t k, stride, pad, dil, size, outputs;

  // The taps of output o's window inside [0, size): [first, last).
  std::pair<int64_t, int64_t> taps(int64_t o) const {
    const int64_t start = o * stride - pad;
    const int64_t first = start >= 0 ? 0 : std::min(k, (-start + dil - 1) / dil);
    const int64_t last = start >= size ? 0 : std::min(k, (size - 1 - start) / dil + 1);
    return {first, std::max(first, last)};
  }
  // The outputs whose tap t is inside [0, size): [lo, hi).
  std::pair<int64_t, int64_t> outputs_of_tap(int64_t t) const {
    const int64_t shift = pad - t * dil;  // o·stride >= shift and o·stride <= size − 1 + shift
    const int64_t lo = std::max<int64_t>(0, floor_div(shift + stride - 1, stride));
    const int64_t hi = std::min(outputs, floor_div(size - 1 + shift, stride) + 1);
    return {lo, std::max(lo, hi)};
  }
  // The input position tap t of output o reads.
  int64_t at(int64_t o, int64_t t) const { return o * stride - pad + t * dil; }

 private:
  static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
};

// Calls f(step) with the step as a compile-time constant when it is 1 or 2
// (a contiguous row, a stride-2 window), so a loop over `i * step` in f
// becomes a plain or an interleaved access the compiler vectorises; any other
// step is passed as it is.
template <class F> void with_step(int64_t step, F f) {
  if (step == 1) f(std::integral_constant<int64_t, 1>());
  else if (step == 2) f(std::integral_constant<int64_t, 2>());
  else f(step);
}

}  // namespace nnvm::cpu
