// CPU kernels of the one-pass reductions declared in core/ops/reduce.cpp (sum,
// mean, prod, the extrema and their indices, all/any, norm), and the layouts
// of kernels/cpu/reduce.h.
#include "nnvm/kernels/cpu/reduce.h"

#include <cstring>
#include <type_traits>

namespace nnvm::cpu {

DType compute_dtype(DType t) {
  switch (t) {
    case kBool: return kBool;
    case kUInt8: case kInt8: case kInt32: case kInt64: return kInt64;
    case kFloat64: return kFloat64;
    default: return kFloat32;
  }
}

ReduceLayout reduce_layout(const Tensor& x, IntArrayRef dims, DType compute, bool gather) {
  const Tensor c = x.to(compute).contiguous();
  auto reduced = [&](int64_t d) { return std::binary_search(dims.begin(), dims.end(), d); };
  int64_t kept = 1, red = 1, before = 1, after = 1;
  int groups = 0;
  bool in_group = false;
  for (int64_t d = 0; d < c.dim(); ++d) {
    const int64_t s = c.size(d);
    if (reduced(d)) red *= s;
    else kept *= s;
    if (s == 1) continue;  // size-1 dims neither split nor join groups
    if (reduced(d)) {
      groups += !in_group;
      in_group = true;
    } else {
      (groups == 0 ? before : after) *= s;
      in_group = false;
    }
  }
  if (c.numel() == 0) return {c, kept, red, 1};  // no data is read
  if (groups <= 1) return {c, before, red, after};
  if (gather) {
    // Dims of size 1 left out; adjacent reduced dims of one block merged.
    ReduceLayout L{c, kept, red, 1};
    for (int64_t d = 0; d < c.dim(); ++d) {
      if (c.size(d) == 1) continue;
      DimVector& sizes = reduced(d) ? L.red_sizes : L.kept_sizes;
      DimVector& strides = reduced(d) ? L.red_strides : L.kept_strides;
      if (reduced(d) && !sizes.empty() && strides.back() == c.size(d) * c.stride(d)) {  // nothing between
        sizes.back() *= c.size(d);
        strides.back() = c.stride(d);
        continue;
      }
      sizes.push_back(c.size(d));
      strides.push_back(c.stride(d));
    }
    return L;
  }
  DimVector order;
  for (int64_t d = 0; d < c.dim(); ++d)
    if (!reduced(d)) order.push_back(d);
  for (int64_t d : dims) order.push_back(d);
  return {c.permute(order).contiguous(), kept, red, 1};
}

ReduceLayout dim_layout(const Tensor& x, int64_t dim, DType compute) {
  const Tensor c = x.to(compute).contiguous();
  ReduceLayout L{c};
  for (int64_t d = 0; d < c.dim(); ++d) {
    if (d < dim) L.outer *= c.size(d);
    else if (d == dim) L.reduced = c.size(d);
    else L.inner *= c.size(d);
  }
  return L;
}

namespace {

template <class T> struct ProdReducer {
  using acc_t = acc_of<T>;
  acc_t init() const { return acc_t(1); }
  acc_t step(acc_t a, T x, int64_t) const { return merge(a, acc_t(x)); }
  acc_t merge(acc_t a, acc_t b) const {
    if constexpr (std::is_same_v<acc_t, bool>) return a && b;
    else if constexpr (std::is_integral_v<acc_t>)  // wraps on overflow, as torch's does (unsigned: defined)
      return acc_t(std::make_unsigned_t<acc_t>(a) * std::make_unsigned_t<acc_t>(b));
    else return a * b;
  }
};

template <bool kAll> struct AllReducer {
  using acc_t = bool;
  bool init() const { return kAll; }
  bool step(bool a, bool x, int64_t) const { return kAll ? a && x : a || x; }
  bool merge(bool a, bool b) const { return step(a, b, 0); }
};

enum class Norm { Zero, One, Two, Inf, NegInf, P };

template <class T, Norm kind> struct NormReducer {
  using acc_t = double;
  double p;
  double init() const {
    if constexpr (kind == Norm::Inf) return -INFINITY;
    else if constexpr (kind == Norm::NegInf) return INFINITY;
    else return 0.0;
  }
  double step(double a, T x, int64_t) const {
    const double v = std::fabs(double(x));
    if constexpr (kind == Norm::Zero) return a + double(x != T(0));
    else if constexpr (kind == Norm::One) return a + v;
    else if constexpr (kind == Norm::Two) return a + v * v;
    else if constexpr (kind == Norm::Inf) return v > a || v != v ? v : a;
    else if constexpr (kind == Norm::NegInf) return v < a || v != v ? v : a;
    else return a + std::pow(v, p);
  }
  double merge(double a, double b) const {
    if constexpr (kind == Norm::Inf) return b > a || b != b ? b : a;
    else if constexpr (kind == Norm::NegInf) return b < a || b != b ? b : a;
    else return a + b;
  }
  double finish(double a) const {
    if constexpr (kind == Norm::Two) return std::sqrt(a);
    else if constexpr (kind == Norm::P) return std::pow(a, 1.0 / p);
    else return a;
  }
};

DimVector rdims(const Tensor& x, const Attrs& a) { return reduction_dims(a.ints(0), x.dim(), "reduce"); }

// Reduces in[0] with the reducer make<T>() and writes finish(acc) into out[0],
// computing in the compute type of `compute` (the output's or the input's dtype).
template <class Make, class Finish>
void reduce_into(const Tensor& x, const Tensor& out, const Attrs& a, DType compute, Make make, Finish finish) {
  // One output of one contiguous row of the compute type (a norm per step):
  // what reduce() does with that layout, without building it.
  if (out.numel() == 1 && x.dtype() == compute_dtype(compute) && x.numel() <= kRowBlock && x.is_contiguous()) {
    with_compute_type(compute, [&](auto zero) {
      using T = decltype(zero);
      const auto red = make.template operator()<T>();
      const T* p = static_cast<const T*>(x.data_ptr());
      write_output<T>(out, [&](T* dst) { dst[0] = T(finish(reduce_run(red, p, x.numel(), 0))); });
    });
    return;
  }
  const ReduceLayout L = reduce_layout(x, rdims(x, a), compute_dtype(compute), /*gather=*/true);
  with_compute_type(compute, [&](auto zero) {
    using T = decltype(zero);
    const auto red = make.template operator()<T>();
    write_output<T>(out, [&](T* dst) { reduce<T>(L, red, [&](int64_t k, auto acc) { dst[k] = T(finish(acc)); }); });
  });
}

void sum_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  reduce_into(in[0], out[0], a, out[0].dtype(), []<class T>() { return SumReducer<T>{}; },
              [](auto acc) { return acc; });
}

void prod_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  reduce_into(in[0], out[0], a, out[0].dtype(), []<class T>() { return ProdReducer<T>{}; },
              [](auto acc) { return acc; });
}

