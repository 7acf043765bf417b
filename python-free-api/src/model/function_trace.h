// A C++ function as a static graph (docs/MODELS.md, "Exporting a function"):
// one call of it recorded into a trace (docs/DESIGN.md §1, the trace IR), then
// that trace written in ONNX's op vocabulary. nnvm::trace_graph and the
// function overload of nnvm::save_onnx are these two steps.
#pragma once
#include <vector>

#include "nnvm/model.h"
#include "nnvm/trace/ir.h"

namespace nnvm::model_detail {

// Runs fn once on (copies of) the example inputs and returns what it computed
// as a trace: its inputs are the example inputs in order, every other
// materialised tensor fn reads (parameters, captured constants, what a
// creation op made) is a constant holding its value, and its outputs are fn's
// results in order. Reading a view of a value is an as_strided node; writing
// through one a strided_update node, as in the recorder's traces.
trace::Trace record_function(const TracedFunction& fn, const std::vector<Tensor>& example_inputs);

// The trace as an ONNX graph (opset 17): inputs input_0.., constants as
// initializers, each node as the ONNX nodes that compute it. A node with no
// such nodes is an nnvm::Error naming the op, what it reads and the ops that
// can be exported.
Graph onnx_graph_of(const trace::Trace& t);

// The nnvm ops onnx_graph_of writes, sorted.
std::vector<std::string> exportable_op_names();

}  // namespace nnvm::model_detail
