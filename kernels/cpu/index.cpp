// CPU kernels of the index-driven ops declared in core/ops/index.cpp. Every
// index value is bounds-checked before it is used. Writes that may collide
// (scatter, index_put with repeated indices) are split over threads only
// along dims where they cannot, and apply in index order, so results are the
// same on any thread count.
#include <algorithm>
#include <type_traits>

#include "nnvm/kernels/cpu/movement.h"

namespace nnvm::cpu {

namespace {

template <class T> T add_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(a) + float(b));
  else return T(a + b);
}

template <class F> void with_index_type(DType t, F f) {
  if (t == kInt32) f(int32_t{});
  else f(int64_t{});
}

// gather and scatter treat 0-d operands as shape [1].
Tensor at_least_1d(const Tensor& t) { return t.dim() > 0 ? t : restride(t, {1}, {1}, t.storage_offset()); }

// Calls body(ptrs, byte_strides, n) over the elements of `index` for the
// operands (views[0], index, views[1], ...), each view having index's shape.
// `dim` runs innermost and each task owns whole lines along it, so a
// scatter's writes from different tasks never collide and repeated indices
// within a line apply in order.
template <class Body>
void for_each_line(const Tensor& index, int64_t dim, std::initializer_list<Tensor> views, Body body) {
  DimVector perm;
  for (int64_t d = 0; d < index.dim(); ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  auto permuted = [&](const Tensor& t) {
    DimVector shape, strides;
    for (int64_t p : perm) {
      shape.push_back(index.size(p));
      strides.push_back(t.stride(p));
    }
    return restride(t, shape, strides, t.storage_offset());
  };
  std::vector<Tensor> operands{permuted(index)};
  for (const Tensor& v : views) operands.push_back(permuted(v));
  std::vector<const Tensor*> inputs{&operands[0]};
  for (size_t k = 2; k < operands.size(); ++k) inputs.push_back(&operands[k]);
  const StridedLoop loop(operands[1], inputs);
  const int64_t line = index.size(dim), lines = index.numel() / line;
  parallel_for(0, lines, std::max<int64_t>(1, kGrain / line),
               [&](int64_t l0, int64_t l1) { for_each_run(loop, l0 * line, l1 * line, body); });
}

// `t` with dim d pinned (stride 0) and cut to index's shape: the address of
// element i along d is then added from the index value. Returns the view and
// d's stride in bytes.
std::pair<Tensor, int64_t> along_index(const Tensor& t, const Tensor& index, int64_t d) {
  DimVector strides = dims(t.strides());
  const int64_t step = strides[d] * int64_t(t.element_size());
  strides[d] = 0;
  return {restride(t, index.sizes(), strides, t.storage_offset()), step};
}

void gather_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor self = at_least_1d(in[0]), index = at_least_1d(in[1]), o = at_least_1d(out[0]);
  if (index.numel() == 0) return;
  const int64_t d = a.i(0), size = self.size(d);
  const auto along = along_index(self, index, d);
  const Tensor& src = along.first;  // named, not a structured binding: lambdas below capture them
  const int64_t step = along.second;
  with_index_type(index.dtype(), [&](auto index_zero) {
    using I = decltype(index_zero);
    NNVM_DISPATCH_ALL(self.dtype(), "gather", [&] {
      for_each_line(index, d, {o, src}, [&](char** p, const int64_t* s, int64_t n) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t i = checked_index(*reinterpret_cast<const I*>(p[1] + j * s[1]), size, d, "gather");
          *reinterpret_cast<scalar_t*>(p[0] + j * s[0]) =
              *reinterpret_cast<const scalar_t*>(p[2] + j * s[2] + i * step);
        }
      });
    });
  });
}

enum class ScatterMode { Assign, Add, Value };

