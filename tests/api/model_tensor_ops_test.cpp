// The model ops of model/ops_tensor.cpp and the groups it registers (index,
// reduce, control): each ONNX op run as a one-node graph built with
// GraphBuilder, against values worked out by hand, with odd sizes, sizes 0
// and 1, negative axes, the opset differences, and a mistake that must be an
// nnvm::Error. Data enters as graph inputs (recorded in traced mode); the
// arguments ONNX reads as values (shapes, axes, pads) mostly as int64
// initializers (constants, run at once), sometimes as graph inputs.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

// One input of the node: a graph input, an initializer (`constant`), or absent ("").
struct In {
  In(Tensor t) : value(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  Tensor value;
  bool constant = false;
};
In konst(const Tensor& t) {
  In in(t);
  in.constant = true;
  return in;
}
const In kAbsent{Tensor()};

Tensor ints(std::vector<int64_t> v) { return tensor(v); }
Tensor i64(int64_t v) { return scalar_tensor(v, kInt64); }
Tensor floats(std::vector<double> v, std::vector<int64_t> shape) { return tensor(v).to(kFloat32).reshape(shape); }
// 0, 1, 2, ... in `shape`.
Tensor iota(std::vector<int64_t> shape, DType dtype = kFloat32) {
  return arange(numel_of(shape), kInt64).to(dtype).reshape(shape);
}

// Builds a graph of one `op` node over `inputs` and runs it.
std::vector<Tensor> run(const std::string& op, const std::vector<In>& inputs,
                        std::map<std::string, Attribute> attrs = {}, int64_t num_outputs = 1,
                        int64_t opset = kNewestOpset) {
  GraphBuilder b;
  std::vector<std::string> names;
  std::vector<Tensor> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].value;
    std::string name = "in" + std::to_string(i);
    if (!t.defined()) name = "";
    else if (inputs[i].constant) b.initializer(name, t);
    else {
      std::vector<GraphBuilder::DimSpec> dims(t.sizes().begin(), t.sizes().end());
      b.input(name, t.dtype(), dims);
      args.push_back(t);
    }
    names.push_back(name);
  }
  for (const std::string& out : b.op(op, names, std::move(attrs), num_outputs)) b.output(out);
  Graph g = b.graph();
  g.opset = opset;
  return Model(g)(args);
}
Tensor run1(const std::string& op, const std::vector<In>& inputs, std::map<std::string, Attribute> attrs = {},
            int64_t opset = kNewestOpset) {
  return run(op, inputs, std::move(attrs), 1, opset)[0];
}

std::vector<double> values(const Tensor& t) { return testing::values(t); }

void expect_tensor(const Tensor& t, DType dtype, std::vector<int64_t> shape, const std::vector<double>& expected) {
  EXPECT_EQ(t.dtype(), dtype);
  ASSERT_EQ(shape_str(t.sizes()), shape_str(shape));
  testing::expect_values(t, expected);
}

// Runs `op` and expects an nnvm::Error naming the node whose message holds `piece`.
void expect_node_error(const std::string& op, const std::vector<In>& inputs, std::map<std::string, Attribute> attrs,
                       std::string_view piece, int64_t num_outputs = 1, int64_t opset = kNewestOpset) {
  testing::expect_error(
      [&] {
        for (const Tensor& t : run(op, inputs, attrs, num_outputs, opset)) values(t);
      },
      {op, piece});
}

// An index out of range: in traced mode the kernel finds it when the trace
// runs, after the node returned, so the message names the nnvm op, not the node.
void expect_bad_index(const std::string& op, const std::vector<In>& inputs,
                      std::map<std::string, Attribute> attrs = {}) {
  testing::expect_error(
      [&] {
        for (const Tensor& t : run(op, inputs, attrs)) values(t);
      },
      {"out of bounds"});
}

// ---- shapes ----

TEST(ModelTensorOps, ShapeStartEndClampAndSize) {
  Tensor x = zeros({2, 3, 5});
  expect_tensor(run1("Shape", {x}), kInt64, {3}, {2, 3, 5});
  expect_tensor(run1("Shape", {x}, {{"start", int64_t(1)}}), kInt64, {2}, {3, 5});
  expect_tensor(run1("Shape", {x}, {{"start", int64_t(-1)}}), kInt64, {1}, {5});
  expect_tensor(run1("Shape", {x}, {{"start", int64_t(-10)}, {"end", int64_t(10)}}), kInt64, {3}, {2, 3, 5});
  expect_tensor(run1("Shape", {x}, {{"start", int64_t(2)}, {"end", int64_t(1)}}), kInt64, {0}, {});
  expect_tensor(run1("Shape", {zeros({})}), kInt64, {0}, {});
  expect_tensor(run1("Size", {x}), kInt64, {}, {30});
  expect_tensor(run1("Size", {zeros({4, 0})}), kInt64, {}, {0});
}

TEST(ModelTensorOps, ReshapeZeroCopiesUnlessAllowZero) {
  Tensor x = iota({2, 3, 4});
  expect_tensor(run1("Reshape", {x, konst(ints({0, -1}))}), kFloat32, {2, 12}, values(x));
  expect_tensor(run1("Reshape", {x, konst(ints({4, 0, 2}))}), kFloat32, {4, 3, 2}, values(x));
  expect_tensor(run1("Reshape", {x, ints({-1})}), kFloat32, {24}, values(x));  // shape as a graph input
  expect_tensor(run1("Reshape", {x}, {{"shape", std::vector<int64_t>{6, -1}}}, 4), kFloat32, {6, 4}, values(x));
  Tensor empty = zeros({0, 3});
  expect_tensor(run1("Reshape", {empty, konst(ints({3, 0})), }, {{"allowzero", int64_t(1)}}), kFloat32, {3, 0}, {});
  expect_node_error("Reshape", {x, konst(ints({-1, -1}))}, {}, "more than one -1");
  expect_node_error("Reshape", {x, konst(ints({0, 0, 0, 0}))}, {}, "has only 3 dimensions");
  expect_node_error("Reshape", {x, konst(ints({5, -1}))}, {}, "");
}

