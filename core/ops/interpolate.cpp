// interpolate: resampling of the spatial dims (those after N and C), with
// PyTorch's modes and coordinates. "nearest" of a 4-D input and "bilinear"
// are the upsample ops of core/ops/pool.cpp, with kernels. "nearest" of a 3-
// or 5-D input and "nearest-exact" pick one input index per output index in
// each spatial dim: an index_select per dim, which differentiates as
// index_select does (the gradient adds each output back onto its source). The other modes are
// separable, one 1-D resampling per spatial dim, and each 1-D resampling is
// linear in the input: a product by an [out, in] matrix of weights built here
// from the sizes alone. So "linear", "bicubic", "trilinear" and "area" are one
// matmul per dim; they differentiate, trace and fuse as matmul does, and cost
// out · in multiply-adds per row, which suits the small feature maps these
// modes are used on.
#include <algorithm>
#include <cmath>
#include <string>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/ops/image.h"

namespace nnvm {

namespace {

constexpr std::string_view kOp = "interpolate";

// The rank each mode takes (area: 3 to 5), as PyTorch.
struct ModeRule {
  std::string_view mode;
  int64_t min_rank, max_rank;
  bool takes_align_corners;
};
constexpr ModeRule kModes[] = {{"nearest", 3, 5, false},   {"nearest-exact", 3, 5, false}, {"linear", 3, 3, true},
                               {"bilinear", 4, 4, true},  {"bicubic", 4, 4, true},        {"trilinear", 5, 5, true},
                               {"area", 3, 5, false}};

const ModeRule& mode_rule(std::string_view mode) {
  for (const ModeRule& r : kModes)
    if (r.mode == mode) return r;
  NNVM_CHECK(false, kOp, "mode must be \"nearest\", \"nearest-exact\", \"linear\", \"bilinear\", \"bicubic\", ",
             "\"trilinear\" or \"area\", got \"", mode, "\"");
  return kModes[0];
}

// Nearest-neighbour resampling as one index_select per spatial dim.
Tensor nearest_by_index(const Tensor& x, IntArrayRef size, const std::vector<double>& scales, bool exact) {
  Tensor y = x;
  for (int64_t s = 0; s < int64_t(size.size()); ++s) {
    const int64_t d = 2 + s, in = x.size(d), out = size[size_t(s)];
    std::vector<int64_t> source(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) source[size_t(o)] = nearest_source(o, in, out, scales[size_t(s)], exact);
    bool identity = in == out;
    for (int64_t o = 0; identity && o < out; ++o) identity = source[size_t(o)] == o;
    if (!identity) y = y.index_select(d, tensor(source));
  }
  return y;
}

// PyTorch's area_pixel_compute_scale: input pixels per output pixel.
double source_step(int64_t in, int64_t out, bool align_corners, double scale_factor) {
  if (align_corners) return out > 1 ? double(in - 1) / double(out - 1) : 0.0;
  return scale_factor > 0 ? 1.0 / scale_factor : double(in) / double(out);
}

// Keys' cubic convolution kernel with a = -0.75, PyTorch's choice (its
// upsample_bicubic2d): for |d| <= 1 and for 1 < |d| < 2.
constexpr double kCubicA = -0.75;
double cubic_near(double d) { return ((kCubicA + 2) * d - (kCubicA + 3)) * d * d + 1; }
double cubic_far(double d) { return ((kCubicA * d - 5 * kCubicA) * d + 8 * kCubicA) * d - 4 * kCubicA; }

// The [out, in] weights of one dim, row-major. Taps that fall outside the
// input read its edge, as PyTorch's bicubic does.
std::vector<double> resample_weights(std::string_view mode, int64_t in, int64_t out, bool align_corners,
                                     double scale_factor) {
  std::vector<double> w(size_t(out * in), 0.0);
  auto tap = [&](int64_t o, int64_t i, double weight) {
    w[size_t(o * in + std::clamp<int64_t>(i, 0, in - 1))] += weight;
  };
  const double step = source_step(in, out, align_corners, scale_factor);
  for (int64_t o = 0; o < out; ++o) {
    if (mode == "area") {  // adaptive average pooling's window: [floor(o in / out), ceil((o + 1) in / out))
      const int64_t start = o * in / out, end = ((o + 1) * in + out - 1) / out;
      for (int64_t i = start; i < end; ++i) tap(o, i, 1.0 / double(end - start));
      continue;
    }
    const double src = align_corners ? step * double(o) : step * (double(o) + 0.5) - 0.5;
    if (mode == "bicubic") {
      const double base = std::floor(src), t = src - base;
      const int64_t i = int64_t(base);
      tap(o, i - 1, cubic_far(t + 1));
      tap(o, i, cubic_near(t));
      tap(o, i + 1, cubic_near(1 - t));
      tap(o, i + 2, cubic_far(2 - t));
    } else {  // linear: a source left of pixel 0 reads pixel 0
      const double s = std::max(src, 0.0);
      const int64_t i = std::min<int64_t>(int64_t(s), in - 1);
      const double frac = s - double(i);
      tap(o, i, 1 - frac);
      tap(o, i + 1, frac);
    }
  }
  return w;
}

bool is_identity(const std::vector<double>& w, int64_t n) {
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c)
      if (w[size_t(r * n + c)] != (r == c ? 1.0 : 0.0)) return false;
  return true;
}

// Resamples each spatial dim in turn by its weights: x moved so that the dim
// is last, times the transposed weights.
Tensor separable_resample(const Tensor& x, std::string_view mode, IntArrayRef size, const std::vector<double>& scales,
                          bool align_corners) {
  Tensor y = x;
  for (int64_t s = 0; s < int64_t(size.size()); ++s) {
    const int64_t d = 2 + s, in = x.size(d), out = size[size_t(s)];
    std::vector<double> w = resample_weights(mode, in, out, align_corners, scales[size_t(s)]);
    if (in == out && is_identity(w, in)) continue;
    const Tensor weights = tensor(w, IntArrayRef({out, in})).to(x.dtype());
    y = y.transpose(d, -1).matmul(weights.t()).transpose(d, -1);
  }
  return y;
}

// One value per spatial dim from a list of one (for all) or of that many.
template <class T> std::vector<T> per_dim(const std::vector<T>& v, int64_t spatial, std::string_view what) {
  NNVM_CHECK(v.size() == 1 || int64_t(v.size()) == spatial, kOp, what, " must have 1 or ", spatial,
             " values (one per spatial dim), got ", v.size());
  return v.size() == 1 ? std::vector<T>(size_t(spatial), v[0]) : v;
}

}  // namespace