// An empty extent gives 0 / 0 = NaN, as in libtorch.
void mean_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  double count = 1;
  for (int64_t d : rdims(in[0], a)) count *= double(in[0].size(d));
  reduce_into(in[0], out[0], a, out[0].dtype(), []<class T>() { return SumReducer<T>{}; },
              [count](auto acc) { return double(acc) / count; });
}

template <bool kMax> void extremum_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  reduce_into(in[0], out[0], a, in[0].dtype(), []<class T>() { return ExtremumReducer<T, kMax>{}; },
              [](auto acc) { return acc; });
}

// The index of a contiguous row's maximum (kMax) or minimum: the extremum
// first, over vector lanes (a compare and a blend per vector, NaNs noted on
// the way; one running extremum would be a chain of dependent compares, and
// GCC vectorises neither that nor a fixed array of lanes), then the first
// index that holds it, or the first NaN. ArgReducer's answer: a NaN wins,
// and ties (-0 and +0 among them) go to the lowest index.
template <class T, bool kMax> int64_t arg_of_row(const T* x, int64_t n) {
  T best = x[0];
  bool nan = false;
  auto keep = [](T v, T b) { return (kMax ? v > b : v < b) ? v : b; };
  int64_t r = 0;
  if constexpr (!std::is_same_v<T, bool>) {
    typedef T V __attribute__((vector_size(32)));  // two of them a step: 64 bytes
    constexpr int64_t kV = int64_t(sizeof(V) / sizeof(T));
    if (n >= 2 * kV) {
      V a, b, v, w;
      std::memcpy(&a, x, sizeof a);
      b = a;
      decltype(a != a) nan_a{}, nan_b{};
      for (; r + 2 * kV <= n; r += 2 * kV) {
        std::memcpy(&v, x + r, sizeof v);
        std::memcpy(&w, x + r + kV, sizeof w);
        a = (kMax ? v > a : v < a) ? v : a;
        b = (kMax ? w > b : w < b) ? w : b;
        if constexpr (std::is_floating_point_v<T>) {
          nan_a |= v != v;
          nan_b |= w != w;
        }
      }
      for (int64_t k = 0; k < kV; ++k) {
        best = keep(keep(a[k], best), b[k]);
        nan = nan || nan_a[k] || nan_b[k];
      }
    }
  }
  for (; r < n; ++r) {
    best = keep(x[r], best);
    nan = nan || x[r] != x[r];
  }
  if (nan || best != best)
    for (int64_t i = 0; i < n; ++i)
      if (x[i] != x[i]) return i;
  int64_t i = 0;
  while (!(x[i] == best)) ++i;
  return i;
}