TEST(ModelTensorOps, FlattenAtEveryAxis) {
  Tensor x = iota({2, 3, 5});
  std::vector<double> v = values(x);
  expect_tensor(run1("Flatten", {x}), kFloat32, {2, 15}, v);
  expect_tensor(run1("Flatten", {x}, {{"axis", int64_t(0)}}), kFloat32, {1, 30}, v);
  expect_tensor(run1("Flatten", {x}, {{"axis", int64_t(3)}}), kFloat32, {30, 1}, v);
  expect_tensor(run1("Flatten", {x}, {{"axis", int64_t(-1)}}), kFloat32, {6, 5}, v);
  expect_tensor(run1("Flatten", {x}, {{"axis", int64_t(-3)}}), kFloat32, {1, 30}, v);
  expect_tensor(run1("Flatten", {zeros({0, 4, 2})}, {{"axis", int64_t(2)}}), kFloat32, {0, 2}, {});
  expect_node_error("Flatten", {x}, {{"axis", int64_t(4)}}, "out of range");
}

TEST(ModelTensorOps, SqueezeAxesAsAttributeThenInput) {
  Tensor x = iota({1, 3, 1, 2});
  std::vector<double> v = values(x);
  expect_tensor(run1("Squeeze", {x}), kFloat32, {3, 2}, v);
  expect_tensor(run1("Squeeze", {x, konst(ints({-2}))}), kFloat32, {1, 3, 2}, v);
  expect_tensor(run1("Squeeze", {x}, {{"axes", std::vector<int64_t>{0, 2}}}, 11), kFloat32, {3, 2}, v);
  expect_tensor(run1("Squeeze", {zeros({1, 0, 1})}), kFloat32, {0}, {});
  expect_tensor(run1("Squeeze", {zeros({1})}), kFloat32, {}, {0});
  expect_node_error("Squeeze", {x, konst(ints({1}))}, {}, "cannot squeeze axis 1 of size 3");
  expect_node_error("Squeeze", {x, konst(ints({0, -4}))}, {}, "twice");
}

TEST(ModelTensorOps, UnsqueezeAtOutputPositions) {
  Tensor x = iota({3, 2});
  std::vector<double> v = values(x);
  expect_tensor(run1("Unsqueeze", {x, konst(ints({0}))}), kFloat32, {1, 3, 2}, v);
  expect_tensor(run1("Unsqueeze", {x, konst(ints({-1, 1}))}), kFloat32, {3, 1, 2, 1}, v);
  expect_tensor(run1("Unsqueeze", {x, konst(ints({3, 0}))}), kFloat32, {1, 3, 2, 1}, v);
  expect_tensor(run1("Unsqueeze", {x}, {{"axes", std::vector<int64_t>{1}}}, 11), kFloat32, {3, 1, 2}, v);
  expect_tensor(run1("Unsqueeze", {scalar_tensor(7.0), konst(ints({0}))}), kFloat32, {1}, {7});
  expect_node_error("Unsqueeze", {x, konst(ints({4}))}, {}, "out of range");
  expect_node_error("Unsqueeze", {x, konst(ints({1, -3}))}, {}, "twice");
}

TEST(ModelTensorOps, SplitEqualAndByParts) {
  Tensor x = iota({2, 6});
  auto parts = run("Split", {x}, {{"axis", int64_t(1)}}, 3);
  ASSERT_EQ(parts.size(), 3u);
  expect_tensor(parts[2], kFloat32, {2, 2}, {4, 5, 10, 11});
  parts = run("Split", {x, konst(ints({1, 0, 5}))}, {{"axis", int64_t(-1)}}, 3);
  expect_tensor(parts[0], kFloat32, {2, 1}, {0, 6});
  expect_tensor(parts[1], kFloat32, {2, 0}, {});
  expect_tensor(parts[2], kFloat32, {2, 5}, {1, 2, 3, 4, 5, 7, 8, 9, 10, 11});
  parts = run("Split", {x}, {{"split", std::vector<int64_t>{1, 1}}}, 2, 11);
  expect_tensor(parts[1], kFloat32, {1, 6}, {6, 7, 8, 9, 10, 11});
  expect_node_error("Split", {x}, {{"axis", int64_t(1)}}, "equal parts", 4);
  expect_node_error("Split", {x, konst(ints({2, 2}))}, {{"axis", int64_t(1)}}, "sums to 4", 2);
}

// ---- slicing ----

