// Model ops that resample a tensor: Resize (opsets 10 to 13) and Upsample
// (opsets 7 to 9).
//
// Every mode is separable, so a resize is a chain of 1-d resamplings, one
// per axis whose size or coordinates change, from the last axis to the first
// (the order of ONNX's reference, which matters only to where
// tf_crop_and_resize's extrapolated values mix in). Each output position's
// taps (input indices) and weights are worked out on the host, in double, as
// the spec's formulas read; the tensor work is an index_select per tap. A 4-d
// resize of the last two axes that nnvm's interpolate computes the same way
// (linear half_pixel or align_corners, nearest floor by a power of two) goes
// to it instead.
#include <cmath>

#include "nnvm/nn/functional.h"
#include "ops_nn.h"

namespace nnvm::model_detail {
namespace {

struct Options {
  std::string mode = "nearest";            // nearest, linear, cubic
  std::string coordinates = "half_pixel";  // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  // Resize-10 and Upsample: asymmetric coordinates, and nearest rounds down
  // when upsampling and up when downsampling (as ONNX Runtime, which defined them).
  bool legacy = false;
};

// One axis: its input and output sizes, the scale (given, or out / in), the
// resized length the coordinate formulas divide by (in * scale, not rounded),
// and the region of interest of tf_crop_and_resize.
struct Axis {
  int64_t in = 1, out = 1;
  double scale = 1.0, length = 1.0, roi_start = 0.0, roi_end = 1.0;
};

double original_coordinate(const Options& o, const Axis& a, int64_t x) {
  const std::string& m = o.coordinates;
  const double in = double(a.in), xr = double(x);
  if (o.legacy || m == "asymmetric") return xr / a.scale;
  if (m == "half_pixel") return (xr + 0.5) / a.scale - 0.5;
  if (m == "pytorch_half_pixel") return a.out > 1 ? (xr + 0.5) / a.scale - 0.5 : 0.0;
  if (m == "tf_half_pixel_for_nn") return (xr + 0.5) / a.scale;
  if (m == "align_corners") return a.length == 1.0 ? 0.0 : xr * (in - 1) / (a.length - 1);
  // tf_crop_and_resize
  if (a.length == 1.0) return 0.5 * (a.roi_start + a.roi_end) * (in - 1);
  return a.roi_start * (in - 1) + xr * (a.roi_end - a.roi_start) * (in - 1) / (a.length - 1);
}

int64_t nearest_index(const Options& o, const Axis& a, double c) {
  const double below = std::floor(c), frac = c - below;
  if (frac == 0.0) return int64_t(below);
  bool up;
  if (o.legacy)
    up = a.scale < 1.0;
  else if (o.nearest == "round_prefer_floor")
    up = frac > 0.5;
  else if (o.nearest == "round_prefer_ceil")
    up = frac >= 0.5;
  else
    up = o.nearest == "ceil";
  return int64_t(below) + (up ? 1 : 0);
}

// The taps of one axis: per output position `count` input indices and their
// weights, and whether it lies outside tf_crop_and_resize's input.
struct Taps {
  int64_t count = 1;
  std::vector<int64_t> index;  // [out][count]
  std::vector<double> weight;
  std::vector<bool> outside;
  bool any_outside = false;

