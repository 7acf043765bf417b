// Model ops driven by index tensors: ONNX's Gather and Scatter families,
// OneHot, NonZero and Compress (registered by add_tensor_ops).
//
// ONNX indices may be negative (counting from the end). They are wrapped
// here with tensor ops and handed to nnvm's gather, scatter, index_select and
// index_put, whose kernels check every index: an index out of range is an
// nnvm::Error, never a read outside the tensor.
#include "nnvm/core/indexing.h"
#include "op_util.h"

namespace nnvm::model_detail {
namespace {

using Shape = std::vector<int64_t>;

// Indices in [-size, size) made non-negative; others stay out of range for the kernel to refuse.
Tensor wrap_indices(const OpContext& ctx, const Tensor& indices, int64_t size) {
  NNVM_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32, ctx.where(), "indices must be int32 or int64, got ",
             indices.dtype());
  return where(indices < 0, indices + size, indices);
}

Tensor gather(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &indices = ctx.input(1);
  NNVM_CHECK(x.dim() >= 1, ctx.where(), "needs an input of rank >= 1");
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.dim());
  Tensor picked = x.index_select(axis, wrap_indices(ctx, indices, x.size(axis)).reshape({-1}));
  Shape out(x.sizes().begin(), x.sizes().begin() + axis);
  out.insert(out.end(), indices.sizes().begin(), indices.sizes().end());
  out.insert(out.end(), x.sizes().begin() + axis + 1, x.sizes().end());
  return picked.reshape(out);
}

Tensor gather_elements(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &indices = ctx.input(1);
  NNVM_CHECK(x.dim() >= 1 && indices.dim() == x.dim(), ctx.where(), "needs data and indices of one rank >= 1, got ",
             shape_str(x.sizes()), " and ", shape_str(indices.sizes()));
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.dim());
  return x.gather(axis, wrap_indices(ctx, indices, x.size(axis)));
}

// The k index tensors an [..., k] indices tensor holds, one per leading dim of
// x (nnvm's advanced indexing wraps negative ones and checks every one).
std::vector<Tensor> index_columns(const Tensor& indices) {
  std::vector<Tensor> columns;
  for (int64_t j = 0; j < indices.size(-1); ++j) columns.push_back(indices.select(-1, j));
  return columns;
}

Tensor advanced_index(const Tensor& x, const std::vector<Tensor>& columns) {
  std::vector<indexing::TensorIndex> list(columns.begin(), columns.end());
  return x.index(list);
}

Tensor gather_nd(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &indices = ctx.input(1);
  int64_t b = ctx.attr_int("batch_dims", 0), r = x.dim(), q = indices.dim();
  NNVM_CHECK(r >= 1 && q >= 1 && b >= 0 && b < std::min(r, q), ctx.where(), "needs data and indices of rank > ",
             "batch_dims ", b, ", got ", shape_str(x.sizes()), " and ", shape_str(indices.sizes()));
  NNVM_CHECK(x.sizes().subspan(0, size_t(b)) == indices.sizes().subspan(0, size_t(b)), ctx.where(), "data ",
             shape_str(x.sizes()), " and indices ", shape_str(indices.sizes()), " differ in the ", b, " batch dims");
  int64_t k = indices.size(-1);
  NNVM_CHECK(k >= 1 && k <= r - b, ctx.where(), "indices ", shape_str(indices.sizes()), " index ", k,
             " dims of data ", shape_str(x.sizes()), " past its ", b, " batch dims");
  // Batch dims flattened to one, indexed by its own position.
  int64_t batch = numel_of(x.sizes().subspan(0, size_t(b)));
  Shape rows{batch};
  rows.insert(rows.end(), x.sizes().begin() + b, x.sizes().end());
  std::vector<Tensor> columns{arange(batch, kInt64).reshape({batch, 1})};
  int64_t per_batch = numel_of(indices.sizes().subspan(size_t(b), size_t(q - b - 1)));
  for (const Tensor& c : index_columns(indices.reshape({batch, per_batch, k}))) columns.push_back(c);
  Shape out(indices.sizes().begin(), indices.sizes().end() - 1);
  out.insert(out.end(), x.sizes().begin() + b + k, x.sizes().end());
  return advanced_index(x.reshape(rows), columns).reshape(out);
}