TEST(ModelTensorOps, SliceStepsClampingAndNegativeSteps) {
  Tensor x = iota({3, 5});
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  expect_tensor(run1("Slice", {x, konst(ints({1})), konst(ints({kMax})), konst(ints({1}))}), kFloat32, {3, 4},
                {1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 14});
  // starts/ends past either end clamp; axes may be negative
  expect_tensor(run1("Slice", {x, konst(ints({-100, 1})), konst(ints({100, 3})), konst(ints({-2, 1}))}), kFloat32,
                {3, 2}, {1, 2, 6, 7, 11, 12});
  // steps of 2 and -2 (from the end to before the start)
  expect_tensor(run1("Slice", {x, konst(ints({0})), konst(ints({5})), konst(ints({1})), konst(ints({2}))}),
                kFloat32, {3, 3}, {0, 2, 4, 5, 7, 9, 10, 12, 14});
  expect_tensor(run1("Slice", {x, konst(ints({kMax})), konst(ints({-kMax})), konst(ints({1})), konst(ints({-2}))}),
                kFloat32, {3, 3}, {4, 2, 0, 9, 7, 5, 14, 12, 10});
  expect_tensor(run1("Slice", {x, konst(ints({-1, 3})), konst(ints({0, 0})), kAbsent, konst(ints({-1, -3}))}),
                kFloat32, {2, 1}, {13, 8});
  // empty results
  expect_tensor(run1("Slice", {x, konst(ints({3})), konst(ints({1})), konst(ints({1}))}), kFloat32, {3, 0}, {});
  expect_tensor(run1("Slice", {zeros({0, 2}), konst(ints({0})), konst(ints({-1})), konst(ints({0})),
                               konst(ints({-1}))}),
                kFloat32, {0, 2}, {});
  // opset < 10: attributes; starts and ends as graph inputs
  expect_tensor(run1("Slice", {x}, {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{2}}}, 9),
                kFloat32, {1, 5}, {5, 6, 7, 8, 9});
  expect_tensor(run1("Slice", {x, ints({4}), ints({1}), ints({1}), ints({-1})}), kFloat32, {3, 3},
                {4, 3, 2, 9, 8, 7, 14, 13, 12});
  expect_node_error("Slice", {x, konst(ints({0})), konst(ints({1})), konst(ints({1})), konst(ints({0}))}, {},
                    "step of axis 1 is 0");
  expect_node_error("Slice", {x, konst(ints({0, 0})), konst(ints({1, 1})), konst(ints({1, -1}))}, {}, "twice");
  expect_node_error("Slice", {x, konst(ints({0})), konst(ints({1, 1}))}, {}, "one entry per sliced axis");
}

