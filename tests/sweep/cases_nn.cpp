// Sweep cases of the neural-network ops: linear algebra, convolution,
// pooling, interpolation, normalisation, losses, dropout, and their backward
// ops (reached through autograd, as a training step reaches them).
#include "sweep/sweep.h"

#include "absl/strings/str_cat.h"

namespace nnvm::sweep {
namespace {

using Forward = std::function<Tensor(const std::vector<Tensor>& in)>;

// The forward program: one output.
Program forward(Forward f) {
  return [f = std::move(f)](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in)}; };
}

// The gradient of f with respect to input `wrt` (the others held), weighted
// by f's own values: the op's backward ops, as autograd records them.
Program gradient(Forward f, size_t wrt = 0) {
  return [f = std::move(f), wrt](const std::vector<Tensor>& in) {
    std::vector<Tensor> leaves = in;
    leaves[wrt] = in[wrt].detach().requires_grad_();
    const Tensor y = f(leaves);
    return autograd::grad({y}, {leaves[wrt]}, {y.detach()});
  };
}

// Both: `forward_op` by the forward program, `backward_op` by the gradient.
void add_with_gradient(std::vector<Case>& cases, const std::string& forward_op, const std::string& backward_op,
                       std::vector<Input> inputs, const Forward& f, const std::vector<DType>& dtypes,
                       const std::string& label, size_t wrt = 0) {
  cases.push_back(program_case(forward_op, inputs, forward(f), dtypes, label));
  cases.push_back(program_case(backward_op, std::move(inputs), gradient(f, wrt), dtypes, label));
}

}  // namespace