// For keys [lines, m] and updates [lines, m, s]: at each (line, i), the
// product of the updates of that line whose key equals key i. Scattering it
// multiplies each target once by all its updates, which ScatterElements and
// ScatterND's reduction "mul" ask and nnvm has no scatter for. Memory is
// lines * m * m * s.
Tensor products_by_key(const Tensor& keys, const Tensor& updates) {
  Tensor same = (keys.unsqueeze(2) == keys.unsqueeze(1)).unsqueeze(3);  // [lines, m, m, 1]
  return where(same, updates.unsqueeze(1), 1).prod(2, false, updates.dtype());
}

std::string reduction_of(const OpContext& ctx) {
  std::string reduction = ctx.attr_string("reduction", "none");
  NNVM_CHECK(reduction == "none" || reduction == "add" || reduction == "mul", ctx.where(), "reduction '", reduction,
             "' is not one of none, add, mul");
  return reduction;
}

// ScatterElements, and Scatter (its name before opset 11).
Tensor scatter_elements(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &indices = ctx.input(1), &updates = ctx.input(2);
  NNVM_CHECK(x.dim() >= 1 && indices.dim() == x.dim() && updates.sizes() == indices.sizes(), ctx.where(),
             "needs data, indices and updates of one rank >= 1, indices and updates of one shape; got ",
             shape_str(x.sizes()), ", ", shape_str(indices.sizes()), ", ", shape_str(updates.sizes()));
  NNVM_CHECK(updates.dtype() == x.dtype(), ctx.where(), "updates are ", updates.dtype(), ", data ", x.dtype());
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.dim());
  Tensor index = wrap_indices(ctx, indices, x.size(axis));
  std::string reduction = reduction_of(ctx);
  if (reduction == "none") return x.scatter(axis, index, updates);
  if (reduction == "add") return x.scatter_add(axis, index, updates);
  if (index.numel() == 0) return x;
  // mul: lines along `axis`, moved last.
  Tensor keys = index.transpose(axis, -1), u = updates.transpose(axis, -1);
  Shape line_shape(keys.sizes().begin(), keys.sizes().end());
  int64_t m = keys.size(-1);
  Tensor products = products_by_key(keys.reshape({-1, m}), u.reshape({-1, m, 1}));
  products = products.reshape(line_shape).transpose(axis, -1);
  return x.scatter(axis, index, x.gather(axis, index) * products);
}

Tensor scatter_nd(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &indices = ctx.input(1), &updates = ctx.input(2);
  int64_t k = indices.dim() >= 1 ? indices.size(-1) : 0;
  Shape slots(indices.sizes().begin(), indices.sizes().end() - (indices.dim() >= 1 ? 1 : 0));
  Shape want = slots;
  if (k >= 1 && k <= x.dim()) want.insert(want.end(), x.sizes().begin() + k, x.sizes().end());
  NNVM_CHECK(indices.dim() >= 1 && k >= 1 && k <= x.dim() && updates.sizes() == IntArrayRef(want), ctx.where(),
             "needs indices [..., k] with 1 <= k <= rank of data and updates of shape indices.shape[:-1] + ",
             "data.shape[k:]; got data ", shape_str(x.sizes()), ", indices ", shape_str(indices.sizes()),
             ", updates ", shape_str(updates.sizes()));
  NNVM_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32, ctx.where(), "indices must be int32 or int64, got ",
             indices.dtype());
  NNVM_CHECK(updates.dtype() == x.dtype(), ctx.where(), "updates are ", updates.dtype(), ", data ", x.dtype());
  std::vector<Tensor> columns = index_columns(indices);
  std::string reduction = reduction_of(ctx);
  if (reduction != "mul") return x.index_put(columns, updates, reduction == "add");
  // The key of a slot is its target's row-major position in data's first k dims.
  Tensor keys = zeros({}, kInt64);
  for (int64_t j = 0; j < k; ++j)
    keys = keys * x.size(j) + wrap_indices(ctx, columns[size_t(j)], x.size(j)).to(kInt64);
  int64_t n = numel_of(slots);
  Tensor products = products_by_key(keys.reshape({1, n}), updates.reshape({1, n, -1}));
  return x.index_put(columns, advanced_index(x, columns) * products.reshape(updates.sizes()));
}