TEST(ModelTensorOps, ExpandBroadcastsBothWays) {
  Tensor x = floats({1, 2, 3}, {3, 1});
  expect_tensor(run1("Expand", {x, konst(ints({2, 1, 2}))}), kFloat32, {2, 3, 2},
                {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  expect_tensor(run1("Expand", {x, konst(ints({1}))}), kFloat32, {3, 1}, {1, 2, 3});  // shape smaller than input
  expect_tensor(run1("Expand", {x, konst(ints({0}))}), kFloat32, {3, 0}, {});
  expect_node_error("Expand", {x, konst(ints({2, 2}))}, {}, "cannot broadcast");
  expect_node_error("Expand", {x, konst(ints({-1}))}, {}, "cannot broadcast");
}

TEST(ModelTensorOps, TileRepeatsEachAxis) {
  Tensor x = iota({2, 1}, kInt32);
  expect_tensor(run1("Tile", {x, konst(ints({2, 3}))}), kInt32, {4, 3}, {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1});
  expect_tensor(run1("Tile", {x, konst(ints({0, 1}))}), kInt32, {0, 1}, {});
  expect_node_error("Tile", {x, konst(ints({2}))}, {}, "must hold 2 value(s)");
  expect_node_error("Tile", {x, konst(ints({-1, 1}))}, {}, "non-negative");
}

TEST(ModelTensorOps, ConstantOfShapeAndRange) {
  expect_tensor(run1("ConstantOfShape", {konst(ints({2, 3}))}), kFloat32, {2, 3}, {0, 0, 0, 0, 0, 0});
  expect_tensor(run1("ConstantOfShape", {ints({3})}, {{"value", tensor<int32_t>({7})}}), kInt32, {3}, {7, 7, 7});
  expect_tensor(run1("ConstantOfShape", {konst(ints({}))}, {{"value", tensor({1.5})}}), kFloat32, {}, {1.5});
  expect_tensor(run1("ConstantOfShape", {konst(ints({0}))}, {{"value", tensor<int64_t>({1})}}), kInt64, {0}, {});
  expect_node_error("ConstantOfShape", {konst(ints({-1}))}, {}, "negative size");

  expect_tensor(run1("Range", {konst(i64(10)), konst(i64(4)), konst(i64(-3))}), kInt64, {2}, {10, 7});
  expect_tensor(run1("Range", {scalar_tensor(1.0), scalar_tensor(2.0), scalar_tensor(0.25)}), kFloat32, {4},
                {1, 1.25, 1.5, 1.75});
  expect_tensor(run1("Range", {konst(scalar_tensor(5, kInt32)), konst(scalar_tensor(5, kInt32)),
                               konst(scalar_tensor(1, kInt32))}),
                kInt32, {0}, {});
  expect_node_error("Range", {konst(i64(0)), konst(i64(4)), konst(i64(0))}, {}, "delta is 0");
  expect_node_error("Range", {scalar_tensor(0.0), scalar_tensor(INFINITY), scalar_tensor(1.0)}, {}, "cannot count");
  expect_node_error("Range", {konst(i64(std::numeric_limits<int64_t>::min())), konst(i64(1)), konst(i64(1))}, {},
                    "overflows");
}

TEST(ModelTensorOps, PadConstantReflectEdgeAndCropping) {
  Tensor x = iota({2, 3});
  expect_tensor(run1("Pad", {x, konst(ints({0, 1, 1, 0}))}), kFloat32, {3, 4},
                {0, 0, 1, 2, 0, 3, 4, 5, 0, 0, 0, 0});
  expect_tensor(run1("Pad", {x, konst(ints({0, 2, 0, 1})), konst(scalar_tensor(9.0))}), kFloat32, {2, 6},
                {9, 9, 0, 1, 2, 9, 9, 9, 3, 4, 5, 9});
  expect_tensor(run1("Pad", {x, konst(ints({0, 2, 0, 2}))}, {{"mode", std::string("reflect")}}), kFloat32, {2, 7},
                {2, 1, 0, 1, 2, 1, 0, 5, 4, 3, 4, 5, 4, 3});
  expect_tensor(run1("Pad", {x, konst(ints({1, 1, 0, 0}))}, {{"mode", std::string("edge")}}), kFloat32, {3, 4},
                {0, 0, 1, 2, 0, 0, 1, 2, 3, 3, 4, 5});
  // negative pads crop, on either side, mixed with padding
  expect_tensor(run1("Pad", {x, konst(ints({-1, 1, 0, -1}))}), kFloat32, {1, 3}, {0, 3, 4});
  expect_tensor(run1("Pad", {iota({3}, kInt64), konst(ints({1, 1})), konst(i64(-1))}), kInt64, {5},
                {-1, 0, 1, 2, -1});
  expect_tensor(run1("Pad", {x}, {{"pads", std::vector<int64_t>{0, 0, 1, 0}}, {"value", 2.5}}, 10), kFloat32, {3, 3},
                {0, 1, 2, 3, 4, 5, 2.5, 2.5, 2.5});
  expect_node_error("Pad", {x, konst(ints({1, 1}))}, {}, "2 * rank");
  expect_node_error("Pad", {x, konst(ints({0, -4, 0, 0}))}, {}, "crop more");
  expect_node_error("Pad", {x, konst(ints({0, 0, 0, 0}))}, {{"mode", std::string("wrap")}}, "mode 'wrap'");
}

TEST(ModelTensorOps, DepthToSpaceAndBack) {
  Tensor x = iota({1, 8, 1, 2});
  // DCR: channel c' = (by * b + bx) * C/b² + c
  Tensor dcr = run1("DepthToSpace", {x}, {{"blocksize", int64_t(2)}});
  expect_tensor(dcr, kFloat32, {1, 2, 2, 4}, {0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15});
  // CRD: channel c' = c * b² + by * b + bx
  Tensor crd = run1("DepthToSpace", {x}, {{"blocksize", int64_t(2)}, {"mode", std::string("CRD")}});
  expect_tensor(crd, kFloat32, {1, 2, 2, 4}, {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15});
  expect_tensor(run1("SpaceToDepth", {dcr}, {{"blocksize", int64_t(2)}}), kFloat32, {1, 8, 1, 2}, values(x));
  expect_node_error("DepthToSpace", {x}, {{"blocksize", int64_t(3)}}, "blocksize");
  expect_node_error("SpaceToDepth", {x}, {{"blocksize", int64_t(2)}}, "blocksize");
}

TEST(ModelTensorOps, TriluWithK) {
  Tensor x = iota({2, 3}, kInt64) + 1;
  expect_tensor(run1("Trilu", {x}), kInt64, {2, 3}, {1, 2, 3, 0, 5, 6});
  expect_tensor(run1("Trilu", {x, konst(i64(1))}, {{"upper", int64_t(0)}}), kInt64, {2, 3}, {1, 2, 0, 4, 5, 6});
  expect_tensor(run1("Trilu", {x, konst(i64(-5))}, {{"upper", int64_t(0)}}), kInt64, {2, 3}, {0, 0, 0, 0, 0, 0});
  expect_tensor(run1("Trilu", {zeros({0, 3})}), kFloat32, {0, 3}, {});
  expect_node_error("Trilu", {iota({3})}, {}, "rank >= 2");
}

// ---- indexing ----

TEST(ModelTensorOps, GatherWithNegativeAndOutOfRangeIndices) {
  Tensor x = iota({3, 2});
  expect_tensor(run1("Gather", {x, konst(ints({2, -3}))}), kFloat32, {2, 2}, {4, 5, 0, 1});
  expect_tensor(run1("Gather", {x, tensor<int32_t>({-1, 0, 1, 1}).reshape({2, 2})}, {{"axis", int64_t(-1)}}),
                kFloat32, {3, 2, 2}, {1, 0, 1, 1, 3, 2, 3, 3, 5, 4, 5, 5});
  expect_tensor(run1("Gather", {x, konst(i64(1))}), kFloat32, {2}, {2, 3});  // a 0-d index drops the axis
  expect_tensor(run1("Gather", {x, konst(ints({}))}), kFloat32, {0, 2}, {});
  expect_bad_index("Gather", {x, ints({3})});
  expect_bad_index("Gather", {x, ints({-4})});
  expect_node_error("Gather", {x, ints({0})}, {{"axis", int64_t(2)}}, "out of range");
}

TEST(ModelTensorOps, GatherElementsAndGatherND) {
  Tensor x = iota({2, 3});
  expect_tensor(run1("GatherElements", {x, ints({-1, 0, 1, 1}).reshape({2, 2})}, {{"axis", int64_t(1)}}), kFloat32,
                {2, 2}, {2, 0, 4, 4});
  expect_bad_index("GatherElements", {x, ints({3}).reshape({1, 1})}, {{"axis", int64_t(1)}});

  Tensor d = iota({2, 2, 3}, kInt32);
  expect_tensor(run1("GatherND", {d, ints({1, -2, 0, 1}).reshape({2, 2})}), kInt32, {2, 3}, {6, 7, 8, 3, 4, 5});
  expect_tensor(run1("GatherND", {d, ints({1, 0}).reshape({2, 1})}), kInt32, {2, 2, 3},
                {6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5});
  // batch_dims 1: each batch row indexes its own slice
  expect_tensor(run1("GatherND", {d, ints({1, 2, 0, -1}).reshape({2, 1, 2})}, {{"batch_dims", int64_t(1)}}), kInt32,
                {2, 1}, {5, 8});
  expect_tensor(run1("GatherND", {zeros({0, 2}), zeros({0, 3, 1}, kInt64)}, {{"batch_dims", int64_t(1)}}), kFloat32,
                {0, 3}, {});
  expect_node_error("GatherND", {d, ints({2, 0}).reshape({1, 2})}, {}, "out of bounds");
  expect_node_error("GatherND", {d, ints({0, 0, 0, 0}).reshape({1, 4})}, {}, "index 4 dims");
}

TEST(ModelTensorOps, ScatterElementsReductions) {
  Tensor x = ones({2, 3});
  Tensor index = ints({0, -1, 0, 1, 1, 1}).reshape({2, 3});
  Tensor u = floats({2, 3, 4, 5, 6, 7}, {2, 3});
  expect_tensor(run1("ScatterElements", {x, index, u}, {{"axis", int64_t(1)}}), kFloat32, {2, 3},
                {4, 1, 3, 1, 7, 1});
  expect_tensor(run1("ScatterElements", {x, index, u}, {{"axis", int64_t(1)}, {"reduction", std::string("add")}}),
                kFloat32, {2, 3}, {7, 1, 4, 1, 19, 1});
  expect_tensor(run1("ScatterElements", {x, index, u}, {{"axis", int64_t(1)}, {"reduction", std::string("mul")}}),
                kFloat32, {2, 3}, {8, 1, 3, 1, 210, 1});
  expect_tensor(run1("ScatterElements", {iota({3}, kInt32), ints({2, 2}), tensor<int32_t>({3, -2})},
                     {{"reduction", std::string("mul")}}),
                kInt32, {3}, {0, 1, -12});
  expect_tensor(run1("Scatter", {x, index, u}, {{"axis", int64_t(-1)}}, 10), kFloat32, {2, 3}, {4, 1, 3, 1, 7, 1});
  expect_tensor(run1("ScatterElements", {x, zeros({2, 0}, kInt64), zeros({2, 0})}, {{"reduction", std::string("mul")}}),
                kFloat32, {2, 3}, {1, 1, 1, 1, 1, 1});
  expect_bad_index("ScatterElements", {x, ints({3}).reshape({1, 1}), floats({1}, {1, 1})}, {{"axis", int64_t(1)}});
  expect_node_error("ScatterElements", {x, index, u}, {{"reduction", std::string("max")}}, "reduction 'max'");
}

TEST(ModelTensorOps, ScatterNDReductions) {
  Tensor x = iota({3, 2});
  Tensor index = ints({2, -3, 2}).reshape({3, 1});
  Tensor u = floats({10, 20, 30, 40, 2, 3}, {3, 2});
  expect_tensor(run1("ScatterND", {x, ints({2, 0}).reshape({2, 1}), floats({10, 20, 30, 40}, {2, 2})}), kFloat32,
                {3, 2}, {30, 40, 2, 3, 10, 20});
  expect_tensor(run1("ScatterND", {x, index, u}, {{"reduction", std::string("add")}}), kFloat32, {3, 2},
                {30, 41, 2, 3, 16, 28});
  expect_tensor(run1("ScatterND", {x, index, u}, {{"reduction", std::string("mul")}}), kFloat32, {3, 2},
                {0, 40, 2, 3, 80, 300});
  expect_tensor(run1("ScatterND", {x, ints({1, 1}).reshape({1, 2}), floats({-1}, {1})}), kFloat32, {3, 2},
                {0, 1, 2, -1, 4, 5});
  expect_bad_index("ScatterND", {x, ints({3}).reshape({1, 1}), floats({1, 1}, {1, 2})});
  expect_node_error("ScatterND", {x, index, floats({1}, {1})}, {}, "updates of shape");
}

TEST(ModelTensorOps, OneHotAxesDepthAndOutOfRange) {
  Tensor values = floats({0, 5}, {2});
  expect_tensor(run1("OneHot", {ints({0, -1, 3, -4}), konst(i64(3)), values}), kFloat32, {4, 3},
                {5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0});
  expect_tensor(run1("OneHot", {floats({1.7f, 0}, {2}), konst(scalar_tensor(2.0)), tensor<int32_t>({-1, 1})},
                     {{"axis", int64_t(0)}}),
                kInt32, {2, 2}, {-1, 1, 1, -1});
  expect_tensor(run1("OneHot", {ints({1}), konst(ints({2})), values}, {{"axis", int64_t(-2)}}), kFloat32, {2, 1},
                {0, 5});
  expect_node_error("OneHot", {ints({1}), konst(ints({2})), values}, {{"axis", int64_t(2)}}, "out of range");
  expect_node_error("OneHot", {ints({1}), konst(ints({2})), floats({1}, {1})}, {}, "[off, on]");
}

TEST(ModelTensorOps, NonZeroAndCompress) {
  Tensor x = floats({0, 1, 0, 2, 3, 0}, {2, 3});
  expect_tensor(run1("NonZero", {x}), kInt64, {2, 3}, {0, 1, 1, 1, 0, 1});
  expect_tensor(run1("NonZero", {zeros({2, 0})}), kInt64, {2, 0}, {});
  expect_tensor(run1("NonZero", {scalar_tensor(true)}), kInt64, {1, 1}, {0});
  Tensor cond = tensor(std::vector<bool>{false, true, true});
  expect_tensor(run1("Compress", {x, cond}, {{"axis", int64_t(-1)}}), kFloat32, {2, 2}, {1, 0, 3, 0});
  expect_tensor(run1("Compress", {x, cond}), kFloat32, {2}, {1, 0});  // flattened, the rest dropped
  expect_tensor(run1("Compress", {x, tensor(std::vector<bool>{false})}, {{"axis", int64_t(0)}}), kFloat32, {0, 3},
                {});
  expect_bad_index("Compress", {x, tensor(std::vector<bool>{false, false, true})}, {{"axis", int64_t(0)}});
}

// ---- reductions ----

TEST(ModelTensorOps, ReductionsOverAxesWithKeepdims) {
  Tensor x = floats({1, -2, 3, -4, 5, -6}, {2, 3});
  auto axes = [](std::vector<int64_t> a) { return std::map<std::string, Attribute>{{"axes", a}}; };
  expect_tensor(run1("ReduceSum", {x, konst(ints({1}))}), kFloat32, {2, 1}, {2, -5});
  expect_tensor(run1("ReduceSum", {x, konst(ints({0, -1}))}, {{"keepdims", int64_t(0)}}), kFloat32, {}, {-3});
  expect_tensor(run1("ReduceSum", {x}, axes({1}), 11), kFloat32, {2, 1}, {2, -5});
  expect_tensor(run1("ReduceSum", {x, konst(ints({}))}, {{"noop_with_empty_axes", int64_t(1)}}), kFloat32, {2, 3},
                values(x));
  expect_tensor(run1("ReduceSum", {x, konst(ints({}))}), kFloat32, {1, 1}, {-3});
  expect_tensor(run1("ReduceSumSquare", {x}, axes({0})), kFloat32, {1, 3}, {17, 29, 45});
  expect_tensor(run1("ReduceL1", {x}, axes({-1})), kFloat32, {2, 1}, {6, 15});
  expect_tensor(run1("ReduceL2", {x}, axes({1})), kFloat32, {2, 1}, {std::sqrt(14.0), std::sqrt(77.0)});
  expect_tensor(run1("ReduceLogSumExp", {x}, axes({1})), kFloat32, {2, 1},
                {std::log(std::exp(1) + std::exp(-2) + std::exp(3)), std::log(std::exp(-4) + std::exp(5) + std::exp(-6))});
  expect_tensor(run1("ReduceLogSum", {x.abs()}), kFloat32, {1, 1}, {std::log(21.0)});
  expect_tensor(run1("ReduceMean", {x}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(0)}}), kFloat32,
                {3}, {-1.5, 1.5, -1.5});
  expect_tensor(run1("ReduceMax", {x}, axes({1})), kFloat32, {2, 1}, {3, 5});
  expect_tensor(run1("ReduceMin", {x}), kFloat32, {1, 1}, {-6});
  expect_tensor(run1("ReduceProd", {x}, axes({0, 1})), kFloat32, {1, 1}, {-720});
  expect_tensor(run1("ReduceProd", {x}, {{"keepdims", int64_t(0)}}), kFloat32, {}, {-720});
  expect_node_error("ReduceSum", {x, konst(ints({2}))}, {}, "out of range");
  expect_node_error("ReduceMax", {x}, axes({0, -2}), "twice");
}

