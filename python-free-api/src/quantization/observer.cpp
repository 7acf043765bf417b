// Observers (nnvm/quantization/observer.h). They read the observed values
// (in traced mode a batch's pending values are computed first) and keep their
// statistics as plain floats, in float32 as PyTorch's buffers are.
#include "nnvm/quantization/observer.h"

#include <algorithm>
#include <cmath>

#include "nnvm/core/functions.h"

namespace nnvm::quantization {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A batch's values as float32, in the order of `x` with ch_axis moved first.
std::vector<float> values_of(const Tensor& x, const char* who, int64_t ch_axis = 0) {
  NNVM_CHECK(x.defined(), who, "the observed tensor is undefined");
  return x.detach().to(kFloat32).transpose(0, ch_axis).contiguous().to_vector<float>();
}

// The smallest and largest of `n` values from p (NaN skipped).
std::pair<float, float> bounds_of(const float* p, size_t n) {
  float lo = kInf, hi = -kInf;
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  return {lo, hi};
}

}  // namespace

ObserverBase::ObserverBase(DType dtype, QScheme qscheme, bool reduce_range) : dtype_(dtype), qscheme_(qscheme) {
  NNVM_CHECK(dtype == kQInt8 || dtype == kQUInt8, "observer", "expected dtype kQInt8 or kQUInt8 but got ", dtype);
  quant_min_ = nnvm::quant_min(dtype);
  quant_max_ = nnvm::quant_max(dtype);
  if (reduce_range) {
    quant_min_ /= 2;
    quant_max_ = dtype == kQUInt8 ? 127 : 63;
  }
}

std::tuple<Tensor, Tensor> ObserverBase::qparams_from(const std::vector<float>& min_val,
                                                      const std::vector<float>& max_val) const {
  if (min_val.empty() || (min_val.size() == 1 && min_val[0] == kInf && max_val[0] == -kInf))
    return {tensor(std::vector<float>{1.0f}), tensor(std::vector<int64_t>{0})};  // nothing observed yet
  const bool symmetric = qscheme_ == kPerTensorSymmetric || qscheme_ == kPerChannelSymmetric;
  const float eps = std::numeric_limits<float>::epsilon();
  std::vector<float> scales(min_val.size());
  std::vector<int64_t> zero_points(min_val.size());
  for (size_t c = 0; c < min_val.size(); ++c) {
    NNVM_CHECK(std::isfinite(min_val[c]) && std::isfinite(max_val[c]), "calculate_qparams", "observed bounds [",
               min_val[c], ", ", max_val[c], "] are not finite");
    NNVM_CHECK(min_val[c] <= max_val[c], "calculate_qparams", "min ", min_val[c], " should be less than max ",
               max_val[c]);
    const float min_neg = std::min(min_val[c], 0.0f), max_pos = std::max(max_val[c], 0.0f);
    if (symmetric) {
      scales[c] = std::max(std::max(-min_neg, max_pos) / (float(quant_max_ - quant_min_) / 2.0f), eps);
      zero_points[c] = dtype_ == kQUInt8 ? 128 : 0;
    } else {
      scales[c] = std::max((max_pos - min_neg) / float(quant_max_ - quant_min_), eps);
      const int64_t zp = quant_min_ - int64_t(std::nearbyint(min_neg / scales[c]));
      zero_points[c] = std::clamp(zp, quant_min_, quant_max_);
    }
  }
  return {tensor(scales), tensor(zero_points)};
}

MinMaxObserver::MinMaxObserver(DType dtype, QScheme qscheme, bool reduce_range)
    : ObserverBase(dtype, qscheme, reduce_range) {
  NNVM_CHECK(qscheme == kPerTensorAffine || qscheme == kPerTensorSymmetric, "MinMaxObserver",
             "expected a per-tensor qscheme but got ", qscheme);
}

Tensor MinMaxObserver::forward(const Tensor& x) {
  const std::vector<float> v = values_of(x, "MinMaxObserver");
  if (v.empty()) return x;
  const auto [lo, hi] = bounds_of(v.data(), v.size());
  min_val_ = std::min(min_val_, lo);
  max_val_ = std::max(max_val_, hi);
  return x;
}

std::tuple<Tensor, Tensor> MinMaxObserver::calculate_qparams() const { return qparams_from({min_val_}, {max_val_}); }

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(double averaging_constant, DType dtype, QScheme qscheme,
                                                         bool reduce_range)
    : MinMaxObserver(dtype, qscheme, reduce_range), averaging_constant_(float(averaging_constant)) {
  NNVM_CHECK(averaging_constant > 0 && averaging_constant <= 1, "MovingAverageMinMaxObserver",
             "averaging_constant must be in (0, 1], got ", averaging_constant);
}

Tensor MovingAverageMinMaxObserver::forward(const Tensor& x) {
  const std::vector<float> v = values_of(x, "MovingAverageMinMaxObserver");
  if (v.empty()) return x;
  const auto [lo, hi] = bounds_of(v.data(), v.size());
  if (min_val_ == kInf && max_val_ == -kInf) {
    min_val_ = lo;
    max_val_ = hi;
  } else {
    min_val_ = min_val_ + averaging_constant_ * (lo - min_val_);
    max_val_ = max_val_ + averaging_constant_ * (hi - max_val_);
  }
  return x;
}