// The same for n <= kMaxTile adjacent columns of R rows (row stride I) from
// p, in one pass along the columns, which the compiler vectorises: each
// column keeps its extremum and the row of its first occurrence (a strictly
// better value moves both: blends, no branch per element), and the row of
// its first NaN.
template <class T, bool kMax> void arg_of_columns(const T* p, int64_t R, int64_t I, int64_t n, int64_t* out) {
  using Row = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;  // as wide as T: one vector each
  T best[kMaxTile];
  Row at[kMaxTile], nan_at[kMaxTile];
  for (int64_t i = 0; i < n; ++i) {
    best[i] = p[i];
    at[i] = 0;
    nan_at[i] = -1;
  }
  for (int64_t r = 0; r < R; ++r) {
    const T* q = p + r * I;
    for (int64_t i = 0; i < n; ++i) {
      const T v = q[i];
      const bool better = kMax ? v > best[i] : v < best[i];
      best[i] = better ? v : best[i];
      at[i] = better ? Row(r) : at[i];
      if constexpr (std::is_floating_point_v<T>) nan_at[i] = ((nan_at[i] < 0) & (v != v)) ? Row(r) : nan_at[i];
    }
  }
  for (int64_t i = 0; i < n; ++i) out[i] = int64_t(nan_at[i] >= 0 ? nan_at[i] : at[i]);
}

// max.dim / min.dim (values, indices) and argmax / argmin (indices).
template <bool kMax> void arg_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const ReduceLayout L = reduce_layout(x, rdims(x, a), compute_dtype(x.dtype()));
  const bool with_values = out.size() == 2;
  int64_t* idx = static_cast<int64_t*>(out[with_values ? 1 : 0].data_ptr());
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const int64_t R = L.reduced, I = L.inner;
    // arg_of_columns counts rows in T's width: more than int32 holds go to ArgReducer.
    if (R > 0 && (I == 1 || sizeof(T) == 8 || R <= INT32_MAX)) {
      const T* base = L.base<T>();
      for_each_slice(
          L, [&](int64_t o) { idx[o] = arg_of_row<T, kMax>(base + o * R, R); },
          [&](int64_t o, int64_t i0, int64_t n) {
            arg_of_columns<T, kMax>(base + o * R * I + i0, R, I, n, idx + o * I + i0);
          });
      if (with_values)
        write_output<T>(out[0], [&](T* dst) {
          for (int64_t k = 0; k < L.outer * I; ++k) dst[k] = base[(k / I * R + idx[k]) * I + k % I];
        });
      return;
    }
    const ArgReducer<T, kMax> red;
    if (!with_values) {
      reduce<T>(L, red, [&](int64_t k, auto acc) { idx[k] = acc.i; });
      return;
    }
    write_output<T>(out[0], [&](T* dst) {
      reduce<T>(L, red, [&](int64_t k, auto acc) {
        dst[k] = acc.v;
        idx[k] = acc.i;
      });
    });
  });
}

template <bool kAll> void all_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const ReduceLayout L = reduce_layout(in[0], rdims(in[0], a), kBool, /*gather=*/true);
  bool* dst = static_cast<bool*>(out[0].data_ptr());
  reduce<bool>(L, AllReducer<kAll>{}, [&](int64_t k, bool acc) { dst[k] = acc; });
}

template <Norm kind> void norm_with(const Tensor& x, const Tensor& out, const Attrs& a, double p) {
  reduce_into(x, out, a, out.dtype(), [p]<class T>() { return NormReducer<T, kind>{p}; },
              [p](double acc) { return NormReducer<float, kind>{p}.finish(acc); });
}

void norm_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const double p = a.d(2);
  if (p == 0) norm_with<Norm::Zero>(in[0], out[0], a, p);
  else if (p == 1) norm_with<Norm::One>(in[0], out[0], a, p);
  else if (p == 2) norm_with<Norm::Two>(in[0], out[0], a, p);
  else if (p == INFINITY) norm_with<Norm::Inf>(in[0], out[0], a, p);
  else if (p == -INFINITY) norm_with<Norm::NegInf>(in[0], out[0], a, p);
  else norm_with<Norm::P>(in[0], out[0], a, p);
}

}  // namespace

NNVM_REGISTER(cpu_reduce_kernels) {
  register_kernel("sum", kCPU, sum_kernel);
  register_kernel("prod", kCPU, prod_kernel);
  register_kernel("mean", kCPU, mean_kernel);
  register_kernel("amax", kCPU, extremum_kernel<true>);
  register_kernel("max", kCPU, extremum_kernel<true>);
  register_kernel("amin", kCPU, extremum_kernel<false>);
  register_kernel("min", kCPU, extremum_kernel<false>);
  register_kernel("max.dim", kCPU, arg_kernel<true>);
  register_kernel("argmax", kCPU, arg_kernel<true>);
  register_kernel("min.dim", kCPU, arg_kernel<false>);
  register_kernel("argmin", kCPU, arg_kernel<false>);
  register_kernel("all", kCPU, all_kernel<true>);
  register_kernel("any", kCPU, all_kernel<false>);
  register_kernel("norm", kCPU, norm_kernel);
}

}  // namespace nnvm::cpu
