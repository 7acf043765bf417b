// The recognise pass on decomposed RMS norms: every form becomes rms_norm
// with the chain's results (interpret before == after), eps keeps its slot,
// and near misses stay as they are with a reason.
#include "nnvm/nnvm.h"
#include "recognise_util.h"
#include "reference.h"

namespace nnvm::trace {
namespace {

using testing::expect_tensors_close;

enum class Square { kMul, kSquare, kPow };

struct Chain {
  Trace t;
  ScalarBinding scalars = ScalarBinding::kCompileTime;

  ValueId node(const char* op, std::initializer_list<ValueId> in, Attrs attrs = {}) {
    return t.add_node1(find_op(op), in, std::move(attrs), scalars);
  }
  // x * rsqrt(mean(x^2, dims, keepdim) + eps) or x / sqrt(...), then w * y
  ValueId rms_norm(ValueId x, DimVector dims, Square square, bool rsqrt, double eps, ValueId w = -1,
                   bool keepdim = true) {
    ValueId sq = square == Square::kMul      ? node("mul", {x, x})
                 : square == Square::kSquare ? node("square", {x})
                                             : node("pow.Scalar", {x}, {Scalar(int64_t(2))});
    const ValueId ms = node("mean", {sq}, {dims, keepdim, t.value(x).dtype});
    const ValueId ve = node("add.Scalar", {ms}, {Scalar(eps), Scalar(int64_t(1))});
    ValueId y = rsqrt ? node("mul", {x, node("rsqrt", {ve})}) : node("div", {x, node("sqrt", {ve})});
    if (w >= 0) y = node("mul", {w, y});
    return y;
  }
};

TEST(RecogniseRmsNorm, EveryForm) {
  uint64_t seed = 10;
  for (DType dtype : {kFloat32, kFloat64})
    for (Square square : {Square::kMul, Square::kSquare, Square::kPow})
      for (int form = 0; form < 4; ++form) {
        const bool rsqrt = form & 1, has_w = form & 2;
        SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " square " << int(square) << " form " << form);
        Chain c;
        const ValueId x = c.t.add_input(dtype, {3, 5, 7}, contiguous_strides({3, 5, 7}));
        const ValueId w = has_w ? c.t.add_input(dtype, {5, 7}, contiguous_strides({5, 7})) : -1;
        c.t.mark_output(c.rms_norm(x, {-1, 1}, square, rsqrt, 1e-3, w));
        std::vector<Tensor> in;
        in.reserve(2);
        in.push_back(testing::random({3, 5, 7}, dtype, ++seed, -3, 5));
        if (has_w) in.push_back(testing::random({5, 7}, dtype, ++seed));
        const RecogniseReport report = recognise_and_compare(c.t, in);
        ASSERT_EQ(ops(c.t), "rms_norm") << report.to_string() << c.t.to_string();
        const Node& n = c.t.nodes()[0];
        EXPECT_EQ(IntArrayRef(n.attrs.ints(0)), IntArrayRef(DimVector{5, 7}));
        EXPECT_EQ(n.attrs.b(1), has_w);
        EXPECT_EQ(n.attrs.d(2), 1e-3);
        EagerGuard eager;
        expect_tensors_close(interpret(c.t, in)[0], rms_norm(in[0], {5, 7}, has_w ? in[1] : Tensor(), 1e-3),
                             rtol(dtype), rtol(dtype));
      }
}

// A recorded trace: eps is a run-time argument of the new node (attr 2);
// replaying another eps uses it.
TEST(RecogniseRmsNorm, KeepsARunTimeEps) {
  Chain c{{}, ScalarBinding::kRunTime};
  const ValueId x = c.t.add_input(kFloat32, {4, 33}, contiguous_strides({4, 33}));
  c.t.mark_output(c.rms_norm(x, {1}, Square::kSquare, true, 1e-5));
  const Trace chain = c.t;
  const Tensor in = testing::random({4, 33}, kFloat32, 20, -0.1, 0.1);  // mean square ~ 3e-3: eps matters
  recognise_and_compare(c.t, {in});
  ASSERT_EQ(ops(c.t), "rms_norm");
  ASSERT_EQ(c.t.nodes()[0].slots.size(), 1u);
  EXPECT_EQ(c.t.nodes()[0].slots[0].attr, 2);
  std::vector<Scalar> replay = chain.scalars();
  ASSERT_GE(replay.size(), 1u);
  replay[0] = Scalar(0.5);
  const Tensor got = interpret(c.t, {in}, replay)[0];
  expect_tensors_close(got, interpret(chain, {in}, replay)[0], 2e-5, 2e-5);
  EagerGuard eager;
  expect_tensors_close(got, rms_norm(in, {33}, Tensor(), 0.5), 2e-5, 2e-5);
}

TEST(RecogniseRmsNorm, NearMisses) {
  {
    Chain c;
    const ValueId x = c.t.add_input(kFloat32, {4, 6, 5}, contiguous_strides({4, 6, 5}));
    c.t.mark_output(c.rms_norm(x, {1}, Square::kMul, false, 1e-5));
    expect_declined(c.t, "rms_norm", "rms_norm normalises trailing dims; the mean reduces dims [1] of a rank-3");
  }
  {
    Chain c;
    const ValueId x = c.t.add_input(kFloat32, {6}, contiguous_strides({6}));
    c.t.mark_output(c.rms_norm(x, {0}, Square::kMul, true, 1e-5, -1, false));
    expect_declined(c.t, "rms_norm", "the mean square drops the reduced dims");
  }
  {
    Chain c;
    const ValueId x = c.t.add_input(kFloat32, {4, 6}, contiguous_strides({4, 6}));
    const ValueId sq = c.node("pow.Scalar", {x}, {Scalar(int64_t(3))});
    const ValueId ms = c.node("mean", {sq}, {DimVector{1}, true, kFloat32});
    c.t.mark_output(c.node("mul", {x, c.node("rsqrt", {c.node("add.Scalar", {ms}, {Scalar(1e-5), Scalar(int64_t(1))})})}));
    expect_declined(c.t, "rms_norm", "the exponent of a square in node 0 (pow.Scalar) is 3, not 2");
  }
  {  // the mean square is an output too
    Chain c;
    const ValueId x = c.t.add_input(kFloat64, {4, 6}, contiguous_strides({4, 6}));
    c.t.mark_output(c.rms_norm(x, {1}, Square::kSquare, true, 1e-5));
    c.t.mark_output(ValueId(c.t.nodes()[1].outputs[0]));
    expect_declined(c.t, "rms_norm", "node 1 (mean) is also used outside the pattern");
  }
  {  // a half-precision input: the chain rounds per op
    Chain c;
    const ValueId x = c.t.add_input(kFloat16, {4, 6}, contiguous_strides({4, 6}));
    c.t.mark_output(c.rms_norm(x, {1}, Square::kSquare, true, 1e-5));
    expect_declined(c.t, "rms_norm", "x is float16");
  }
}

// A residual input (x = a + b, an add like layer_norm's centring) is not
// taken for a layer norm, and the API's decomposed form reaches rms_norm.
TEST(RecogniseRmsNorm, AfterAResidualAdd) {
  Chain c;
  const ValueId a = c.t.add_input(kFloat32, {8, 16}, contiguous_strides({8, 16}));
  const ValueId b = c.t.add_input(kFloat32, {8, 16}, contiguous_strides({8, 16}));
  const ValueId x = c.node("add", {a, b}, {Scalar(int64_t(1))});
  c.t.mark_output(c.rms_norm(x, {1}, Square::kPow, true, 1e-6));
  recognise_and_compare(c.t, {testing::random({8, 16}, kFloat32, 1), testing::random({8, 16}, kFloat32, 2)});
  EXPECT_EQ(ops(c.t), "add rms_norm");
}

}  // namespace
}  // namespace nnvm::trace