Tensor one_hot(const OpContext& ctx) {
  const Tensor &indices = ctx.input(0), &values = ctx.input(2);
  Shape depth_values = to_ints(ctx.input(1));
  NNVM_CHECK(depth_values.size() == 1 && depth_values[0] >= 0, ctx.where(), "depth must be one non-negative value, got ",
             shape_str(depth_values));
  NNVM_CHECK(values.numel() == 2, ctx.where(), "values must hold [off, on], got ", shape_str(values.sizes()));
  int64_t depth = depth_values[0], axis = normalize_axis(ctx, ctx.attr_int("axis", -1), indices.dim() + 1);
  Tensor index = is_floating(indices.dtype()) ? indices.trunc().to(kInt64) : indices.to(kInt64);
  index = where(index < 0, index + depth, index).unsqueeze(axis);
  Shape classes(size_t(indices.dim() + 1), 1);
  classes[size_t(axis)] = depth;
  // An index outside [-depth, depth) matches no class: all off.
  Tensor hot = index == arange(depth, kInt64).reshape(classes);
  Tensor flat = values.reshape({2});
  return where(hot, flat.select(0, 1), flat.select(0, 0));
}

// The positions of x's non-zero elements: [rank, count], as numpy's nonzero
// (a 0-d input counts as shape [1]).
Tensor nonzero(const OpContext& ctx) {
  Tensor x = ctx.input(0);
  if (x.dim() == 0) x = x.reshape({1});
  if (x.numel() == 0) return zeros({x.dim(), 0}, kInt64);
  Tensor flat = arange(x.numel(), kInt64).index({(x != 0).reshape({-1})});
  std::vector<Tensor> coords;
  for (int64_t d = 0, stride = x.numel(); d < x.dim(); ++d) {
    stride /= x.size(d);
    coords.push_back(flat.div(stride, "floor").remainder(x.size(d)));
  }
  return stack(coords, 0);
}

Tensor compress(const OpContext& ctx) {
  const Tensor& condition = ctx.input(1);
  NNVM_CHECK(condition.dim() == 1, ctx.where(), "condition must be 1-d, got ", shape_str(condition.sizes()));
  Tensor x = ctx.input(0);
  int64_t axis = 0;
  if (ctx.has_attr("axis")) axis = normalize_axis(ctx, ctx.attr_int("axis"), x.dim());
  else x = x.reshape({-1});
  // Positions past the condition's end are dropped; a true one past the axis's end is out of range.
  Tensor taken = arange(condition.size(0), kInt64).index({condition.to(kBool)});
  return x.index_select(axis, taken);
}

}  // namespace

void add_index_ops(OpTable& table) {
  add_single(table, "Gather", gather);
  add_single(table, "GatherElements", gather_elements);
  add_single(table, "GatherND", gather_nd);
  add_single(table, "ScatterElements", scatter_elements);
  add_single(table, "Scatter", scatter_elements);
  add_single(table, "ScatterND", scatter_nd);
  add_single(table, "OneHot", one_hot);
  add_single(table, "NonZero", nonzero);
  add_single(table, "Compress", compress);
}

}  // namespace nnvm::model_detail
