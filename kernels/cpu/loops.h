// The strided loop every reference pointwise kernel runs on (libtorch calls
// its version TensorIterator).
//
// A loop has one output and N inputs. Inputs are broadcast to the output's
// shape (stride 0 on broadcast dims), adjacent dims that are contiguous for
// every operand are merged, and the element range is split over the thread
// pool. The innermost run is processed in chunks of kChunk elements: an operand
// that is already the compute type and unit-stride is read in place, any other
// (strided, broadcast, another dtype) is first converted into a small buffer,
// so the arithmetic itself is always a unit-stride loop the compiler vectorises.
#pragma once

#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#include <algorithm>
#include <vector>

#include "nnvm/core/dtype.h"
#include "nnvm/core/tensor.h"
#include "nnvm/core/thread_pool.h"

namespace nnvm::cpu {

inline constexpr int64_t kChunk = 256;
inline constexpr int64_t kGrain = 32768;  // elements per parallel task
inline constexpr size_t kMaxOperands = 8;

// The sum of term(0..n) over fixed blocks of kSumBlock terms added in
// parallel, the block sums then added in order: the same value for every
// thread count (the loss kernels and their JIT twins share it).
inline constexpr int64_t kSumBlock = 4096;
template <class T, class F> T ordered_sum(int64_t n, F term) {
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<T> partial(static_cast<size_t>(blocks));
  parallel_for(0, blocks, std::max<int64_t>(1, kGrain / kSumBlock), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      T sum = 0;
      for (int64_t i = b * kSumBlock, e = std::min(n, i + kSumBlock); i < e; ++i) sum += term(i);
      partial[size_t(b)] = sum;
    }
  });
  T total = 0;
  for (T v : partial) total += v;
  return total;
}

// ---- element conversion ----
template <class To, class From> inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(float(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(float(v));
  } else {
    return static_cast<To>(v);
  }
}

// The type reference kernels compute in for a dtype: float for every float
// type up to 32 bits, double for float64, int64 for integers, bool for bool.
template <class Fn> decltype(auto) with_compute_type(DType t, Fn&& fn) {
  switch (t) {
    case kBool: return fn(bool{});
    case kUInt8: case kInt8: case kInt32: case kInt64: return fn(int64_t{});
    case kFloat16: case kBFloat16: case kFloat32: return fn(float{});
    case kFloat64: return fn(double{});
    case kQInt8: case kQUInt8: case kQInt32: break;  // kernels read their integers (kernels/cpu/quantize.h)
  }
  return fn(float{});
}

inline char* data_bytes(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

// Reads m elements of dtype `dt` at byte stride `stride` into buf as T.
// A contiguous run (a bool mask read as float) has a loop of its own, which
// the compiler vectorises; the byte-strided one it does not.
template <class T> void gather(T* buf, const char* p, int64_t stride, int64_t m, DType dt) {
  NNVM_DISPATCH_ALL(dt, "load", [&] {
    const scalar_t* src = reinterpret_cast<const scalar_t*>(p);
    if (stride == 0) {
      const T v = convert<T>(*src);
      for (int64_t j = 0; j < m; ++j) buf[j] = v;
    } else if (stride == int64_t(sizeof(scalar_t))) {
      for (int64_t j = 0; j < m; ++j) buf[j] = convert<T>(src[j]);
    } else {
      for (int64_t j = 0; j < m; ++j) buf[j] = convert<T>(*reinterpret_cast<const scalar_t*>(p + j * stride));
    }
  });
}

// Writes m values of buf as dtype `dt` at byte stride `stride`.
template <class T> void scatter(const T* buf, char* p, int64_t stride, int64_t m, DType dt) {
  NNVM_DISPATCH_ALL(dt, "store", [&] {
    if (stride == int64_t(sizeof(scalar_t))) {
      scalar_t* dst = reinterpret_cast<scalar_t*>(p);
      for (int64_t j = 0; j < m; ++j) dst[j] = convert<scalar_t>(buf[j]);
    } else {
      for (int64_t j = 0; j < m; ++j) *reinterpret_cast<scalar_t*>(p + j * stride) = convert<scalar_t>(buf[j]);
    }
  });
}

// Shape and byte strides of a loop over one output and its inputs.
struct StridedLoop {
  DimVector shape;
  size_t num_operands = 0;  // operand 0 is the output
  std::array<char*, kMaxOperands> base{};
  std::array<DType, kMaxOperands> dtype{};
  absl::InlinedVector<int64_t, 24> strides;  // bytes: operand k's dims at [k * rank, (k + 1) * rank)

  StridedLoop(const Tensor& out, absl::Span<const Tensor* const> inputs);
  int64_t numel() const { return numel_of(shape); }
  const int64_t* strides_of(size_t k) const { return strides.data() + k * shape.size(); }
};

// Calls body(ptrs, inner_strides, n) for each innermost run of the elements
// [begin, end) in row-major order of the loop's shape.
template <class Body> void for_each_run(const StridedLoop& L, int64_t begin, int64_t end, Body&& body) {
  const size_t nops = L.num_operands;
  std::array<char*, kMaxOperands> ptrs{};
  std::array<int64_t, kMaxOperands> inner{};
  const int nd = int(L.shape.size());
  if (nd == 0) {
    for (size_t k = 0; k < nops; ++k) ptrs[k] = L.base[k];
    if (begin < end) body(ptrs.data(), inner.data(), int64_t(1));
    return;
  }
  DimVector idx(nd);
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % L.shape[d];
    rem /= L.shape[d];
  }
  for (size_t k = 0; k < nops; ++k) {
    ptrs[k] = L.base[k];
    for (int d = 0; d < nd; ++d) ptrs[k] += idx[d] * L.strides_of(k)[d];
    inner[k] = L.strides_of(k)[nd - 1];
  }
  const int64_t n_inner = L.shape[nd - 1];
  for (int64_t pos = begin; pos < end;) {
    const int64_t n = std::min(n_inner - idx[nd - 1], end - pos);
    body(ptrs.data(), inner.data(), n);
    pos += n;
    idx[nd - 1] += n;
    for (size_t k = 0; k < nops; ++k) ptrs[k] += n * inner[k];
    if (idx[nd - 1] < n_inner || pos >= end) continue;
    for (size_t k = 0; k < nops; ++k) ptrs[k] -= n_inner * inner[k];
    idx[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < nops; ++k) ptrs[k] += L.strides_of(k)[d];
      if (idx[d] < L.shape[d]) break;
      for (size_t k = 0; k < nops; ++k) ptrs[k] -= L.shape[d] * L.strides_of(k)[d];
      idx[d] = 0;
    }
  }
}

