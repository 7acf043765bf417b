// Normalisation and dropout ops: declarations and the public API.
// Kernels: kernels/cpu/norm.cpp and kernels/cpu/dropout.cpp.
//
// Each is one op (not a composition), so a pass that recognises a decomposed
// layer norm can replace it with this op. Optional tensors (weight, bias,
// running stats) are passed only when defined, in a fixed order; bool
// attributes say which are present.
#include <algorithm>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/ops/nn_inputs.h"

namespace nnvm {

namespace {

// A weight, bias or running statistic: floating, of exactly `expected` shape.
void check_param(const Tensor& p, IntArrayRef expected, std::string_view op, std::string_view what,
                 const Tensor& x) {
  check_floating(p, op, what);
  NNVM_CHECK(p.sizes() == expected, op, what, " of shape ", shape_str(p.sizes()), " does not fit input of shape ",
             shape_str(x.sizes()), " (expected shape ", shape_str(expected), ")");
}

// attrs: normalized_shape, has_weight, has_bias, eps
OutputSpecs infer_layer_norm(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const IntArrayRef norm = a.ints(0);
  const bool has_weight = a.b(1), has_bias = a.b(2);
  check_input_count(in, 1 + has_weight + has_bias, "layer_norm");
  check_floating(x, "layer_norm", "input");
  NNVM_CHECK(!norm.empty(), "layer_norm", "normalized_shape must have at least one dim (input of shape ",
             shape_str(x.sizes()), ")");
  const int64_t lead = x.dim() - int64_t(norm.size());
  NNVM_CHECK(lead >= 0 && x.sizes().subspan(size_t(lead)) == norm, "layer_norm", "normalized_shape ",
             shape_str(norm), " does not match the trailing dims of input of shape ", shape_str(x.sizes()),
             " (expected input of shape [*, ", shape_str(norm).substr(1), ")");
  if (has_weight) check_param(in[1], norm, "layer_norm", "weight", x);
  if (has_bias) check_param(in[1 + has_weight], norm, "layer_norm", "bias", x);
  return {{dims(x.sizes()), x.dtype()}};
}

// attrs: num_groups, has_weight, has_bias, eps
OutputSpecs infer_group_norm(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const int64_t groups = a.i(0);
  const bool has_weight = a.b(1), has_bias = a.b(2);
  check_input_count(in, 1 + has_weight + has_bias, "group_norm");
  check_floating(x, "group_norm", "input");
  NNVM_CHECK(x.dim() >= 2, "group_norm", "expected an input of shape [N, C, *] but got ", shape_str(x.sizes()));
  const int64_t channels = x.size(1);
  NNVM_CHECK(groups > 0 && channels % groups == 0, "group_norm", "input of shape ", shape_str(x.sizes()),
             " has ", channels, " channels, which num_groups ", groups, " does not divide (expected num_groups > 0 ",
             "dividing the channels)");
  if (has_weight) check_param(in[1], {channels}, "group_norm", "weight", x);
  if (has_bias) check_param(in[1 + has_weight], {channels}, "group_norm", "bias", x);
  return {{dims(x.sizes()), x.dtype()}};
}

// inputs: x, [running_mean, running_var], [weight], [bias]
// attrs: training, has_running, has_weight, has_bias, momentum, eps
// outputs: y, and in training with running stats their updated values.
OutputSpecs infer_batch_norm(absl::Span<const Tensor> in, const Attrs& a) {
  const Tensor& x = in[0];
  const bool training = a.b(0), has_running = a.b(1), has_weight = a.b(2), has_bias = a.b(3);
  check_input_count(in, 1 + 2 * has_running + has_weight + has_bias, "batch_norm");
  check_floating(x, "batch_norm", "input");
  NNVM_CHECK(x.dim() >= 2, "batch_norm", "expected an input of shape [N, C, *] but got ", shape_str(x.sizes()));
  NNVM_CHECK(training || has_running, "batch_norm", "running_mean and running_var must be defined in evaluation mode");
  const int64_t channels = x.size(1);
  NNVM_CHECK(!training || x.numel() / std::max<int64_t>(channels, 1) != 1 || channels == 0, "batch_norm",
             "expected more than 1 value per channel when training, got input of shape ", shape_str(x.sizes()));
  size_t k = 1;
  if (has_running) {
    check_param(in[k++], {channels}, "batch_norm", "running_mean", x);
    check_param(in[k++], {channels}, "batch_norm", "running_var", x);
  }
  if (has_weight) check_param(in[k++], {channels}, "batch_norm", "weight", x);
  if (has_bias) check_param(in[k++], {channels}, "batch_norm", "bias", x);
  OutputSpecs out{{dims(x.sizes()), x.dtype()}};
  if (training && has_running) {
    out.push_back({{channels}, in[1].dtype()});
    out.push_back({{channels}, in[2].dtype()});
  }
  return out;
}

// attrs: p, seed, counter
OutputSpecs infer_dropout(absl::Span<const Tensor> in, const Attrs&) {
  check_floating(in[0], "dropout", "input");
  return {{dims(in[0].sizes()), in[0].dtype()}};
}

}  // namespace

NNVM_REGISTER(nn_ops) {
  register_op("layer_norm").inputs(-1).infer_with(infer_layer_norm);
  register_op("group_norm").inputs(-1).infer_with(infer_group_norm);
  register_op("batch_norm").inputs(-1).infer_with(infer_batch_norm);
  register_op("dropout").inputs(1).infer_with(infer_dropout);
}

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  static const OpDef& op = find_op("layer_norm");
  std::vector<Tensor> inputs{x};
  push_if_defined(inputs, weight);
  push_if_defined(inputs, bias);
  return call1(op, inputs, {dims(normalized_shape), weight.defined(), bias.defined(), Scalar(eps)});
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  static const OpDef& op = find_op("group_norm");
  std::vector<Tensor> inputs{x};
  push_if_defined(inputs, weight);
  push_if_defined(inputs, bias);
  return call1(op, inputs, {num_groups, weight.defined(), bias.defined(), Scalar(eps)});
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  static const OpDef& op = find_op("batch_norm");
  NNVM_CHECK(running_mean.defined() == running_var.defined(), "batch_norm",
             "running_mean and running_var must both be defined or both be undefined");
  std::vector<Tensor> inputs{x};
  push_if_defined(inputs, running_mean);
  push_if_defined(inputs, running_var);
  push_if_defined(inputs, weight);
  push_if_defined(inputs, bias);
  std::vector<Tensor> outs = call(op, inputs, {training, running_mean.defined(), weight.defined(), bias.defined(),
                                               Scalar(momentum), Scalar(eps)});
  // The op is functional; the in-place update of the caller's buffers is a
  // copy, which the tracer functionalises like any other in-place write.
  if (outs.size() == 3) {
    Tensor(running_mean).copy_(outs[1]);
    Tensor(running_var).copy_(outs[2]);
  }
  return outs[0];
}

Tensor dropout(const Tensor& x, double p, bool train, Generator* gen) {
  static const OpDef& op = find_op("dropout");
  NNVM_CHECK(p >= 0 && p <= 1, "dropout", "probability p must be in [0, 1], got ", p, " (input of shape ",
             x.defined() ? shape_str(x.sizes()) : "undefined", ")");
  if (!train || p == 0) return x;
  NNVM_CHECK(x.defined(), "dropout", "the input is an undefined tensor");
  // Two random words per element, as bernoulli draws them: the mask is
  // bernoulli(1 - p) for the same generator state.
  const auto [seed, counter] = (gen ? *gen : default_generator()).reserve(2 * uint64_t(x.numel()));
  return call1(op, {x}, {Scalar(p), Scalar(int64_t(seed)), Scalar(int64_t(counter))});
}

}  // namespace nnvm
