// Model ops that sample images at computed positions or pick boxes
// (registered by add_more_ops): ONNX's GridSample, RoiAlign and
// NonMaxSuppression.
//
// GridSample is built from tensor ops (each interpolation tap one gather), so
// it is recorded and differentiates like other nodes. RoiAlign's sample
// counts and NonMaxSuppression's output size depend on the values of their
// inputs, so they read them on the host (which runs the trace recorded so
// far) and compute in double, as the specification's reference does.
#include <algorithm>
#include <array>
#include <cmath>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

// ---- GridSample ----

// c reflected by the nearer border of [lo, hi] until it lies inside, as the
// specification's reference does; an empty range leaves lo.
Tensor reflect(const Tensor& c, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return zeros_like(c) + lo;
  const Tensor below = c < lo, above = c > hi;
  const Tensor dx = where(below, lo - c, c - hi);
  const Tensor flips = (dx / range).trunc();
  const Tensor r = dx - flips * range;
  const Tensor even = flips.remainder(2) == 0, from_lo = r + lo, from_hi = hi - r;
  return where(below, where(even, from_lo, from_hi), where(above, where(even, from_hi, from_lo), c));
}

// One interpolation tap along one spatial dim: the int64 position it reads
// (always inside the dim) and its weight (0 where zeros padding reads past it).
struct Tap {
  Tensor index, weight;
};

struct Sampling {
  std::string mode, padding;
  bool align_corners = false;
};

// The taps along a spatial dim of `size` for normalized coordinates g.
std::vector<Tap> taps_along(const Tensor& g, int64_t size, const Sampling& s) {
  const double lo = s.align_corners ? 0.0 : -0.5, hi = s.align_corners ? double(size - 1) : double(size) - 0.5;
  const double last = double(size - 1);
  Tensor c = s.align_corners ? (g + 1) / 2 * last : ((g + 1) * double(size) - 1) / 2;
  if (s.mode == "nearest") c = c.round();
  if (s.padding == "border") c = where((c < lo).logical_or(c > hi), c.clamp(0.0, last), c);
  if (s.padding == "reflection") c = reflect(c, lo, hi);
  auto tap = [&](const Tensor& position, const Tensor& weight) {
    Tensor index = position, w = weight;
    if (s.padding == "zeros") w = where((position >= 0).logical_and(position <= last), weight, 0.0);
    if (s.padding == "reflection") index = reflect(position, lo, hi).trunc();
    // NaN or far-off coordinates still read inside the dim (their weight is NaN or 0).
    return Tap{index.nan_to_num(0.0).clamp(0.0, last).to(kInt64), w};
  };
  if (s.mode == "nearest") return {tap(c.trunc(), ones_like(c))};
  const Tensor x0 = c.floor(), f = c - x0;
  if (s.mode == "bilinear") return {tap(x0, 1 - f), tap(x0 + 1, f)};
  // Keys' cubic convolution with a = -0.75, taps x0 - 1 ... x0 + 2.
  constexpr double a = -0.75;
  const Tensor f1 = f + 1, g1 = 1 - f, g2 = 2 - f;
  return {tap(x0 - 1, ((f1 * a - 5 * a) * f1 + 8 * a) * f1 - 4 * a),
          tap(x0, ((f * (a + 2)) - (a + 3)) * f * f + 1),
          tap(x0 + 1, ((g1 * (a + 2)) - (a + 3)) * g1 * g1 + 1),
          tap(x0 + 2, ((g2 * a - 5 * a) * g2 + 8 * a) * g2 - 4 * a)};
}

