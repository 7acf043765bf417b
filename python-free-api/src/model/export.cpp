// onnx_graph_of (function_trace.h): a recorded trace in ONNX's op vocabulary
// (opset 17), and the public trace_graph / save_onnx of a function.
//
// Each nnvm op has a rule that writes the ONNX nodes computing it, roughly the
// inverse of the importer's kernel for that ONNX op (model/ops_*.cpp), so that
// a saved file loads back to the same computation. Pointwise ops compute in
// the dtype nnvm's promotion gives (core/ops/pointwise.h): their operands are
// cast to it and their Scalars become 0-d initializers of it. Views read in
// the trace (as_strided) become Reshape, Slice, Transpose and Expand where
// their layout allows, else a Gather of the elements they see.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "function_trace.h"
#include "op_util.h"

namespace nnvm::model_detail {
namespace {

using trace::ValueId;

class Exporter;
// Writes the ONNX nodes for one trace node; returns a name per output.
using Rule = std::function<std::vector<std::string>(Exporter&, const trace::Node&)>;
const std::map<std::string, Rule>& rules();

class Exporter {
 public:
  explicit Exporter(const trace::Trace& t) : t_(t), names_(t.values().size()) {}

  Graph run() {
    for (size_t i = 0; i < t_.inputs().size(); ++i) {
      const trace::Value& v = t_.value(t_.inputs()[i]);
      std::vector<GraphBuilder::DimSpec> shape(v.shape.begin(), v.shape.end());
      names_[size_t(t_.inputs()[i])] = b_.input(absl::StrCat("input_", i), v.dtype, shape);
    }
    for (size_t i = 0; i < t_.constants().size(); ++i) {
      const ValueId c = t_.constants()[i];
      names_[size_t(c)] = b_.initializer(absl::StrCat("constant_", i), t_.constant_value(c));
    }
    for (size_t k = 0; k < t_.nodes().size(); ++k) {
      const trace::Node& n = t_.nodes()[k];
      auto rule = rules().find(n.op->name);
      NNVM_CHECK(rule != rules().end(), "trace_graph", "cannot export op '", n.op->name, "' (", describe(k),
                 "): it has no ONNX form. Exportable ops: ", absl::StrJoin(exportable_op_names(), ", "));
      const std::vector<std::string> outs = rule->second(*this, n);
      NNVM_DCHECK(outs.size() == n.outputs.size());
      for (size_t j = 0; j < outs.size(); ++j) names_[size_t(n.outputs[j])] = outs[j];
    }
    // A graph output is a node's own output, once: an input, an initializer
    // or a repeated output goes through an Identity.
    std::vector<bool> taken(names_.size(), false);
    for (ValueId v : t_.outputs()) {
      std::string name = names_[size_t(v)];
      if (t_.value(v).node < 0 || taken[size_t(v)]) name = op("Identity", {name});
      taken[size_t(v)] = true;
      b_.output(name);
    }
    Graph g = b_.graph();
    g.name = "nnvm_trace";
    for (size_t i = 0; i < t_.outputs().size(); ++i) {
      const trace::Value& v = t_.value(t_.outputs()[i]);
      g.outputs[i].dtype = v.dtype;
      g.outputs[i].shape = std::vector<Dim>();
      for (int64_t d : v.shape) g.outputs[i].shape->push_back(Dim{d, {}});
    }
    return g;
  }

  // The node's inputs and outputs.
  const std::string& in(const trace::Node& n, size_t k) const { return names_[size_t(n.inputs[k])]; }
  const trace::Value& in_value(const trace::Node& n, size_t k) const { return t_.value(n.inputs[k]); }
  const trace::Value& out_value(const trace::Node& n, size_t k = 0) const { return t_.value(n.outputs[k]); }

