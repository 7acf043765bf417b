// Test helpers shared by the recognise pass's tests: a trace builder, the op
// names of a trace, the pass run and checked against the chain's results, and
// a near miss the pass must leave alone with a reason.
#pragma once

#include <string>
#include <vector>

#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/pass_manager.h"
#include "nnvm/trace/passes/recognise.h"
#include "reference.h"

namespace nnvm::trace {

// The trace's op names in order, space separated.
inline std::string ops(const Trace& t) {
  std::string s;
  for (const Node& n : t.nodes()) s += (s.empty() ? "" : " ") + n.op->name;
  return s;
}

// Builds traces as the public API records them (x - y is add with alpha -1,
// 1 + t is add.Scalar(t, 1, 1)), with every Scalar compile-time unless
// `scalars` says they are recorded run-time arguments.
struct Builder {
  Trace t;
  ScalarBinding scalars = ScalarBinding::kCompileTime;

  ValueId input(DType dtype, IntArrayRef shape) { return t.add_input(dtype, shape, contiguous_strides(shape)); }
  ValueId node(const char* op, std::initializer_list<ValueId> in, Attrs attrs = {}) {
    return t.add_node1(find_op(op), in, std::move(attrs), scalars);
  }
  DType dtype(ValueId v) const { return t.value(v).dtype; }
  ValueId add(ValueId a, ValueId b, double alpha = 1) { return node("add", {a, b}, {Scalar(alpha)}); }
  ValueId sub(ValueId a, ValueId b) { return node("add", {a, b}, {Scalar(int64_t(-1))}); }
  ValueId mul(ValueId a, ValueId b) { return node("mul", {a, b}); }
  ValueId div(ValueId a, ValueId b) { return node("div", {a, b}); }
  ValueId plus(ValueId a, double s) { return node("add.Scalar", {a}, {Scalar(s), Scalar(int64_t(1))}); }
  ValueId times(ValueId a, double s) { return node("mul.Scalar", {a}, {Scalar(s)}); }
  ValueId amax(ValueId a, int64_t d) { return node("amax", {a}, {DimVector{d}, true}); }
  ValueId sum(ValueId a, int64_t d) { return node("sum", {a}, {DimVector{d}, true, dtype(a)}); }
  ValueId mean(ValueId a, DimVector d) { return node("mean", {a}, {d, true, dtype(a)}); }
  ValueId exp(ValueId a) { return node("exp", {a}); }
  ValueId matmul(ValueId a, ValueId b) { return node("matmul", {a, b}); }
};

// The tolerance of a recognised op against its chain (reassociation).
inline double rtol(DType dtype) { return dtype == kFloat64 ? 1e-12 : 2e-5; }

// Runs the pass and checks its results against the chain's on `inputs`.
inline RecogniseReport recognise_and_compare(Trace& t, const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> before = interpret(t, inputs);
  RecogniseReport report;
  recognise(t, &report);
  verify(t);
  const std::vector<Tensor> after = interpret(t, inputs);
  EXPECT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    const double tol = rtol(before[i].dtype());
    EXPECT_EQ(after[i].dtype(), before[i].dtype());
    testing::expect_tensors_close(after[i], before[i], tol, tol);
  }
  return report;
}

// Checks the pass leaves `t` alone and gives `why` for its `pattern`.
inline void expect_declined(Trace t, const std::string& pattern, const std::string& why) {
  const std::string before = t.to_string();
  RecogniseReport report;
  EXPECT_EQ(recognise(t, &report), 0) << report.to_string();
  EXPECT_EQ(t.to_string(), before);
  EXPECT_NE(report.to_string().find(pattern + " declined: " + why), std::string::npos) << report.to_string();
}

}  // namespace nnvm::trace