// GridSample: X [N, C, D1, ...] sampled at grid [N, O1, ..., r] (normalized
// coordinates in [-1, 1], the last dim's first). Every combination of one
// tap per dim is one gather from X flattened to [N, C, D1 * ...].
Tensor grid_sample(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &grid = ctx.input(1);
  const int64_t rank = x.dim() - 2;
  NNVM_CHECK(rank >= 1 && is_floating(x.dtype()) && is_floating(grid.dtype()), ctx.where(),
             "expected a floating-point X [N, C, D1, ...] and grid, got ", x.dtype(), shape_str(x.sizes()), " and ",
             grid.dtype());
  NNVM_CHECK(grid.dim() == x.dim() && grid.size(0) == x.size(0) && grid.size(-1) == rank, ctx.where(), "grid ",
             shape_str(grid.sizes()), " must be [N, O1, ..., ", rank, "] for X ", shape_str(x.sizes()));
  Sampling s{ctx.attr_string("mode", "bilinear"), ctx.attr_string("padding_mode", "zeros"),
             ctx.attr_int("align_corners", 0) != 0};
  if (s.mode == "linear") s.mode = "bilinear";  // opset 20's names
  if (s.mode == "cubic") s.mode = "bicubic";
  NNVM_CHECK(s.mode == "bilinear" || s.mode == "nearest" || s.mode == "bicubic", ctx.where(), "mode '", s.mode,
             "' is not one of bilinear, nearest, bicubic");
  NNVM_CHECK(s.padding == "zeros" || s.padding == "border" || s.padding == "reflection", ctx.where(),
             "padding_mode '", s.padding, "' is not one of zeros, border, reflection");
  const int64_t n = x.size(0), channels = x.size(1), points = numel_of(grid.sizes().subspan(1, size_t(rank)));
  const IntArrayRef sizes = x.sizes().subspan(2);
  for (int64_t size : sizes)
    NNVM_CHECK(size >= 1, ctx.where(), "cannot sample X ", shape_str(x.sizes()), " with an empty spatial dim");
  const Tensor g = grid.to(x.dtype()).reshape({n, points, rank});
  std::vector<std::vector<Tap>> taps;
  for (int64_t d = 0; d < rank; ++d) taps.push_back(taps_along(g.select(2, rank - 1 - d), sizes[size_t(d)], s));
  const Tensor flat = x.reshape({n, channels, numel_of(sizes)});
  Tensor y = zeros({n, channels, points}, x.dtype());
  std::vector<size_t> pick(size_t(rank), 0);
  do {
    Tensor index = taps[0][pick[0]].index, weight = taps[0][pick[0]].weight;
    for (int64_t d = 1; d < rank; ++d) {
      index = index * sizes[size_t(d)] + taps[size_t(d)][pick[size_t(d)]].index;
      weight = weight * taps[size_t(d)][pick[size_t(d)]].weight;
    }
    const Tensor read = flat.gather(2, index.unsqueeze(1).expand({n, channels, points}).contiguous());
    y = y + read * weight.unsqueeze(1);
    size_t d = pick.size();  // the next combination, last dim fastest
    while (d > 0 && ++pick[d - 1] == taps[d - 1].size()) pick[--d] = 0;
    if (d == 0) break;
  } while (true);
  std::vector<int64_t> shape{n, channels};
  shape.insert(shape.end(), grid.sizes().begin() + 1, grid.sizes().end() - 1);
  return y.reshape(shape);
}

// ---- RoiAlign ----

// One bilinear sample of a bin: four flat positions in an [H, W] plane and their weights.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

// The sample at (y, x) of an [h, w] plane, as the specification's reference
// takes it: 0 beyond one pixel outside, clamped to the plane's edge inside that.
Sample bilinear_sample(double y, double x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0 || y > double(h) || x < -1.0 || x > double(w)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = int64_t(y), x0 = int64_t(x), y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= h - 1) y = double(y0 = y1 = h - 1);
  if (x0 >= w - 1) x = double(x0 = x1 = w - 1);
  const double ly = y - double(y0), lx = x - double(x0), hy = 1 - ly, hx = 1 - lx;
  s = Sample{{y0 * w + x0, y0 * w + x1, y1 * w + x0, y1 * w + x1}, {hy * hx, hy * lx, ly * hx, ly * lx}};
  return s;
}

