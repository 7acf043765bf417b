// GRUCell and LSTMCell: one time step, with PyTorch's gate order (GRU: r, z, n;
// LSTM: i, f, g, o) and parameter names, every parameter uniform in ±1/√hidden.
#pragma once

#include <optional>
#include <tuple>

#include "nnvm/nn/module.h"

namespace nnvm::nn {

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  NNVM_ARG(int64_t, input_size);
  NNVM_ARG(int64_t, hidden_size);
  NNVM_ARG(bool, bias) = true;
};
using GRUCellOptions = RNNCellOptions;
using LSTMCellOptions = RNNCellOptions;

// Parameters shared by the cells: weight_ih [gates * H, I], weight_hh [gates * H, H], bias_ih, bias_hh.
class RNNCellBase : public Module {
 public:
  RNNCellBase(std::string name, const RNNCellOptions& options, int64_t gates);
  void reset_parameters();

  RNNCellOptions options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  // Checks input [batch, I] or [I] and a state of [batch, H] or [H]; returns the state (zeros when undefined).
  Tensor check_state(const Tensor& input, const Tensor& state, std::string_view what) const;
};

class GRUCellImpl : public RNNCellBase {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options) : RNNCellBase("GRUCell", options, 3) {}
  // input [batch, I] (or [I]), hx [batch, H] (zeros when undefined); returns h'.
  Tensor forward(const Tensor& input, const Tensor& hx = {});
};
NNVM_MODULE(GRUCell);

class LSTMCellImpl : public RNNCellBase {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options) : RNNCellBase("LSTMCell", options, 4) {}
  // Returns (h', c'); the state is zeros when absent.
  std::tuple<Tensor, Tensor> forward(const Tensor& input,
                                     const std::optional<std::tuple<Tensor, Tensor>>& hx_opt = std::nullopt);
};
NNVM_MODULE(LSTMCell);

}  // namespace nnvm::nn