void add_nn_cases(std::vector<Case>& cases) {
  // matmul: odd sizes, batched with broadcast batch dims, one element, empty, an empty inner dim.
  const std::pair<DimVector, DimVector> products[] = {{{3, 33}, {33, 7}}, {{2, 5, 7}, {7, 1}},
                                                      {{2, 1, 3, 4}, {3, 4, 5}}, {{1, 1}, {1, 1}},
                                                      {{0, 4}, {4, 3}}, {{4, 0}, {0, 3}}};
  for (const auto& [a, b] : products)
    cases.push_back(op_case("matmul", {{a}, {b}}, {}, kFloats, shape_str(a) + shape_str(b)));
  cases.push_back(op_case("matmul_sum", {{{3, 33}}, {{33, 7}}, {{3, 5}}, {{5, 7}}}, {}, kF32F64, "3x33 33x7 3x5 5x7"));
  cases.push_back(op_case("matmul_sum", {{{1, 1}}, {{1, 1}}, {{1, 0}}, {{0, 1}}}, {}, kF32F64, "one and empty"));
  // Convolutions: odd images, stride, padding, dilation, groups; the input's
  // gradient is a transposed convolution, the weight's its own op.
  struct Conv {
    DimVector x, w;
    DimVector stride, padding, dilation;
    int64_t groups;
  };
  const Conv convs[] = {{{2, 3, 7, 9}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                        {{1, 4, 9, 7}, {6, 2, 3, 1}, {2, 1}, {0, 1}, {1, 2}, 2},
                        {{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
                        {{0, 2, 5, 5}, {3, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1}};
  for (const Conv& cv : convs) {
    const std::string label = absl::StrCat(shape_str(cv.x), shape_str(cv.w), " groups ", cv.groups);
    const Forward conv = [cv](const std::vector<Tensor>& in) {
      return conv2d(in[0], in[1], in[2], cv.stride, cv.padding, cv.dilation, cv.groups);
    };
    const std::vector<Input> inputs = {{cv.x}, {cv.w}, {{cv.w[0]}}};
    cases.push_back(program_case("conv2d", inputs, forward(conv), kFloats, label));
    cases.push_back(program_case("conv_transpose2d", inputs, gradient(conv), kFloats, label));
    cases.push_back(program_case("conv2d_backward_weight", inputs, gradient(conv, 1), kFloats, label));
    // a transposed convolution of its own: weight [in, out / groups, kh, kw]
    const DimVector tw = {cv.x[1], cv.w[0] / cv.groups, cv.w[2], cv.w[3]};
    cases.push_back(program_case("conv_transpose2d", {{cv.x}, {tw}}, forward([cv](const std::vector<Tensor>& in) {
      return conv_transpose2d(in[0], in[1], {}, cv.stride, cv.padding, {0, 0}, cv.groups, cv.dilation);
    }), kFloats, label + " forward"));
  }

  // Pooling and resampling, with their backward ops.
  const DimVector images[] = {{2, 3, 7, 9}, {1, 1, 1, 1}, {1, 2, 8, 5}, {0, 2, 4, 4}};
  for (const DimVector& x : images) {
    const std::string label = shape_str(x);
    const bool tiny = x[2] == 1;
    add_with_gradient(cases, "max_pool2d", "max_pool2d_backward", {{x}}, [tiny](const std::vector<Tensor>& in) {
      return tiny ? max_pool2d(in[0], {1, 1}) : max_pool2d(in[0], {3, 2}, {2, 1}, {1, 0}, {1, 1}, true);
    }, kFloats, label);
    add_with_gradient(cases, "avg_pool2d", "avg_pool2d_backward", {{x}}, [tiny](const std::vector<Tensor>& in) {
      return tiny ? avg_pool2d(in[0], {1, 1}) : avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, false, false);
    }, kFloats, label);
    add_with_gradient(cases, "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward", {{x}},
                      [](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], {3, 2}); }, kFloats,
                      label);
    add_with_gradient(cases, "upsample_nearest2d", "upsample_nearest2d_backward", {{x}},
                      [](const std::vector<Tensor>& in) {
                        return interpolate(in[0], std::vector<int64_t>{5, 11}, std::nullopt, "nearest");
                      },
                      kFloats, label);
    for (bool align : {false, true})
      add_with_gradient(cases, "upsample_bilinear2d", "upsample_bilinear2d_backward", {{x}},
                        [align](const std::vector<Tensor>& in) {
                          return interpolate(in[0], std::vector<int64_t>{5, 11}, std::nullopt, "bilinear", align);
                        },
                        kFloats, label + (align ? " align_corners" : ""));
  }

  // Normalisation over rows: odd, one, empty.
  const DimVector rows[] = {{3, 33}, {2, 3, 7}, {1, 1}, {0, 5}};
  for (const DimVector& x : rows) {
    const std::string label = shape_str(x);
    const int64_t last = x.back();
    add_with_gradient(cases, "layer_norm", "layer_norm_backward", {{x}, {{last}}, {{last}}},
                      [last](const std::vector<Tensor>& in) { return layer_norm(in[0], {last}, in[1], in[2]); },
                      kFloats, label);
    const Forward rms = [last](const std::vector<Tensor>& in) { return rms_norm(in[0], {last}, in[1], 1e-5); };
    cases.push_back(program_case("rms_norm", {{x}, {{last}}}, forward(rms), kFloats, label));
    // The gradient of a row of one element, eps / (x^2 + eps)^1.5, is a difference of equal terms: noise.
    if (last > 1) cases.push_back(program_case("rms_norm_backward", {{x}, {{last}}}, gradient(rms), kFloats, label));
    Case drop = op_case("dropout", {{x}}, {Scalar(0.25), Scalar(int64_t(9)), Scalar(int64_t(0))}, kFloats, label);
    drop.reference = Reference::SameDtype;  // the draws are the same whatever the path
    cases.push_back(std::move(drop));
  }
  const DimVector channels[] = {{2, 4, 3, 5}, {3, 6}, {1, 2, 1}};
  for (const DimVector& x : channels) {
    const std::string label = shape_str(x);
    const int64_t c = x[1];
    cases.push_back(program_case("group_norm", {{x}, {{c}}, {{c}}}, forward([](const std::vector<Tensor>& in) {
      return group_norm(in[0], 2, in[1], in[2]);
    }), kFloats, label));
    if (numel_of(x) > c)  // training needs more than one value per channel
      cases.push_back(program_case("batch_norm", {{x}, {{c}}, {{c}}}, forward([](const std::vector<Tensor>& in) {
        return batch_norm(in[0], {}, {}, in[1], in[2], true);
      }), kFloats, label + " training"));
    // eval: running statistics, not updated
    cases.push_back(program_case("batch_norm", {{x}, {{c}}, {{c}, Kind::Values, 0.5, 2}, {{c}}, {{c}}},
                                 forward([](const std::vector<Tensor>& in) {
                                   return batch_norm(in[0], in[1], in[2], in[3], in[4], false);
                                 }),
                                 kFloats, label + " eval"));
  }

  // Losses, each reduction; class targets odd in number.
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const std::string label = absl::StrCat("reduction ", int(r));
    for (const DimVector& x : {DimVector{3, 33}, DimVector{1}, DimVector{0, 4}}) {
      const std::string l = label + " " + shape_str(x);
      cases.push_back(op_case("mse_loss", {{x}, {x}}, {int64_t(r)}, kFloats, l));
      cases.push_back(op_case("l1_loss", {{x}, {x}}, {int64_t(r)}, kFloats, l));
      cases.push_back(program_case("binary_cross_entropy_with_logits", {{x}, {x, Kind::Values, 0, 1}, {x}, {x}},
                                   forward([r](const std::vector<Tensor>& in) {
                                     return binary_cross_entropy_with_logits(in[0], in[1], in[2].abs(), r,
                                                                             in[3].abs());
                                   }),
                                   kFloats, l));
    }
    for (const auto& [n, classes] : {std::pair<int64_t, int64_t>{5, 7}, {1, 1}, {9, 33}}) {
      const std::string l = absl::StrCat(label, " ", n, "x", classes);
      const int64_t k = classes;
      cases.push_back(program_case("nll_loss", {{{n, k}, Kind::Values, -4, -0.1}, {{n}, Kind::Index, 0, double(k)}, {{k}, Kind::Float, 0.5, 2}},
                                   forward([r](const std::vector<Tensor>& in) {
                                     return nll_loss(in[0], in[1], in[2].to(in[0].dtype()), r, 0);
                                   }),
                                   kFloats, l));
      const Forward ce = [r](const std::vector<Tensor>& in) {
        return cross_entropy(in[0], in[1], in[2].to(in[0].dtype()), r, 1, 0.1);
      };
      add_with_gradient(cases, "cross_entropy", "cross_entropy_backward",
                        {{{n, k}}, {{n}, Kind::Index, 0, double(k)}, {{k}, Kind::Float, 0.5, 2}}, ce, kFloats, l);
    }
  }
  // INT8 (last, so the cases above keep their seeds): x is quantized from its own range on
  // every path, so each path's result is the eager float32 one exactly.
  for (const auto& [x, n] : {std::pair<DimVector, int64_t>{{5, 33}, 7}, {{2, 3, 70}, 40}, {{1, 1}, 1}, {{0, 4}, 3}}) {
    const int64_t k = x.back();
    Case q = program_case("quantized_linear_dynamic", {{x}, {{n, k}, Kind::Float}, {{n}, Kind::Float}},
                          forward([](const std::vector<Tensor>& in) {
                            return quantized::linear_dynamic(in[0], quantized::linear_prepack(in[1], in[2]));
                          }),
                          kFloat32Only, absl::StrCat(shape_str(x), " to ", n));
    q.reference = Reference::SameDtype;
    cases.push_back(std::move(q));
  }
  for (const auto& [x, out] : {std::pair<DimVector, int64_t>{{2, 3, 7, 6}, 5}, {{1, 1, 3, 3}, 1}, {{0, 2, 4, 4}, 3}}) {
    Case q = program_case("quantized_conv2d_dynamic", {{x}, {{out, x[1], 3, 3}, Kind::Float}, {{out}, Kind::Float}},
                          forward([](const std::vector<Tensor>& in) {
                            return quantized::conv2d_dynamic(in[0], quantized::conv2d_prepack(in[1], in[2]), {1, 1},
                                                             {1, 1});
                          }),
                          kFloat32Only, absl::StrCat(shape_str(x), " to ", out));
    q.reference = Reference::SameDtype;
    cases.push_back(std::move(q));
  }
  // ONNX's integer products, through a model node: A (X) uint8 from [0, 255), B (W) int8 from [-128, 128),
  // zero points 3 and -2. Exact: the int32 sums are the eager ones.
  const auto integer_node = [](const std::string& op, std::map<std::string, Attribute> attrs) {
    return forward([op, attrs](const std::vector<Tensor>& in) {
      GraphBuilder g;
      const std::vector<std::string> names{
          g.input("a", kUInt8, {in[0].sizes().begin(), in[0].sizes().end()}),
          g.input("b", kInt8, {in[1].sizes().begin(), in[1].sizes().end()}),
          g.initializer("a_zp", scalar_tensor(3, kUInt8)), g.initializer("b_zp", scalar_tensor(-2, kInt8))};
      g.output(g.op(op, names, attrs));
      return g.build()({in[0].to(kUInt8), in[1].to(kInt8)})[0];
    });
  };
  for (const auto& [a, n] : {std::pair<DimVector, int64_t>{{5, 33}, 7}, {{2, 3, 70}, 40}, {{0, 4}, 3}}) {
    Case q = program_case("integer_matmul", {{a, Kind::Float, 0, 255}, {{a.back(), n}, Kind::Float, -128, 128}},
                          integer_node("MatMulInteger", {}), kFloat32Only, absl::StrCat(shape_str(a), " by ", n));
    q.reference = Reference::SameDtype;
    q.tolerance = 0;
    cases.push_back(std::move(q));
  }
  for (const auto& [x, out] : {std::pair<DimVector, int64_t>{{2, 4, 7, 6}, 6}, {{1, 2, 3, 3}, 2}}) {
    Case q = program_case("integer_conv2d",
                          {{x, Kind::Float, 0, 255}, {{out, x[1] / 2, 3, 3}, Kind::Float, -128, 128}},
                          integer_node("ConvInteger", {{"group", int64_t(2)}, {"pads", std::vector<int64_t>{1, 0, 1, 1}}}),
                          kFloat32Only, absl::StrCat(shape_str(x), " to ", out, ", 2 groups"));
    q.reference = Reference::SameDtype;
    q.tolerance = 0;
    cases.push_back(std::move(q));
  }
}

}  // namespace nnvm::sweep
