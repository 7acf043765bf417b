// The model ops of neural networks, one function per family; add_nn_ops
// (ops_nn.cpp) registers them all.
#pragma once
#include "op_util.h"

namespace nnvm::model_detail {

void add_conv_ops(OpTable& table);    // ops_conv.cpp: Conv, ConvTranspose, the pools
void add_resize_ops(OpTable& table);  // ops_resize.cpp: Resize, Upsample
void add_rnn_ops(OpTable& table);     // ops_rnn.cpp: RNN, GRU, LSTM
void add_einsum_op(OpTable& table);   // ops_einsum.cpp

}  // namespace nnvm::model_detail
