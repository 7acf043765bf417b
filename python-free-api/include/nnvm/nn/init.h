// Parameter initialisation (libtorch's torch::nn::init), in place and outside
// autograd. Random draws come from the default generator, so
// nnvm::manual_seed makes a model's initial weights reproducible.
#pragma once

#include <string_view>
#include <utility>

#include "nnvm/core/tensor.h"

namespace nnvm::nn::init {

// (fan_in, fan_out) of a weight of shape [out, in, *kernel]; throws for fewer than 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// The recommended gain for a nonlinearity: "linear", "sigmoid", "tanh", "relu", "leaky_relu" (with `param`).
double calculate_gain(std::string_view nonlinearity, double param = 0.01);

Tensor uniform_(Tensor t, double low = 0.0, double high = 1.0);
Tensor normal_(Tensor t, double mean = 0.0, double std = 1.0);
Tensor constant_(Tensor t, double value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);
// mode: "fan_in" or "fan_out".
Tensor kaiming_uniform_(Tensor t, double a = 0.0, std::string_view mode = "fan_in",
                        std::string_view nonlinearity = "leaky_relu");
Tensor kaiming_normal_(Tensor t, double a = 0.0, std::string_view mode = "fan_in",
                       std::string_view nonlinearity = "leaky_relu");
Tensor xavier_uniform_(Tensor t, double gain = 1.0);
Tensor xavier_normal_(Tensor t, double gain = 1.0);

}  // namespace nnvm::nn::init
