// Model ops that slide a window over the spatial dims of an [N, C, D1, ...]
// input: Conv, ConvTranspose, MaxPool, AveragePool and the global pools.
//
// nnvm's convolution and pooling ops are 2-d, so a 1-d input is viewed as
// 2-d with a unit height, and a 3-d one is built from 2-d ops: a convolution
// sums one conv2d per kernel depth; a pooling pools the (H, W) planes and
// then the depth, since max and average pooling are separable. Padding that
// nnvm's ops cannot take (asymmetric, or wider than half the kernel, or the
// overhang of ceil_mode) is added explicitly first.
#include <cmath>

#include "nnvm/nn/functional.h"
#include "ops_nn.h"

namespace nnvm::model_detail {
namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// An attribute with one value per spatial dim (`count` of them), each at least `min`.
std::vector<int64_t> spatial_attr(const OpContext& ctx, const char* name, int64_t count, int64_t fallback,
                                  int64_t min) {
  std::vector<int64_t> v = ctx.attr_ints(name, std::vector<int64_t>(size_t(count), fallback));
  NNVM_CHECK(int64_t(v.size()) == count, ctx.where(), name, " ", shape_str(v), " must have ", count,
             " values for this input's spatial dims");
  for (int64_t x : v)
    NNVM_CHECK(x >= min, ctx.where(), name, " ", shape_str(v), " must be ", min > 0 ? "positive" : "non-negative");
  return v;
}

std::string auto_pad_of(const OpContext& ctx) {
  std::string mode = ctx.attr_string("auto_pad", "NOTSET");
  NNVM_CHECK(mode == "NOTSET" || mode == "VALID" || mode == "SAME_UPPER" || mode == "SAME_LOWER", ctx.where(),
             "auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '", mode, "'");
  return mode;
}

// x padded with `value` on its spatial dims as the windows say, overhang included.
Tensor pad_spatial(const Tensor& x, const std::vector<Window>& w, double value) {
  std::vector<int64_t> pads;  // nnvm's order: (before, after) from the last dim back
  for (auto it = w.rbegin(); it != w.rend(); ++it) {
    pads.push_back(it->pad_begin);
    pads.push_back(it->pad_end + it->overhang);
  }
  return pad(x, pads, "constant", value);
}

std::vector<Window> unpadded(std::vector<Window> w) {
  for (Window& win : w) win.pad_begin = win.pad_end = win.overhang = 0;
  return w;
}

// Checks the operands of Conv (transposed: ConvTranspose) and returns the rank of their spatial dims.
int64_t check_conv(const OpContext& ctx, bool transposed) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  const int64_t rank = x.dim() - 2, group = ctx.attr_int("group", 1);
  NNVM_CHECK(rank >= 1 && rank <= 3, ctx.where(), "expected an input X [N, C, D1, ...] with 1 to 3 spatial dims, got ",
             x.sizes());
  NNVM_CHECK(w.dim() == x.dim(), ctx.where(), "weight W ", w.sizes(), " must have the rank of input X ", x.sizes());
  NNVM_CHECK(group >= 1, ctx.where(), "group must be positive, got ", group);
  const int64_t channels = x.size(1);
  const int64_t expected = transposed ? w.size(0) : w.size(1) * group;
  NNVM_CHECK(channels == expected && channels % group == 0, ctx.where(), "weight W ", w.sizes(), " with group=", group,
             " expects ", expected, " input channels, but input X ", x.sizes(), " has ", channels);
  const int64_t out_channels = transposed ? w.size(1) * group : w.size(0);
  NNVM_CHECK(transposed || out_channels % group == 0, ctx.where(), "weight W ", w.sizes(), " has ", out_channels,
             " output channels, not divisible by group=", group);
  if (ctx.has_input(2))
    NNVM_CHECK(ctx.input(2).dim() == 1 && ctx.input(2).size(0) == out_channels, ctx.where(), "bias B ",
               ctx.input(2).sizes(), " must be [", out_channels, "], one value per output channel");
  return rank;
}

Tensor optional_input(const OpContext& ctx, int64_t i) { return ctx.has_input(i) ? ctx.input(i) : Tensor(); }

// Bias [C] added to y [N, C, ...].
Tensor add_bias(const Tensor& y, const Tensor& b) {
  if (!b.defined()) return y;
  std::vector<int64_t> shape(size_t(y.dim()), 1);
  shape[1] = -1;
  return y + b.reshape(shape);
}

// ---- Conv ----

