// Free functions of the public API, with libtorch's names and argument order:
// tensor creation, and the ops that are not methods in libtorch either.
#pragma once

#include <concepts>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "nnvm/core/generator.h"
#include "nnvm/core/tensor.h"
#include "nnvm/core/tensor_options.h"

namespace nnvm {

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

// Copies values into a new 1-d tensor (or with `shape`), of the vector's element type.
template <class T> Tensor tensor(const std::vector<T>& values, std::optional<IntArrayRef> shape = std::nullopt);
Tensor tensor(const std::vector<bool>& values, std::optional<IntArrayRef> shape = std::nullopt);
// A shape given as a bare integer would be viewed inside std::optional's
// constructor, after the integer is gone: write tensor(values, {n}).
template <class T, std::integral I> Tensor tensor(const std::vector<T>& values, I shape) = delete;
// A braced list, as libtorch's torch::tensor reads one: floating values make
// a float32 tensor (the default dtype), integers int64, bools bool; `options`
// sets another dtype or requires_grad. tensor<T>({...}) makes T's dtype.
template <class T = void, class U> Tensor tensor(std::initializer_list<U> values) {
  if constexpr (!std::is_void_v<T>) {
    return tensor(std::vector<T>(values.begin(), values.end()));
  } else if constexpr (std::is_same_v<U, bool>) {
    return tensor(std::vector<bool>(values));
  } else if constexpr (std::is_floating_point_v<U>) {
    return tensor(std::vector<double>(values.begin(), values.end())).to(kFloat32);
  } else {
    return tensor(std::vector<int64_t>(values.begin(), values.end()));
  }
}
template <class U> Tensor tensor(std::initializer_list<U> values, TensorOptions options) {
  Tensor t = tensor(values).to(options.dtype_);
  if (options.device_ != Device()) t = t.to(options.device_);
  return options.requires_grad_ ? t.requires_grad_() : t;
}

// ---- libtorch's free functions for what nnvm has as methods ----
// (nnvm::tanh(x) is x.tanh(); each has libtorch's argument order and defaults)
#define NNVM_UNARY_FUNCTION(name) \
  inline Tensor name(const Tensor& x) { return x.name(); }
NNVM_TENSOR_UNARY_OPS(NNVM_UNARY_FUNCTION)
NNVM_UNARY_FUNCTION(isnan) NNVM_UNARY_FUNCTION(isinf) NNVM_UNARY_FUNCTION(isfinite) NNVM_UNARY_FUNCTION(t)
NNVM_UNARY_FUNCTION(clone)
#undef NNVM_UNARY_FUNCTION
inline Tensor relu_(const Tensor& x) { return x.relu_(); }
inline Tensor negative(const Tensor& x) { return x.neg(); }
inline Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) {
  return x.clamp(min, max);
}
inline Tensor clamp_min(const Tensor& x, const Scalar& min) { return x.clamp_min(min); }
inline Tensor clamp_max(const Tensor& x, const Scalar& max) { return x.clamp_max(max); }
inline Tensor clip(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) {
  return x.clamp(min, max);
}
inline Tensor nan_to_num(const Tensor& x, std::optional<double> nan = 0.0,
                         std::optional<double> posinf = std::nullopt, std::optional<double> neginf = std::nullopt) {
  return x.nan_to_num(nan, posinf, neginf);
}
inline Tensor isclose(const Tensor& self, const Tensor& other, double rtol = 1e-05, double atol = 1e-08,
                      bool equal_nan = false) {
  return self.isclose(other, rtol, atol, equal_nan);
}
inline bool allclose(const Tensor& self, const Tensor& other, double rtol = 1e-05, double atol = 1e-08,
                     bool equal_nan = false) {
  return self.allclose(other, rtol, atol, equal_nan);
}

inline Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1) { return a.add(b, alpha); }
inline Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1) { return a.add(b, alpha); }
inline Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1) { return a.sub(b, alpha); }
inline Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1) { return a.sub(b, alpha); }
inline Tensor subtract(const Tensor& a, const Tensor& b, const Scalar& alpha = 1) { return a.sub(b, alpha); }
inline Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode = "") {
  return a.div(b, rounding_mode);
}
inline Tensor div(const Tensor& a, const Scalar& b, std::string_view rounding_mode = "") {
  return a.div(b, rounding_mode);
}
inline Tensor divide(const Tensor& a, const Tensor& b) { return a.div(b); }
inline Tensor floor_divide(const Tensor& a, const Tensor& b) { return a.floor_divide(b); }
inline Tensor floor_divide(const Tensor& a, const Scalar& b) { return a.floor_divide(b); }
#define NNVM_BINARY_FUNCTION(name)                                                      \
  inline Tensor name(const Tensor& a, const Tensor& b) { return a.name(b); }           \
  inline Tensor name(const Tensor& a, const Scalar& b) { return a.name(b); }
