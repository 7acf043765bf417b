// Model ops of classification losses: ONNX's NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (registered by add_more_ops).
//
// Both map onto nnvm's nll_loss and cross_entropy, which take scores
// [N, C, d1, ...], targets [N, d1, ...], class weights, ignore_index and the
// three reductions as ONNX defines them ("mean" divides by the summed weights
// of the targets not ignored), check every target and differentiate.
#include <limits>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

// The operands both losses share: scores, int64 targets, optional weights and
// the attributes. A node without ignore_index ignores no target, so its
// stand-in is a value no class index takes.
struct ClassLoss {
  Tensor scores, target, weight;
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = std::numeric_limits<int64_t>::min();
};

ClassLoss class_loss_of(const OpContext& ctx) {
  ClassLoss loss{ctx.input(0), ctx.input(1), ctx.has_input(2) ? ctx.input(2) : Tensor()};
  NNVM_CHECK(is_floating(loss.scores.dtype()) && loss.scores.dim() >= 2, ctx.where(),
             "expected floating-point scores [N, C, d1, ...], got ", loss.scores.dtype(),
             shape_str(loss.scores.sizes()));
  NNVM_CHECK(loss.target.dtype() == kInt64 || loss.target.dtype() == kInt32, ctx.where(),
             "expected int32 or int64 targets, got ", loss.target.dtype());
  loss.target = loss.target.to(kInt64);
  const std::string reduction = ctx.attr_string("reduction", "mean");
  NNVM_CHECK(reduction == "none" || reduction == "sum" || reduction == "mean", ctx.where(), "reduction '",
             reduction, "' is not one of none, sum, mean");
  loss.reduction = reduction == "none" ? Reduction::None : reduction == "sum" ? Reduction::Sum : Reduction::Mean;
  if (ctx.has_attr("ignore_index")) loss.ignore_index = ctx.attr_int("ignore_index");
  return loss;
}

Tensor nll_loss_op(const OpContext& ctx) {
  const ClassLoss l = class_loss_of(ctx);
  return nll_loss(l.scores, l.target, l.weight, l.reduction, l.ignore_index);
}

// SoftmaxCrossEntropyLoss -> (loss, log_prob): log_prob, the log-softmax over
// the classes, only when the node names it.
std::vector<Tensor> softmax_cross_entropy(const OpContext& ctx) {
  const ClassLoss l = class_loss_of(ctx);
  if (!uses_output(ctx, 1)) return {cross_entropy(l.scores, l.target, l.weight, l.reduction, l.ignore_index), {}};
  Tensor log_prob = l.scores.log_softmax(1);
  return {nll_loss(log_prob, l.target, l.weight, l.reduction, l.ignore_index), log_prob};
}

}  // namespace

void add_loss_ops(OpTable& table) {
  add_single(table, "NegativeLogLikelihoodLoss", nll_loss_op);
  add(table, "SoftmaxCrossEntropyLoss", softmax_cross_entropy);
}

}  // namespace nnvm::model_detail
