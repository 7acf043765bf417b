// Helpers the model op kernels share (model/ops_*.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nnvm/core/error.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/tensor.h"
#include "nnvm/model.h"
#include "program.h"

namespace nnvm::model_detail {

// ONNX's TensorProto.DataType codes and nnvm's dtypes; nullopt where nnvm has
// no such dtype (strings, uint16/32/64, int16, complex).
std::optional<DType> dtype_from_onnx(int64_t code);
int64_t dtype_to_onnx(DType dtype);
std::string onnx_dtype_name(int64_t code);  // "FLOAT", "STRING", ...

// A small integer tensor's values (a shape, axes, pads), read on the host.
std::vector<int64_t> to_ints(const Tensor& t);
std::vector<double> to_doubles(const Tensor& t);
// An axis in [-rank, rank) made non-negative; an Error naming the node otherwise.
int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank);
// A 1-d int64 tensor.
Tensor int_tensor(const std::vector<int64_t>& values);

// The axes a node names, from its attribute `axes` (older opsets) or from input
// `input` (newer ones); nullopt when it names none.
std::optional<std::vector<int64_t>> axes_of(const OpContext& ctx, int64_t input, int64_t rank);

// Registers one kernel.
inline void add(OpTable& table, const std::string& op_type, OpKernel kernel) { table[op_type] = std::move(kernel); }

// Registers the kernel of an op with one output.
void add_single(OpTable& table, const std::string& op_type, std::function<Tensor(const OpContext&)> fn);

// A small integer input's values (a shape, axes, pads, k): a 0-d or 1-d tensor
// with `count` elements when count >= 0; an Error naming the node and `what` otherwise.
std::vector<int64_t> ints_input(const OpContext& ctx, int64_t input, const char* what, int64_t count = -1);

// The groups of ops add_tensor_ops registers besides its own shape and
// movement ops (model/ops_index.cpp, ops_reduce.cpp, ops_control.cpp).
void add_index_ops(OpTable& table);
void add_reduce_ops(OpTable& table);
void add_control_ops(OpTable& table);

// Whether the node names output i (a listed "" is an unused optional output).
inline bool uses_output(const OpContext& ctx, int64_t i) {
  return i < int64_t(ctx.node().outputs.size()) && !ctx.node().outputs[size_t(i)].empty();
}

// The groups of ops add_more_ops (model/ops_misc.cpp) registers besides its
// own: losses (ops_loss.cpp), quantization (ops_quant.cpp, which reuses the
// Conv kernel already in the table), random draws (ops_random.cpp), windows
// and transforms (ops_signal.cpp), image sampling and boxes (ops_image.cpp).
void add_loss_ops(OpTable& table);
void add_quant_ops(OpTable& table);
void add_random_ops(OpTable& table);
void add_signal_ops(OpTable& table);
void add_image_ops(OpTable& table);

// A scan output of a loop or Scan that ran no iteration: the body graph
// attribute's output `body_output` with its declared dtype and shape
// (unknown sizes 0), and an empty axis inserted at `axis`.
Tensor empty_scan_output(const OpContext& ctx, size_t body_output, int64_t axis);

}  // namespace nnvm::model_detail
