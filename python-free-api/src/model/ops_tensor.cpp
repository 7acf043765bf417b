// Model ops that make, reshape and move tensors: ONNX's shape arithmetic
// (Shape, Reshape, Squeeze, Slice, Expand, ...), padding and the block moves
// of DepthToSpace/SpaceToDepth. The other groups (indexing, reductions,
// control flow) live beside this file and are registered from here.
//
// Values a node takes as arguments (a target shape, axes, pads, repeats) are
// read on the host with to_ints: a node whose inputs are all constants runs
// eagerly, so that read costs nothing; anywhere else it runs the trace so far.
#include <algorithm>
#include <cmath>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

using Shape = std::vector<int64_t>;

Tensor constant(const OpContext& ctx) {
  if (ctx.has_attr("value")) return ctx.attr_tensor("value");
  if (ctx.has_attr("value_float")) return scalar_tensor(ctx.attr_float("value_float"), kFloat32);
  if (ctx.has_attr("value_floats")) return tensor(ctx.attr_floats("value_floats")).to(kFloat32);
  if (ctx.has_attr("value_int")) return scalar_tensor(ctx.attr_int("value_int"), kInt64);
  if (ctx.has_attr("value_ints")) return int_tensor(ctx.attr_ints("value_ints"));
  throw Error(ctx.where() + ": needs one of value, value_float(s), value_int(s) (sparse and string values are "
              "not supported)");
}

Tensor shape(const OpContext& ctx) {
  IntArrayRef sizes = ctx.input(0).sizes();
  int64_t rank = int64_t(sizes.size());
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  return int_tensor(Shape(sizes.begin() + start, sizes.begin() + end));
}

Tensor reshape(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  Shape target = ctx.opset() < 5 ? ctx.attr_ints("shape") : ints_input(ctx, 1, "shape");
  bool allow_zero = ctx.attr_int("allowzero", 0) != 0;
  int64_t inferred = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    NNVM_CHECK(target[i] >= -1, ctx.where(), "shape entry ", i, " is ", target[i], "; entries are sizes, 0 or -1");
    inferred += target[i] == -1;
    if (target[i] == 0 && !allow_zero) {
      NNVM_CHECK(int64_t(i) < x.dim(), ctx.where(), "shape entry ", i, " is 0 (copy the input's size) but the input ",
                 shape_str(x.sizes()), " has only ", x.dim(), " dimensions");
      target[i] = x.sizes()[i];
    }
  }
  NNVM_CHECK(inferred <= 1, ctx.where(), "shape ", shape_str(target), " has more than one -1");
  return x.reshape(target);
}

Tensor flatten(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t rank = x.dim(), axis = ctx.attr_int("axis", 1);
  NNVM_CHECK(axis >= -rank && axis <= rank, ctx.where(), "axis ", axis, " is out of range for rank ", rank,
             " (expected [", -rank, ", ", rank, "])");
  if (axis < 0) axis += rank;
  IntArrayRef sizes = x.sizes();
  int64_t outer = numel_of(sizes.subspan(0, size_t(axis)));
  return x.reshape({outer, numel_of(sizes.subspan(size_t(axis)))});
}

// The axes input (opset >= 13) or attribute, each in [0, rank) and named once.
std::optional<Shape> distinct_axes(const OpContext& ctx, int64_t rank) {
  std::optional<Shape> axes = axes_of(ctx, ctx.opset() >= 13 ? 1 : -1, rank);
  if (!axes) return axes;
  Shape sorted = *axes;
  std::sort(sorted.begin(), sorted.end());
  NNVM_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), ctx.where(), "axes ",
             shape_str(*axes), " name an axis twice");
  return axes;
}

Tensor squeeze(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::optional<Shape> axes = distinct_axes(ctx, x.dim());
  Shape out;
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool named = axes && std::count(axes->begin(), axes->end(), d);
    if (named) NNVM_CHECK(x.size(d) == 1, ctx.where(), "cannot squeeze axis ", d, " of size ", x.size(d),
                          " (input shape ", shape_str(x.sizes()), ")");
    if (axes ? !named : x.size(d) != 1) out.push_back(x.size(d));
  }
  return x.reshape(out);
}

Tensor unsqueeze(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t n = ctx.opset() >= 13 ? ctx.input(1).numel() : int64_t(ctx.attr_ints("axes").size());
  std::optional<Shape> axes = distinct_axes(ctx, x.dim() + n);
  NNVM_CHECK(axes.has_value(), ctx.where(), "needs axes");
  Shape out;
  for (int64_t d = 0, next = 0; d < x.dim() + n; ++d)
    out.push_back(std::count(axes->begin(), axes->end(), d) ? 1 : x.size(next++));
  return x.reshape(out);
}

