// Free functions of the public API, with libtorch's names and argument order:
// tensor creation, and the ops that are not methods in libtorch either.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "nnvm/core/generator.h"
#include "nnvm/core/tensor.h"

namespace nnvm {

// ---- options for creation functions (torch::TensorOptions) ----
struct TensorOptions {
  DType dtype_ = kFloat32;
  Device device_;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}     // NOLINT: torch::zeros({2}, torch::kInt) style
  TensorOptions(Device d) : device_(d) {}   // NOLINT
  TensorOptions(DeviceType d) : device_(d) {}  // NOLINT
  TensorOptions dtype(DType d) const { auto o = *this; o.dtype_ = d; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
};

// ---- creation ----
Tensor empty(IntArrayRef shape, TensorOptions options = {});
Tensor zeros(IntArrayRef shape, TensorOptions options = {});
Tensor ones(IntArrayRef shape, TensorOptions options = {});
Tensor full(IntArrayRef shape, const Scalar& value, std::optional<TensorOptions> options = std::nullopt);
Tensor scalar_tensor(const Scalar& value, std::optional<TensorOptions> options = std::nullopt);
Tensor arange(const Scalar& end, std::optional<TensorOptions> options = std::nullopt);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<TensorOptions> options = std::nullopt);
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {});
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});
Tensor rand(IntArrayRef shape, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randn(IntArrayRef shape, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, IntArrayRef shape, TensorOptions options = kInt64,
               Generator* gen = nullptr);
Tensor randint(int64_t high, IntArrayRef shape, TensorOptions options = kInt64, Generator* gen = nullptr);
// Each element is 1 with probability p[i] (a tensor of probabilities) or p.
Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
Tensor bernoulli(IntArrayRef shape, double p, TensorOptions options = {}, Generator* gen = nullptr);

Tensor empty_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<TensorOptions> options = std::nullopt);
Tensor rand_like(const Tensor& t, Generator* gen = nullptr);
Tensor randn_like(const Tensor& t, Generator* gen = nullptr);

// Wraps memory the caller owns (no copy). `deleter` runs when the last view dies.
Tensor from_blob(void* data, IntArrayRef shape, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef shape, IntArrayRef strides, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef shape, std::function<void(void*)> deleter, TensorOptions options = {});

// Copies values into a new 1-d tensor (or with `shape`): nnvm::tensor({1.f, 2.f}).
template <class T> Tensor tensor(const std::vector<T>& values, std::optional<IntArrayRef> shape = std::nullopt);
Tensor tensor(const std::vector<bool>& values, std::optional<IntArrayRef> shape = std::nullopt);
template <class T> Tensor tensor(std::initializer_list<T> values) { return tensor(std::vector<T>(values)); }

// ---- pointwise functions that are not methods ----
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
// approximate: "none" (exact, with erf) or "tanh"
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor pow(const Scalar& base, const Tensor& exponent);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// ---- reductions ----
// Sums `t` over the dims along which `shape` was broadcast to t's shape (libtorch's at::sum_to).
Tensor sum_to(const Tensor& t, IntArrayRef shape);
// Broadcasts the result `g` of reducing `reduced` dims of `x` back to x's shape (for gradients).
Tensor expand_reduced(const Tensor& g, const Tensor& x, IntArrayRef reduced, bool keepdim);
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim = false);
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntArrayRef dims = {}, int64_t correction = 1,
                                    bool keepdim = false);

// ---- linear algebra ----
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);
// x · weightᵀ + bias (bias may be undefined)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// ---- data movement ----
Tensor cat(TensorList tensors, int64_t dim = 0);
Tensor stack(TensorList tensors, int64_t dim = 0);
// pad: pairs (before, after) from the last dim backwards, like torch::nn::functional::pad.
// mode: "constant" or "reflect".
Tensor pad(const Tensor& x, IntArrayRef pad, std::string_view mode = "constant", double value = 0.0);
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx = std::nullopt);
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

// ---- nn functions ----
enum class Reduction { None, Mean, Sum };

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// x / sqrt(mean(x^2) + eps) [* weight] over the trailing normalized_shape dims
// (torch.nn.functional.rms_norm); eps defaults to the machine epsilon of x's dtype, as torch's None.
Tensor rms_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
// In training mode, updates running_mean/var in place (when defined) with `momentum`.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum = 0.1,
                  double eps = 1e-5);
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = {1},
              IntArrayRef padding = {0}, IntArrayRef dilation = {1}, int64_t groups = 1);
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = {1, 1},
              IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1}, int64_t groups = 1);
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0},
                        IntArrayRef output_padding = {0, 0}, int64_t groups = 1,
                        IntArrayRef dilation = {1, 1});
Tensor max_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size);
// mode: "nearest" or "bilinear"; give either size or scale_factor.
Tensor interpolate(const Tensor& x, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor = std::nullopt,
                   std::string_view mode = "nearest", bool align_corners = false);
Tensor dropout(const Tensor& x, double p, bool train, Generator* gen = nullptr);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = {},
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight = {},
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                     double label_smoothing = 0.0);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        Reduction reduction = Reduction::Mean,
                                        const Tensor& pos_weight = {});

}  // namespace nnvm
