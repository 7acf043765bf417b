// Each TensorFlow op that converts, as the ONNX nodes that compute it
// (docs/MODELS.md, "TensorFlow .pb"). Image ops in NHWC run as ONNX's NCHW
// ops between two Transposes; a filter that is a constant is transposed once,
// here, into a new initializer.
#include <cstring>
#include <limits>

#include <absl/strings/str_cat.h>

#include "nnvm/core/functions.h"
#include "op_util.h"
#include "tensorflow.h"

namespace nnvm::tf_import {
namespace {

using Attrs = std::map<std::string, Attribute>;
using Ints = std::vector<int64_t>;
constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

std::string out(const NodeDef& n) { return GraphWriter::output(n); }

// One ONNX node of the same inputs.
Conversion same(const std::string& op_type, Attrs attrs = {}) {
  return [op_type, attrs](GraphWriter& w, const NodeDef& n) {
    std::vector<std::string> ins;
    for (int i = 0; i < w.num_inputs(n); ++i) ins.push_back(w.input(n, i));
    w.emit(n, op_type, ins, attrs, out(n));
  };
}

// Writes the node's result; one computed in NCHW is transposed back to
// NHWC under the TF name.
void emit_result(GraphWriter& w, const NodeDef& n, bool nchw, const std::string& op_type,
                 const std::vector<std::string>& inputs, const Attrs& attrs = {}) {
  if (!nchw) {
    w.emit(n, op_type, inputs, attrs, out(n));
    return;
  }
  w.to_nhwc(n, w.emit(n, op_type, inputs, attrs), out(n));
}

// An op of one tensor that acts on each value alone (`extra` are scalars):
// on an NHWC value with an NCHW twin it runs on the twin, so the layout
// stays NCHW from one image op to the next.
void pointwise(GraphWriter& w, const NodeDef& n, const std::string& op_type, std::vector<std::string> extra = {},
               Attrs attrs = {}) {
  const std::string* nchw = w.nchw_twin(w.input(n, 0));
  std::vector<std::string> ins{nchw ? *nchw : w.input(n, 0)};
  ins.insert(ins.end(), extra.begin(), extra.end());
  emit_result(w, n, nchw != nullptr, op_type, ins, attrs);
}

// The spatial entries of a 4-d NHWC or NCHW attribute (strides, ksize,
// dilations); the batch and channel entries must be 1.
Ints spatial(GraphWriter& w, const NodeDef& n, const std::string& name, bool nhwc, Ints fallback) {
  Ints v = w.attr_ints(n, name, fallback);
  w.check(v.size() == 4, n, absl::StrCat("attribute '", name, "' must have 4 entries, has ", v.size()));
  w.check(v[0] == 1 && v[nhwc ? 3 : 1] == 1, n,
          absl::StrCat("attribute '", name, "' must be 1 for the batch and channels"));
  return nhwc ? Ints{v[1], v[2]} : Ints{v[2], v[3]};
}

bool is_nhwc(GraphWriter& w, const NodeDef& n) {
  std::string format = w.attr_string(n, "data_format", "NHWC");
  w.check(format == "NHWC" || format == "NCHW", n, absl::StrCat("data_format '", format, "' is not NHWC or NCHW"));
  return format == "NHWC";
}

// TF's padding as ONNX's: SAME is auto_pad SAME_UPPER (the extra cell at the
// end, as TF), EXPLICIT lists (before, after) per dimension of the layout.
void add_padding(GraphWriter& w, const NodeDef& n, bool nhwc, Attrs& attrs) {
  std::string padding = w.attr_string(n, "padding");
  if (padding == "SAME") {
    attrs["auto_pad"] = std::string("SAME_UPPER");
  } else if (padding == "VALID") {
    attrs["pads"] = Ints{0, 0, 0, 0};
  } else {
    w.check(padding == "EXPLICIT", n, absl::StrCat("padding '", padding, "' is not SAME, VALID or EXPLICIT"));
    Ints p = w.attr_ints(n, "explicit_paddings");
    w.check(p.size() == 8, n, absl::StrCat("explicit_paddings must have 8 entries, has ", p.size()));
    size_t h = nhwc ? 2 : 4, c = nhwc ? 6 : 2;
    w.check(p[0] == 0 && p[1] == 0 && p[c] == 0 && p[c + 1] == 0, n, "explicit_paddings pad the batch or channels");
    attrs["pads"] = Ints{p[h], p[h + 2], p[h + 1], p[h + 3]};
  }
}

// Runs an NCHW ONNX op on input 0 in the node's layout; `inputs` follow it.
void image_op(GraphWriter& w, const NodeDef& n, bool nhwc, const std::string& op_type, std::vector<std::string> inputs,
              const Attrs& attrs) {
  inputs.insert(inputs.begin(), nhwc ? w.to_nchw(n, w.input(n, 0)) : w.input(n, 0));
  emit_result(w, n, nhwc, op_type, inputs, attrs);
}

// A filter [h, w, in, out] as ONNX's [out, in, h, w], read as [h, w, in_channels, rest].
Tensor oihw(const Tensor& hwio, int64_t in_channels) {
  Tensor src = hwio.contiguous();
  int64_t h = hwio.size(0), w = hwio.size(1), i = in_channels, o = hwio.numel() / std::max<int64_t>(h * w * i, 1);
  Tensor dst = empty({o, i, h, w}, hwio.dtype());
  size_t item = itemsize(hwio.dtype());
  const char* s = static_cast<const char*>(src.data_ptr());
  char* d = static_cast<char*>(dst.data_ptr());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < i; ++c)
        for (int64_t k = 0; k < o; ++k)
          std::memcpy(d + size_t(((k * i + c) * h + y) * w + x) * item,
                      s + size_t(((y * w + x) * i + c) * o + k) * item, item);
  return dst;
}

// Conv2D and DepthwiseConv2dNative: a depthwise filter [h, w, c, m] is the
// grouped convolution of c groups with the filter [c*m, 1, h, w].
void conv(GraphWriter& w, const NodeDef& n, bool depthwise) {
  bool nhwc = is_nhwc(w, n);
  Attrs attrs{{"strides", spatial(w, n, "strides", nhwc, {})},
              {"dilations", spatial(w, n, "dilations", nhwc, Ints{1, 1, 1, 1})}};
  add_padding(w, n, nhwc, attrs);
  std::optional<Tensor> filter = w.const_input(n, 1);
  std::string weight;
  if (filter) {
    w.check(filter->dim() == 4, n, absl::StrCat("the filter must be 4-d, is ", shape_str(filter->sizes())));
    int64_t in = depthwise ? 1 : filter->size(2);
    if (depthwise) attrs["group"] = filter->size(2);
    weight = w.initializer(absl::StrCat(w.const_name(n, 1), depthwise ? "#depthwise_oihw" : "#oihw"),
                           oihw(filter->reshape({filter->size(0), filter->size(1), in, -1}), in));
  } else {
    w.check(!depthwise, n, "the depthwise filter must be a constant");
    weight = w.emit(n, "Transpose", {w.input(n, 1)}, {{"perm", Ints{3, 2, 0, 1}}});
  }
  image_op(w, n, nhwc, "Conv", {weight}, attrs);
}

void pool(GraphWriter& w, const NodeDef& n, const std::string& op_type) {
  bool nhwc = is_nhwc(w, n);
  Attrs attrs{{"kernel_shape", spatial(w, n, "ksize", nhwc, {})}, {"strides", spatial(w, n, "strides", nhwc, {})}};
  add_padding(w, n, nhwc, attrs);
  if (op_type == "AveragePool") attrs["count_include_pad"] = int64_t(0);  // TF averages over the cells inside
  image_op(w, n, nhwc, op_type, {}, attrs);
}

void batch_norm(GraphWriter& w, const NodeDef& n) {
  w.check(!w.attr_bool(n, "is_training", true), n, "is_training is true; only inference graphs load");
  bool nhwc = is_nhwc(w, n);
  std::vector<std::string> params;
  for (int i = 1; i < 5; ++i) params.push_back(w.input(n, i));
  image_op(w, n, nhwc, "BatchNormalization", params, {{"epsilon", w.attr_float(n, "epsilon", 1e-4)}});
}

// BiasAdd: NCHW adds the bias to the third dimension from the end, as
// does NHWC on an NCHW twin.
void bias_add(GraphWriter& w, const NodeDef& n) {
  bool nhwc = is_nhwc(w, n);
  const std::string* nchw = nhwc ? w.nchw_twin(w.input(n, 0)) : nullptr;
  if (nhwc && !nchw) {
    w.emit(n, "Add", {w.input(n, 0), w.input(n, 1)}, {}, out(n));
    return;
  }
  std::string bias = w.emit(n, "Reshape", {w.input(n, 1), w.constant(n, tensor(Ints{-1, 1, 1}))});
  emit_result(w, n, nchw != nullptr, "Add", {nchw ? *nchw : w.input(n, 0), bias});
}

// MatMul (2-d): transpose_a/_b as Gemm's transA/transB.
void matmul(GraphWriter& w, const NodeDef& n) {
  bool ta = w.attr_bool(n, "transpose_a", false), tb = w.attr_bool(n, "transpose_b", false);
  if (!ta && !tb) {
    w.emit(n, "MatMul", {w.input(n, 0), w.input(n, 1)}, {}, out(n));
    return;
  }
  w.emit(n, "Gemm", {w.input(n, 0), w.input(n, 1)}, {{"transA", int64_t(ta)}, {"transB", int64_t(tb)}}, out(n));
}

// BatchMatMul: adj_x/adj_y transpose the last two dimensions whatever the
// rank, as Einsum's "..." does (real values: the adjoint is the transpose).
void batch_matmul(GraphWriter& w, const NodeDef& n) {
  bool ax = w.attr_bool(n, "adj_x", false), ay = w.attr_bool(n, "adj_y", false);
  if (!ax && !ay) {
    w.emit(n, "MatMul", {w.input(n, 0), w.input(n, 1)}, {}, out(n));
    return;
  }
  std::string equation = absl::StrCat(ax ? "...ji" : "...ij", ",", ay ? "...kj" : "...jk", "->...ik");
  w.emit(n, "Einsum", {w.input(n, 0), w.input(n, 1)}, {{"equation", equation}}, out(n));
}

// Mean, Sum, Max, Min, Prod over constant axes; no axes reduce nothing.
void reduce(GraphWriter& w, const NodeDef& n, const std::string& op_type) {
  Ints axes = w.const_ints(n, 1);
  if (axes.empty()) {
    w.emit(n, "Identity", {w.input(n, 0)}, {}, out(n));
    return;
  }
  Attrs attrs{{"keepdims", int64_t(w.attr_bool(n, "keep_dims", false))}};
  std::vector<std::string> ins{w.input(n, 0)};
  if (op_type == "ReduceSum") ins.push_back(w.constant(n, tensor(axes)));  // an input from opset 13
  else attrs["axes"] = axes;
  w.emit(n, op_type, ins, attrs, out(n));
}

// Casts an int64 result (Shape, ArgMax) to the node's `attr` type.
void cast_result(GraphWriter& w, const NodeDef& n, const std::string& value, const char* attr, DType fallback) {
  DType want = w.attr_dtype(n, attr, fallback);
  if (want == kInt64) {
    w.emit(n, "Identity", {value}, {}, out(n));
    return;
  }
  w.emit(n, "Cast", {value}, {{"to", model_detail::dtype_to_onnx(want)}}, out(n));
}

std::string axes_constant(GraphWriter& w, const NodeDef& n, const Ints& axes) { return w.constant(n, tensor(axes)); }

void squeeze(GraphWriter& w, const NodeDef& n) {
  Ints axes = w.attr_ints(n, "squeeze_dims", Ints{});
  std::vector<std::string> ins{w.input(n, 0)};
  if (!axes.empty()) ins.push_back(axes_constant(w, n, axes));
  w.emit(n, "Squeeze", ins, {}, out(n));
}

void concat(GraphWriter& w, const NodeDef& n, bool axis_last) {
  int count = w.num_inputs(n), axis_input = axis_last ? count - 1 : 0;
  w.check(count >= 2, n, absl::StrCat("needs the axis and at least one tensor to join, has ", count, " inputs"));
  Ints axis = w.const_ints(n, axis_input);
  w.check(axis.size() == 1, n, "the axis must be one integer");
  std::vector<std::string> ins;
  for (int i = 0; i < count; ++i)
    if (i != axis_input) ins.push_back(w.input(n, i));
  w.emit(n, "Concat", ins, {{"axis", axis[0]}}, out(n));
}

// Pack: each input gains the axis, then they are joined along it.
void pack(GraphWriter& w, const NodeDef& n) {
  int64_t axis = w.attr_int(n, "axis", 0);
  std::string axes = axes_constant(w, n, {axis});
  std::vector<std::string> parts;
  for (int i = 0; i < w.num_inputs(n); ++i) parts.push_back(w.emit(n, "Unsqueeze", {w.input(n, i), axes}));
  w.emit(n, "Concat", parts, {{"axis", axis}}, out(n));
}

// Pad, PadV2 and MirrorPad: TF's [[before, after], ...] as ONNX's [befores..., afters...].
void pad(GraphWriter& w, const NodeDef& n, std::string mode) {
  Ints p = w.const_ints(n, 1);
  w.check(p.size() % 2 == 0, n, "paddings must be [rank, 2]");
  Ints pads(p.size());
  for (size_t i = 0; i < p.size() / 2; ++i) {
    pads[i] = p[2 * i];
    pads[i + p.size() / 2] = p[2 * i + 1];
  }
  if (mode.empty()) {
    std::string m = w.attr_string(n, "mode");
    w.check(m == "REFLECT", n, absl::StrCat("mode '", m, "' is not supported (only REFLECT)"));
    mode = "reflect";
  }
  std::vector<std::string> ins{w.input(n, 0), w.constant(n, tensor(pads))};
  if (mode == "constant" && w.num_inputs(n) > 2) ins.push_back(w.input(n, 2));
  w.emit(n, "Pad", ins, {{"mode", mode}}, out(n));
}

// StridedSlice: the entries before the ellipsis (implicitly at the end)
// address axes 0, 1, ... and those after it axes ..., -2, -1, so no rank is
// needed. It becomes Slice, then Squeeze (shrink_axis_mask), then Unsqueeze
// (new_axis_mask).
void strided_slice(GraphWriter& w, const NodeDef& n) {
  Ints begin = w.const_ints(n, 1), end = w.const_ints(n, 2), strides = w.const_ints(n, 3);
  size_t k = begin.size();
  w.check(end.size() == k && strides.size() == k, n, "begin, end and strides differ in length");
  auto bit = [&](const char* mask, size_t i) { return (w.attr_int(n, mask, 0) >> i) & 1; };
  size_t ellipsis = k;
  for (size_t i = 0; i < k; ++i)
    if (bit("ellipsis_mask", i)) {
      w.check(ellipsis == k, n, "has more than one ellipsis");
      ellipsis = i;
    }
  Ints starts, ends, axes, steps, squeeze, unsqueeze;
  // input and output positions of the entries after the ellipsis, counted from the end
  int64_t after_in = 0, after_out = 0;
  for (size_t i = ellipsis + 1; i < k; ++i) {
    if (!bit("new_axis_mask", i)) ++after_in;
    if (bit("new_axis_mask", i) || !bit("shrink_axis_mask", i)) ++after_out;
  }
  int64_t in_axis = 0, out_axis = 0;
  for (size_t i = 0; i < k; ++i) {
    if (i == ellipsis) {
      in_axis = -after_in;
      out_axis = -after_out;
      continue;
    }
    if (bit("new_axis_mask", i)) {
      unsqueeze.push_back(out_axis++);
      continue;
    }
    int64_t step = strides[i], start = begin[i], stop = end[i];
    w.check(step != 0, n, "a stride is 0");
    if (bit("shrink_axis_mask", i)) {
      if (bit("begin_mask", i)) start = 0;
      stop = start == -1 ? kEnd : start + 1;
      step = 1;
      squeeze.push_back(in_axis);
    } else {
      if (bit("begin_mask", i)) start = step > 0 ? 0 : kEnd;
      if (bit("end_mask", i)) stop = step > 0 ? kEnd : std::numeric_limits<int64_t>::min();
      ++out_axis;
    }
    if (!(start == 0 && stop == kEnd && step == 1)) {
      starts.push_back(start);
      ends.push_back(stop);
      axes.push_back(in_axis);
      steps.push_back(step);
    }
    ++in_axis;
  }
  std::string value = w.input(n, 0);
  auto last = [&](bool is_last) { return is_last ? out(n) : std::string(); };
  if (!axes.empty())
    value = w.emit(n, "Slice",
                   {value, w.constant(n, tensor(starts)), w.constant(n, tensor(ends)), axes_constant(w, n, axes),
                    w.constant(n, tensor(steps))},
                   {}, last(squeeze.empty() && unsqueeze.empty()));
  if (!squeeze.empty())
    value = w.emit(n, "Squeeze", {value, axes_constant(w, n, squeeze)}, {}, last(unsqueeze.empty()));
  if (!unsqueeze.empty()) value = w.emit(n, "Unsqueeze", {value, axes_constant(w, n, unsqueeze)}, {}, out(n));
  if (value != out(n)) w.emit(n, "Identity", {value}, {}, out(n));
}

// Slice(x, begin, size): a size of -1 reaches the end.
void slice(GraphWriter& w, const NodeDef& n) {
  Ints begin = w.const_ints(n, 1), size = w.const_ints(n, 2), axes;
  w.check(begin.size() == size.size(), n, "begin and size differ in length");
  Ints ends(begin.size());
  for (size_t i = 0; i < begin.size(); ++i) {
    ends[i] = size[i] == -1 ? kEnd : begin[i] + size[i];
    axes.push_back(int64_t(i));
  }
  w.emit(n, "Slice", {w.input(n, 0), w.constant(n, tensor(begin)), w.constant(n, tensor(ends)),
                      axes_constant(w, n, axes)}, {}, out(n));
}

void gather(GraphWriter& w, const NodeDef& n) {
  int64_t axis = 0;
  if (w.num_inputs(n) > 2) {
    Ints a = w.const_ints(n, 2);
    w.check(a.size() == 1, n, "the axis must be one integer");
    axis = a[0];
  }
  w.check(w.attr_int(n, "batch_dims", 0) == 0, n, "batch_dims other than 0 are not supported");
  w.emit(n, "Gather", {w.input(n, 0), w.input(n, 1)}, {{"axis", axis}}, out(n));
}

// An input of integer sizes as int64, the type ONNX's shape inputs take.
std::string as_int64(GraphWriter& w, const NodeDef& n, int i) {
  return w.emit(n, "Cast", {w.input(n, i)}, {{"to", model_detail::dtype_to_onnx(kInt64)}});
}

void add_elementwise(std::map<std::string, Conversion>& t) {
  for (auto [tf, onnx] : {std::pair{"Relu", "Relu"}, {"Sigmoid", "Sigmoid"}, {"Tanh", "Tanh"}, {"Exp", "Exp"},
                          {"Log", "Log"}, {"Sqrt", "Sqrt"}, {"Neg", "Neg"}, {"Abs", "Abs"}, {"Erf", "Erf"},
                          {"Softplus", "Softplus"}, {"Softsign", "Softsign"}, {"Elu", "Elu"}, {"Selu", "Selu"},
                          {"Floor", "Floor"}, {"Ceil", "Ceil"}, {"Sign", "Sign"}, {"Reciprocal", "Reciprocal"},
                          {"Inv", "Reciprocal"}, {"Sin", "Sin"}, {"Cos", "Cos"}, {"Round", "Round"},
                          {"LogicalNot", "Not"}, {"Identity", "Identity"}, {"StopGradient", "Identity"},
                          {"Snapshot", "Identity"}, {"PreventGradient", "Identity"}})
    t[tf] = [onnx = std::string(onnx)](GraphWriter& w, const NodeDef& n) { pointwise(w, n, onnx); };
  for (auto [tf, onnx] : {std::pair{"Add", "Add"}, {"AddV2", "Add"}, {"Sub", "Sub"}, {"Mul", "Mul"}, {"Div", "Div"},
                          {"RealDiv", "Div"}, {"Pow", "Pow"}, {"Maximum", "Max"}, {"Minimum", "Min"},
                          {"Greater", "Greater"}, {"GreaterEqual", "GreaterOrEqual"}, {"Less", "Less"},
                          {"LessEqual", "LessOrEqual"}, {"Equal", "Equal"}, {"LogicalAnd", "And"},
                          {"LogicalOr", "Or"}, {"AddN", "Sum"}, {"SelectV2", "Where"},
                          {"PlaceholderWithDefault", "Identity"}})
    t[tf] = same(onnx);
  t["Softmax"] = same("Softmax", {{"axis", int64_t(-1)}});
  t["LogSoftmax"] = same("LogSoftmax", {{"axis", int64_t(-1)}});
  t["LeakyRelu"] = [](GraphWriter& w, const NodeDef& n) {
    pointwise(w, n, "LeakyRelu", {}, {{"alpha", w.attr_float(n, "alpha", 0.2)}});
  };
  t["Relu6"] = [](GraphWriter& w, const NodeDef& n) {
    DType dtype = w.attr_dtype(n, "T", kFloat32);
    pointwise(w, n, "Clip", {w.constant(n, scalar_tensor(0, dtype)), w.constant(n, scalar_tensor(6, dtype))});
  };
  t["Rsqrt"] = [](GraphWriter& w, const NodeDef& n) {
    w.emit(n, "Reciprocal", {w.emit(n, "Sqrt", {w.input(n, 0)})}, {}, out(n));
  };
  t["Square"] = [](GraphWriter& w, const NodeDef& n) { w.emit(n, "Mul", {w.input(n, 0), w.input(n, 0)}, {}, out(n)); };
  t["SquaredDifference"] = [](GraphWriter& w, const NodeDef& n) {
    std::string d = w.emit(n, "Sub", {w.input(n, 0), w.input(n, 1)});
    w.emit(n, "Mul", {d, d}, {}, out(n));
  };
  t["Cast"] = [](GraphWriter& w, const NodeDef& n) {
    w.emit(n, "Cast", {w.input(n, 0)}, {{"to", model_detail::dtype_to_onnx(w.attr_dtype(n, "DstT"))}}, out(n));
  };
  t["IdentityN"] = [](GraphWriter& w, const NodeDef& n) {
    for (int i = 0; i < w.num_inputs(n); ++i) w.emit(n, "Identity", {w.input(n, i)}, {}, GraphWriter::output(n, i));
  };
}

void add_nn(std::map<std::string, Conversion>& t) {
  t["MatMul"] = matmul;
  for (const char* op : {"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"}) t[op] = batch_matmul;
  t["BiasAdd"] = bias_add;
  t["Conv2D"] = [](GraphWriter& w, const NodeDef& n) { conv(w, n, false); };
  t["DepthwiseConv2dNative"] = [](GraphWriter& w, const NodeDef& n) { conv(w, n, true); };
  t["MaxPool"] = [](GraphWriter& w, const NodeDef& n) { pool(w, n, "MaxPool"); };
  t["AvgPool"] = [](GraphWriter& w, const NodeDef& n) { pool(w, n, "AveragePool"); };
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) t[op] = batch_norm;
}

