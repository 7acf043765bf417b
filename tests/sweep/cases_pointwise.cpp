// Sweep cases of the pointwise ops: unary, binary (tensor and Scalar forms),
// where, masked_fill, copy, bernoulli.
#include "sweep/sweep.h"

namespace nnvm::sweep {
namespace {

// One tensor: a scalar, empty, one element, an odd row, odd rows, three
// dims, rows longer than the JIT's unrolled main loop (4 vectors).
const std::vector<DimVector> kUnaryShapes = {{}, {0, 3}, {1}, {7}, {3, 33}, {2, 3, 5}, {2, 1029}};
// Two tensors: equal, broadcast along rows, both broadcast, empty, against a scalar, long rows.
const std::vector<std::pair<DimVector, DimVector>> kBinaryShapes = {
    {{7}, {7}}, {{3, 33}, {33}}, {{4, 1, 5}, {3, 1}}, {{0, 3}, {3}}, {{1}, {}}, {{2, 1029}, {1029}}};

struct Unary {
  const char* name;
  double lo = -2, hi = 2;
  Attrs attrs = {};
  const std::vector<DType>* dtypes = &kNumbers;
};

struct Binary {
  const char* name;
  double lo = -2, hi = 2;          // the first operand's values
  double rhs_lo = -2, rhs_hi = 2;  // the second's (integer divisors and exponents avoid 0 and negatives)
  const std::vector<DType>* dtypes = &kNumbers;
};

std::string shape_label(std::initializer_list<DimVector> shapes) {
  std::string s;
  for (const DimVector& d : shapes) s += shape_str(d);
  return s;
}

}  // namespace

void add_pointwise_cases(std::vector<Case>& cases) {
  const Unary unaries[] = {
      {"exp"}, {"exp2"}, {"log", 0.1, 4}, {"log2", 0.1, 4}, {"log1p", -0.9, 3}, {"expm1"}, {"sqrt", 0, 4},
      {"rsqrt", 0.1, 4}, {"sin"}, {"cos"}, {"tan", -1.2, 1.2}, {"tanh"}, {"sigmoid"}, {"erf"},
      {"reciprocal", 0.25, 2}, {"neg"}, {"abs"}, {"relu"}, {"floor"}, {"ceil"}, {"round"}, {"trunc"}, {"sign"},
      {"square"}, {"logical_not", -2, 2, {}, &kAll}, {"isnan", -2, 2, {}, &kAll}, {"isinf", -2, 2, {}, &kAll},
      {"isfinite", -2, 2, {}, &kAll}, {"clamp", -2, 2, {true, Scalar(-0.5), true, Scalar(0.5)}},
      {"leaky_relu", -2, 2, {Scalar(0.1)}}, {"elu", -2, 2, {Scalar(1.0)}}, {"gelu"}, {"gelu_tanh"}, {"silu"},
      {"softplus", -2, 2, {Scalar(1.0), Scalar(20.0)}},
  };
  for (const Unary& u : unaries)
    for (const DimVector& shape : kUnaryShapes) {
      cases.push_back(op_case(u.name, {{shape, Kind::Values, u.lo, u.hi}}, u.attrs, *u.dtypes, shape_str(shape)));
    }
  // NaN and infinities to replace: log of values around 0.
  for (const DimVector& shape : kUnaryShapes)
    cases.push_back(program_case(
        "nan_to_num", {{shape, Kind::Values, -1, 3}},
        [](const std::vector<Tensor>& in) {
          static const OpDef& op = find_op("nan_to_num");
          return std::vector<Tensor>{call1(op, {in[0].log()}, {Scalar(0.5), Scalar(100.0), Scalar(-100.0)})};
        },
        kFloats, shape_str(shape)));

  const Binary binaries[] = {
      {"add"}, {"mul"}, {"div", -2, 2, 0.25, 2}, {"remainder", -4, 4, 0.5, 3}, {"pow", 0.1, 2, 0, 3},
      {"maximum"}, {"minimum"}, {"div_floor", -4, 4, 0.5, 3}, {"div_trunc", -4, 4, 0.5, 3}, {"atan2"},
      {"eq"}, {"ne"}, {"lt"}, {"le"}, {"gt"}, {"ge"}, {"logical_and", -2, 2, -2, 2, &kAll},
      {"logical_or", -2, 2, -2, 2, &kAll}, {"logical_xor", -2, 2, -2, 2, &kAll},
  };
  for (const Binary& b : binaries) {
    const std::string name = b.name;
    // add's alpha; the other binary ops take no attributes
    const Attrs attrs = name == "add" ? Attrs{Scalar(1.5)} : Attrs{};
    const Attrs scalar_attrs = name == "add" ? Attrs{Scalar(0.75), Scalar(1.5)} : Attrs{Scalar(b.rhs_hi - 0.75)};
    for (const auto& [lhs, rhs] : kBinaryShapes) {
      const std::string label = shape_label({lhs, rhs});
      cases.push_back(op_case(name, {{lhs, Kind::Values, b.lo, b.hi}, {rhs, Kind::Values, b.rhs_lo, b.rhs_hi}},
                              attrs, *b.dtypes, label));
      cases.push_back(op_case(name + ".Scalar", {{lhs, Kind::Values, b.lo, b.hi}}, scalar_attrs, *b.dtypes, label));
    }
  }
  for (const DimVector& shape : kUnaryShapes) {
    const std::string label = shape_str(shape);
    cases.push_back(op_case("pow.ScalarBase", {{shape, Kind::Values, 0, 3}}, {Scalar(1.5)}, kNumbers, label));
    cases.push_back(op_case("masked_fill", {{shape}, {shape, Kind::Mask}}, {Scalar(0.5)}, kAll, label));
    cases.push_back(op_case("copy", {{shape}}, {kFloat32}, kAll, label + " to float32"));
    cases.push_back(op_case("copy", {{shape}}, {kInt64}, kFloats, label + " to int64"));
    Case bernoulli = op_case("bernoulli", {{shape, Kind::Values, 0, 1}}, {Scalar(int64_t(7)), Scalar(int64_t(0))},
                             kFloats, label);
    bernoulli.reference = Reference::SameDtype;  // the draws are the same whatever the path
    cases.push_back(std::move(bernoulli));
  }
  for (const auto& [lhs, rhs] : kBinaryShapes)
    cases.push_back(op_case("where", {{lhs, Kind::Mask}, {lhs}, {rhs}}, {}, kAll, shape_label({lhs, rhs})));
  cases.push_back(op_case("masked_fill", {{{3, 33}}, {{33}, Kind::Mask}}, {Scalar(-1.0)}, kFloats, "broadcast mask"));
}

}  // namespace nnvm::sweep