std::vector<Tensor> split(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.dim()), size = x.size(axis);
  Shape parts;
  if (ctx.opset() >= 13 && ctx.has_input(1)) parts = ints_input(ctx, 1, "split");
  else if (ctx.opset() < 13 && ctx.has_attr("split")) parts = ctx.attr_ints("split");
  int64_t n = ctx.num_outputs();
  NNVM_CHECK(n >= 1, ctx.where(), "has no outputs");
  if (parts.empty()) {
    NNVM_CHECK(size % n == 0, ctx.where(), "cannot split axis ", axis, " of size ", size, " into ", n,
               " equal parts");
    parts.assign(size_t(n), size / n);
  }
  NNVM_CHECK(int64_t(parts.size()) == n, ctx.where(), "split ", shape_str(parts), " has ", parts.size(),
             " parts for ", n, " outputs");
  int64_t total = 0;
  for (int64_t p : parts) {
    NNVM_CHECK(p >= 0, ctx.where(), "split ", shape_str(parts), " has a negative part");
    total += p;
  }
  NNVM_CHECK(total == size, ctx.where(), "split ", shape_str(parts), " sums to ", total, ", not to the size ",
             size, " of axis ", axis);
  std::vector<Tensor> out;
  for (int64_t start = 0; int64_t p : parts) {
    out.push_back(x.narrow(axis, start, p));
    start += p;
  }
  return out;
}

// Elements start, start + step, ... before end along `axis`, after ONNX's
// clamping: start to [0, size] ([0, size - 1] stepping back), end to [0, size]
// ([-1, size - 1] stepping back); a start or end below zero counts from the end.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  int64_t size = x.size(axis);
  if (start < 0) start += size;
  if (end < 0) end = end < -size ? -1 : end + size;  // -INT64_MAX: before the first element
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, 0, size);
    int64_t count = end > start ? (end - start + step - 1) / step : 0;
    if (count == 0) return x.narrow(axis, 0, 0);
    return x.slice(axis, start, start + (count - 1) * step + 1, step);
  }
  start = std::clamp<int64_t>(start, -1, size - 1);
  end = std::clamp<int64_t>(end, -1, size - 1);
  int64_t count = start > end ? (start - end - step - 1) / -step : 0;
  if (count == 0) return x.narrow(axis, 0, 0);
  int64_t first = start + (count - 1) * step;  // the lowest element taken
  return x.slice(axis, first, start + 1, -step).flip(axis);
}

Tensor slice(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  Shape starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes", Shape{});
  } else {
    starts = ints_input(ctx, 1, "starts");
    ends = ints_input(ctx, 2, "ends");
    if (ctx.has_input(3)) axes = ints_input(ctx, 3, "axes");
    if (ctx.has_input(4)) steps = ints_input(ctx, 4, "steps");
  }
  size_t n = starts.size();
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(n, 1);
  NNVM_CHECK(ends.size() == n && axes.size() == n && steps.size() == n, ctx.where(), "starts, ends, axes and steps ",
             "must have one entry per sliced axis; got ", n, ", ", ends.size(), ", ", axes.size(), ", ", steps.size());
  std::vector<bool> seen(size_t(x.dim()), false);
  Tensor y = x;
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = normalize_axis(ctx, axes[i], x.dim());
    NNVM_CHECK(!seen[size_t(axis)], ctx.where(), "axes ", shape_str(axes), " name axis ", axis, " twice");
    seen[size_t(axis)] = true;
    NNVM_CHECK(steps[i] != 0, ctx.where(), "step of axis ", axis, " is 0");
    y = slice_axis(y, axis, starts[i], ends[i], steps[i]);
  }
  return y;
}

// Numpy's broadcast of x's shape and `target` (Expand: either side may be 1).
Tensor expand(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  Shape target = ints_input(ctx, 1, "shape");
  size_t rank = std::max(target.size(), size_t(x.dim()));
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i + size_t(x.dim()) >= rank ? x.size(int64_t(i + size_t(x.dim()) - rank)) : 1;
    int64_t b = i + target.size() >= rank ? target[i + target.size() - rank] : 1;
    NNVM_CHECK(b >= 0 && (a == b || a == 1 || b == 1), ctx.where(), "cannot broadcast the input ", shape_str(x.sizes()),
               " to the shape ", shape_str(target));
    out[i] = a == 1 ? b : a;
  }
  return x.expand(out);
}

