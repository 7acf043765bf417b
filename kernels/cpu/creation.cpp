// CPU kernels of the creation, copy and random ops declared in core/ops/creation.cpp.
#include <cmath>

#include "nnvm/core/functions.h"
#include "nnvm/core/generator.h"
#include "nnvm/core/op.h"
#include "nnvm/kernels/cpu/loops.h"
#include "nnvm/kernels/cpu/quantize.h"

namespace nnvm::cpu {

namespace {

// Writes f(i) for each linear index i of a contiguous output.
template <class F> void fill_indexed(const Tensor& out, F f) {
  NNVM_DISPATCH_ALL(out.dtype(), "fill", [&] {
    scalar_t* p = static_cast<scalar_t*>(out.data_ptr());
    parallel_for(0, out.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = f(i, scalar_t{});
    });
  });
}

// The two random words of element i of an op that reserved (seed, counter).
std::pair<uint32_t, uint32_t> words(uint64_t seed, uint64_t counter, int64_t i) {
  const auto w = philox4x32(seed, counter + uint64_t(i) / 2);
  return (i & 1) ? std::pair{w[2], w[3]} : std::pair{w[0], w[1]};
}

void full_kernel(absl::Span<const Tensor>, absl::Span<const Tensor> out, const Attrs& a) {
  const Scalar v = a.s(2);
  with_compute_type(out[0].dtype(), [&](auto t) {
    using T = decltype(t);
    const T value = convert<T>(v.to<std::conditional_t<std::is_same_v<T, bool>, int64_t, T>>());
    pointwise<T, 0>(out[0], {}, [value] { return value; });
  });
}

void copy_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  if (is_quantized(in[0].dtype()) || is_quantized(out[0].dtype())) [[unlikely]]  // the integers
    return copy_kernel({int_view(in[0])}, {int_view(out[0])}, a);
  with_compute_type(out[0].dtype(), [&](auto t) {
    using T = decltype(t);
    pointwise<T, 1>(out[0], {&in[0]}, [](T x) { return x; });
  });
}

void arange_kernel(absl::Span<const Tensor>, absl::Span<const Tensor> out, const Attrs& a) {
  const double start = a.d(2), step = a.d(3);
  fill_indexed(out[0], [&](int64_t i, auto z) { return convert<decltype(z)>(start + double(i) * step); });
}

void linspace_kernel(absl::Span<const Tensor>, absl::Span<const Tensor> out, const Attrs& a) {
  const double start = a.d(2), end = a.d(3);
  const int64_t n = out[0].numel();
  const double step = n > 1 ? (end - start) / double(n - 1) : 0.0;
  // Fill symmetrically from both ends so the last value is exactly `end`.
  fill_indexed(out[0], [&](int64_t i, auto z) {
    const double v = i < n / 2 ? start + step * double(i) : end - step * double(n - 1 - i);
    return convert<decltype(z)>(v);
  });
}

void eye_kernel(absl::Span<const Tensor>, absl::Span<const Tensor> out, const Attrs&) {
  const int64_t cols = out[0].size(1);
  fill_indexed(out[0], [&](int64_t i, auto z) { return convert<decltype(z)>(i / cols == i % cols ? 1 : 0); });
}

void uniform_kernel(absl::Span<const Tensor>, absl::Span<const Tensor> out, const Attrs& a) {
  const uint64_t seed = uint64_t(a.s(2).to_int()), counter = uint64_t(a.s(3).to_int());
  const double low = a.d(4), high = a.d(5);
  const bool f64 = out[0].dtype() == kFloat64;
  fill_indexed(out[0], [&](int64_t i, auto z) {
    const auto [w0, w1] = words(seed, counter, i);
    const double u = f64 ? uniform_double(w0, w1) : double(uniform_float(w0));
    return convert<decltype(z)>(low + (high - low) * u);
  });
}

// Box-Muller: one normal from the element's two words.
void normal_kernel(absl::Span<const Tensor>, absl::Span<const Tensor> out, const Attrs& a) {
  const uint64_t seed = uint64_t(a.s(2).to_int()), counter = uint64_t(a.s(3).to_int());
  fill_indexed(out[0], [&](int64_t i, auto z) {
    const auto [w0, w1] = words(seed, counter, i);
    const double u1 = (double(w0) + 1.0) * (1.0 / 4294967296.0);  // (0, 1]: log is finite
    const double u2 = double(w1) * (1.0 / 4294967296.0);
    return convert<decltype(z)>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  });
}

void randint_kernel(absl::Span<const Tensor>, absl::Span<const Tensor> out, const Attrs& a) {
  const uint64_t seed = uint64_t(a.s(2).to_int()), counter = uint64_t(a.s(3).to_int());
  const int64_t low = a.s(4).to_int();
  const uint64_t range = uint64_t(a.s(5).to_int() - low);
  fill_indexed(out[0], [&](int64_t i, auto z) {
    const auto [w0, w1] = words(seed, counter, i);
    const uint64_t r = ((uint64_t(w0) << 32) | w1) % range;
    return convert<decltype(z)>(low + int64_t(r));
  });
}

void bernoulli_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const uint64_t seed = uint64_t(a.s(0).to_int()), counter = uint64_t(a.s(1).to_int());
  const Tensor p = in[0].to(kFloat64).contiguous();
  const double* pp = p.data_ptr<double>();
  for (int64_t i = 0; i < p.numel(); ++i)
    NNVM_CHECK(pp[i] >= 0 && pp[i] <= 1, "bernoulli", "probability ", pp[i], " at index ", i,
               " is outside [0, 1]");
  const Tensor dst = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), out[0].dtype());
  fill_indexed(dst, [&](int64_t i, auto z) {
    const auto [w0, w1] = words(seed, counter, i);
    return convert<decltype(z)>(uniform_double(w0, w1) < pp[i] ? 1 : 0);
  });
  if (!dst.is_same(out[0])) copy_kernel({dst}, out, {});
}

}  // namespace

NNVM_REGISTER(cpu_creation_kernels) {
  register_kernel("full", kCPU, full_kernel);
  register_kernel("copy", kCPU, copy_kernel);
  register_kernel("arange", kCPU, arange_kernel);
  register_kernel("linspace", kCPU, linspace_kernel);
  register_kernel("eye", kCPU, eye_kernel);
  register_kernel("uniform", kCPU, uniform_kernel);
  register_kernel("normal", kCPU, normal_kernel);
  register_kernel("randint", kCPU, randint_kernel);
  register_kernel("bernoulli", kCPU, bernoulli_kernel);
}

}  // namespace nnvm::cpu