Tensor interpolate(const Tensor& x, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor, std::string_view mode, bool align_corners) {
  NNVM_CHECK(x.defined(), kOp, "the input is an undefined tensor");
  const ModeRule& rule = mode_rule(mode);
  NNVM_CHECK(x.dim() >= rule.min_rank && x.dim() <= rule.max_rank, kOp, "mode \"", mode, "\" expects a ",
             rule.min_rank == rule.max_rank ? std::to_string(rule.min_rank) : "3-, 4- or 5",
             "-D input (N, C and the spatial dims), got ", shape_str(x.sizes()));
  NNVM_CHECK(rule.takes_align_corners || !align_corners, kOp, "align_corners only applies to the linear modes and ",
             "bicubic, not \"", mode, "\"");
  NNVM_CHECK(size.has_value() != scale_factor.has_value(), kOp, "give exactly one of size and scale_factor");
  NNVM_CHECK(is_floating(x.dtype()), kOp, "expected a floating-point input, got ", x.dtype());
  for (int64_t d = 1; d < x.dim(); ++d)
    NNVM_CHECK(x.size(d) > 0, kOp, "expected non-empty channel and spatial dims, got ", shape_str(x.sizes()));
  const int64_t spatial = x.dim() - 2;
  DimVector out;
  std::vector<double> scales(size_t(spatial), 0.0);  // 0: derived from the sizes
  if (size) {
    for (int64_t v : per_dim(*size, spatial, "size")) {
      NNVM_CHECK(v > 0, kOp, "size must be positive, got ", shape_str(*size));
      out.push_back(v);
    }
  } else {
    scales = per_dim(*scale_factor, spatial, "scale_factor");
    for (int64_t s = 0; s < spatial; ++s) {
      NNVM_CHECK(scales[size_t(s)] > 0 && std::isfinite(scales[size_t(s)]), kOp, "scale_factor must be positive, got ",
                 scales[size_t(s)]);
      out.push_back(int64_t(std::floor(double(x.size(2 + s)) * scales[size_t(s)])));
      NNVM_CHECK(out.back() > 0, kOp, "scale_factor ", scales[size_t(s)], " gives an empty output for input ",
                 shape_str(x.sizes()));
    }
  }
  // A size left as it is still gives a new tensor, as in libtorch, never x itself.
  const auto fresh = [&x](const Tensor& y) { return y.is_same(x) ? x.clone() : y; };
  if (mode == "nearest-exact" || (mode == "nearest" && x.dim() != 4))
    return fresh(nearest_by_index(x, out, scales, mode == "nearest-exact"));
  if (mode == "nearest") {
    static const OpDef& nearest = find_op("upsample_nearest2d");
    return call1(nearest, {x}, {out, Scalar(scales[0]), Scalar(scales[1])});
  }
  if (mode == "bilinear") {
    static const OpDef& bilinear = find_op("upsample_bilinear2d");
    return call1(bilinear, {x}, {out, Scalar(scales[0]), Scalar(scales[1]), align_corners});
  }
  return fresh(separable_resample(x, mode, out, scales, align_corners));
}

}  // namespace nnvm
