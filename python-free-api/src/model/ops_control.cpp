// Model ops of control flow: ONNX's If and Loop (registered by
// add_tensor_ops). Their subgraphs run through OpContext::run_graph and see
// the values of the graphs around them.
//
// The branch If takes and whether Loop goes on are decided on the host, so
// reading the condition runs the trace recorded so far; the subgraphs' own
// nodes are recorded like any others.
#include <limits>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

bool condition_of(const OpContext& ctx, const Tensor& cond, const char* what) {
  NNVM_CHECK(cond.numel() == 1, ctx.where(), what, " must hold one value, got ", cond.dtype(),
             shape_str(cond.sizes()));
  return cond.item<bool>();
}

std::vector<Tensor> if_op(const OpContext& ctx) {
  bool then = condition_of(ctx, ctx.input(0), "the condition");
  std::vector<Tensor> outs = ctx.run_graph(then ? "then_branch" : "else_branch", {});
  NNVM_CHECK(int64_t(outs.size()) == ctx.num_outputs(), ctx.where(), then ? "then_branch" : "else_branch",
             " gives ", outs.size(), " outputs for the node's ", ctx.num_outputs());
  return outs;
}

// Loop(M, cond, v...) -> (v_final..., scan outputs...). The body maps
// (iteration, cond, v...) to (cond, v..., scan values...); each scan output
// stacks its values of every iteration along a new axis 0.
std::vector<Tensor> loop(const OpContext& ctx) {
  NNVM_CHECK(ctx.num_inputs() >= 2, ctx.where(), "needs inputs M and cond (either may be \"\")");
  size_t carried = size_t(ctx.num_inputs() - 2);
  NNVM_CHECK(ctx.num_outputs() >= int64_t(carried), ctx.where(), "has ", ctx.num_outputs(), " outputs for ",
             carried, " loop-carried values");
  size_t scans = size_t(ctx.num_outputs()) - carried;
  NNVM_CHECK(ctx.has_input(0) || ctx.has_input(1), ctx.where(), "has neither a trip count M nor a condition, so "
             "it would never end");
  int64_t trips = std::numeric_limits<int64_t>::max();
  if (ctx.has_input(0)) trips = ints_input(ctx, 0, "M", 1)[0];
  Tensor cond = ctx.has_input(1) ? ctx.input(1) : scalar_tensor(true, kBool);
  bool go = !ctx.has_input(1) || condition_of(ctx, cond, "cond");
  std::vector<Tensor> values;
  for (size_t i = 0; i < carried; ++i) values.push_back(ctx.input(int64_t(2 + i)));
  std::vector<std::vector<Tensor>> scanned(scans);

  for (int64_t i = 0; i < trips && go; ++i) {
    std::vector<Tensor> args{scalar_tensor(i, kInt64), cond};
    args.insert(args.end(), values.begin(), values.end());
    std::vector<Tensor> outs = ctx.run_graph("body", args);
    NNVM_CHECK(outs.size() == 1 + carried + scans, ctx.where(), "body gives ", outs.size(), " outputs; expected ",
               1 + carried + scans, " (cond, ", carried, " loop-carried, ", scans, " scan outputs)");
    if (ctx.has_input(1)) {  // without a cond input, the body's is ignored
      cond = outs[0];
      go = condition_of(ctx, cond, "cond");
    }
    std::copy(outs.begin() + 1, outs.begin() + 1 + ptrdiff_t(carried), values.begin());
    for (size_t s = 0; s < scans; ++s) scanned[s].push_back(outs[1 + carried + s]);
  }
  std::vector<Tensor> results = values;
  for (size_t s = 0; s < scans; ++s)
    results.push_back(scanned[s].empty() ? empty_scan_output(ctx, 1 + carried + s, 0) : stack(scanned[s], 0));
  return results;
}

}  // namespace

void add_control_ops(OpTable& table) {
  add(table, "If", if_op);
  add(table, "Loop", loop);
}

}  // namespace nnvm::model_detail