TEST(ModelTensorOps, ReductionsOfIntegersKeepTheirDtype) {
  Tensor x = tensor<int32_t>({1, 2, 4, 7}).reshape({2, 2});
  expect_tensor(run1("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}}), kInt32, {2, 1}, {1, 5});
  expect_tensor(run1("ReduceSum", {x, konst(ints({0}))}), kInt32, {1, 2}, {5, 9});
  expect_tensor(run1("ReduceProd", {x}, {{"axes", std::vector<int64_t>{0}}}), kInt32, {1, 2}, {4, 14});
  expect_tensor(run1("ReduceL2", {x}, {{"keepdims", int64_t(0)}}), kInt32, {}, {8});  // sqrt(70) truncated
  expect_tensor(run1("ReduceMax", {scalar_tensor(3, kInt64)}), kInt64, {}, {3});
  // over an empty set: Max and Min give their identities, -inf/+inf or the dtype's extremes
  expect_tensor(run1("ReduceMax", {zeros({0, 2})}, {{"axes", std::vector<int64_t>{0}}}), kFloat32, {1, 2},
                {-INFINITY, -INFINITY});
  expect_tensor(run1("ReduceMin", {zeros({2, 0}, kInt32)}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}}),
                kInt32, {2}, {2147483647.0, 2147483647.0});
  expect_tensor(run1("ReduceMax", {zeros({0}, kUInt8)}), kUInt8, {1}, {0});
  expect_tensor(run1("ReduceProd", {zeros({0, 3})}, {{"axes", std::vector<int64_t>{0}}}), kFloat32, {1, 3}, {1, 1, 1});
  expect_node_error("ArgMax", {zeros({0, 2})}, {}, "zero-size");
}