Tensor tile(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  Shape repeats = ints_input(ctx, 1, "repeats", x.dim());
  for (int64_t r : repeats)
    NNVM_CHECK(r >= 0, ctx.where(), "repeats ", shape_str(repeats), " must be non-negative");
  return x.dim() == 0 ? x.clone() : x.repeat(repeats);
}

Shape sizes_input(const OpContext& ctx, int64_t input) {
  Shape sizes = ints_input(ctx, input, "shape");
  for (int64_t s : sizes) NNVM_CHECK(s >= 0, ctx.where(), "shape ", shape_str(sizes), " has a negative size");
  return sizes;
}

Tensor constant_of_shape(const OpContext& ctx) {
  Shape sizes = sizes_input(ctx, 0);
  if (!ctx.has_attr("value")) return zeros(sizes, kFloat32);
  Tensor value = ctx.attr_tensor("value");
  NNVM_CHECK(value.numel() == 1, ctx.where(), "value must hold one element, got ", shape_str(value.sizes()));
  return full(sizes, value.item(), value.dtype());
}

// start + i * delta for i < max(ceil((limit - start) / delta), 0), in start's dtype.
Tensor range(const OpContext& ctx) {
  const Tensor &start = ctx.input(0), &limit = ctx.input(1), &delta = ctx.input(2);
  for (const Tensor* t : {&start, &limit, &delta})
    NNVM_CHECK(t->numel() == 1 && t->dtype() == start.dtype(), ctx.where(), "start, limit and delta must be scalars "
               "of one dtype, got ", start.dtype(), shape_str(start.sizes()), ", ", limit.dtype(),
               shape_str(limit.sizes()), ", ", delta.dtype(), shape_str(delta.sizes()));
  if (is_floating(start.dtype())) {
    double s = start.item<double>(), l = limit.item<double>(), d = delta.item<double>();
    NNVM_CHECK(d != 0, ctx.where(), "delta is 0");
    double count = std::ceil((l - s) / d);
    NNVM_CHECK(std::isfinite(count), ctx.where(), "cannot count the elements from ", s, " to ", l, " by ", d);
    int64_t n = std::max<int64_t>(int64_t(count), 0);
    return (arange(n, kFloat64) * d + s).to(start.dtype());
  }
  int64_t s = start.item<int64_t>(), l = limit.item<int64_t>(), d = delta.item<int64_t>();
  NNVM_CHECK(d != 0, ctx.where(), "delta is 0");
  int64_t span = 0, step = d > 0 ? d : -d;
  NNVM_CHECK(!__builtin_sub_overflow(d > 0 ? l : s, d > 0 ? s : l, &span), ctx.where(), "the range from ", s, " to ",
             l, " overflows int64");
  int64_t n = span > 0 ? (span + step - 1) / step : 0;
  return (arange(n, kInt64) * d + s).to(start.dtype());
}

// Positions of the input each output position along an axis reads when
// `size` grows by `before` and `after` in mode reflect or edge.
Shape pad_sources(int64_t size, int64_t before, int64_t after, bool reflect) {
  Shape src;
  int64_t period = 2 * (size - 1);
  for (int64_t j = -before; j < size + after; ++j) {
    int64_t p = j;
    if (!reflect || size == 1) p = std::clamp<int64_t>(j, 0, size - 1);
    else if (p < 0 || p >= size) {
      p = ((p % period) + period) % period;
      if (p >= size) p = period - p;
    }
    src.push_back(p);
  }
  return src;
}

Tensor pad(const OpContext& ctx) {
  Tensor x = ctx.input(0);
  int64_t rank = x.dim();
  std::string mode = ctx.attr_string("mode", "constant");
  NNVM_CHECK(mode == "constant" || mode == "reflect" || mode == "edge", ctx.where(), "mode '", mode,
             "' is not one of constant, reflect, edge");
  Shape pads = ctx.opset() < 11 ? ctx.attr_ints("pads") : ints_input(ctx, 1, "pads");
  NNVM_CHECK(int64_t(pads.size()) == 2 * rank, ctx.where(), "pads ", shape_str(pads), " must hold 2 * rank = ",
             2 * rank, " values for the input ", shape_str(x.sizes()));
  Tensor value = ctx.opset() < 11 ? scalar_tensor(ctx.attr_float("value", 0.0), x.dtype())
                 : ctx.has_input(2) ? ctx.input(2).to(x.dtype()).reshape({})
                                    : zeros({}, x.dtype());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = pads[size_t(d)], after = pads[size_t(d + rank)], size = x.size(d);
    // Negative pads crop.
    int64_t keep = size - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
    NNVM_CHECK(keep >= 0, ctx.where(), "pads ", shape_str(pads), " crop more than the size ", size, " of axis ", d);
    x = x.narrow(d, std::max<int64_t>(-before, 0), keep);
    before = std::max<int64_t>(before, 0);
    after = std::max<int64_t>(after, 0);
    if (before == 0 && after == 0) continue;
    if (mode == "constant") {
      Shape block(x.sizes().begin(), x.sizes().end());
      block[size_t(d)] = before;
      Tensor head = value.expand(block);
      block[size_t(d)] = after;
      x = cat({head, x, value.expand(block)}, d);
      continue;
    }
    NNVM_CHECK(keep > 0, ctx.where(), mode, " padding of axis ", d, " needs a non-empty axis");
    x = x.index_select(d, int_tensor(pad_sources(keep, before, after, mode == "reflect")));
  }
  return x;
}

