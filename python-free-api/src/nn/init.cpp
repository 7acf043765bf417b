// Initialisers: the bounds are libtorch's (torch/csrc/api/src/nn/init.cpp).
#include "nnvm/nn/init.h"

#include <cmath>

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"

namespace nnvm::nn::init {

namespace {

void check_floating(const Tensor& t, std::string_view op) {
  NNVM_CHECK(t.defined() && t.is_floating_point(), op, "expected a defined floating tensor");
}

int64_t fan(const Tensor& t, std::string_view mode, std::string_view op) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  NNVM_CHECK(mode == "fan_in" || mode == "fan_out", op, "mode must be \"fan_in\" or \"fan_out\", got \"", mode,
             "\"");
  return mode == "fan_in" ? fan_in : fan_out;
}

}  // namespace

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  NNVM_CHECK(t.defined() && t.dim() >= 2, "calculate_fan_in_and_fan_out",
             "fan in and fan out need a tensor of at least 2 dims, got ",
             t.defined() ? shape_str(t.sizes()) : "an undefined tensor");
  const int64_t receptive = t.dim() > 2 ? numel_of(t.sizes().subspan(2)) : 1;
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(std::string_view nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity == "conv2d") return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  NNVM_CHECK(nonlinearity == "leaky_relu", "calculate_gain", "unknown nonlinearity \"", nonlinearity,
             "\" (expected linear, sigmoid, tanh, relu or leaky_relu)");
  return std::sqrt(2.0 / (1.0 + param * param));
}

Tensor uniform_(Tensor t, double low, double high) {
  check_floating(t, "uniform_");
  NoGradGuard no_grad;
  t.copy_(rand(t.sizes(), t.dtype()) * Scalar(high - low) + Scalar(low));
  return t;
}

Tensor normal_(Tensor t, double mean, double std) {
  check_floating(t, "normal_");
  NoGradGuard no_grad;
  t.copy_(randn(t.sizes(), t.dtype()) * Scalar(std) + Scalar(mean));
  return t;
}

Tensor constant_(Tensor t, double value) {
  check_floating(t, "constant_");
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

Tensor zeros_(Tensor t) { return constant_(std::move(t), 0.0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1.0); }

Tensor kaiming_uniform_(Tensor t, double a, std::string_view mode, std::string_view nonlinearity) {
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(double(fan(t, mode, "kaiming_uniform_")));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(t), -bound, bound);
}

Tensor kaiming_normal_(Tensor t, double a, std::string_view mode, std::string_view nonlinearity) {
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(double(fan(t, mode, "kaiming_normal_")));
  return normal_(std::move(t), 0.0, std);
}

Tensor xavier_uniform_(Tensor t, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / double(fan_in + fan_out));
  return uniform_(std::move(t), -bound, bound);
}

Tensor xavier_normal_(Tensor t, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(std::move(t), 0.0, gain * std::sqrt(2.0 / double(fan_in + fan_out)));
}

}  // namespace nnvm::nn::init