// inputs: self, index[, src]; attrs: dim[, value]
KernelFn scatter_kernel(const char* name, ScatterMode mode) {
  return [name, mode](absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
    const Tensor self = at_least_1d(in[0]), index = at_least_1d(in[1]), o = at_least_1d(out[0]);
    copy_values(o, self);
    if (index.numel() == 0) return;
    const int64_t d = a.i(0), size = o.size(d);
    const auto along = along_index(o, index, d);
    const Tensor& dst = along.first;  // named, not a structured binding: lambdas below capture them
    const int64_t step = along.second;
    // The value form has no src; the index stands in as an operand never read.
    const Tensor src = mode == ScatterMode::Value
                           ? index
                           : [&] {
                               const Tensor s = at_least_1d(in[2]);
                               return restride(s, index.sizes(), s.strides(), s.storage_offset());
                             }();
    with_index_type(index.dtype(), [&](auto index_zero) {
      using I = decltype(index_zero);
      NNVM_DISPATCH_ALL(o.dtype(), name, [&] {
        const scalar_t value = mode == ScatterMode::Value ? scalar_to<scalar_t>(a.s(1)) : scalar_t{};
        for_each_line(index, d, {dst, src}, [&](char** p, const int64_t* s, int64_t n) {
          for (int64_t j = 0; j < n; ++j) {
            const int64_t i = checked_index(*reinterpret_cast<const I*>(p[1] + j * s[1]), size, d, name);
            scalar_t& x = *reinterpret_cast<scalar_t*>(p[0] + j * s[0] + i * step);
            if (mode == ScatterMode::Value) {
              x = value;
            } else {
              const scalar_t v = *reinterpret_cast<const scalar_t*>(p[2] + j * s[2]);
              x = mode == ScatterMode::Add ? add_values(x, v) : v;
            }
          }
        });
      });
    });
  };
}

void index_select_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& self = in[0];
  const int64_t d = a.i(0);
  std::vector<std::vector<int64_t>> tables = identity_tables(self.sizes());
  tables[d] = read_indices(in[1]);
  for (int64_t i : tables[d]) checked_index(i, self.size(d), d, "index_select");
  write_contiguous(out[0], [&](const Tensor& o) { remap(o, self, tables); });
}

void embedding_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs&) {
  const Tensor& weight = in[0];
  std::vector<int64_t> rows = read_indices(in[1]);
  for (int64_t i : rows) checked_index(i, weight.size(0), 0, "embedding");
  const int64_t n = int64_t(rows.size()), width = weight.size(1);
  std::vector<std::vector<int64_t>> tables{std::move(rows), identity_table(width)};
  write_contiguous(out[0], [&](const Tensor& o) {
    remap(restride(o, {n, width}, {width, 1}, o.storage_offset()), weight, tables);
  });
}

void one_hot_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const std::vector<int64_t> classes = read_indices(in[0]);
  const int64_t num_classes = a.i(0), class_dim = out[0].dim() - 1;
  write_contiguous(out[0], [&](const Tensor& o) {
    int64_t* p = o.numel() > 0 ? o.data_ptr<int64_t>() : nullptr;
    std::fill(p, p + o.numel(), int64_t(0));
    for (size_t i = 0; i < classes.size(); ++i)
      p[int64_t(i) * num_classes + checked_index(classes[i], num_classes, class_dim, "one_hot")] = 1;
  });
}

// The element offset, in contiguous `o`, of each slab an index_put writes (in
// order), and the shape those slabs form.
struct Targets {
  std::vector<int64_t> offsets;
  DimVector shape;
};

Targets mask_targets(const Tensor& mask, IntArrayRef shape) {
  const int64_t slab = numel_of(shape.subspan(size_t(mask.dim())));
  const std::vector<int64_t> at = element_offsets(mask.sizes(), mask.strides());
  Targets t;
  if (!at.empty()) {
    const bool* m = mask.data_ptr<bool>();
    for (size_t i = 0; i < at.size(); ++i)
      if (m[at[i]]) t.offsets.push_back(int64_t(i) * slab);
  }
  t.shape = {int64_t(t.offsets.size())};
  return t;
}