TEST(ModelTensorOps, ArgMaxArgMinFirstOrLastIndex) {
  Tensor x = floats({2, 7, 7, 1, 1, 0}, {2, 3});
  expect_tensor(run1("ArgMax", {x}, {{"axis", int64_t(1)}}), kInt64, {2, 1}, {1, 0});
  expect_tensor(run1("ArgMax", {x}, {{"axis", int64_t(-1)}, {"select_last_index", int64_t(1)}}), kInt64, {2, 1},
                {2, 1});
  expect_tensor(run1("ArgMin", {x}, {{"keepdims", int64_t(0)}}), kInt64, {3}, {1, 1, 1});
  expect_tensor(run1("ArgMin", {x}, {{"axis", int64_t(1)}, {"select_last_index", int64_t(1)}, {"keepdims",
                                                                                               int64_t(0)}}),
                kInt64, {2}, {0, 2});
  expect_node_error("ArgMax", {x}, {{"axis", int64_t(2)}}, "out of range");
}

TEST(ModelTensorOps, TopKValuesAndInt64Indices) {
  Tensor x = floats({3, 1, 3, 2, 0, 5}, {2, 3});
  auto out = run("TopK", {x, konst(ints({2}))}, {}, 2);
  expect_tensor(out[0], kFloat32, {2, 2}, {3, 3, 5, 2});
  expect_tensor(out[1], kInt64, {2, 2}, {0, 2, 2, 0});
  out = run("TopK", {x, konst(ints({1}))}, {{"axis", int64_t(0)}, {"largest", int64_t(0)}}, 2);
  expect_tensor(out[0], kFloat32, {1, 3}, {2, 0, 3});
  expect_tensor(out[1], kInt64, {1, 3}, {1, 1, 0});
  out = run("TopK", {x}, {{"k", int64_t(3)}}, 2, 9);
  expect_tensor(out[1], kInt64, {2, 3}, {0, 2, 1, 2, 0, 1});
  out = run("TopK", {x, konst(ints({0}))}, {}, 2);
  expect_tensor(out[0], kFloat32, {2, 0}, {});
  expect_node_error("TopK", {x, konst(ints({4}))}, {}, "out of range", 2);
}