// DepthToSpace and SpaceToDepth move blocks between channels and pixels of an NCHW tensor.
Tensor depth_to_space(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t b = ctx.attr_int("blocksize");
  NNVM_CHECK(x.dim() == 4 && b > 0 && x.size(1) % (b * b) == 0, ctx.where(), "needs an NCHW input whose channels ",
             "divide by blocksize^2; got ", shape_str(x.sizes()), " and blocksize ", b);
  int64_t n = x.size(0), c = x.size(1) / (b * b), h = x.size(2), w = x.size(3);
  Tensor y = ctx.attr_string("mode", "DCR") == "CRD"
                 ? x.reshape({n, c, b, b, h, w}).permute({0, 1, 4, 2, 5, 3})
                 : x.reshape({n, b, b, c, h, w}).permute({0, 3, 4, 1, 5, 2});
  return y.reshape({n, c, h * b, w * b});
}

Tensor space_to_depth(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t b = ctx.attr_int("blocksize");
  NNVM_CHECK(x.dim() == 4 && b > 0 && x.size(2) % b == 0 && x.size(3) % b == 0, ctx.where(), "needs an NCHW input ",
             "whose height and width divide by blocksize; got ", shape_str(x.sizes()), " and blocksize ", b);
  int64_t n = x.size(0), c = x.size(1), h = x.size(2) / b, w = x.size(3) / b;
  return x.reshape({n, c, h, b, w, b}).permute({0, 3, 5, 1, 2, 4}).reshape({n, c * b * b, h, w});
}

Tensor trilu(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() >= 2, ctx.where(), "needs an input of rank >= 2, got ", shape_str(x.sizes()));
  int64_t k = ctx.has_input(1) ? ints_input(ctx, 1, "k", 1)[0] : 0;
  return ctx.attr_int("upper", 1) ? x.triu(k) : x.tril(k);
}

}  // namespace

void add_tensor_ops(OpTable& table) {
  add_single(table, "Constant", constant);
  add_single(table, "Shape", shape);
  add_single(table, "Size", [](const OpContext& ctx) { return scalar_tensor(ctx.input(0).numel(), kInt64); });
  add_single(table, "Reshape", reshape);
  add_single(table, "Flatten", flatten);
  add_single(table, "Squeeze", squeeze);
  add_single(table, "Unsqueeze", unsqueeze);
  add_single(table, "Transpose", [](const OpContext& ctx) {
    const Tensor& x = ctx.input(0);
    Shape perm;
    for (int64_t d = x.dim() - 1; d >= 0; --d) perm.push_back(d);
    return x.permute(ctx.attr_ints("perm", perm));
  });
  add_single(table, "Concat", [](const OpContext& ctx) {
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < ctx.num_inputs(); ++i) parts.push_back(ctx.input(i));
    NNVM_CHECK(!parts.empty(), ctx.where(), "needs at least one input");
    return cat(parts, normalize_axis(ctx, ctx.attr_int("axis"), parts[0].dim()));
  });
  add(table, "Split", split);
  add_single(table, "Slice", slice);
  add_single(table, "Expand", expand);
  add_single(table, "Tile", tile);
  add_single(table, "ConstantOfShape", constant_of_shape);
  add_single(table, "Range", range);
  add_single(table, "Pad", pad);
  add_single(table, "DepthToSpace", depth_to_space);
  add_single(table, "SpaceToDepth", space_to_depth);
  add_single(table, "Trilu", trilu);
  add_index_ops(table);
  add_reduce_ops(table);
  add_control_ops(table);
}

}  // namespace nnvm::model_detail
