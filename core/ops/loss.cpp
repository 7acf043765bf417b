// Loss ops: declarations and the public API. Kernels: kernels/cpu/loss.cpp.
//
// Each loss is one op that computes the per-element (or per-row) loss and its
// reduction in one kernel. The reduction is a structural int64 attribute
// (Reduction as an integer); optional tensors are passed only when defined,
// with bool attributes saying which are present.
#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/core/ops/nn_inputs.h"

namespace nnvm {

namespace {

DimVector reduced(IntArrayRef shape, int64_t reduction, std::string_view op) {
  NNVM_CHECK(reduction >= 0 && reduction <= 2, op, "unknown reduction ", reduction,
             " (expected None, Mean or Sum)");
  return Reduction(reduction) == Reduction::None ? dims(shape) : DimVector{};
}

// mse_loss, l1_loss: input, target of the same shape. attrs: reduction
InferFn infer_pointwise_loss(std::string_view op) {
  return [op](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
    check_floating(in[0], op, "input");
    check_floating(in[1], op, "target");
    NNVM_CHECK(in[0].sizes() == in[1].sizes(), op, "input of shape ", shape_str(in[0].sizes()),
               " and target of shape ", shape_str(in[1].sizes()), " differ (expected the same shape)");
    return {{reduced(in[0].sizes(), a.i(0), op), promote_types(in[0].dtype(), in[1].dtype())}};
  };
}

// input, target, [weight], [pos_weight]. attrs: reduction, has_weight, has_pos_weight
OutputSpecs infer_bce_with_logits(absl::Span<const Tensor> in, const Attrs& a) {
  constexpr std::string_view op = "binary_cross_entropy_with_logits";
  const bool has_weight = a.b(1), has_pos_weight = a.b(2);
  check_input_count(in, 2 + has_weight + has_pos_weight, op);
  const Tensor &x = in[0], &y = in[1];
  check_floating(x, op, "input");
  check_floating(y, op, "target");
  NNVM_CHECK(x.sizes() == y.sizes(), op, "input of shape ", shape_str(x.sizes()), " and target of shape ",
             shape_str(y.sizes()), " differ (expected the same shape)");
  auto check_broadcast = [&](const Tensor& w, std::string_view what) {
    check_floating(w, op, what);
    const bool fits = w.dim() <= x.dim() && [&] {
      for (int64_t d = 1; d <= w.dim(); ++d)
        if (w.size(-d) != 1 && w.size(-d) != x.size(-d)) return false;
      return true;
    }();
    NNVM_CHECK(fits, op, what, " of shape ", shape_str(w.sizes()), " does not broadcast to input of shape ",
               shape_str(x.sizes()));
  };
  if (has_weight) check_broadcast(in[2], "weight");
  if (has_pos_weight) check_broadcast(in[2 + has_weight], "pos_weight");
  return {{reduced(x.sizes(), a.i(0), op), promote_types(x.dtype(), y.dtype())}};
}

// nll_loss, cross_entropy: scores [C], [N, C] or [N, C, d1, ...]; an int64
// target [], [N] or [N, d1, ...]; an optional weight [C].
// attrs: reduction, ignore_index, has_weight (cross_entropy: then label_smoothing)
InferFn infer_class_loss(std::string_view op, std::string_view scores) {
  return [op, scores](absl::Span<const Tensor> in, const Attrs& a) -> OutputSpecs {
    const bool has_weight = a.b(2);
    check_input_count(in, 2 + has_weight, op);
    const Tensor &x = in[0], &t = in[1];
    check_floating(x, op, scores);
    NNVM_CHECK(t.dtype() == kInt64, op, "expected an int64 target of class indices but got ", t.dtype(),
               " (shape ", shape_str(t.sizes()), ")");
    NNVM_CHECK(x.dim() >= 1, op, "expected ", scores, " of shape [C], [N, C] or [N, C, d1, ...] but got ",
               shape_str(x.sizes()));
    DimVector expected = dims(x.sizes());
    expected.erase(expected.begin() + (x.dim() == 1 ? 0 : 1));
    NNVM_CHECK(t.sizes() == expected, op, "target of shape ", shape_str(t.sizes()), " does not fit ", scores,
               " of shape ", shape_str(x.sizes()), " (expected target of shape ", shape_str(expected), ")");
    const int64_t classes = x.size(x.dim() == 1 ? 0 : 1);
    if (has_weight) {
      const Tensor& w = in[2];
      check_floating(w, op, "weight");
      NNVM_CHECK(w.dim() == 1 && w.size(0) == classes, op, "weight of shape ", shape_str(w.sizes()),
                 " does not fit ", scores, " of shape ", shape_str(x.sizes()), " (expected shape [", classes,
                 "])");
    }
    return {{reduced(t.sizes(), a.i(0), op), x.dtype()}};
  };
}

}  // namespace

NNVM_REGISTER(loss_ops) {
  register_op("mse_loss").inputs(2).infer_with(infer_pointwise_loss("mse_loss"));
  register_op("l1_loss").inputs(2).infer_with(infer_pointwise_loss("l1_loss"));
  register_op("binary_cross_entropy_with_logits").inputs(-1).infer_with(infer_bce_with_logits);
  register_op("nll_loss").inputs(-1).infer_with(infer_class_loss("nll_loss", "log_probs"));
  register_op("cross_entropy").inputs(-1).infer_with(infer_class_loss("cross_entropy", "logits"));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  static const OpDef& op = find_op("mse_loss");
  return call1(op, {input, target}, {int64_t(reduction)});
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  static const OpDef& op = find_op("l1_loss");
  return call1(op, {input, target}, {int64_t(reduction)});
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        Reduction reduction, const Tensor& pos_weight) {
  static const OpDef& op = find_op("binary_cross_entropy_with_logits");
  std::vector<Tensor> inputs{input, target};
  push_if_defined(inputs, weight);
  push_if_defined(inputs, pos_weight);
  return call1(op, inputs, {int64_t(reduction), weight.defined(), pos_weight.defined()});
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight, Reduction reduction,
                int64_t ignore_index) {
  static const OpDef& op = find_op("nll_loss");
  std::vector<Tensor> inputs{log_probs, target};
  push_if_defined(inputs, weight);
  return call1(op, inputs, {int64_t(reduction), ignore_index, weight.defined()});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight, Reduction reduction,
                     int64_t ignore_index, double label_smoothing) {
  static const OpDef& op = find_op("cross_entropy");
  NNVM_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "cross_entropy",
             "label_smoothing must be in [0, 1], got ", label_smoothing);
  std::vector<Tensor> inputs{logits, target};
  push_if_defined(inputs, weight);
  return call1(op, inputs, {int64_t(reduction), ignore_index, weight.defined(), Scalar(label_smoothing)});
}

}  // namespace nnvm