// A 3-d convolution without depth padding: one conv2d per kernel depth, over
// the (H, W) planes that depth tap reads, summed.
Tensor conv3d(const Tensor& x, const Tensor& w, const std::vector<Window>& win, int64_t group) {
  const Window& depth = win[0];
  const int64_t n = x.size(0), c = x.size(1), out_d = depth.out(x.size(2));
  Tensor y;
  for (int64_t k = 0; k < depth.kernel; ++k) {
    const int64_t start = k * depth.dilation;
    Tensor planes = x.slice(2, start, start + (out_d - 1) * depth.stride + 1, depth.stride)
                        .transpose(1, 2)
                        .reshape({n * out_d, c, x.size(3), x.size(4)});
    Tensor part = conv2d(planes, w.select(2, k), {}, {win[1].stride, win[2].stride},
                         {win[1].pad_begin, win[2].pad_begin}, {win[1].dilation, win[2].dilation}, group);
    y = y.defined() ? y + part : part;
  }
  return y.reshape({n, out_d, y.size(1), y.size(2), y.size(3)}).transpose(1, 2);
}

Tensor conv(const OpContext& ctx) {
  const int64_t rank = check_conv(ctx, false);
  Tensor x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor b = optional_input(ctx, 2);
  const int64_t group = ctx.attr_int("group", 1);
  std::vector<Window> win = windows(ctx, x.sizes().subspan(2), kernel_of(ctx, w), false);
  bool pad_first = rank == 3 && win[0].padded();
  for (const Window& d : win) pad_first = pad_first || d.pad_begin != d.pad_end;
  if (pad_first) {
    x = pad_spatial(x, win, 0.0);
    win = unpadded(win);
  }
  if (rank == 1) return conv1d(x, w, b, {win[0].stride}, {win[0].pad_begin}, {win[0].dilation}, group);
  if (rank == 2)
    return conv2d(x, w, b, {win[0].stride, win[1].stride}, {win[0].pad_begin, win[1].pad_begin},
                  {win[0].dilation, win[1].dilation}, group);
  return add_bias(conv3d(x, w, win, group), b);
}

// ---- ConvTranspose ----

// The transposed convolution of 2-d planes, without padding.
Tensor conv_transpose_planes(const Tensor& x, const Tensor& w, const Window& h, const Window& wd, int64_t group) {
  return conv_transpose2d(x, w, {}, {h.stride, wd.stride}, {0, 0}, {0, 0}, group, {h.dilation, wd.dilation});
}

// The whole transposed convolution, (in - 1) * stride + extent along each dim.
// In 3-d each kernel depth's planes land every stride-th depth, offset by
// the tap's dilation.
Tensor conv_transpose_full(const Tensor& x, const Tensor& w, const std::vector<Window>& win, int64_t group) {
  if (win.size() == 1) return conv_transpose_planes(x.unsqueeze(2), w.unsqueeze(2), Window{}, win[0], group).squeeze(2);
  if (win.size() == 2) return conv_transpose_planes(x, w, win[0], win[1], group);
  const Window& depth = win[0];
  const int64_t n = x.size(0), in_d = x.size(2);
  const Tensor planes = x.transpose(1, 2).reshape({n * in_d, x.size(1), x.size(3), x.size(4)});
  Tensor y;
  for (int64_t k = 0; k < depth.kernel; ++k) {
    Tensor part = conv_transpose_planes(planes, w.select(2, k), win[1], win[2], group);
    part = part.reshape({n, in_d, part.size(1), part.size(2), part.size(3)}).transpose(1, 2);
    if (depth.stride > 1) {  // zeros between the depths
      std::vector<Tensor> spaced(size_t(depth.stride), zeros_like(part));
      spaced[0] = part;
      part = stack(spaced, 3).flatten(2, 3).narrow(2, 0, (in_d - 1) * depth.stride + 1);
    }
    const int64_t before = k * depth.dilation, after = (depth.kernel - 1) * depth.dilation - before;
    part = pad(part, {0, 0, 0, 0, before, after});
    y = y.defined() ? y + part : part;
  }
  return y;
}

