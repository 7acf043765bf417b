// CPU kernel of dropout (core/ops/nn.cpp): inverted dropout, kept values
// scaled by 1 / (1 - p).
//
// The mask follows the counter-based scheme of the random ops in
// kernels/cpu/creation.cpp: element i (row-major) uses the Philox block
// (seed, counter + i / 2), words 0-1 or 2-3, and is kept when the uniform
// double they make is below 1 - p, exactly as bernoulli(1 - p) draws. The mask
// is a pure function of (seed, counter, i), whatever the thread count.
#include "nnvm/core/generator.h"
#include "nnvm/core/op.h"
#include "nnvm/kernels/cpu/floating.h"
#include "nnvm/kernels/cpu/loops.h"

namespace nnvm::cpu {

namespace {

// attrs: p, seed, counter
void dropout_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor x = in[0].contiguous();
  const double keep = 1.0 - a.d(0);
  const uint64_t seed = uint64_t(a.s(1).to_int()), counter = uint64_t(a.s(2).to_int());
  dispatch_floating(x.dtype(), "dropout", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const T scale = keep > 0 ? T(1.0 / keep) : T(0);
    const S* px = x.data_ptr<S>();
    S* py = out[0].data_ptr<S>();
    parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const auto w = philox4x32(seed, counter + uint64_t(i) / 2);
        const bool kept = (i & 1) ? uniform_double(w[2], w[3]) < keep : uniform_double(w[0], w[1]) < keep;
        py[i] = convert<S>(kept ? convert<T>(px[i]) * scale : T(0));
      }
    });
  });
}

}  // namespace

NNVM_REGISTER(cpu_dropout_kernels) { register_kernel("dropout", kCPU, dropout_kernel); }

}  // namespace nnvm::cpu