namespace detail {
template <class T, class F, size_t... I>
inline auto apply_at(F& f, const T* const* src, [[maybe_unused]] int64_t j, std::index_sequence<I...>) {
  return f(src[I][j]...);
}
}  // namespace detail

// out[i] = f(in_0[i], ..., in_{N-1}[i]) with every input read as T; the result
// type of f (T, or bool for predicates) is converted to out's dtype on store.
// Inputs broadcast to out's shape; out may be any strided view, and may be one
// of the inputs (same layout). An f with a member run(src, dst, m) computes
// each run of m elements itself (dst[j] from src[0][j], ..., src[N-1][j]; dst
// may be one of the src), as f(...) element by element would: sin and cos
// test a run for arguments their vectorised loop leaves to libm.
template <class T, size_t N, class F>
void pointwise(const Tensor& out, std::array<const Tensor*, N> inputs, F f) {
  using R = decltype(detail::apply_at<T>(f, static_cast<const T* const*>(nullptr), 0,
                                         std::make_index_sequence<N>{}));
  if (out.numel() == 0) return;
  const StridedLoop loop(out, absl::MakeConstSpan(inputs.data(), N));
  parallel_for(0, loop.numel(), kGrain, [&](int64_t begin, int64_t end) {
    // A copy of its own: the caller's f is reached through a reference, so a
    // value it captured (an alpha, a fill value of type T) might be what a
    // store to dst overwrites, and the compiler would reload it every
    // element and not vectorise. Nothing can store into a local whose
    // address is never taken.
    const F fn = f;
    alignas(64) T buf[N == 0 ? 1 : N][kChunk];
    alignas(64) R obuf[kChunk];
    for_each_run(loop, begin, end, [&](char** ptrs, const int64_t* strides, int64_t n) {
      for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const int64_t m = std::min(kChunk, n - j0);
        const T* src[N == 0 ? 1 : N];
        for (size_t k = 0; k < N; ++k) {
          const char* p = ptrs[k + 1] + j0 * strides[k + 1];
          if (loop.dtype[k + 1] == dtype_of_v<T> && strides[k + 1] == int64_t(sizeof(T))) {
            src[k] = reinterpret_cast<const T*>(p);
          } else {
            gather<T>(buf[k], p, strides[k + 1], m, loop.dtype[k + 1]);
            src[k] = buf[k];
          }
        }
        char* po = ptrs[0] + j0 * strides[0];
        const bool direct = loop.dtype[0] == dtype_of_v<R> && strides[0] == int64_t(sizeof(R));
        R* dst = direct ? reinterpret_cast<R*>(po) : obuf;
        if constexpr (requires { fn.run(src, dst, m); })
          fn.run(src, dst, m);  // a function with a loop of its own (see pointwise's comment)
        else
          for (int64_t j = 0; j < m; ++j) dst[j] = detail::apply_at<T>(fn, src, j, std::make_index_sequence<N>{});
        if (!direct) scatter<R>(obuf, po, strides[0], m, loop.dtype[0]);
      }
    });
  });
}

}  // namespace nnvm::cpu