PerChannelMinMaxObserver::PerChannelMinMaxObserver(int64_t ch_axis, DType dtype, QScheme qscheme, bool reduce_range)
    : ObserverBase(dtype, qscheme, reduce_range), ch_axis_(ch_axis) {
  NNVM_CHECK(qscheme == kPerChannelAffine || qscheme == kPerChannelSymmetric, "PerChannelMinMaxObserver",
             "expected a per-channel qscheme but got ", qscheme);
}

Tensor PerChannelMinMaxObserver::forward(const Tensor& x) {
  constexpr const char* who = "PerChannelMinMaxObserver";
  NNVM_CHECK(x.defined(), who, "the observed tensor is undefined");
  NNVM_CHECK(x.dim() > 0, who, "expected a tensor with an axis ", ch_axis_, " but got a scalar");
  const int64_t axis = wrap_dim(ch_axis_, x.dim(), who);
  if (x.numel() == 0) return x;
  const std::vector<float> v = values_of(x, who, axis);
  const size_t channels = size_t(x.size(axis)), per = v.size() / channels;
  NNVM_CHECK(min_val_.empty() || min_val_.size() == channels, who, "observed ", min_val_.size(),
             " channels before, now ", channels, " (shape ", shape_str(x.sizes()), ", axis ", axis, ")");
  if (min_val_.empty()) {
    min_val_.assign(channels, kInf);
    max_val_.assign(channels, -kInf);
  }
  for (size_t c = 0; c < channels; ++c) {
    const auto [lo, hi] = bounds_of(v.data() + c * per, per);
    min_val_[c] = std::min(min_val_[c], lo);
    max_val_[c] = std::max(max_val_[c], hi);
  }
  return x;
}

std::tuple<Tensor, Tensor> PerChannelMinMaxObserver::calculate_qparams() const {
  return qparams_from(min_val_, max_val_);
}

PercentileObserver::PercentileObserver(double percentile, DType dtype, QScheme qscheme, int64_t bins,
                                       bool reduce_range)
    : ObserverBase(dtype, qscheme, reduce_range),
      percentile_(percentile),
      histogram_(size_t(std::max<int64_t>(bins, 0))) {
  NNVM_CHECK(percentile >= 50 && percentile <= 100, "PercentileObserver", "percentile must be in [50, 100], got ",
             percentile);
  NNVM_CHECK(bins > 0, "PercentileObserver", "bins must be positive, got ", bins);
  NNVM_CHECK(qscheme == kPerTensorAffine || qscheme == kPerTensorSymmetric, "PercentileObserver",
             "expected a per-tensor qscheme but got ", qscheme);
}

namespace {

size_t bin_of(double v, double min, double max, size_t bins) {
  const double width = (max - min) / double(bins);
  if (!(width > 0)) return 0;
  return std::min(bins - 1, size_t(std::max(0.0, (v - min) / width)));
}

}  // namespace

Tensor PercentileObserver::forward(const Tensor& x) {
  const std::vector<float> v = values_of(x, "PercentileObserver");
  const auto [lo, hi] = bounds_of(v.data(), v.size());
  if (!(lo <= hi)) return x;  // empty, or NaN only
  const size_t bins = histogram_.size();
  if (lo < min_ || hi > max_) {  // widen: each old bin's count moves to the new bin of its centre
    const double new_min = std::min(min_, double(lo)), new_max = std::max(max_, double(hi));
    std::vector<int64_t> rebinned(bins);
    const double width = (max_ - min_) / double(bins);
    for (size_t b = 0; b < bins; ++b)
      if (histogram_[b]) rebinned[bin_of(min_ + (double(b) + 0.5) * width, new_min, new_max, bins)] += histogram_[b];
    histogram_ = std::move(rebinned);
    min_ = new_min;
    max_ = new_max;
  }
  for (float f : v)
    if (!std::isnan(f)) ++histogram_[bin_of(f, min_, max_, bins)];
  return x;
}

std::tuple<float, float> PercentileObserver::bounds() const {
  int64_t total = 0;
  for (int64_t n : histogram_) total += n;
  if (total == 0) return {kInf, -kInf};
  const int64_t target = std::clamp<int64_t>(int64_t(std::ceil(percentile_ * double(total) / 100.0)), 1, total);
  const size_t bins = histogram_.size();
  const double width = (max_ - min_) / double(bins);
  auto edge = [&](size_t b) { return float(min_ + double(b) * width); };
  float lo = float(min_), hi = float(max_);
  int64_t seen = 0;
  for (size_t b = 0; b < bins; ++b)
    if ((seen += histogram_[b]) >= target) {
      hi = std::min(hi, edge(b + 1));
      break;
    }
  seen = 0;
  for (size_t b = bins; b-- > 0;)
    if ((seen += histogram_[b]) >= target) {
      lo = std::max(lo, edge(b));
      break;
    }
  return {lo, hi};
}

std::tuple<Tensor, Tensor> PercentileObserver::calculate_qparams() const {
  const auto [lo, hi] = bounds();
  return qparams_from({lo}, {hi});
}

}  // namespace nnvm::quantization