TEST(ModelTensorOps, CumSumExclusiveReverse) {
  Tensor x = tensor<int32_t>({1, 2, 3, 4, 5, 6}).reshape({2, 3});
  expect_tensor(run1("CumSum", {x, konst(i64(1))}), kInt32, {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_tensor(run1("CumSum", {x, konst(i64(-1))}, {{"exclusive", int64_t(1)}}), kInt32, {2, 3},
                {0, 1, 3, 0, 4, 9});
  expect_tensor(run1("CumSum", {x, konst(i64(1))}, {{"reverse", int64_t(1)}}), kInt32, {2, 3}, {6, 5, 3, 15, 11, 6});
  expect_tensor(run1("CumSum", {x, konst(tensor<int32_t>({0}))}, {{"reverse", int64_t(1)}, {"exclusive", int64_t(1)}}),
                kInt32, {2, 3}, {4, 5, 6, 0, 0, 0});
  expect_tensor(run1("CumSum", {zeros({0}), konst(i64(0))}, {{"exclusive", int64_t(1)}}), kFloat32, {0}, {});
  expect_node_error("CumSum", {x, konst(i64(2))}, {}, "out of range");
}

// ---- control flow ----

// A subgraph computing `op` of the outer value `outer` and a constant.
std::shared_ptr<const Graph> branch(const std::string& op, double constant) {
  GraphBuilder b;
  b.initializer("k", scalar_tensor(constant));
  b.output(b.op(op, {"x", "k"}));
  return std::make_shared<Graph>(b.graph());
}

Tensor run_if(const Tensor& cond, const Tensor& x) {
  GraphBuilder b;
  b.input("cond", kBool, {});
  b.input("x", kFloat32, {3});
  b.output(b.op("If", {"cond"}, {{"then_branch", branch("Add", 10)}, {"else_branch", branch("Mul", -1)}}));
  Graph g = b.graph();
  g.inputs[0].shape.reset();  // any shape, so that a wrong one reaches the node
  return Model(g)({cond, x})[0];
}

TEST(ModelTensorOps, IfRunsOneBranchReadingOuterValues) {
  Tensor x = floats({1, 2, 3}, {3});
  expect_tensor(run_if(scalar_tensor(true), x), kFloat32, {3}, {11, 12, 13});
  expect_tensor(run_if(scalar_tensor(false), x), kFloat32, {3}, {-1, -2, -3});
  testing::expect_error([&] { run_if(tensor(std::vector<bool>{true, false}), x); }, {"If", "one value"});
}

// Loop(M, cond, s): s += i * x, going on while s < limit; the scan output is s after each iteration.
std::vector<Tensor> run_loop(const Tensor& trips, const Tensor& cond, const Tensor& x, double limit) {
  GraphBuilder body;
  body.input("i", kInt64, {});
  body.input("c", kBool, {});
  body.input("s", kFloat32, {"n"});
  body.initializer("limit", scalar_tensor(limit));
  std::string step = body.op("Mul", {body.op("Cast", {"i"}, {{"to", int64_t(1)}}), "x"});
  std::string s = body.op("Add", {"s", step});
  body.output(body.op("Less", {body.op("ReduceSum", {s}, {{"keepdims", int64_t(0)}}), "limit"}));
  body.output(s);
  body.output(body.op("Identity", {s}));

  GraphBuilder b;
  std::vector<Tensor> args;
  std::string m = "", c = "";
  for (auto [value, name] : {std::pair{trips, &m}, std::pair{cond, &c}}) {
    if (!value.defined()) continue;
    *name = name == &m ? "M" : "cond";
    b.input(*name, value.dtype(), {});
    args.push_back(value);
  }
  b.input("x", kFloat32, {"n"});
  args.push_back(x);
  b.initializer("s0", zeros_like(x));
  auto outs = b.op("Loop", {m, c, "s0"}, {{"body", std::make_shared<Graph>(body.graph())}}, 2);
  b.output(outs[0]);
  b.output(outs[1]);
  return Model(b.graph())(args);
}

TEST(ModelTensorOps, LoopTripCountConditionAndScanOutputs) {
  Tensor x = floats({1, 2}, {2});
  // M alone: 3 iterations (i = 0, 1, 2), the body's condition ignored
  auto out = run_loop(i64(3), Tensor(), x, 0.0);
  expect_tensor(out[0], kFloat32, {2}, {3, 6});
  expect_tensor(out[1], kFloat32, {3, 2}, {0, 0, 1, 2, 3, 6});
  // cond alone: a data-dependent trip count; sums 0, 3, 9, 18 stop below 10
  out = run_loop(Tensor(), scalar_tensor(true), x, 10.0);
  expect_tensor(out[0], kFloat32, {2}, {6, 12});
  expect_tensor(out[1], kFloat32, {4, 2}, {0, 0, 1, 2, 3, 6, 6, 12});
  // both; and a loop that never runs gives the initial values and empty scans
  out = run_loop(i64(2), scalar_tensor(true), x, 10.0);
  expect_tensor(out[1], kFloat32, {2, 2}, {0, 0, 1, 2});
  out = run_loop(i64(0), scalar_tensor(true), x, 10.0);
  expect_tensor(out[0], kFloat32, {2}, {0, 0});
  EXPECT_EQ(out[1].size(0), 0);
  out = run_loop(i64(5), scalar_tensor(false), x, 10.0);
  EXPECT_EQ(out[1].size(0), 0);
  testing::expect_error([&] { run_loop(Tensor(), Tensor(), x, 0.0); }, {"Loop", "never end"});
}

// Each op on every dtype ONNX allows it (and nnvm has) gives its float32 values.
TEST(ModelTensorOps, OpsRunOnEveryDtype) {
  struct Case {
    std::string op;
    std::vector<In> rest;  // inputs after the data
    std::map<std::string, Attribute> attrs;
    bool numeric = false;  // not for bool
    int64_t outputs = 1;
  };
  Tensor index = ints({1, 0, 2, 2, 1, 0}).reshape({2, 3});
  const std::vector<Case> cases = {
      {"Gather", {konst(ints({1, -1}))}, {}},
      {"GatherElements", {index}, {{"axis", int64_t(1)}}},
      {"GatherND", {ints({1, 2}).reshape({1, 2})}, {}},
      {"Slice", {konst(ints({2})), konst(ints({0})), konst(ints({1})), konst(ints({-1}))}, {}},
      {"Pad", {konst(ints({1, 0, 0, 2}))}, {}},
      {"Pad", {konst(ints({1, 0, 0, 2}))}, {{"mode", std::string("reflect")}}},
      {"Pad", {konst(ints({1, 0, 0, 2}))}, {{"mode", std::string("edge")}}},
      {"Tile", {konst(ints({2, 1}))}, {}},
      {"Expand", {konst(ints({2, 2, 3}))}, {}},
      {"Transpose", {}, {}},
      {"Trilu", {}, {}},
      {"Compress", {tensor(std::vector<bool>{true, false, true})}, {{"axis", int64_t(1)}}},
      {"NonZero", {}, {}},
      {"Split", {}, {{"axis", int64_t(0)}}, false, 2},
      {"ScatterElements", {index, konst(iota({2, 3}))}, {{"axis", int64_t(1)}}},
      {"ScatterND", {ints({1}).reshape({1, 1}), konst(iota({1, 3}))}, {}},
      {"CumSum", {konst(i64(1))}, {}, true},
      {"TopK", {konst(ints({2}))}, {}, true, 2},
      {"ArgMax", {}, {}, true},
      {"ArgMin", {}, {{"select_last_index", int64_t(1)}}, true},
      {"ReduceSum", {}, {}, true},
      {"ReduceMax", {}, {}, true},
      {"ReduceMin", {}, {}, true},
      {"ReduceProd", {}, {}, true},
      {"ReduceMean", {}, {}, true},
      {"ReduceSumSquare", {}, {}, true},
      {"ReduceL1", {}, {}, true},
      {"ReduceL2", {}, {}, true},
      {"ReduceLogSum", {}, {}, true},
      {"ReduceLogSumExp", {}, {}, true},
      {"ScatterElements", {index, konst(iota({2, 3}) + 1)}, {{"axis", int64_t(1)}, {"reduction", std::string("mul")}},
       true},
      {"ScatterND", {ints({1, 1}).reshape({2, 1}), konst(iota({2, 3}))}, {{"reduction", std::string("add")}}, true},
  };
  Tensor x = floats({3, 0, 1, 4, 1, 5}, {2, 3});
  for (const Case& c : cases) {
    std::vector<In> inputs{x};
    inputs.insert(inputs.end(), c.rest.begin(), c.rest.end());
    std::vector<Tensor> want = run(c.op, inputs, c.attrs, c.outputs);
    for (DType dtype : {kFloat16, kFloat64, kInt8, kUInt8, kInt32, kInt64, kBool}) {
      if (dtype == kBool && c.numeric) continue;
      SCOPED_TRACE(c.op + " on " + std::string(dtype_name(dtype)));
      std::vector<In> typed = inputs;
      for (In& in : typed)
        if (in.value.dtype() == kFloat32) in.value = in.value.to(dtype);
      std::vector<Tensor> got = run(c.op, typed, c.attrs, c.outputs);
      for (size_t o = 0; o < got.size(); ++o) {
        Tensor expected = want[o].dtype() == kFloat32 ? want[o].to(dtype) : want[o];
        expect_tensor(got[o], expected.dtype(), {got[o].sizes().begin(), got[o].sizes().end()}, values(expected));
      }
    }
  }
}

TEST(ModelTensorOps, RegisteredOpTypes) {
  for (const char* op : {"Flatten", "Squeeze", "Unsqueeze", "Split", "Slice", "Gather", "GatherElements", "GatherND",
                         "ScatterElements", "Scatter", "ScatterND", "Expand", "Tile", "ConstantOfShape", "Range",
                         "OneHot", "NonZero", "Trilu", "CumSum", "TopK", "ArgMax", "ArgMin", "ReduceL1", "ReduceL2",
                         "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
                         "ReduceSumSquare", "Pad", "DepthToSpace", "SpaceToDepth", "If", "Loop", "Compress"})
    EXPECT_TRUE(has_model_op(op)) << op;
}

}  // namespace
}  // namespace nnvm
