// Observers: PyTorch's torch.ao.quantization observers, which watch batches of
// float values and choose a quantized tensor's scale and zero point
// (core/quantize.h). calculate_qparams computes as PyTorch's
// _calculate_qparams does, in float32: min clamped to <= 0, max to >= 0;
// affine: scale = (max - min) / (qmax - qmin), zero point = qmin - round(min / scale)
// clamped to [qmin, qmax]; symmetric: scale = max(-min, max) / ((qmax - qmin) / 2),
// zero point 0 (128 for quint8); the scale at least float32's epsilon. Scales
// come back as float32 tensors and zero points as int64 ones, of shape [1] per
// tensor and [channels] per channel; before any observation, [1.0] and [0].
#pragma once

#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "nnvm/core/quantize.h"
#include "nnvm/core/tensor.h"

namespace nnvm::quantization {

class ObserverBase {
 public:
  // dtype kQInt8 or kQUInt8; reduce_range halves the range ([-64, 63], [0, 127]).
  ObserverBase(DType dtype, QScheme qscheme, bool reduce_range);
  virtual ~ObserverBase() = default;

  // Observes a batch and returns it, as PyTorch's forward does.
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  // {scales, zero_points}
  virtual std::tuple<Tensor, Tensor> calculate_qparams() const = 0;

  DType dtype() const { return dtype_; }
  QScheme qscheme() const { return qscheme_; }
  int64_t quant_min() const { return quant_min_; }
  int64_t quant_max() const { return quant_max_; }

 protected:
  // PyTorch's _calculate_qparams over per-channel (or one-element) bounds.
  std::tuple<Tensor, Tensor> qparams_from(const std::vector<float>& min_val, const std::vector<float>& max_val) const;

 private:
  DType dtype_;
  QScheme qscheme_;
  int64_t quant_min_, quant_max_;
};

// The running minimum and maximum of every value seen.
class MinMaxObserver : public ObserverBase {
 public:
  explicit MinMaxObserver(DType dtype = kQUInt8, QScheme qscheme = kPerTensorAffine, bool reduce_range = false);
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> calculate_qparams() const override;
  float min_val() const { return min_val_; }
  float max_val() const { return max_val_; }

 protected:
  float min_val_ = std::numeric_limits<float>::infinity();
  float max_val_ = -std::numeric_limits<float>::infinity();
};

// The minimum and maximum of each batch, averaged: m += c * (batch_m - m).
class MovingAverageMinMaxObserver : public MinMaxObserver {
 public:
  explicit MovingAverageMinMaxObserver(double averaging_constant = 0.01, DType dtype = kQUInt8,
                                       QScheme qscheme = kPerTensorAffine, bool reduce_range = false);
  Tensor forward(const Tensor& x) override;

 private:
  float averaging_constant_;
};

// The running minimum and maximum of each index of ch_axis.
class PerChannelMinMaxObserver : public ObserverBase {
 public:
  explicit PerChannelMinMaxObserver(int64_t ch_axis = 0, DType dtype = kQUInt8, QScheme qscheme = kPerChannelAffine,
                                    bool reduce_range = false);
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> calculate_qparams() const override;
  int64_t ch_axis() const { return ch_axis_; }

 private:
  int64_t ch_axis_;
  std::vector<float> min_val_, max_val_;
};

// Clips the tails: a histogram of every value seen (`bins` bins over the
// range seen so far, re-binned when it widens), and bounds at the given
// percentile of the low and the high tail (99.99: the lowest and highest
// 0.01% of the values are clipped). The lower bound is the left edge of the
// bin holding the value that many from the top, the upper the right edge of the
// bin holding it from the bottom; then calculate_qparams as above.
class PercentileObserver : public ObserverBase {
 public:
  explicit PercentileObserver(double percentile = 99.99, DType dtype = kQUInt8, QScheme qscheme = kPerTensorAffine,
                              int64_t bins = 2048, bool reduce_range = false);
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> calculate_qparams() const override;
  // The clipped bounds calculate_qparams uses.
  std::tuple<float, float> bounds() const;

 private:
  double percentile_;
  std::vector<int64_t> histogram_;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
};

}  // namespace nnvm::quantization
