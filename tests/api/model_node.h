// Test support for the model ops: one node in a graph of its own, its inputs
// graph inputs, run through Model as a loaded model would run it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm::testing {

using Attrs = std::map<std::string, Attribute>;

// Runs one node on `inputs` (an undefined tensor is an absent optional input)
// in a model of the given opset.
inline std::vector<Tensor> run_node(const std::string& op_type, const std::vector<Tensor>& inputs, Attrs attrs = {},
                                    int64_t num_outputs = 1, int64_t opset = kNewestOpset) {
  GraphBuilder b;
  std::vector<std::string> names;
  std::vector<Tensor> given;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      names.emplace_back();
      continue;
    }
    std::vector<GraphBuilder::DimSpec> shape(inputs[i].sizes().begin(), inputs[i].sizes().end());
    names.push_back(b.input("in" + std::to_string(i), inputs[i].dtype(), shape));
    given.push_back(inputs[i]);
  }
  for (const std::string& out : b.op(op_type, names, std::move(attrs), num_outputs)) b.output(out);
  Graph g = b.graph();
  g.opset = opset;
  return Model(g)(given);
}

inline Tensor run1(const std::string& op_type, const std::vector<Tensor>& inputs, Attrs attrs = {},
                   int64_t opset = kNewestOpset) {
  return run_node(op_type, inputs, std::move(attrs), 1, opset)[0];
}

// Asserts that running the node throws an nnvm::Error with every piece
// (in traced mode, possibly when the trace runs).
inline void expect_node_error(const std::string& op_type, const std::vector<Tensor>& inputs, const Attrs& attrs,
                              std::initializer_list<std::string_view> pieces) {
  expect_error([&] { run_node(op_type, inputs, attrs); }, pieces);
}

// A node's random input: float64 in [-2, 2) unless told otherwise.
inline Tensor random(IntArrayRef shape, uint64_t seed, DType dtype = kFloat64, double lo = -2.0, double hi = 2.0) {
  return random(shape, dtype, seed, lo, hi);
}

inline Tensor values_of(const std::vector<double>& v, IntArrayRef shape, DType dtype) {
  return tensor(v).reshape(shape).to(dtype);
}

// t has this dtype and shape, and values close to `expected`.
inline void expect_tensor(const Tensor& t, DType dtype, IntArrayRef shape, const std::vector<double>& expected,
                          double rtol = 1e-5, double atol = 1e-6) {
  EXPECT_EQ(t.dtype(), dtype);
  ASSERT_EQ(shape_str(t.sizes()), shape_str(shape));
  expect_values(t, expected, rtol, atol);
}

// x[batch,4] -> relu(x @ w + b) -> [batch,3], w and b initializers.
inline Model mlp(const Tensor& w, const Tensor& b) {
  GraphBuilder g;
  auto x = g.input("x", kFloat32, {"batch", 4});
  auto h = g.op("MatMul", {x, g.initializer("w", w)});
  g.output(g.op("Relu", {g.op("Add", {h, g.initializer("b", b)})}));
  return g.build();
}

}  // namespace nnvm::testing