Targets index_targets(absl::Span<const Tensor> indices, IntArrayRef shape) {
  Targets t;
  t.shape = dims(indices[0].sizes());
  for (const Tensor& index : indices) t.shape = broadcast_shapes(t.shape, index.sizes(), "index_put");
  t.offsets.assign(size_t(numel_of(t.shape)), 0);
  const DimVector strides = contiguous_strides(shape);
  for (size_t d = 0; d < indices.size(); ++d) {
    const Tensor& index = indices[d];
    const Tensor expanded = restride(index, t.shape, broadcast_strides(index.sizes(), index.strides(), t.shape),
                                     index.storage_offset());
    const std::vector<int64_t> v = read_indices(expanded);
    for (size_t b = 0; b < v.size(); ++b)
      t.offsets[b] += checked_index(v[b], shape[d], int64_t(d), "index_put", /*wrap=*/true) * strides[d];
  }
  return t;
}

// inputs: self, values, indices...; attrs: accumulate
void index_put_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor& values = in[1];
  const absl::Span<const Tensor> indices = in.subspan(2);
  const bool accumulate = a.b(0);
  write_contiguous(out[0], [&](const Tensor& o) {
    copy_values(o, in[0]);
    const bool masked = indices[0].dtype() == kBool;
    const Targets t = masked ? mask_targets(indices[0], o.sizes()) : index_targets(indices, o.sizes());
    const size_t indexed = masked ? size_t(indices[0].dim()) : indices.size();
    const IntArrayRef slab = o.sizes().subspan(indexed);
    DimVector target = t.shape;
    target.insert(target.end(), slab.begin(), slab.end());
    NNVM_CHECK(broadcasts_to(values.sizes(), target), "index_put", "values of shape ",
               shape_str(values.sizes()), " cannot be broadcast to the indexed shape ", shape_str(target));
    const DimVector vstrides = broadcast_strides(values.sizes(), values.strides(), target);
    const IntArrayRef vs(vstrides);
    const std::vector<int64_t> vlead = element_offsets(t.shape, vs.subspan(0, t.shape.size()));
    const std::vector<int64_t> vslab = element_offsets(slab, vs.subspan(t.shape.size()));
    if (t.offsets.empty() || vslab.empty()) return;
    NNVM_DISPATCH_ALL(o.dtype(), "index_put", [&] {
      scalar_t* dst = static_cast<scalar_t*>(o.data_ptr());
      const scalar_t* src = static_cast<const scalar_t*>(values.data_ptr());
      const int64_t rows = int64_t(t.offsets.size());
      // Split along the slab only, so each element sees its writes in index order.
      parallel_for(0, int64_t(vslab.size()), std::max<int64_t>(1, kGrain / rows), [&](int64_t s0, int64_t s1) {
        for (int64_t b = 0; b < rows; ++b) {
          scalar_t* row = dst + t.offsets[b];
          const scalar_t* vrow = src + vlead[b];
          for (int64_t s = s0; s < s1; ++s) row[s] = accumulate ? add_values(row[s], vrow[vslab[s]]) : vrow[vslab[s]];
        }
      });
    });
  });
}

}  // namespace

NNVM_REGISTER(cpu_index_kernels) {
  register_kernel("gather", kCPU, gather_kernel);
  register_kernel("scatter", kCPU, scatter_kernel("scatter", ScatterMode::Assign));
  register_kernel("scatter.value", kCPU, scatter_kernel("scatter", ScatterMode::Value));
  register_kernel("scatter_add", kCPU, scatter_kernel("scatter_add", ScatterMode::Add));
  register_kernel("index_select", kCPU, index_select_kernel);
  register_kernel("index_put", kCPU, index_put_kernel);
  register_kernel("embedding", kCPU, embedding_kernel);
  register_kernel("one_hot", kCPU, one_hot_kernel);
}

}  // namespace nnvm::cpu