NNVM_BINARY_FUNCTION(mul) NNVM_BINARY_FUNCTION(remainder) NNVM_BINARY_FUNCTION(pow)
NNVM_BINARY_FUNCTION(eq) NNVM_BINARY_FUNCTION(ne) NNVM_BINARY_FUNCTION(lt) NNVM_BINARY_FUNCTION(le)
NNVM_BINARY_FUNCTION(gt) NNVM_BINARY_FUNCTION(ge) NNVM_BINARY_FUNCTION(logical_and)
NNVM_BINARY_FUNCTION(logical_or) NNVM_BINARY_FUNCTION(logical_xor)
#undef NNVM_BINARY_FUNCTION
inline Tensor multiply(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  return x.masked_fill(mask, value);
}

inline Tensor sum(const Tensor& x, std::optional<DType> dtype = std::nullopt) { return x.sum(dtype); }
inline Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) {
  return x.sum(dims, keepdim, dtype);
}
inline Tensor mean(const Tensor& x, std::optional<DType> dtype = std::nullopt) { return x.mean(dtype); }
inline Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) {
  return x.mean(dims, keepdim, dtype);
}
inline Tensor prod(const Tensor& x, std::optional<DType> dtype = std::nullopt) { return x.prod(dtype); }
inline Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) {
  return x.prod(dim, keepdim, dtype);
}
inline Tensor max(const Tensor& x) { return x.max(); }
inline std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false) { return x.max(dim, keepdim); }
inline Tensor min(const Tensor& x) { return x.min(); }
inline std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false) { return x.min(dim, keepdim); }
inline Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false) { return x.amax(dims, keepdim); }
inline Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false) { return x.amin(dims, keepdim); }
inline Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false) {
  return x.argmax(dim, keepdim);
}
inline Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false) {
  return x.argmin(dim, keepdim);
}
inline Tensor var(const Tensor& x, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) {
  return x.var(dims, correction, keepdim);
}
inline Tensor std(const Tensor& x, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) {
  return x.std(dims, correction, keepdim);
}
inline Tensor norm(const Tensor& x, const Scalar& p = 2, IntArrayRef dims = {}, bool keepdim = false) {
  return x.norm(p, dims, keepdim);
}
inline Tensor all(const Tensor& x) { return x.all(); }
inline Tensor all(const Tensor& x, int64_t dim, bool keepdim = false) { return x.all(dim, keepdim); }
inline Tensor any(const Tensor& x) { return x.any(); }
inline Tensor any(const Tensor& x, int64_t dim, bool keepdim = false) { return x.any(dim, keepdim); }
inline Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt) {
  return x.cumsum(dim, dtype);
}

inline Tensor reshape(const Tensor& x, IntArrayRef shape) { return x.reshape(shape); }
inline Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) { return x.transpose(dim0, dim1); }
inline Tensor permute(const Tensor& x, IntArrayRef dims) { return x.permute(dims); }
inline Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1) {
  return x.flatten(start_dim, end_dim);
}
inline Tensor unflatten(const Tensor& x, int64_t dim, IntArrayRef sizes) { return x.unflatten(dim, sizes); }
inline Tensor squeeze(const Tensor& x) { return x.squeeze(); }
inline Tensor squeeze(const Tensor& x, int64_t dim) { return x.squeeze(dim); }
inline Tensor unsqueeze(const Tensor& x, int64_t dim) { return x.unsqueeze(dim); }
inline Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  return x.narrow(dim, start, length);
}
inline Tensor select(const Tensor& x, int64_t dim, int64_t index) { return x.select(dim, index); }
inline Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) {
  return x.diagonal(offset, dim1, dim2);
}
inline std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0) { return x.unbind(dim); }
inline std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0) {
  return x.split(split_size, dim);
}
inline std::vector<Tensor> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0) {
  return x.split(split_sizes, dim);
}
inline std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0) { return x.chunk(chunks, dim); }
inline Tensor flip(const Tensor& x, IntArrayRef dims) { return x.flip(dims); }
inline Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {}) { return x.roll(shifts, dims); }
inline Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return x.gather(dim, index); }
inline Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return x.scatter(dim, index, src);
}
inline Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return x.scatter_add(dim, index, src);
}
inline Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) { return x.index_select(dim, index); }
inline std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false) {
  return x.sort(dim, descending);
}
inline std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                       bool sorted = true) {
  return x.topk(k, dim, largest, sorted);
}

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
// mode: "constant", "reflect", "replicate" (the edge repeated) or "circular"
// (the other end's elements); as PyTorch's, a negative pad crops.
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
// Resamples the spatial dims (all after N and C) to `size` or by
// `scale_factor`, as PyTorch: mode "nearest", "nearest-exact" (the pixel
// whose centre is nearest) or "area" (adaptive average pooling) for 3- to
// 5-D inputs, "linear" (3-D), "bilinear" or "bicubic" (4-D), "trilinear"
// (5-D). align_corners applies to the linear modes and bicubic.
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