Tensor conv_transpose(const OpContext& ctx) {
  const int64_t rank = check_conv(ctx, true);
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  const Tensor b = optional_input(ctx, 2);
  const int64_t group = ctx.attr_int("group", 1);
  const std::vector<int64_t> kernel = kernel_of(ctx, w);
  const std::vector<int64_t> strides = spatial_attr(ctx, "strides", rank, 1, 1);
  const std::vector<int64_t> dilations = spatial_attr(ctx, "dilations", rank, 1, 1);
  const std::vector<int64_t> output_padding = spatial_attr(ctx, "output_padding", rank, 0, 0);
  const std::string auto_pad = auto_pad_of(ctx);
  std::vector<int64_t> output_shape;
  if (ctx.has_attr("output_shape")) {
    output_shape = ctx.attr_ints("output_shape");
    if (int64_t(output_shape.size()) == rank + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    NNVM_CHECK(int64_t(output_shape.size()) == rank, ctx.where(), "output_shape ", shape_str(output_shape),
               " must have ", rank, " spatial sizes");
  }
  const std::vector<int64_t> pads = auto_pad == "NOTSET" && output_shape.empty()
                                        ? spatial_attr(ctx, "pads", 2 * rank, 0, 0)
                                        : std::vector<int64_t>(size_t(2 * rank), 0);
  // Per dim: the whole output's size plus output_padding, less the pads at each
  // end. Given an output shape (or SAME's in * stride), the pads follow from it;
  // a negative pad grows the output with zeros.
  std::vector<Window> win;
  bool native = rank <= 2;
  for (int64_t d = 0; d < rank; ++d) {
    const size_t i = size_t(d);
    Window v{kernel[i], strides[i], dilations[i], pads[i], pads[i + size_t(rank)]};
    const int64_t size = x.size(2 + d), natural = (size - 1) * v.stride + v.extent() + output_padding[i];
    if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = natural - (output_shape.empty() ? size * v.stride : output_shape[i]);
      const int64_t half = floor_div(total, 2);
      v.pad_begin = auto_pad == "SAME_UPPER" ? half : total - half;
      v.pad_end = total - v.pad_begin;
    }
    NNVM_CHECK(natural - v.pad_begin - v.pad_end > 0, ctx.where(), "spatial dim ", d, " of the output is empty: input ",
               x.sizes(), ", weight ", w.sizes(), ", pads ", v.pad_begin, " and ", v.pad_end);
    native = native && v.pad_begin == v.pad_end && v.pad_begin >= 0 &&
             (output_padding[i] < v.stride || output_padding[i] < v.dilation);
    win.push_back(v);
  }
  if (native) {
    const Window& wd = win.back();
    const Window h = rank == 2 ? win[0] : Window{};
    const Tensor x2 = rank == 1 ? x.unsqueeze(2) : x, w2 = rank == 1 ? w.unsqueeze(2) : w;
    const int64_t op_h = rank == 2 ? output_padding[0] : 0;
    Tensor y = conv_transpose2d(x2, w2, b, {h.stride, wd.stride}, {h.pad_begin, wd.pad_begin},
                                {op_h, output_padding.back()}, group, {h.dilation, wd.dilation});
    return rank == 1 ? y.squeeze(2) : y;
  }
  std::vector<int64_t> crop;  // nnvm's pad order; negative values crop
  for (int64_t d = rank - 1; d >= 0; --d) {
    crop.push_back(-win[size_t(d)].pad_begin);
    crop.push_back(output_padding[size_t(d)] - win[size_t(d)].pad_end);
  }
  return add_bias(pad(conv_transpose_full(x, w, unpadded(win), group), crop), b);
}

// ---- pooling ----

// Pools the last two dims of a 4-d x with nnvm's op.
Tensor pool2d(const Tensor& x, const Window& h, const Window& w, bool max, bool count_include_pad) {
  const std::vector<int64_t> kernel = {h.kernel, w.kernel}, stride = {h.stride, w.stride};
  const std::vector<int64_t> padding = {h.pad_begin, w.pad_begin};
  const bool native = h.native_padding() && w.native_padding();
  if (max) {
    if (native) return max_pool2d(x, kernel, stride, padding, {h.dilation, w.dilation});
    return max_pool2d(pad_spatial(x, {h, w}, -INFINITY), kernel, stride, {0, 0}, {h.dilation, w.dilation});
  }
  if (native) return avg_pool2d(x, kernel, stride, padding, false, count_include_pad);
  const Tensor sum = avg_pool2d(pad_spatial(x, {h, w}, 0.0), kernel, stride, {0, 0});
  if (h.overhang == 0 && w.overhang == 0 && count_include_pad) return sum;
  // Divide by the number of input elements (and pads, if counted) under each
  // window, found by pooling a mask of them the same way.
  const int64_t rows = x.size(2) + (count_include_pad ? h.pad_begin + h.pad_end : 0);
  const int64_t cols = x.size(3) + (count_include_pad ? w.pad_begin + w.pad_end : 0);
  const Tensor inside = ones({1, 1, rows, cols}, x.dtype());
  const Tensor mask = count_include_pad
                          ? pad(inside, {0, w.overhang, 0, h.overhang})
                          : pad(inside, {w.pad_begin, w.pad_end + w.overhang, h.pad_begin, h.pad_end + h.overhang});
  return sum / avg_pool2d(mask, kernel, stride, {0, 0});
}

