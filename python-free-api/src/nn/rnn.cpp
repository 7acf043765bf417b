// GRUCell and LSTMCell: gates from two linear maps, in PyTorch's order.
#include "nnvm/nn/rnn.h"

#include <cmath>

#include "nnvm/core/functions.h"
#include "nnvm/nn/init.h"

namespace nnvm::nn {

RNNCellBase::RNNCellBase(std::string name, const RNNCellOptions& options, int64_t gates)
    : Module(std::move(name)), options(options) {
  const int64_t in = options.input_size(), hidden = options.hidden_size();
  NNVM_CHECK(in > 0 && hidden > 0, this->name(), "input_size and hidden_size must be positive, got ", in, " and ",
             hidden);
  weight_ih = register_parameter("weight_ih", empty({gates * hidden, in}));
  weight_hh = register_parameter("weight_hh", empty({gates * hidden, hidden}));
  bias_ih = register_parameter("bias_ih", options.bias() ? empty({gates * hidden}) : Tensor());
  bias_hh = register_parameter("bias_hh", options.bias() ? empty({gates * hidden}) : Tensor());
  reset_parameters();
}

void RNNCellBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(double(options.hidden_size()));
  for (Tensor& p : parameters()) init::uniform_(p, -bound, bound);
}

Tensor RNNCellBase::check_state(const Tensor& input, const Tensor& state, std::string_view what) const {
  const int64_t in = options.input_size(), hidden = options.hidden_size();
  NNVM_CHECK(input.defined() && (input.dim() == 1 || input.dim() == 2) && input.size(-1) == in, name(),
             "expected input of shape [batch, ", in, "] or [", in, "], got ",
             input.defined() ? shape_str(input.sizes()) : "an undefined tensor");
  DimVector expected{input.size(0), hidden};
  if (input.dim() == 1) expected = {hidden};
  if (!state.defined()) return zeros(expected, input.dtype());
  NNVM_CHECK(state.sizes() == IntArrayRef(expected), name(), what, " of shape ", shape_str(state.sizes()),
             " does not match input of shape ", shape_str(input.sizes()), " (expected ", shape_str(expected), ")");
  return state;
}

Tensor GRUCellImpl::forward(const Tensor& input, const Tensor& hx) {
  const Tensor h = check_state(input, hx, "hx");
  const std::vector<Tensor> gi = linear(input, weight_ih, bias_ih).chunk(3, -1);
  const std::vector<Tensor> gh = linear(h, weight_hh, bias_hh).chunk(3, -1);
  const Tensor r = (gi[0] + gh[0]).sigmoid();
  const Tensor z = (gi[1] + gh[1]).sigmoid();
  const Tensor n = (gi[2] + r * gh[2]).tanh();
  return n + z * (h - n);  // (1 - z) * n + z * h
}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input,
                                                 const std::optional<std::tuple<Tensor, Tensor>>& hx_opt) {
  const Tensor h = check_state(input, hx_opt ? std::get<0>(*hx_opt) : Tensor(), "h");
  const Tensor c = check_state(input, hx_opt ? std::get<1>(*hx_opt) : Tensor(), "c");
  const std::vector<Tensor> g = (linear(input, weight_ih, bias_ih) + linear(h, weight_hh, bias_hh)).chunk(4, -1);
  const Tensor c_next = g[1].sigmoid() * c + g[0].sigmoid() * g[2].tanh();
  return {g[3].sigmoid() * c_next.tanh(), c_next};
}

}  // namespace nnvm::nn
