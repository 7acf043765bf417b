// The model ops of neural networks, one function per family; add_nn_ops
// (ops_nn.cpp) registers them all.
#pragma once
#include "op_util.h"

namespace nnvm::model_detail {

void add_conv_ops(OpTable& table);    // ops_conv.cpp: Conv, ConvTranspose, the pools
void add_resize_ops(OpTable& table);  // ops_resize.cpp: Resize, Upsample
void add_rnn_ops(OpTable& table);     // ops_rnn.cpp: RNN, GRU, LSTM
void add_einsum_op(OpTable& table);   // ops_einsum.cpp

// One spatial dim of a sliding window. `overhang` is padding past pad_end
// that ceil_mode adds for the last window; unlike pads it is never part of
// the input, so an average does not count it.
struct Window {
  int64_t kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0, overhang = 0;
  int64_t extent() const { return dilation * (kernel - 1) + 1; }
  int64_t out(int64_t size) const { return (size + pad_begin + pad_end + overhang - extent()) / stride + 1; }
  // Padding nnvm's 2-d ops take as it is.
  bool native_padding() const { return pad_begin == pad_end && overhang == 0 && pad_begin <= kernel / 2; }
  bool padded() const { return pad_begin != 0 || pad_end != 0 || overhang != 0; }
};

// ops_conv.cpp: the windows of Conv and the pools (attributes strides,
// dilations, pads, auto_pad) over spatial dims of these sizes, and a
// convolution's kernel (W's spatial dims, checked against kernel_shape).
std::vector<Window> windows(const OpContext& ctx, IntArrayRef sizes, const std::vector<int64_t>& kernel,
                            bool ceil_mode);
std::vector<int64_t> kernel_of(const OpContext& ctx, const Tensor& w);

}  // namespace nnvm::model_detail
