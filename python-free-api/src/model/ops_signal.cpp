// Model ops of signal processing (registered by add_more_ops): ONNX's
// HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix, DFT and STFT.
//
// Windows and the transforms' cosine and sine matrices are tensor ops in
// float64 (each angle reduced to 2 pi (j k mod n) / n before its cosine);
// DFT and STFT multiply by those matrices, O(n^2) per transform. The mel
// filters follow the reference's loops on the host, into a tensor allocated
// first, so a size past memory is an nnvm::Error.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

// The output_datatype attribute's dtype (float32 by default).
DType output_dtype(const OpContext& ctx) {
  const int64_t code = ctx.attr_int("output_datatype", 1);
  const std::optional<DType> dtype = dtype_from_onnx(code);
  NNVM_CHECK(dtype.has_value(), ctx.where(), "output_datatype ", onnx_dtype_name(code), " is not one nnvm has");
  return *dtype;
}

int64_t scalar_int(const OpContext& ctx, int64_t input, const char* what) {
  return ints_input(ctx, input, what, 1)[0];
}

constexpr double kPi = std::numbers::pi;

// A window of `size` (input 0) values fn(2 pi n / N) for n = 0, 1, ..., with
// N = size when periodic, size - 1 otherwise. A symmetric window of one value
// (N = 0) is [1], as numpy's.
Tensor window(const OpContext& ctx, const std::function<Tensor(const Tensor&)>& fn) {
  const int64_t size = scalar_int(ctx, 0, "size");
  NNVM_CHECK(size >= 0, ctx.where(), "size must be non-negative, got ", size);
  const int64_t big_n = ctx.attr_int("periodic", 1) ? size : size - 1;
  const Tensor w = big_n == 0 ? ones({size}, kFloat64) : fn(arange(size, kFloat64) * (2 * kPi / double(big_n)));
  return w.to(output_dtype(ctx));
}

Tensor hann(const Tensor& angle) { return (angle * 0.5).sin().square(); }
Tensor hamming(const Tensor& angle) { return 25.0 / 46.0 - angle.cos() * (21.0 / 46.0); }
Tensor blackman(const Tensor& angle) { return 0.42 - angle.cos() * 0.5 + (angle * 2).cos() * 0.08; }

// MelWeightMatrix [dft_length / 2 + 1, num_mel_bins]: triangular filters
// between num_mel_bins + 2 points spaced evenly in mels, each point's DFT bin
// floor((dft_length + 1) * hertz / sample_rate), as the specification's
// reference computes them (mel steps of (high - low) / (num_mel_bins + 2)).
Tensor mel_weight_matrix(const OpContext& ctx) {
  const int64_t mel_bins = scalar_int(ctx, 0, "num_mel_bins"), dft_length = scalar_int(ctx, 1, "dft_length");
  const int64_t sample_rate = scalar_int(ctx, 2, "sample_rate");
  NNVM_CHECK(ctx.input(3).numel() == 1 && ctx.input(4).numel() == 1, ctx.where(),
             "lower_edge_hertz and upper_edge_hertz must be scalars");
  const double lower = to_doubles(ctx.input(3))[0], upper = to_doubles(ctx.input(4))[0];
  NNVM_CHECK(mel_bins >= 1 && dft_length >= 1 && sample_rate >= 1, ctx.where(),
             "num_mel_bins, dft_length and sample_rate must be positive, got ", mel_bins, ", ", dft_length, ", ",
             sample_rate);
  NNVM_CHECK(lower >= 0 && lower <= upper && std::isfinite(upper), ctx.where(),
             "expected 0 <= lower_edge_hertz <= upper_edge_hertz, finite, got ", lower, " and ", upper);
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  Tensor out = empty({spectrogram_bins, mel_bins}, kFloat64);
  double* w = out.data_ptr<double>();
  std::fill(w, w + out.numel(), 0.0);
  auto mel = [](double hertz) { return 2595 * std::log10(1 + hertz / 700); };
  const double low_mel = mel(lower), step = (mel(upper) - low_mel) / double(mel_bins + 2);
  std::vector<int64_t> bins;
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hertz = 700 * (std::pow(10.0, (double(i) * step + low_mel) / 2595) - 1);
    const double bin = std::floor(double(dft_length + 1) * hertz / double(sample_rate));
    NNVM_CHECK(bin >= 0 && bin < double(spectrogram_bins), ctx.where(), "upper_edge_hertz ", upper,
               " lies past the last of the ", spectrogram_bins, " DFT bins at sample_rate ", sample_rate);
    bins.push_back(int64_t(bin));
  }
  auto at = [&](int64_t bin, int64_t filter) -> double& { return w[bin * mel_bins + filter]; };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t left = bins[size_t(i)], center = bins[size_t(i + 1)], right = bins[size_t(i + 2)];
    if (center == left) at(center, i) = 1;
    for (int64_t j = left; j <= center && center > left; ++j) at(j, i) = double(j - left) / double(center - left);
    for (int64_t j = center; j < right; ++j) at(j, i) = double(right - j) / double(right - center);
  }
  return out.to(output_dtype(ctx));
}