// Pools the spatial dims of x [N, C, D1, ...] (1 to 3 of them).
Tensor pool(const Tensor& x, const std::vector<Window>& win, bool max, bool count_include_pad) {
  const Window unit;
  if (win.size() == 1) return pool2d(x.unsqueeze(2), unit, win[0], max, count_include_pad).squeeze(2);
  if (win.size() == 2) return pool2d(x, win[0], win[1], max, count_include_pad);
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2);
  const Tensor planes = pool2d(x.reshape({n, c * d, x.size(3), x.size(4)}), win[1], win[2], max, count_include_pad);
  const Tensor pooled = pool2d(planes.reshape({n, c, d, -1}), win[0], unit, max, count_include_pad);
  return pooled.reshape({n, c, pooled.size(2), planes.size(2), planes.size(3)});
}

// MaxPool with its Indices output: each window's first maximum and its index
// in the input flattened as [N, C, D1, ...] (storage_order 1: each plane
// column-major). Built by comparing the windows' taps one at a time.
std::vector<Tensor> max_pool_with_indices(const Tensor& x, const std::vector<Window>& win, bool column_major) {
  const int64_t rank = int64_t(win.size());
  const std::vector<int64_t> spatial(x.sizes().begin() + 2, x.sizes().end());
  int64_t plane = 1;
  for (int64_t s : spatial) plane *= s;
  Tensor position = arange(plane, kInt64);
  if (column_major) {
    std::vector<int64_t> reversed(spatial.rbegin(), spatial.rend()), order;
    for (int64_t d = rank - 1; d >= 0; --d) order.push_back(d);
    position = position.reshape(reversed).permute(order);
  } else {
    position = position.reshape(spatial);
  }
  std::vector<int64_t> plane_shape = {x.size(0), x.size(1)};
  plane_shape.resize(size_t(rank + 2), 1);
  const Tensor index = position + (arange(x.size(0) * x.size(1), kInt64) * plane).reshape(plane_shape);
  const Tensor xp = pad_spatial(x, win, -INFINITY), ip = pad_spatial(index, win, -1.0);
  Tensor best, best_index;
  std::vector<int64_t> tap(size_t(rank), 0);
  do {
    Tensor v = xp, i = ip;
    for (int64_t d = 0; d < rank; ++d) {
      const Window& w = win[size_t(d)];
      const int64_t start = tap[size_t(d)] * w.dilation, end = start + (w.out(spatial[size_t(d)]) - 1) * w.stride + 1;
      v = v.slice(2 + d, start, end, w.stride);
      i = i.slice(2 + d, start, end, w.stride);
    }
    if (!best.defined()) {
      best = v;
      best_index = i;
    } else {
      const Tensor larger = v > best;
      best = where(larger, v, best);
      best_index = where(larger, i, best_index);
    }
    int64_t d = rank - 1;  // the next tap, last dim fastest
    while (d >= 0 && ++tap[size_t(d)] == win[size_t(d)].kernel) tap[size_t(d--)] = 0;
    if (d < 0) break;
  } while (true);
  return {best.contiguous(), best_index.contiguous()};
}