// RoiAlign: for each box (x1, y1, x2, y2 in rois, scaled by spatial_scale) of
// image batch_indices[r], an output_height x output_width grid of bins, each
// the average (or max) of sampling_ratio^2 bilinear samples (by default
// ceil(bin size) per side).
Tensor roi_align(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &rois = ctx.input(1), &batch_indices = ctx.input(2);
  NNVM_CHECK(x.dim() == 4 && is_floating(x.dtype()), ctx.where(), "expected a floating-point X [N, C, H, W], got ",
             x.dtype(), shape_str(x.sizes()));
  NNVM_CHECK(rois.dim() == 2 && rois.size(1) == 4 && is_floating(rois.dtype()), ctx.where(),
             "expected floating-point rois [num_rois, 4], got ", rois.dtype(), shape_str(rois.sizes()));
  NNVM_CHECK(batch_indices.dim() == 1 && batch_indices.size(0) == rois.size(0) && is_integral(batch_indices.dtype()),
             ctx.where(), "batch_indices must be integers [", rois.size(0), "], got ", batch_indices.dtype(),
             shape_str(batch_indices.sizes()));
  const std::string mode = ctx.attr_string("mode", "avg");
  NNVM_CHECK(mode == "avg" || mode == "max", ctx.where(), "mode '", mode, "' is not one of avg, max");
  const int64_t out_h = ctx.attr_int("output_height", 1), out_w = ctx.attr_int("output_width", 1);
  const int64_t ratio = ctx.attr_int("sampling_ratio", 0);
  NNVM_CHECK(out_h >= 1 && out_w >= 1 && ratio >= 0, ctx.where(),
             "output_height and output_width must be positive, sampling_ratio non-negative");
  const double scale = ctx.attr_float("spatial_scale", 1.0);
  // Opset 10 has no coordinate_transformation_mode; it behaves as output_half_pixel.
  const std::string transform =
      ctx.opset() >= 16 ? ctx.attr_string("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  NNVM_CHECK(transform == "half_pixel" || transform == "output_half_pixel", ctx.where(),
             "coordinate_transformation_mode '", transform, "' is not one of half_pixel, output_half_pixel");
  const bool half_pixel = transform == "half_pixel";
  NNVM_CHECK(x.size(2) >= 1 && x.size(3) >= 1, ctx.where(), "cannot sample X ", shape_str(x.sizes()),
             " with an empty plane");
  const int64_t channels = x.size(1), h = x.size(2), w = x.size(3), num_rois = rois.size(0), bins = out_h * out_w;
  const std::vector<double> xv = to_doubles(x), box = to_doubles(rois);
  const std::vector<int64_t> batch = to_ints(batch_indices);
  Tensor y = empty({num_rois, channels, out_h, out_w}, kFloat64);
  double* out = y.data_ptr<double>();
  for (int64_t r = 0; r < num_rois; ++r) {
    const int64_t b = batch[size_t(r)];
    NNVM_CHECK(b >= 0 && b < x.size(0), ctx.where(), "batch index ", b, " of roi ", r, " is outside [0, ",
               x.size(0), ")");
    const double offset = half_pixel ? 0.5 : 0.0;
    const double x1 = box[size_t(4 * r)] * scale - offset, y1 = box[size_t(4 * r + 1)] * scale - offset;
    double roi_w = box[size_t(4 * r + 2)] * scale - offset - x1, roi_h = box[size_t(4 * r + 3)] * scale - offset - y1;
    if (!half_pixel) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
    const double bin_h = roi_h / double(out_h), bin_w = roi_w / double(out_w);
    // Samples per bin side: sampling_ratio, or ceil(bin size) (none for an inverted box).
    NNVM_CHECK(std::isfinite(x1) && std::isfinite(y1) && std::abs(bin_h) < 1e9 && std::abs(bin_w) < 1e9, ctx.where(),
               "roi ", r, " (", box[size_t(4 * r)], ", ", box[size_t(4 * r + 1)], ", ", box[size_t(4 * r + 2)], ", ",
               box[size_t(4 * r + 3)], ") is not finite, or too large to sample");
    const int64_t grid_h = ratio > 0 ? ratio : int64_t(std::ceil(bin_h));
    const int64_t grid_w = ratio > 0 ? ratio : int64_t(std::ceil(bin_w));
    const double count = double(std::max<int64_t>(grid_h * grid_w, 1));
    const bool sampled = grid_h > 0 && grid_w > 0;
    std::vector<double> acc(static_cast<size_t>(channels));
    for (int64_t bin = 0; bin < bins; ++bin) {
      const int64_t ph = bin / out_w, pw = bin % out_w;
      std::fill(acc.begin(), acc.end(), mode == "avg" ? 0.0 : -INFINITY);
      for (int64_t iy = 0; iy < grid_h; ++iy)
        for (int64_t ix = 0; ix < grid_w; ++ix) {
          const Sample s = bilinear_sample(y1 + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(grid_h),
                                           x1 + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(grid_w), h, w);
          for (int64_t c = 0; c < channels; ++c) {
            const double* plane = xv.data() + (b * channels + c) * h * w;
            for (int k = 0; k < 4; ++k) {
              const double tap = s.w[k] * plane[s.pos[k]];
              // max: the reference's, the largest weighted tap
              acc[size_t(c)] = mode == "avg" ? acc[size_t(c)] + tap : std::max(acc[size_t(c)], tap);
            }
          }
        }
      for (int64_t c = 0; c < channels; ++c)
        out[(r * channels + c) * bins + bin] = mode == "avg" ? acc[size_t(c)] / count : sampled ? acc[size_t(c)] : 0.0;
    }
  }
  return y.to(x.dtype());
}

