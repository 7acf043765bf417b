// CPU kernels of sort and topk (core/ops/sort.cpp). Each slice along the dim
// is sorted as an index array whose comparator breaks ties by index, so sort
// is stable and topk picks the lowest indices among equal values. NaN counts
// as larger than every number, as in libtorch: last ascending, first descending.
#include <numeric>

#include "nnvm/kernels/cpu/reduce.h"

namespace nnvm::cpu {

namespace {

template <class T> bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

// Writes the first k of each slice of L in order (k == reduced: a full sort)
// as values [outer, k, inner] and their positions along the dim.
template <class T> void sort_slices(const ReduceLayout& L, int64_t k, bool descending, T* values, int64_t* indices) {
  const T* x = L.base<T>();
  const int64_t R = L.reduced, I = L.inner, slices = L.outer * I;
  parallel_for(0, slices, std::max<int64_t>(1, kGrain / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
    std::vector<T> v(static_cast<size_t>(R));
    std::vector<int64_t> idx(static_cast<size_t>(R));
    for (int64_t s = b; s < e; ++s) {
      const int64_t o = s / I, i = s % I;
      for (int64_t r = 0; r < R; ++r) v[size_t(r)] = x[(o * R + r) * I + i];
      std::iota(idx.begin(), idx.end(), int64_t(0));
      auto before = [&](int64_t p, int64_t q) {
        const T a = v[size_t(p)], c = v[size_t(q)];
        const bool an = is_nan(a), cn = is_nan(c);
        if (an || cn) return an != cn ? (descending ? an : cn) : p < q;
        if (a != c) return descending ? a > c : a < c;
        return p < q;
      };
      if (k < R) std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
      else std::sort(idx.begin(), idx.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = (o * k + j) * I + i;
        values[at] = v[size_t(idx[size_t(j)])];
        indices[at] = idx[size_t(j)];
      }
    }
  });
}

void run(const Tensor& x, absl::Span<const Tensor> out, int64_t dim, int64_t k, bool descending) {
  const ReduceLayout L = dim_layout(x, dim, compute_dtype(x.dtype()));
  int64_t* indices = static_cast<int64_t*>(out[1].data_ptr());
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    write_output<T>(out[0], [&](T* values) { sort_slices<T>(L, k, descending, values, indices); });
  });
}

void sort_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const int64_t dim = wrap_dim(a.i(0), x.dim(), "sort");
  run(x, out, dim, x.dim() == 0 ? 1 : x.size(dim), a.b(1));
}

void topk_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  run(in[0], out, wrap_dim(a.i(1), in[0].dim(), "topk"), a.i(0), a.b(2));
}

}  // namespace

NNVM_REGISTER(cpu_sort_kernels) {
  register_kernel("sort", kCPU, sort_kernel);
  register_kernel("topk", kCPU, topk_kernel);
}

}  // namespace nnvm::cpu