// The DFT of x [..., 1 or 2] (real, or complex as (re, im) pairs) along
// `axis` (a dim of x before the last), over n points: the signal cut or
// padded with zeros to n. Returns [..., 2] with that axis n long, or
// n / 2 + 1 when onesided; the inverse divides by n.
Tensor dft(const OpContext& ctx, const Tensor& x, int64_t axis, int64_t n, bool inverse, bool onesided) {
  NNVM_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, ctx.where(), "expected float32 or float64, got ",
             x.dtype());
  NNVM_CHECK(x.dim() >= 2 && (x.size(-1) == 1 || x.size(-1) == 2), ctx.where(),
             "expected a signal [..., 1] (real) or [..., 2] (complex), got ", shape_str(x.sizes()));
  NNVM_CHECK(axis < x.dim() - 1, ctx.where(), "axis ", axis, " is the complex dim of ", shape_str(x.sizes()));
  NNVM_CHECK(n >= 1, ctx.where(), "the DFT length must be positive, got ", n);
  const int64_t outputs = onesided ? n / 2 + 1 : n, length = x.size(axis);
  // [n, outputs]: input j, output k; the angle 2 pi (j k mod n) / n, exact before its cosine.
  const Tensor turns = (arange(n, kInt64).unsqueeze(1) * arange(outputs, kInt64)).remainder(n);
  const Tensor angle = turns.to(kFloat64) * (2 * kPi / double(n));
  const Tensor c = angle.cos().to(x.dtype()), s = (inverse ? angle.sin() : -angle.sin()).to(x.dtype());
  // The signal's axis last, cut or padded to n.
  auto along = [&](const Tensor& part) {
    Tensor t = part.transpose(axis, -1);
    if (length > n) return t.narrow(-1, 0, n);
    std::vector<int64_t> widths{0, n - length};
    return length < n ? pad(t, widths) : t;
  };
  const Tensor re = along(x.select(-1, 0));
  Tensor out_re = re.matmul(c), out_im = re.matmul(s);
  if (x.size(-1) == 2) {
    const Tensor im = along(x.select(-1, 1));
    out_re = out_re - im.matmul(s);
    out_im = out_im + im.matmul(c);
  }
  Tensor out = stack({out_re, out_im}, -1).transpose(axis, -2);
  return inverse ? out / double(n) : out;
}

// DFT (opset 17): input, optional dft_length; attributes axis (1), inverse, onesided.
Tensor dft_op(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 1), x.dim());
  const int64_t n = ctx.has_input(1) ? scalar_int(ctx, 1, "dft_length") : x.size(axis);
  return dft(ctx, x, axis, n, ctx.attr_int("inverse", 0) != 0, ctx.attr_int("onesided", 0) != 0);
}

// STFT: signal [batch, length, 1 or 2], frame_step, optional window
// [frame_length], optional frame_length -> [batch, frames, bins, 2], one DFT
// of frame_length points per frame of the signal times the window.
Tensor stft(const OpContext& ctx) {
  const Tensor& signal = ctx.input(0);
  NNVM_CHECK(signal.dim() == 3, ctx.where(), "expected a signal [batch, length, 1 or 2], got ",
             shape_str(signal.sizes()));
  const int64_t step = scalar_int(ctx, 1, "frame_step");
  NNVM_CHECK(step >= 1, ctx.where(), "frame_step must be positive, got ", step);
  int64_t frame = -1;
  if (ctx.has_input(3)) frame = scalar_int(ctx, 3, "frame_length");
  if (ctx.has_input(2)) {
    const Tensor& window = ctx.input(2);
    NNVM_CHECK(window.dim() == 1 && (frame < 0 || window.size(0) == frame), ctx.where(), "window ",
               shape_str(window.sizes()), " must be 1-d, frame_length (", frame, ") long if that is given");
    frame = window.size(0);
  }
  NNVM_CHECK(frame >= 1 && frame <= signal.size(1), ctx.where(), "the frame length (", frame,
             ", from frame_length or the window) must be in [1, ", signal.size(1), "], the signal's length");
  const int64_t frames = 1 + (signal.size(1) - frame) / step;
  const Tensor starts = arange(frames, kInt64).mul(step).unsqueeze(1);
  const Tensor taps = (starts + arange(frame, kInt64)).reshape({-1});
  Tensor framed = signal.index_select(1, taps).reshape({signal.size(0), frames, frame, signal.size(2)});
  if (ctx.has_input(2)) framed = framed * ctx.input(2).to(signal.dtype()).reshape({1, 1, frame, 1});
  return dft(ctx, framed, 2, frame, false, ctx.attr_int("onesided", 1) != 0);
}

}  // namespace

void add_signal_ops(OpTable& table) {
  add_single(table, "HannWindow", [](const OpContext& ctx) { return window(ctx, hann); });
  add_single(table, "HammingWindow", [](const OpContext& ctx) { return window(ctx, hamming); });
  add_single(table, "BlackmanWindow", [](const OpContext& ctx) { return window(ctx, blackman); });
  add_single(table, "MelWeightMatrix", mel_weight_matrix);
  add_single(table, "DFT", dft_op);
  add_single(table, "STFT", stft);
}

}  // namespace nnvm::model_detail
