// Sweep cases of creation, movement, indexing and view ops.
#include "sweep/sweep.h"

#include "absl/strings/str_cat.h"

namespace nnvm::sweep {
namespace {

using One = std::function<Tensor(const std::vector<Tensor>& in)>;

Program one(One f) {
  return [f = std::move(f)](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in)}; };
}

// A creation op's dtype comes from its one input, a scalar of the case's dtype.
const std::vector<Input> kDtypeOnly = {{{}}};

// A view op two ways: of the (materialised) input, and of a value of the
// trace (a copy), read by another copy, so the trace reads it through as_strided.
void add_view(std::vector<Case>& cases, const std::string& name, const DimVector& shape, Attrs attrs,
              const std::string& label) {
  const OpDef& op = find_op(name);
  Case c = program_case(name, {{shape}}, [&op, attrs](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{call1(op, in[0], attrs), call1(op, in[0].clone(), attrs).clone()};
  }, kAll, label);
  cases.push_back(std::move(c));
}

}  // namespace

void add_tensor_cases(std::vector<Case>& cases) {
  // ---- creation ----
  for (const DimVector& shape : {DimVector{}, DimVector{0, 3}, DimVector{1}, DimVector{3, 33}}) {
    const std::string label = shape_str(shape);
    cases.push_back(program_case("full", kDtypeOnly, one([shape](const std::vector<Tensor>& in) {
      return full(shape, 3, in[0].dtype());
    }), kAll, label));
    Case uniform = program_case("uniform", kDtypeOnly, one([shape](const std::vector<Tensor>& in) {
      Generator gen(11);
      return rand(shape, in[0].dtype(), &gen);
    }), kFloats, label);
    Case normal = program_case("normal", kDtypeOnly, one([shape](const std::vector<Tensor>& in) {
      Generator gen(12);
      return randn(shape, in[0].dtype(), &gen);
    }), kFloats, label);
    Case randint = program_case("randint", kDtypeOnly, one([shape](const std::vector<Tensor>& in) {
      Generator gen(13);
      return nnvm::randint(-3, 9, shape, in[0].dtype(), &gen);
    }), kNumbers, label);
    for (Case* random : {&uniform, &normal, &randint}) {
      random->reference = Reference::SameDtype;  // the draws are the same whatever the path
      cases.push_back(std::move(*random));
    }
  }
  for (int64_t n : {0, 1, 7, 33}) {
    const std::string label = absl::StrCat(n);
    cases.push_back(program_case("arange", kDtypeOnly, one([n](const std::vector<Tensor>& in) {
      return arange(-2, n - 2, 1, in[0].dtype());
    }), kNumbers, label));
    cases.push_back(program_case("linspace", kDtypeOnly, one([n](const std::vector<Tensor>& in) {
      return linspace(-1.5, 2.5, n, in[0].dtype());
    }), kFloats, label));
    cases.push_back(program_case("eye", kDtypeOnly, one([n](const std::vector<Tensor>& in) {
      return eye(n, n + 2, in[0].dtype());
    }), kAll, label));
  }

  // ---- movement ----
  const std::pair<DimVector, int64_t> joins[] = {{{3, 33}, 0}, {{3, 33}, 1}, {{2, 0, 5}, 1}, {{1}, 0}, {{}, 0}};
  for (const auto& [shape, dim] : joins) {
    const std::string label = absl::StrCat(shape_str(shape), " dim ", dim);
    const int64_t d = dim;
    if (!shape.empty())
      cases.push_back(program_case("cat", {{shape}, {shape}}, one([d](const std::vector<Tensor>& in) {
        return cat({in[0], in[1], in[0]}, d);
      }), kAll, label));
    cases.push_back(program_case("stack", {{shape}, {shape}}, one([d](const std::vector<Tensor>& in) {
      return stack({in[0], in[1]}, d);
    }), kAll, label));
  }
  for (const DimVector& shape : {DimVector{2, 3, 7}, DimVector{1, 1, 1}, DimVector{2, 0, 4}}) {
    const std::string label = shape_str(shape);
    // replicate and circular padding are cat and expand (core/ops/movement.cpp), swept there
    const std::pair<std::string, DimVector> pads[] = {
        {"constant", {1, 2, 0, 1}}, {"constant", {-1, 2, 1, 0}}, {"reflect", {1, 2, 0, 1}}};
    for (const auto& [mode, widths] : pads) {
      // a reflection needs more than the pad inside
      if (mode == "reflect" && (shape.back() <= 2 || numel_of(shape) == 0)) continue;
      cases.push_back(program_case("pad", {{shape}}, one([m = mode, w = widths](const std::vector<Tensor>& in) {
        return pad(in[0], w, m, 1.5);
      }), mode == "constant" ? kAll : kFloats, absl::StrCat(label, " ", mode, " ", shape_str(widths))));
    }
    cases.push_back(program_case("repeat", {{shape}}, one([](const std::vector<Tensor>& in) {
      return in[0].repeat({2, 1, 3});
    }), kAll, label));
    cases.push_back(program_case("flip", {{shape}}, one([](const std::vector<Tensor>& in) {
      return in[0].flip({0, 2});
    }), kAll, label));
    cases.push_back(program_case("roll", {{shape}}, one([](const std::vector<Tensor>& in) {
      return in[0].roll({2, -1}, {2, 0});
    }), kAll, label));
    for (const char* name : {"tril", "triu"})
      for (int64_t diagonal : {-1, 0, 2})
        cases.push_back(op_case(name, {{shape}}, {diagonal}, kAll, absl::StrCat(label, " diagonal ", diagonal)));
  }

  // ---- indexing ----
  struct Indexed {
    DimVector x, index;
    int64_t dim;
  };
  const Indexed indexed[] = {{{3, 7}, {3, 5}, 1}, {{4, 3}, {2, 3}, 0}, {{1}, {1}, 0}, {{2, 6}, {2, 0}, 1}};
  for (const Indexed& g : indexed) {
    const std::string label = absl::StrCat(shape_str(g.x), " index ", shape_str(g.index), " dim ", g.dim);
    const double n = double(g.x[size_t(g.dim)]);
    const Input index{g.index, Kind::Index, 0, n};
    cases.push_back(op_case("gather", {{g.x}, index}, {g.dim}, kAll, label));
    cases.push_back(op_case("scatter", {{g.x}, index, {g.index}}, {g.dim}, kAll, label));
    cases.push_back(op_case("scatter.value", {{g.x}, index}, {g.dim, Scalar(2.5)}, kFloats, label));
    cases.push_back(op_case("scatter_add", {{g.x}, index, {g.index}}, {g.dim}, kNumbers, label));
    cases.push_back(op_case("index_select", {{g.x}, {{g.index.back()}, Kind::Index, 0, n}}, {g.dim}, kAll, label));
  }
  for (bool accumulate : {false, true})
    for (const auto& [x, k] : {std::pair<DimVector, int64_t>{{5, 7}, 4}, {{1, 1}, 1}, {{3, 4}, 0}}) {
      const bool acc = accumulate;
      cases.push_back(program_case("index_put", {{x}, {{k}, Kind::Index, 0, double(x[0])}, {{k, x[1]}}},
                                   one([acc](const std::vector<Tensor>& in) {
                                     return in[0].index_put({in[1]}, in[2], acc);
                                   }),
                                   acc ? kNumbers : kAll, absl::StrCat(shape_str(x), " ", k, acc ? " accumulate" : "")));
    }
  for (const DimVector& idx : {DimVector{5}, DimVector{2, 3}, DimVector{0}, DimVector{1}}) {
    const std::string label = shape_str(idx);
    cases.push_back(program_case("embedding", {{{10, 3}}, {idx, Kind::Index, 0, 10}},
                                 one([](const std::vector<Tensor>& in) { return embedding(in[0], in[1], 2); }),
                                 kFloats, label));
    cases.push_back(program_case("one_hot", {{idx, Kind::Index, 0, 7}},
                                 one([](const std::vector<Tensor>& in) { return one_hot(in[0], 7); }), {kInt64},
                                 label));
  }

  // ---- views ----
  add_view(cases, "view", {3, 4, 5}, {DimVector{4, 15}}, "[3, 4, 5] as [4, 15]");
  cases.back().relayout = false;  // a view needs a layout it can view
  add_view(cases, "view", {0, 3}, {DimVector{3, 0}}, "empty");
  add_view(cases, "permute", {2, 3, 5}, {DimVector{2, 0, 1}}, "[2, 0, 1]");
  add_view(cases, "transpose", {3, 7}, {int64_t(0), int64_t(1)}, "[3, 7]");
  add_view(cases, "expand", {3, 1}, {DimVector{2, 3, 33}}, "[3, 1] to [2, 3, 33]");
  add_view(cases, "squeeze", {3, 1, 5, 1}, {DimVector{1, 3}}, "[3, 1, 5, 1]");
  add_view(cases, "unsqueeze", {3, 5}, {int64_t(1)}, "[3, 5] at 1");
  add_view(cases, "slice", {7, 33}, {int64_t(1), int64_t(3), int64_t(30), int64_t(4)}, "[7, 33] 3:30:4");
  add_view(cases, "select", {7, 33}, {int64_t(0), int64_t(5)}, "row 5");
  add_view(cases, "diagonal", {5, 7}, {int64_t(1), int64_t(0), int64_t(1)}, "offset 1");
  add_view(cases, "as_strided", {5, 7}, {DimVector{3, 4}, DimVector{7, 2}, int64_t(1)}, "[3, 4] strides [7, 2] at 1");
  cases.back().relayout = false;  // its storage offset and strides address the input's storage

  // strided_update, as an in-place op through a view of a trace's value records it
  cases.push_back(program_case("strided_update", {{{5, 7}}, {{3, 4}}}, one([](const std::vector<Tensor>& in) {
    static const OpDef& op = find_op("strided_update");
    return call1(op, {in[0].contiguous(), in[1]}, {DimVector{3, 4}, DimVector{7, 2}, int64_t(1)});
  }), kAll, "[3, 4] strides [7, 2] at 1"));
  // view_scatter: the gradient of slice, select and diagonal
  const std::pair<std::string, One> scattered[] = {
      {"slice", [](const std::vector<Tensor>& in) { return in[0].slice(1, 3, 30, 4); }},
      {"select", [](const std::vector<Tensor>& in) { return in[0].select(0, 5); }},
      {"diagonal", [](const std::vector<Tensor>& in) { return in[0].diagonal(1); }}};
  for (const auto& [view, f] : scattered)
    cases.push_back(program_case("view_scatter", {{{7, 33}}}, [f = f](const std::vector<Tensor>& in) {
      const Tensor x = in[0].detach().requires_grad_();
      const Tensor y = f({x});
      return autograd::grad({y}, {x}, {y.detach()});
    }, kFloats, "the gradient of " + view));
  // quantized tensors: quantize and dequantize, per tensor and per channel (axis 0)
  for (const DimVector& shape : {DimVector{0, 3}, DimVector{1}, DimVector{5, 33}}) {
    const std::string label = shape_str(shape);
    const Program per_tensor = [](const std::vector<Tensor>& in) {
      const Tensor q = quantize_per_tensor(in[0], 0.02, 3, kQInt8);
      return std::vector<Tensor>{q.int_repr(), q.dequantize()};
    };
    const Program per_channel = [channels = shape[0]](const std::vector<Tensor>& in) {
      std::vector<double> scales;
      std::vector<int64_t> zero_points;
      for (int64_t c = 0; c < channels; ++c) {
        scales.push_back(0.01 * double(c + 1));
        zero_points.push_back(100 + c);
      }
      const Tensor q = quantize_per_channel(in[0], tensor(scales), tensor(zero_points), 0, kQUInt8);
      return std::vector<Tensor>{q.int_repr(), q.dequantize()};
    };
    for (const char* op : {"quantize_per_tensor", "dequantize_per_tensor"})
      cases.push_back(program_case(op, {{shape}}, per_tensor, kFloats, label));
    for (const char* op : {"quantize_per_channel", "dequantize_per_channel"})
      cases.push_back(program_case(op, {{shape}}, per_channel, kFloats, label));
  }
}

}  // namespace nnvm::sweep