  std::string op(const std::string& type, const std::vector<std::string>& inputs,
                 std::map<std::string, Attribute> attributes = {}) {
    return b_.op(type, inputs, std::move(attributes));
  }
  std::string cast(const std::string& x, DType from, DType to) {
    return from == to ? x : op("Cast", {x}, {{"to", dtype_to_onnx(to)}});
  }
  // Input k of n in dtype `to`.
  std::string in_as(const trace::Node& n, size_t k, DType to) { return cast(in(n, k), in_value(n, k).dtype, to); }
  std::string constant(const Tensor& value) { return b_.initializer(absl::StrCat("c", next_++), value); }
  std::string scalar(const Scalar& s, DType dtype) { return constant(full({}, s, nnvm::dtype(dtype))); }
  std::string ints(const std::vector<int64_t>& values) { return constant(int_tensor(values)); }
  std::string reshape(const std::string& x, IntArrayRef from, IntArrayRef to) {
    if (trace::same_dims(from, to)) return x;
    return op("Reshape", {x, ints(std::vector<int64_t>(to.begin(), to.end()))});
  }

  // "node %5 = add(%2: float32[2, 3], %4: float32[3])": what a message says of a node.
  std::string describe(size_t k) const {
    const trace::Node& n = t_.nodes()[k];
    std::vector<std::string> ins;
    for (ValueId v : n.inputs)
      ins.push_back(
          absl::StrCat("%", v, ": ", std::string(dtype_name(t_.value(v).dtype)), shape_str(t_.value(v).shape)));
    return absl::StrCat("node ", k, " = ", n.op->name, "(", absl::StrJoin(ins, ", "), ")");
  }