void add_tensor(std::map<std::string, Conversion>& t) {
  for (auto [tf, onnx] : {std::pair{"Mean", "ReduceMean"}, {"Sum", "ReduceSum"}, {"Max", "ReduceMax"},
                          {"Min", "ReduceMin"}, {"Prod", "ReduceProd"}})
    t[tf] = [onnx = std::string(onnx)](GraphWriter& w, const NodeDef& n) { reduce(w, n, onnx); };
  for (auto [tf, onnx] : {std::pair{"ArgMax", "ArgMax"}, {"ArgMin", "ArgMin"}})
    t[tf] = [onnx = std::string(onnx)](GraphWriter& w, const NodeDef& n) {
      Ints axis = w.const_ints(n, 1);
      w.check(axis.size() == 1, n, "the dimension must be one integer");
      cast_result(w, n, w.emit(n, onnx, {w.input(n, 0)}, {{"axis", axis[0]}, {"keepdims", int64_t(0)}}),
                  "output_type", kInt64);
    };
  t["Shape"] = [](GraphWriter& w, const NodeDef& n) {
    cast_result(w, n, w.emit(n, "Shape", {w.input(n, 0)}), "out_type", kInt32);
  };
  t["Size"] = [](GraphWriter& w, const NodeDef& n) {
    cast_result(w, n, w.emit(n, "Size", {w.input(n, 0)}), "out_type", kInt32);
  };
  // TF reads a 0 in the target shape as a 0 size, not as ONNX's "keep this size"
  t["Reshape"] = same("Reshape", {{"allowzero", int64_t(1)}});
  t["Squeeze"] = squeeze;
  t["ExpandDims"] = [](GraphWriter& w, const NodeDef& n) {
    Ints axis = w.const_ints(n, 1);
    w.check(axis.size() == 1, n, "the axis must be one integer");
    w.emit(n, "Unsqueeze", {w.input(n, 0), axes_constant(w, n, axis)}, {}, out(n));
  };
  t["ConcatV2"] = [](GraphWriter& w, const NodeDef& n) { concat(w, n, true); };
  t["Concat"] = [](GraphWriter& w, const NodeDef& n) { concat(w, n, false); };
  t["Pack"] = pack;
  t["Pad"] = [](GraphWriter& w, const NodeDef& n) { pad(w, n, "constant"); };
  t["PadV2"] = [](GraphWriter& w, const NodeDef& n) { pad(w, n, "constant"); };
  t["MirrorPad"] = [](GraphWriter& w, const NodeDef& n) { pad(w, n, ""); };
  t["Transpose"] = [](GraphWriter& w, const NodeDef& n) {
    w.emit(n, "Transpose", {w.input(n, 0)}, {{"perm", w.const_ints(n, 1)}}, out(n));
  };
  t["StridedSlice"] = strided_slice;
  t["Slice"] = slice;
  t["GatherV2"] = gather;
  t["Gather"] = gather;
  t["Fill"] = [](GraphWriter& w, const NodeDef& n) {
    w.emit(n, "Expand", {w.input(n, 1), as_int64(w, n, 0)}, {}, out(n));
  };
  t["Tile"] = [](GraphWriter& w, const NodeDef& n) {
    w.emit(n, "Tile", {w.input(n, 0), as_int64(w, n, 1)}, {}, out(n));
  };
}

}  // namespace

const std::map<std::string, Conversion>& conversions() {
  static const std::map<std::string, Conversion> table = [] {
    std::map<std::string, Conversion> t;
    add_elementwise(t);
    add_nn(t);
    add_tensor(t);
    return t;
  }();
  return table;
}

}  // namespace nnvm::tf_import
