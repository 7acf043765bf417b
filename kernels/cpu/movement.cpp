// CPU kernels of the ops declared in core/ops/movement.cpp, and the building
// blocks of kernels/cpu/movement.h. cat and stack copy each input into its
// slab of the output; flip, roll, repeat and pad are `remap` with per-dim
// index tables; tril and triu mask rows.
#include "nnvm/kernels/cpu/movement.h"

#include <algorithm>
#include <numeric>

#include "nnvm/core/functions.h"

namespace nnvm::cpu {

Tensor restride(const Tensor& t, IntArrayRef shape, IntArrayRef strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->shape = dims(shape);
  impl->strides = dims(strides);
  impl->offset = offset;
  return Tensor(std::move(impl));
}

void copy_values(const Tensor& dst, const Tensor& src) {
  with_compute_type(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    pointwise<T, 1>(dst, {&src}, [](T x) { return x; });
  });
}

void write_contiguous(const Tensor& out, const std::function<void(const Tensor&)>& write) {
  if (out.is_contiguous()) return write(out);
  const Tensor tmp = empty(out.sizes(), TensorOptions(out.dtype()).device(out.device()));
  write(tmp);
  copy_values(out, tmp);
}

void remap(const Tensor& out, const Tensor& in, const std::vector<std::vector<int64_t>>& tables,
           const Scalar& fill) {
  NNVM_DCHECK(out.is_contiguous() && out.dtype() == in.dtype() && tables.size() == size_t(out.dim()));
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t nd = out.dim();
  const DimVector shape = dims(out.sizes()), strides = dims(in.strides());
  NNVM_DISPATCH_ALL(out.dtype(), "remap", [&] {
    scalar_t* dst = static_cast<scalar_t*>(out.data_ptr());
    const scalar_t* src = in.numel() > 0 ? static_cast<const scalar_t*>(in.data_ptr()) : nullptr;
    const scalar_t value = scalar_to<scalar_t>(fill);
    if (nd == 0) {
      dst[0] = src[0];
      return;
    }
    const int64_t cols = shape[nd - 1], rows = n / cols, col_stride = strides[nd - 1];
    const std::vector<int64_t>& col_table = tables[nd - 1];
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / cols), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        scalar_t* row = dst + r * cols;
        int64_t base = 0, rest = r;
        bool filled = false;
        for (int64_t d = nd - 2; d >= 0; --d) {
          const int64_t t = tables[d][rest % shape[d]];
          rest /= shape[d];
          filled = filled || t < 0;
          base += t * strides[d];
        }
        if (filled) {
          std::fill(row, row + cols, value);
          continue;
        }
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t t = col_table[j];
          row[j] = t < 0 ? value : src[base + t * col_stride];
        }
      }
    });
  });
}

std::vector<int64_t> element_offsets(IntArrayRef shape, IntArrayRef strides) {
  const int64_t n = numel_of(shape), nd = int64_t(shape.size());
  std::vector<int64_t> out(size_t(std::max<int64_t>(n, 0)));
  DimVector idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = off;
    for (int64_t d = nd - 1; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= shape[d] * strides[d];
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<int64_t> read_indices(const Tensor& index) {
  std::vector<int64_t> out = element_offsets(index.sizes(), index.strides());
  if (out.empty()) return out;
  if (index.dtype() == kInt32) {
    const int32_t* p = static_cast<const int32_t*>(index.data_ptr());
    for (int64_t& v : out) v = p[v];
  } else {
    const int64_t* p = index.data_ptr<int64_t>();
    for (int64_t& v : out) v = p[v];
  }
  return out;
}

std::vector<int64_t> identity_table(int64_t n) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), int64_t(0));
  return t;
}

std::vector<std::vector<int64_t>> identity_tables(IntArrayRef shape) {
  std::vector<std::vector<int64_t>> tables;
  for (int64_t n : shape) tables.push_back(identity_table(n));
  return tables;
}

namespace {

// Where output position i of a dim of size n reads after rolling by `shift`.
std::vector<int64_t> roll_table(int64_t n, int64_t shift) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[i] = ((i - shift) % n + n) % n;
  return t;
}

void cat_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& o = out[0];
  if (o.numel() == 0) return;
  const int64_t d = wrap_dim(a.i(0), o.dim(), "cat");
  DimVector shape = dims(o.sizes());
  int64_t at = 0;
  for (const Tensor& t : in) {
    if (t.numel() == 0) continue;  // skipped, or of size 0 along d
    shape[d] = t.size(d);
    copy_values(restride(o, shape, o.strides(), o.storage_offset() + at * o.stride(d)), t);
    at += t.size(d);
  }
}

void stack_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& o = out[0];
  if (o.numel() == 0) return;
  const int64_t d = a.i(0);
  DimVector strides = dims(o.strides());
  strides.erase(strides.begin() + d);
  for (size_t k = 0; k < in.size(); ++k)
    copy_values(restride(o, in[k].sizes(), strides, o.storage_offset() + int64_t(k) * o.stride(d)), in[k]);
}