  bool identity(int64_t in) const {
    if (any_outside || int64_t(index.size()) != in * count) return false;
    for (int64_t x = 0; x < in; ++x)
      for (int64_t j = 0; j < count; ++j) {
        const size_t k = size_t(x * count + j);
        if (weight[k] != (index[k] == x ? 1.0 : 0.0)) return false;
      }
    return true;
  }
};

// Cubic convolution weights of the four inputs around a point `r` past the
// second of them, r in (0, 1] (Keys 1981, eq. 4, with a = cubic_coeff_a).
std::vector<double> cubic_weights(double r, double a) {
  auto near = [a](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // |t| <= 1
  auto far = [a](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };  // 1 < |t| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

Taps taps_of(const Options& o, const Axis& a) {
  Taps t;
  t.count = o.mode == "nearest" ? 1 : o.mode == "linear" ? 2 : 4;
  for (int64_t x = 0; x < a.out; ++x) {
    const double c = original_coordinate(o, a, x);
    const bool outside = o.coordinates == "tf_crop_and_resize" && (c < 0 || c > double(a.in - 1));
    t.outside.push_back(outside);
    t.any_outside = t.any_outside || outside;
    std::vector<double> w;
    int64_t first;
    if (outside) {
      w.assign(size_t(t.count), 0.0);
      first = 0;
    } else if (t.count == 1) {
      w = {1.0};
      first = nearest_index(o, a, c);
    } else {
      // the inputs around c, the nearer one below when c is an input's position
      const int64_t base = int64_t(std::ceil(c)) - 1;
      const double r = c - double(base);
      w = t.count == 2 ? std::vector<double>{1 - r, r} : cubic_weights(r, o.cubic_a);
      first = t.count == 2 ? base : base - 1;
    }
    double total = 0.0;
    for (int64_t j = 0; j < t.count; ++j) {
      const int64_t i = first + j;
      if (o.exclude_outside && (i < 0 || i >= a.in)) w[size_t(j)] = 0.0;
      total += w[size_t(j)];
      t.index.push_back(std::clamp<int64_t>(i, 0, a.in - 1));  // the edge repeats outside
    }
    for (double& v : w) t.weight.push_back(o.exclude_outside && total != 0.0 ? v / total : v);
  }
  return t;
}

// x resampled along `axis` by its taps.
Tensor resample(const Tensor& x, int64_t axis, const Taps& t, const Options& o) {
  std::vector<int64_t> shape(size_t(x.dim()), 1);
  shape[size_t(axis)] = -1;
  const int64_t out = int64_t(t.outside.size());
  Tensor y;
  for (int64_t j = 0; j < t.count; ++j) {
    std::vector<int64_t> index;
    std::vector<double> weight;
    for (int64_t k = 0; k < out; ++k) {
      index.push_back(t.index[size_t(k * t.count + j)]);
      weight.push_back(t.weight[size_t(k * t.count + j)]);
    }
    Tensor term = x.index_select(axis, int_tensor(index));
    if (t.count > 1) term = term * tensor(weight).to(x.dtype()).reshape(shape);
    y = y.defined() ? y + term : term;
  }
  if (t.any_outside) y = where(tensor(t.outside).reshape(shape), Scalar(o.extrapolation), y);
  return y;
}

bool power_of_two(double v) {
  int exponent;
  return std::frexp(v, &exponent) == 0.5;
}

// nnvm's interpolate, where it computes what ONNX asks of a 4-d input.
std::optional<Tensor> interpolated(const Tensor& x, const Options& o, const std::vector<Axis>& axes, bool by_scales) {
  if (x.dim() != 4 || !is_floating(x.dtype()) || o.coordinates == "tf_crop_and_resize") return std::nullopt;
  for (int64_t d = 0; d < 2; ++d)
    if (axes[size_t(d)].out != axes[size_t(d)].in || axes[size_t(d)].scale != 1.0) return std::nullopt;
  std::string mode;
  bool align_corners = false;
  for (int64_t d = 2; d < 4; ++d) {
    const Axis& a = axes[size_t(d)];
    if (o.mode == "linear" && !o.legacy) {
      align_corners = o.coordinates == "align_corners";
      const bool same = o.coordinates == "half_pixel" || (o.coordinates == "pytorch_half_pixel" && a.out > 1) ||
                        (align_corners && a.length == double(a.out));
      if (!same) return std::nullopt;
      mode = "bilinear";
    } else if (o.mode == "nearest") {
      const bool floors = o.legacy ? a.scale >= 1.0 : o.coordinates == "asymmetric" && o.nearest == "floor";
      if (!floors || !power_of_two(a.scale)) return std::nullopt;
      mode = "nearest";
    } else {
      return std::nullopt;
    }
  }
  if (by_scales)
    return interpolate(x, std::nullopt, std::vector<double>{axes[2].scale, axes[3].scale}, mode, align_corners);
  return interpolate(x, std::vector<int64_t>{axes[2].out, axes[3].out}, std::nullopt, mode, align_corners);
}

void check_options(const OpContext& ctx, const Options& o) {
  NNVM_CHECK(o.mode == "nearest" || o.mode == "linear" || (o.mode == "cubic" && !o.legacy), ctx.where(), "mode '",
             o.mode, "' is not one of nearest, linear", o.legacy ? "" : ", cubic");
  const std::string& c = o.coordinates;
  NNVM_CHECK(c == "half_pixel" || c == "pytorch_half_pixel" || c == "align_corners" || c == "asymmetric" ||
                 c == "tf_half_pixel_for_nn" || c == "tf_crop_and_resize",
             ctx.where(), "coordinate_transformation_mode '", c, "' is not supported");
  const std::string& n = o.nearest;
  NNVM_CHECK(n == "round_prefer_floor" || n == "round_prefer_ceil" || n == "floor" || n == "ceil", ctx.where(),
             "nearest_mode '", n, "' is not supported");
}

// Resizes x by `scales` or to `sizes` (one of them empty).
Tensor resize(const OpContext& ctx, const Options& o, const std::vector<double>& scales,
              const std::vector<int64_t>& sizes, const std::vector<double>& roi) {
  check_options(ctx, o);
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.dim();
  const bool by_scales = sizes.empty();
  NNVM_CHECK(by_scales != scales.empty(), ctx.where(), "needs exactly one of scales and sizes");
  NNVM_CHECK(int64_t(by_scales ? scales.size() : sizes.size()) == rank, ctx.where(), by_scales ? "scales" : "sizes",
             " must have one value per dim of input X ", x.sizes());
  const bool crop = o.coordinates == "tf_crop_and_resize";
  NNVM_CHECK(!crop || int64_t(roi.size()) == 2 * rank, ctx.where(),
             "tf_crop_and_resize needs a roi of 2 values per dim of input X ", x.sizes());
  std::vector<Axis> axes;
  for (int64_t d = 0; d < rank; ++d) {
    Axis a;
    a.in = x.size(d);
    if (crop) {
      a.roi_start = roi[size_t(d)];
      a.roi_end = roi[size_t(rank + d)];
    }
    if (by_scales) {
      a.scale = scales[size_t(d)];
      NNVM_CHECK(a.scale > 0 && std::isfinite(a.scale), ctx.where(), "scales must be positive, got ", a.scale);
      a.length = double(a.in) * (a.roi_end - a.roi_start) * a.scale;
      a.out = int64_t(std::floor(a.length));
    } else {
      a.out = sizes[size_t(d)];
      NNVM_CHECK(a.out >= 0, ctx.where(), "sizes must be non-negative, got ", shape_str(sizes));
      a.scale = a.in > 0 ? double(a.out) / double(a.in) : 1.0;
      a.length = double(a.out);
    }
    axes.push_back(a);
  }
  if (std::optional<Tensor> y = interpolated(x, o, axes, by_scales)) return *y;
  // Integers are resampled in float32 and truncated back (nearest only selects).
  const bool cast = o.mode != "nearest" && !is_floating(x.dtype());
  Tensor y = cast ? x.to(kFloat32) : x;
  for (int64_t d = rank - 1; d >= 0; --d) {
    const Axis& a = axes[size_t(d)];
    if (a.in == 0 || a.out == 0) {
      NNVM_CHECK(a.out == 0 || a.in > 0, ctx.where(), "cannot resize an empty dim ", d, " to ", a.out);
      y = y.narrow(d, 0, 0);
      continue;
    }
    const Taps t = taps_of(o, a);
    if (a.out != a.in || !t.identity(a.in)) y = resample(y, d, t, o);
  }
  if (cast) y = y.trunc().to(x.dtype());
  return y;
}

Tensor resize_op(const OpContext& ctx) {
  Options o;
  o.mode = ctx.attr_string("mode", "nearest");
  if (ctx.opset() < 11) {
    o.legacy = true;
    return resize(ctx, o, to_doubles(ctx.input(1)), {}, {});
  }
  o.coordinates = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  o.nearest = ctx.attr_string("nearest_mode", "round_prefer_floor");
  o.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75);
  o.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  o.extrapolation = ctx.attr_float("extrapolation_value", 0.0);
  auto given = [&](int64_t i) { return ctx.has_input(i) && ctx.input(i).numel() > 0; };
  return resize(ctx, o, given(2) ? to_doubles(ctx.input(2)) : std::vector<double>{},
                given(3) ? to_ints(ctx.input(3)) : std::vector<int64_t>{},
                given(1) ? to_doubles(ctx.input(1)) : std::vector<double>{});
}

Tensor upsample_op(const OpContext& ctx) {
  Options o;
  o.mode = ctx.attr_string("mode", "nearest");
  o.legacy = true;
  const std::vector<double> scales = ctx.opset() < 9 ? ctx.attr_floats("scales") : to_doubles(ctx.input(1));
  return resize(ctx, o, scales, {}, {});
}

}  // namespace

void add_resize_ops(OpTable& table) {
  add(table, "Resize", [](const OpContext& ctx) { return std::vector<Tensor>{resize_op(ctx)}; });
  add(table, "Upsample", [](const OpContext& ctx) { return std::vector<Tensor>{upsample_op(ctx)}; });
}

}  // namespace nnvm::model_detail