 private:
  const trace::Trace& t_;
  GraphBuilder b_;
  std::vector<std::string> names_;  // by value id
  int64_t next_ = 0;
};

std::vector<int64_t> ints_of(IntArrayRef v) { return {v.begin(), v.end()}; }

// The flat offsets o + sum k_d * strides_d of a layout's elements, shaped `shape`.
Tensor offsets(IntArrayRef shape, IntArrayRef strides, int64_t o) {
  Tensor idx = full({}, o, dtype(kInt64));
  for (size_t d = 0; d < shape.size(); ++d) {
    DimVector at(shape.size(), 1);
    at[d] = shape[d];
    idx = idx + arange(shape[d], dtype(kInt64)).mul(strides[d]).reshape(at);
  }
  return idx.expand(shape).contiguous();
}

// as_strided(x) [shape, strides, offset] over x's contiguous elements.
std::string strided_view(Exporter& e, const std::string& x, const trace::Value& base, IntArrayRef shape,
                         IntArrayRef strides, int64_t o) {
  const int64_t n = numel_of(base.shape);
  if (numel_of(shape) == 0) return e.constant(zeros(shape, dtype(base.dtype)));
  // The dims that move through memory, outermost (largest stride) first.
  std::vector<size_t> core;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1 && strides[d] > 0) core.push_back(d);
  std::stable_sort(core.begin(), core.end(), [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  DimVector sizes, steps;
  for (size_t d : core) sizes.push_back(shape[d]), steps.push_back(strides[d]);
  // Seen as [n / t0, t0 / t1, ..., t_last] (t the strides), the view is a
  // slice of each dim but the last, and one element of the last, when the
  // strides divide each other and no index carries into the next dim.
  DimVector virt, starts, ends;
  bool sliceable = (steps.empty() || n % steps[0] == 0);
  for (size_t i = 0; sliceable && i < steps.size(); ++i) {
    const int64_t outer = i == 0 ? n / steps[0] : steps[i - 1] / steps[i];
    sliceable = i == 0 || steps[i - 1] % steps[i] == 0;
    virt.push_back(outer);
  }
  virt.push_back(steps.empty() ? n : steps.back());
  int64_t rest = o;
  for (size_t i = 0; sliceable && i < steps.size(); ++i) {
    starts.push_back(rest / steps[i]);
    rest %= steps[i];
    ends.push_back(starts.back() + sizes[i]);
    sliceable = ends.back() <= virt[i];
  }
  starts.push_back(rest), ends.push_back(rest + 1);
  sliceable = sliceable && rest < virt.back();
  std::string y;
  if (sliceable && starts == DimVector(starts.size(), 0) && ends == virt) {
    y = e.reshape(x, base.shape, sizes);
  } else if (sliceable) {
    std::vector<int64_t> axes(virt.size());
    std::iota(axes.begin(), axes.end(), 0);
    y = e.op("Slice", {e.reshape(x, base.shape, virt), e.ints(ints_of(starts)), e.ints(ints_of(ends)), e.ints(axes)});
    DimVector sliced(sizes);
    sliced.push_back(1);
    y = e.reshape(y, sliced, sizes);
  } else {
    y = e.op("Gather", {e.reshape(x, base.shape, {n}), e.constant(offsets(sizes, steps, o))}, {{"axis", int64_t(0)}});
  }
  // Back to the view's order of dims, its unit dims, and its broadcast ones.
  std::vector<size_t> order(core);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> perm;
  for (size_t d : order) perm.push_back(std::find(core.begin(), core.end(), d) - core.begin());
  DimVector now;
  for (int64_t p : perm) now.push_back(sizes[size_t(p)]);
  if (!std::is_sorted(perm.begin(), perm.end())) y = e.op("Transpose", {y}, {{"perm", perm}});
  DimVector unit(shape.begin(), shape.end());
  for (size_t d = 0; d < shape.size(); ++d)
    if (strides[d] == 0) unit[d] = 1;
  y = e.reshape(y, now, unit);
  if (!trace::same_dims(unit, shape)) y = e.op("Expand", {y, e.ints(ints_of(shape))});
  return y;
}

// Rules for pointwise ops: ONNX's op over the operands cast to the dtype the op computes in.
DType computes_in(Exporter& e, const trace::Node& n, bool bool_result, int scalars) {
  if (!bool_result) return e.out_value(n).dtype;
  DType t = e.in_value(n, 0).dtype;
  for (size_t k = 1; k < n.inputs.size(); ++k) t = promote_types(t, e.in_value(n, k).dtype);
  if (scalars > 0) t = promote_with_scalar(t, n.attrs.s(0));
  return t;
}
std::vector<std::string> operands(Exporter& e, const trace::Node& n, DType t) {
  std::vector<std::string> xs;
  for (size_t k = 0; k < n.inputs.size(); ++k) xs.push_back(e.in_as(n, k, t));
  return xs;
}

// x OP y over the tensors; for "X.Scalar", x OP scalar (or scalar OP x:
// pow.ScalarBase). A comparison computes in its operands' promoted dtype, a
// logical op (`logical`) in bool, as ONNX's And, Or and Xor take only bool.
Rule binary(std::string type, bool bool_result = false, bool negate = false, bool logical = false) {
  return [=](Exporter& e, const trace::Node& n) -> std::vector<std::string> {
    const bool scalar = n.inputs.size() == 1;
    const DType t = logical ? kBool : computes_in(e, n, bool_result, scalar ? 1 : 0);
    std::vector<std::string> xs = operands(e, n, t);
    if (scalar) xs.push_back(e.scalar(n.attrs.s(0), t));
    if (n.op->name == "pow.ScalarBase") std::swap(xs[0], xs[1]);
    std::string y = e.op(type, xs);
    return {negate ? e.op("Not", {y}) : y};
  };
}

Rule unary(std::string type) {
  return [=](Exporter& e, const trace::Node& n) -> std::vector<std::string> {
    return {e.op(type, operands(e, n, e.out_value(n).dtype))};
  };
}

// A unary op written as several ONNX nodes: f(exporter, x in the result's dtype, that dtype).
Rule composed(std::function<std::string(Exporter&, const std::string&, DType)> f) {
  return [=](Exporter& e, const trace::Node& n) -> std::vector<std::string> {
    const DType t = e.out_value(n).dtype;
    return {f(e, e.in_as(n, 0, t), t)};
  };
}

Scalar times(const Scalar& a, const Scalar& b) {
  if (a.is_floating() || b.is_floating()) return Scalar(a.to_double() * b.to_double());
  return Scalar(a.to_int() * b.to_int());
}
bool is_one(const Scalar& s) { return s.to_double() == 1.0; }

// x + alpha * y, x + alpha * scalar.
std::vector<std::string> add(Exporter& e, const trace::Node& n) {
  const DType t = e.out_value(n).dtype;
  const std::string x = e.in_as(n, 0, t);
  if (n.inputs.size() == 1) return {e.op("Add", {x, e.scalar(times(n.attrs.s(0), n.attrs.s(1)), t)})};
  const Scalar& alpha = n.attrs.s(0);
  const std::string y = e.in_as(n, 1, t);
  if (is_one(alpha)) return {e.op("Add", {x, y})};
  if (is_one(-alpha)) return {e.op("Sub", {x, y})};
  return {e.op("Add", {x, e.op("Mul", {y, e.scalar(alpha, t)})})};
}

// remainder: the divisor's sign, as Python's %: ONNX's Mod for integers;
// for floating point (where Mod means C's fmod) a - floor(a / b) b.
std::vector<std::string> remainder(Exporter& e, const trace::Node& n) {
  const DType t = e.out_value(n).dtype;
  std::vector<std::string> xs = operands(e, n, t);
  if (n.inputs.size() == 1) xs.push_back(e.scalar(n.attrs.s(0), t));
  if (!is_floating(t)) return {e.op("Mod", xs, {{"fmod", int64_t(0)}})};
  return {e.op("Sub", {xs[0], e.op("Mul", {e.op("Floor", {e.op("Div", xs)}), xs[1]})})};
}

// Reductions over attrs.ints(0) (every dim when empty) keeping them or not;
// `axes_input`: opset 17 takes ReduceSum's axes as an input, the others' as an attribute.
Rule reduce(std::string type, bool axes_input, bool has_dtype) {
  return [=](Exporter& e, const trace::Node& n) -> std::vector<std::string> {
    const DType t = has_dtype ? n.attrs.dtype(2) : e.out_value(n).dtype;
    std::vector<std::string> xs{e.in_as(n, 0, t)};
    std::map<std::string, Attribute> a{{"keepdims", int64_t(n.attrs.size() > 1 && n.attrs.b(1))}};
    const std::vector<int64_t> axes = n.attrs.size() > 0 ? ints_of(n.attrs.ints(0)) : std::vector<int64_t>{};
    if (!axes.empty()) {
      if (axes_input) xs.push_back(e.ints(axes));
      else a["axes"] = axes;
    }
    return {e.cast(e.op(type, xs, a), t, e.out_value(n).dtype)};
  };
}

Rule along_dim(std::string type) {  // softmax, log_softmax: dim, dtype
  return [=](Exporter& e, const trace::Node& n) -> std::vector<std::string> {
    return {e.op(type, {e.in_as(n, 0, n.attrs.dtype(1))}, {{"axis", n.attrs.i(0)}})};
  };
}

std::vector<int64_t> twice(IntArrayRef pads) { return {pads[0], pads[1], pads[0], pads[1]}; }

std::vector<std::string> conv2d(Exporter& e, const trace::Node& n) {  // stride, padding, dilation, groups
  std::vector<std::string> xs;
  for (size_t k = 0; k < n.inputs.size(); ++k) xs.push_back(e.in(n, k));
  const IntArrayRef w = e.in_value(n, 1).shape;
  return {e.op("Conv", xs,
               {{"strides", ints_of(n.attrs.ints(0))}, {"pads", twice(n.attrs.ints(1))},
                {"dilations", ints_of(n.attrs.ints(2))}, {"group", n.attrs.i(3)},
                {"kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end())}})};
}

std::vector<std::string> max_pool2d(Exporter& e, const trace::Node& n) {  // kernel, stride, padding, dilation, ceil_mode
  return {e.op("MaxPool", {e.in(n, 0)},
               {{"kernel_shape", ints_of(n.attrs.ints(0))}, {"strides", ints_of(n.attrs.ints(1))},
                {"pads", twice(n.attrs.ints(2))}, {"dilations", ints_of(n.attrs.ints(3))},
                {"ceil_mode", int64_t(n.attrs.b(4))}})};
}

std::vector<std::string> avg_pool2d(Exporter& e, const trace::Node& n) {  // kernel, stride, padding, ceil_mode, count_include_pad
  return {e.op("AveragePool", {e.in(n, 0)},
               {{"kernel_shape", ints_of(n.attrs.ints(0))}, {"strides", ints_of(n.attrs.ints(1))},
                {"pads", twice(n.attrs.ints(2))}, {"ceil_mode", int64_t(n.attrs.b(3))},
                {"count_include_pad", int64_t(n.attrs.b(4))}})};
}

std::vector<std::string> layer_norm(Exporter& e, const trace::Node& n) {  // normalized_shape, has_weight, has_bias, eps
  const IntArrayRef normalized = n.attrs.ints(0);
  const DType t = e.out_value(n).dtype;
  std::vector<std::string> xs{e.in(n, 0)};
  size_t next = 1;
  xs.push_back(n.attrs.b(1) ? e.in(n, next++) : e.constant(ones(normalized, dtype(t))));
  if (n.attrs.b(2)) xs.push_back(e.in(n, next));
  return {e.op("LayerNormalization", xs,
               {{"axis", -int64_t(normalized.size())}, {"epsilon", n.attrs.d(3)}})};
}

// batch_norm(x, [running_mean, running_var], [weight], [bias])
// [training, has_running, has_weight, has_bias, momentum, eps]: inference only.
std::vector<std::string> batch_norm(Exporter& e, const trace::Node& n) {
  const trace::Value& x = e.in_value(n, 0);
  NNVM_CHECK(!n.attrs.b(0) && n.attrs.b(1), "trace_graph", "cannot export batch_norm on ", shape_str(x.shape),
             n.attrs.b(0) ? " in training mode" : " without running statistics",
             ": ONNX's BatchNormalization exported here normalises with running statistics (call eval() first)");
  const DimVector channels{x.shape.size() > 1 ? x.shape[1] : 1};
  size_t next = 3;
  const std::string w = n.attrs.b(2) ? e.in(n, next++) : e.constant(ones(channels, dtype(x.dtype)));
  const std::string b = n.attrs.b(3) ? e.in(n, next) : e.constant(zeros(channels, dtype(x.dtype)));
  return {e.op("BatchNormalization", {e.in(n, 0), w, b, e.in(n, 1), e.in(n, 2)},
               {{"epsilon", n.attrs.d(5)}, {"momentum", n.attrs.d(4)}})};
}

std::vector<std::string> clamp(Exporter& e, const trace::Node& n) {  // has_min, min, has_max, max
  const DType t = e.out_value(n).dtype;
  return {e.op("Clip", {e.in_as(n, 0, t), n.attrs.b(0) ? e.scalar(n.attrs.s(1), t) : "",
                        n.attrs.b(2) ? e.scalar(n.attrs.s(3), t) : ""})};
}

std::string gelu(Exporter& e, const std::string& x, DType t) {  // x/2 (1 + erf(x/sqrt 2))
  const std::string erf = e.op("Erf", {e.op("Div", {x, e.scalar(std::sqrt(2.0), t)})});
  return e.op("Mul", {e.op("Mul", {x, e.scalar(0.5, t)}), e.op("Add", {erf, e.scalar(1, t)})});
}

std::string gelu_tanh(Exporter& e, const std::string& x, DType t) {  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  const std::string cube = e.op("Mul", {e.op("Mul", {x, x}), x});
  const std::string inner = e.op("Add", {x, e.op("Mul", {cube, e.scalar(0.044715, t)})});
  const std::string th = e.op("Tanh", {e.op("Mul", {inner, e.scalar(std::sqrt(2.0 / std::numbers::pi), t)})});
  return e.op("Mul", {e.op("Mul", {x, e.scalar(0.5, t)}), e.op("Add", {th, e.scalar(1, t)})});
}

std::vector<std::string> as_strided(Exporter& e, const trace::Node& n) {  // shape, strides, offset
  return {strided_view(e, e.in(n, 0), e.in_value(n, 0), n.attrs.ints(0), n.attrs.ints(1), n.attrs.i(2))};
}

// strided_update(base, src) [shape, strides, offset]: src scattered into base's elements.
std::vector<std::string> strided_update(Exporter& e, const trace::Node& n) {
  const trace::Value& base = e.in_value(n, 0);
  const IntArrayRef shape = n.attrs.ints(0);
  DimVector at(shape.begin(), shape.end());
  at.push_back(1);
  const Tensor idx = offsets(shape, n.attrs.ints(1), n.attrs.i(2)).reshape(at);
  const std::string flat = e.reshape(e.in(n, 0), base.shape, {numel_of(base.shape)});
  const std::string y = e.op("ScatterND", {flat, e.constant(idx), e.in_as(n, 1, base.dtype)});
  return {e.reshape(y, {numel_of(base.shape)}, base.shape)};
}

std::vector<std::string> adaptive_avg_pool2d(Exporter& e, const trace::Node& n) {  // output_size [h, w]
  const IntArrayRef x = e.in_value(n, 0).shape, size = n.attrs.ints(0);
  const int64_t h = x[x.size() - 2], w = x[x.size() - 1];
  if (size[0] == 1 && size[1] == 1) return {e.op("GlobalAveragePool", {e.in(n, 0)})};
  NNVM_CHECK(size[0] > 0 && size[1] > 0 && h % size[0] == 0 && w % size[1] == 0, "trace_graph",
             "cannot export adaptive_avg_pool2d from ", shape_str(x), " to ", shape_str(size),
             ": ONNX has it as an AveragePool only where the output size divides the input's");
  const std::vector<int64_t> k{h / size[0], w / size[1]};
  return {e.op("AveragePool", {e.in(n, 0)}, {{"kernel_shape", k}, {"strides", k}})};
}

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table = [] {
    std::map<std::string, Rule> r;
    for (const auto& [name, type] : std::vector<std::pair<std::string, std::string>>{
             {"exp", "Exp"}, {"log", "Log"}, {"sqrt", "Sqrt"}, {"sin", "Sin"}, {"cos", "Cos"}, {"tan", "Tan"},
             {"tanh", "Tanh"}, {"sigmoid", "Sigmoid"}, {"erf", "Erf"}, {"reciprocal", "Reciprocal"},
             {"neg", "Neg"}, {"abs", "Abs"}, {"relu", "Relu"}, {"floor", "Floor"}, {"ceil", "Ceil"},
             {"round", "Round"}, {"sign", "Sign"}, {"logical_not", "Not"}})
      r[name] = unary(type);
    for (const char* name : {"isnan", "isinf"})
      r[name] = [type = std::string(name) == "isnan" ? "IsNaN" : "IsInf"](Exporter& e, const trace::Node& n) {
        return std::vector<std::string>{e.op(type, {e.in(n, 0)})};
      };
    for (const auto& [name, type] : std::vector<std::pair<std::string, std::string>>{
             {"mul", "Mul"}, {"div", "Div"}, {"maximum", "Max"}, {"minimum", "Min"}, {"pow", "Pow"}}) {
      r[name] = binary(type);
      r[name + ".Scalar"] = binary(type);
    }
    r["pow.ScalarBase"] = binary("Pow");
    for (const auto& [name, type] : std::vector<std::pair<std::string, std::string>>{
             {"eq", "Equal"}, {"ne", "Equal"}, {"lt", "Less"}, {"le", "LessOrEqual"}, {"gt", "Greater"},
             {"ge", "GreaterOrEqual"}, {"logical_and", "And"}, {"logical_or", "Or"}, {"logical_xor", "Xor"}}) {
      const bool logical = name.starts_with("logical_");
      r[name] = binary(type, true, name == "ne", logical);
      r[name + ".Scalar"] = binary(type, true, name == "ne", logical);
    }
    r["add"] = r["add.Scalar"] = add;
    r["remainder"] = r["remainder.Scalar"] = remainder;
    r["rsqrt"] = composed([](Exporter& e, const std::string& x, DType) { return e.op("Reciprocal", {e.op("Sqrt", {x})}); });
    r["square"] = composed([](Exporter& e, const std::string& x, DType) { return e.op("Mul", {x, x}); });
    r["log1p"] = composed([](Exporter& e, const std::string& x, DType t) { return e.op("Log", {e.op("Add", {x, e.scalar(1, t)})}); });
    r["expm1"] = composed([](Exporter& e, const std::string& x, DType t) { return e.op("Sub", {e.op("Exp", {x}), e.scalar(1, t)}); });
    r["silu"] = composed([](Exporter& e, const std::string& x, DType) { return e.op("Mul", {x, e.op("Sigmoid", {x})}); });
    r["gelu"] = composed(gelu);
    r["gelu_tanh"] = composed(gelu_tanh);
    r["leaky_relu"] = [](Exporter& e, const trace::Node& n) {
      return std::vector<std::string>{
          e.op("LeakyRelu", {e.in_as(n, 0, e.out_value(n).dtype)}, {{"alpha", n.attrs.d(0)}})};
    };
    r["clamp"] = clamp;
    r["where"] = [](Exporter& e, const trace::Node& n) {
      const DType t = e.out_value(n).dtype;
      return std::vector<std::string>{e.op("Where", {e.in(n, 0), e.in_as(n, 1, t), e.in_as(n, 2, t)})};
    };
    r["masked_fill"] = [](Exporter& e, const trace::Node& n) {  // value
      const DType t = e.out_value(n).dtype;
      return std::vector<std::string>{e.op("Where", {e.in(n, 1), e.scalar(n.attrs.s(0), t), e.in(n, 0)})};
    };
    r["copy"] = [](Exporter& e, const trace::Node& n) {  // dtype
      const DType from = e.in_value(n, 0).dtype, to = e.out_value(n).dtype;
      return std::vector<std::string>{from == to ? e.op("Identity", {e.in(n, 0)}) : e.cast(e.in(n, 0), from, to)};
    };
    r["sum"] = reduce("ReduceSum", true, true);
    r["mean"] = reduce("ReduceMean", false, true);
    r["prod"] = reduce("ReduceProd", false, true);
    r["amax"] = r["max"] = reduce("ReduceMax", false, false);
    r["amin"] = r["min"] = reduce("ReduceMin", false, false);
    r["logsumexp"] = reduce("ReduceLogSumExp", false, false);
    r["softmax"] = along_dim("Softmax");
    r["log_softmax"] = along_dim("LogSoftmax");
    r["matmul"] = [](Exporter& e, const trace::Node& n) {
      return std::vector<std::string>{e.op("MatMul", {e.in(n, 0), e.in(n, 1)})};
    };
    r["conv2d"] = conv2d;
    r["max_pool2d"] = max_pool2d;
    r["avg_pool2d"] = avg_pool2d;
    r["adaptive_avg_pool2d"] = adaptive_avg_pool2d;
    r["layer_norm"] = layer_norm;
    r["batch_norm"] = batch_norm;
    r["cat"] = [](Exporter& e, const trace::Node& n) {  // dim
      std::vector<std::string> xs;
      for (size_t k = 0; k < n.inputs.size(); ++k) xs.push_back(e.in_as(n, k, e.out_value(n).dtype));
      return std::vector<std::string>{e.op("Concat", xs, {{"axis", n.attrs.i(0)}})};
    };
    r["stack"] = [](Exporter& e, const trace::Node& n) {  // dim
      std::vector<std::string> xs;
      for (size_t k = 0; k < n.inputs.size(); ++k)
        xs.push_back(e.op("Unsqueeze", {e.in_as(n, k, e.out_value(n).dtype), e.ints({n.attrs.i(0)})}));
      return std::vector<std::string>{e.op("Concat", xs, {{"axis", n.attrs.i(0)}})};
    };
    r["index_select"] = [](Exporter& e, const trace::Node& n) {  // dim
      return std::vector<std::string>{e.op("Gather", {e.in(n, 0), e.in(n, 1)}, {{"axis", n.attrs.i(0)}})};
    };
    r["gather"] = [](Exporter& e, const trace::Node& n) {  // dim
      return std::vector<std::string>{e.op("GatherElements", {e.in(n, 0), e.in(n, 1)}, {{"axis", n.attrs.i(0)}})};
    };
    r["as_strided"] = as_strided;
    r["strided_update"] = strided_update;
    return r;
  }();
  return table;
}

}  // namespace

std::vector<std::string> exportable_op_names() {
  std::vector<std::string> names;
  for (const auto& [name, rule] : rules()) names.push_back(name);
  return names;
}

Graph onnx_graph_of(const trace::Trace& t) { return Exporter(t).run(); }

}  // namespace nnvm::model_detail

namespace nnvm {

Graph trace_graph(const TracedFunction& fn, const std::vector<Tensor>& example_inputs) {
  return model_detail::onnx_graph_of(model_detail::record_function(fn, example_inputs));
}

void save_onnx(const TracedFunction& fn, const std::vector<Tensor>& example_inputs, const std::string& path) {
  save_onnx(Model(trace_graph(fn, example_inputs)), example_inputs, path);
}

}  // namespace nnvm