// ---- NonMaxSuppression ----

// A box's corners (y1, x1, y2, x2 in any order, or center and size) as
// [ymin, xmin, ymax, xmax].
std::array<double, 4> corners(const double* b, bool center) {
  if (center) return {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Whether a and b overlap by more than `threshold` (intersection over union).
bool overlaps(const std::array<double, 4>& a, const std::array<double, 4>& b, double threshold) {
  const double ih = std::min(a[2], b[2]) - std::max(a[0], b[0]), iw = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (ih <= 0 || iw <= 0) return false;
  const double inter = ih * iw, area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

// NonMaxSuppression -> selected_indices [k, 3] of (batch, class, box): per
// batch and class, boxes in decreasing score (ties: the lower index first)
// above score_threshold, each kept unless it overlaps a kept one by more than
// iou_threshold, up to max_output_boxes_per_class (default 0: none). A NaN
// score is never selected.
Tensor non_max_suppression(const OpContext& ctx) {
  const Tensor &boxes = ctx.input(0), &scores = ctx.input(1);
  NNVM_CHECK(boxes.dim() == 3 && boxes.size(2) == 4 && scores.dim() == 3 && scores.size(0) == boxes.size(0) &&
                 scores.size(2) == boxes.size(1),
             ctx.where(), "expected boxes [batch, boxes, 4] and scores [batch, classes, boxes], got ",
             shape_str(boxes.sizes()), " and ", shape_str(scores.sizes()));
  int64_t max_out = 0;
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) max_out = ints_input(ctx, 2, "max_output_boxes_per_class", 1)[0];
  auto scalar = [&](int64_t i, const char* what) -> std::optional<double> {
    if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return std::nullopt;
    NNVM_CHECK(ctx.input(i).numel() == 1, ctx.where(), what, " must hold one value, got ",
               shape_str(ctx.input(i).sizes()));
    return to_doubles(ctx.input(i))[0];
  };
  const double iou_threshold = scalar(3, "iou_threshold").value_or(0.0);
  const std::optional<double> score_threshold = scalar(4, "score_threshold");
  const int64_t center = ctx.attr_int("center_point_box", 0);
  NNVM_CHECK(center == 0 || center == 1, ctx.where(), "center_point_box must be 0 or 1, got ", center);
  const int64_t batches = boxes.size(0), num_boxes = boxes.size(1), classes = scores.size(1);
  const std::vector<double> bv = to_doubles(boxes), sv = to_doubles(scores);
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const double* score = sv.data() + (b * classes + c) * num_boxes;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < num_boxes; ++i)
        if (!std::isnan(score[i]) && (!score_threshold || score[i] > *score_threshold)) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return score[i] > score[j]; });
      std::vector<std::array<double, 4>> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= max_out) break;
        const std::array<double, 4> box = corners(bv.data() + (b * num_boxes + i) * 4, center == 1);
        if (std::any_of(kept.begin(), kept.end(), [&](const auto& k) { return overlaps(box, k, iou_threshold); }))
          continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  return tensor(selected).reshape({int64_t(selected.size() / 3), 3});
}

}  // namespace

void add_image_ops(OpTable& table) {
  add_single(table, "GridSample", grid_sample);
  add_single(table, "RoiAlign", roi_align);
  add_single(table, "NonMaxSuppression", non_max_suppression);
}

}  // namespace nnvm::model_detail