void pad_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef pad = a.ints(0);
  const bool reflect = a.str(1) == "reflect";
  std::vector<std::vector<int64_t>> tables = identity_tables(x.sizes());
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    const int64_t d = x.dim() - 1 - int64_t(p), n = x.size(d), before = pad[2 * p];
    std::vector<int64_t>& t = tables[d];
    t.resize(size_t(out[0].size(d)));
    for (int64_t i = 0; i < int64_t(t.size()); ++i) {
      int64_t src = i - before;
      if (reflect) {
        if (src < 0) src = -src;
        if (src >= n) src = 2 * (n - 1) - src;
      }
      t[i] = src >= 0 && src < n ? src : -1;
    }
  }
  write_contiguous(out[0], [&](const Tensor& o) { remap(o, x, tables, reflect ? Scalar(0) : a.s(2)); });
}

void repeat_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef repeats = a.ints(0);
  const int64_t lead = int64_t(repeats.size()) - x.dim();
  // Leading new dims read the input's single slab.
  DimVector shape(lead, 1), strides(lead, 0);
  shape.insert(shape.end(), x.sizes().begin(), x.sizes().end());
  strides.insert(strides.end(), x.strides().begin(), x.strides().end());
  std::vector<std::vector<int64_t>> tables;
  for (size_t d = 0; d < repeats.size(); ++d) {
    std::vector<int64_t> t(size_t(shape[d] * repeats[d]));
    for (int64_t i = 0; i < int64_t(t.size()); ++i) t[i] = i % shape[d];
    tables.push_back(std::move(t));
  }
  const Tensor src = restride(x, shape, strides, x.storage_offset());
  write_contiguous(out[0], [&](const Tensor& o) { remap(o, src, tables); });
}

void flip_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  std::vector<std::vector<int64_t>> tables = identity_tables(in[0].sizes());
  // A 0-d tensor accepts dim 0 and has nothing to reverse.
  if (in[0].dim() > 0)
    for (int64_t d : a.ints(0)) std::reverse(tables[d].begin(), tables[d].end());
  write_contiguous(out[0], [&](const Tensor& o) { remap(o, in[0], tables); });
}

void roll_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef shifts = a.ints(0), dims_ = a.ints(1);
  if (!dims_.empty() && x.dim() > 0) {
    DimVector total(x.dim(), 0);
    for (size_t k = 0; k < dims_.size(); ++k) total[wrap_dim(dims_[k], x.dim(), "roll")] += shifts[k];
    std::vector<std::vector<int64_t>> tables;
    for (int64_t d = 0; d < x.dim(); ++d) tables.push_back(roll_table(x.size(d), total[d]));
    write_contiguous(out[0], [&](const Tensor& o) { remap(o, x, tables); });
    return;
  }
  // Flattened roll: the table holds each source element's storage offset, so
  // any input layout works without a copy.
  const int64_t n = x.numel();
  if (n == 0) return;
  const std::vector<int64_t> offsets = element_offsets(x.sizes(), x.strides());
  std::vector<int64_t> table = roll_table(n, shifts[0]);
  for (int64_t& t : table) t = offsets[t];
  const Tensor flat_in = restride(x, {1}, {1}, x.storage_offset());
  write_contiguous(out[0], [&](const Tensor& o) {
    remap(restride(o, {n}, {1}, o.storage_offset()), flat_in, {std::move(table)});
  });
}

// Keeps elements on the kept side of `diagonal` (col - row <= diagonal for
// tril, >= for triu) and zeroes the rest, per matrix of the batch.
void triangle(const Tensor& out, const Tensor& x, int64_t diagonal, bool lower) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t nd = x.dim(), rows = x.size(nd - 2), cols = x.size(nd - 1), col_stride = x.stride(nd - 1);
  const std::vector<int64_t> row_offsets =
      element_offsets(x.sizes().subspan(0, nd - 1), x.strides().subspan(0, nd - 1));
  NNVM_DISPATCH_ALL(x.dtype(), "tril", [&] {
    scalar_t* dst = static_cast<scalar_t*>(out.data_ptr());
    const scalar_t* src = static_cast<const scalar_t*>(x.data_ptr());
    parallel_for(0, int64_t(row_offsets.size()), std::max<int64_t>(1, kGrain / cols), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % rows;
        const scalar_t* in_row = src + row_offsets[r];
        scalar_t* out_row = dst + r * cols;
        for (int64_t j = 0; j < cols; ++j) {
          const bool keep = lower ? j - i <= diagonal : j - i >= diagonal;
          out_row[j] = keep ? in_row[j * col_stride] : scalar_t(0);
        }
      }
    });
  });
}

KernelFn triangle_kernel(bool lower) {
  return [lower](absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
    write_contiguous(out[0], [&](const Tensor& o) { triangle(o, in[0], a.i(0), lower); });
  };
}

}  // namespace

NNVM_REGISTER(cpu_movement_kernels) {
  register_kernel("cat", kCPU, cat_kernel);
  register_kernel("stack", kCPU, stack_kernel);
  register_kernel("pad", kCPU, pad_kernel);
  register_kernel("repeat", kCPU, repeat_kernel);
  register_kernel("flip", kCPU, flip_kernel);
  register_kernel("roll", kCPU, roll_kernel);
  register_kernel("tril", kCPU, triangle_kernel(true));
  register_kernel("triu", kCPU, triangle_kernel(false));
}

}  // namespace nnvm::cpu
