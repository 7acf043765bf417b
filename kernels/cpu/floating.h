// Dispatch for kernels defined on floating dtypes only (norms, losses,
// dropout): the storage type S of the data and the type T they compute in,
// float for float16/bfloat16/float32 and double for float64.
#pragma once

#include <type_traits>

#include "nnvm/core/dtype.h"
#include "nnvm/core/error.h"
#include "nnvm/core/tensor.h"

namespace nnvm::cpu {

template <class S> using compute_t = std::conditional_t<std::is_same_v<S, double>, double, float>;

// Calls fn(S{}) for the storage type of floating dtype `t`.
template <class Fn> void dispatch_floating(DType t, std::string_view op, Fn&& fn) {
  switch (t) {
    case kFloat16: return fn(Half{});
    case kBFloat16: return fn(BFloat16{});
    case kFloat32: return fn(float{});
    case kFloat64: return fn(double{});
    default: throw Error(detail::concat(op, ": expected a floating dtype but got ", t));
  }
}

// A small parameter tensor (weight, bias, statistics) as a contiguous tensor of T.
template <class T> Tensor contiguous_as(const Tensor& t) { return t.to(dtype_of_v<T>).contiguous(); }

}  // namespace nnvm::cpu