std::vector<Tensor> pool_op(const OpContext& ctx, bool max) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() >= 3 && x.dim() <= 5, ctx.where(),
             "expected an input X [N, C, D1, ...] with 1 to 3 spatial dims, got ", x.sizes());
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  NNVM_CHECK(int64_t(kernel.size()) == x.dim() - 2, ctx.where(), "kernel_shape ", shape_str(kernel), " must have ",
             x.dim() - 2, " values for input X ", x.sizes());
  for (int64_t k : kernel) NNVM_CHECK(k >= 1, ctx.where(), "kernel_shape ", shape_str(kernel), " must be positive");
  const std::vector<Window> win = windows(ctx, x.sizes().subspan(2), kernel, ctx.attr_int("ceil_mode", 0) != 0);
  if (!max) {
    for (const Window& w : win)
      NNVM_CHECK(w.dilation == 1, ctx.where(), "dilations are an AveragePool attribute from opset 19 only");
    NNVM_CHECK(is_floating(x.dtype()), ctx.where(), "expected a floating-point input, got ", x.dtype());
    return {pool(x, win, false, ctx.attr_int("count_include_pad", 0) != 0)};
  }
  // Integer inputs (int8, uint8) pool exactly as float32.
  const Tensor xf = is_floating(x.dtype()) ? x : x.to(kFloat32);
  if (!uses_output(ctx, 1)) return {pool(xf, win, true, false).to(x.dtype())};
  const int64_t storage_order = ctx.attr_int("storage_order", 0);
  NNVM_CHECK(storage_order == 0 || storage_order == 1, ctx.where(), "storage_order must be 0 or 1, got ",
             storage_order);
  std::vector<Tensor> outs = max_pool_with_indices(xf, win, storage_order == 1);
  outs[0] = outs[0].to(x.dtype());
  return outs;
}

Tensor global_pool(const OpContext& ctx, bool max) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() >= 2, ctx.where(), "expected an input X [N, C, D1, ...], got ", x.sizes());
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  if (dims.empty()) return x;
  return max ? x.amax(dims, true) : x.mean(dims, true);
}

}  // namespace

void add_conv_ops(OpTable& table) {
  add(table, "Conv", [](const OpContext& ctx) { return std::vector<Tensor>{conv(ctx)}; });
  add(table, "ConvTranspose", [](const OpContext& ctx) { return std::vector<Tensor>{conv_transpose(ctx)}; });
  add(table, "MaxPool", [](const OpContext& ctx) { return pool_op(ctx, true); });
  add(table, "AveragePool", [](const OpContext& ctx) { return pool_op(ctx, false); });
  add(table, "GlobalMaxPool", [](const OpContext& ctx) { return std::vector<Tensor>{global_pool(ctx, true)}; });
  add(table, "GlobalAveragePool", [](const OpContext& ctx) { return std::vector<Tensor>{global_pool(ctx, false)}; });
}

// The windows of Conv and the pools over spatial dims of these sizes: their
// strides, dilations, and pads from `pads` or auto_pad (SAME_UPPER puts the
// odd pixel at the end). In ceil_mode the output has ceil(...) windows rather
// than floor(...), as ONNX defines it.
std::vector<Window> windows(const OpContext& ctx, IntArrayRef sizes, const std::vector<int64_t>& kernel,
                            bool ceil_mode) {
  const int64_t rank = int64_t(sizes.size());
  const std::vector<int64_t> strides = spatial_attr(ctx, "strides", rank, 1, 1);
  const std::vector<int64_t> dilations = spatial_attr(ctx, "dilations", rank, 1, 1);
  const std::string auto_pad = auto_pad_of(ctx);
  const std::vector<int64_t> pads =
      auto_pad == "NOTSET" ? spatial_attr(ctx, "pads", 2 * rank, 0, 0) : std::vector<int64_t>(size_t(2 * rank), 0);
  std::vector<Window> w;
  for (int64_t d = 0; d < rank; ++d) {
    Window win{kernel[size_t(d)], strides[size_t(d)], dilations[size_t(d)], pads[size_t(d)], pads[size_t(rank + d)]};
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total =
          std::max<int64_t>(0, (ceil_div(sizes[d], win.stride) - 1) * win.stride + win.extent() - sizes[d]);
      win.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      win.pad_end = total - win.pad_begin;
    }
    const int64_t span = sizes[d] + win.pad_begin + win.pad_end - win.extent();
    NNVM_CHECK(span >= 0, ctx.where(), "the kernel ", shape_str(kernel), " (dilations ", shape_str(dilations),
               ") is larger than spatial dim ", d, " of size ", sizes[d], " with pads ", win.pad_begin, " and ",
               win.pad_end);
    if (ceil_mode) win.overhang = ceil_div(span, win.stride) * win.stride - span;
    w.push_back(win);
  }
  return w;
}

// A convolution's kernel: the weight's spatial dims, which kernel_shape must repeat if given.
std::vector<int64_t> kernel_of(const OpContext& ctx, const Tensor& w) {
  std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
  if (ctx.has_attr("kernel_shape"))
    NNVM_CHECK(ctx.attr_ints("kernel_shape") == kernel, ctx.where(), "kernel_shape ",
               shape_str(ctx.attr_ints("kernel_shape")), " differs from the weight's spatial dims ", shape_str(kernel));
  return kernel;
}

}  // namespace nnvm::model_detail
