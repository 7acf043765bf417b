#include "op_util.h"

#include <absl/strings/str_cat.h>

namespace nnvm::model_detail {

namespace {
struct OnnxType {
  int64_t code;
  const char* name;
  std::optional<DType> dtype;
};
constexpr OnnxType kOnnxTypes[] = {
    {1, "FLOAT", kFloat32},   {2, "UINT8", kUInt8},      {3, "INT8", kInt8},          {4, "UINT16", std::nullopt},
    {5, "INT16", std::nullopt}, {6, "INT32", kInt32},    {7, "INT64", kInt64},        {8, "STRING", std::nullopt},
    {9, "BOOL", kBool},       {10, "FLOAT16", kFloat16}, {11, "DOUBLE", kFloat64},    {12, "UINT32", std::nullopt},
    {13, "UINT64", std::nullopt}, {14, "COMPLEX64", std::nullopt}, {15, "COMPLEX128", std::nullopt},
    {16, "BFLOAT16", kBFloat16},
};
}  // namespace

std::optional<DType> dtype_from_onnx(int64_t code) {
  for (const OnnxType& t : kOnnxTypes)
    if (t.code == code) return t.dtype;
  return std::nullopt;
}

int64_t dtype_to_onnx(DType dtype) {
  for (const OnnxType& t : kOnnxTypes)
    if (t.dtype == dtype) return t.code;
  return 0;
}

std::string onnx_dtype_name(int64_t code) {
  for (const OnnxType& t : kOnnxTypes)
    if (t.code == code) return t.name;
  return absl::StrCat("data type ", code);
}

std::vector<int64_t> to_ints(const Tensor& t) {
  Tensor c = t.to(kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

std::vector<double> to_doubles(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank) {
  NNVM_CHECK(axis >= -rank && axis < std::max<int64_t>(rank, 1), ctx.where(), "axis ", axis,
             " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Tensor int_tensor(const std::vector<int64_t>& values) { return tensor(values); }

std::optional<std::vector<int64_t>> axes_of(const OpContext& ctx, int64_t input, int64_t rank) {
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_attr("axes")) axes = ctx.attr_ints("axes");
  else if (input >= 0 && ctx.has_input(input)) axes = to_ints(ctx.input(input));
  if (axes)
    for (int64_t& a : *axes) a = normalize_axis(ctx, a, rank);
  return axes;
}

void add_single(OpTable& table, const std::string& op_type, std::function<Tensor(const OpContext&)> fn) {
  add(table, op_type, [fn = std::move(fn)](const OpContext& ctx) { return std::vector<Tensor>{fn(ctx)}; });
}

std::vector<int64_t> ints_input(const OpContext& ctx, int64_t input, const char* what, int64_t count) {
  const Tensor& t = ctx.input(input);
  NNVM_CHECK(t.dim() <= 1 && !is_floating(t.dtype()) && t.dtype() != kBool, ctx.where(), what,
             " (input ", input, ") must be a 0-d or 1-d integer tensor, got ", t.dtype(), shape_str(t.sizes()));
  NNVM_CHECK(count < 0 || t.numel() == count, ctx.where(), what, " (input ", input, ") must hold ", count,
             " value(s), got ", t.numel());
  return to_ints(t);
}

Tensor empty_scan_output(const OpContext& ctx, size_t body_output, int64_t axis) {
  const auto attr = ctx.node().attributes.find("body");
  const auto* body = attr == ctx.node().attributes.end() ? nullptr
                                                          : std::get_if<std::shared_ptr<const Graph>>(&attr->second);
  NNVM_CHECK(body && *body && (*body)->outputs.size() > body_output, ctx.where(), "needs a body graph with ",
             body_output + 1, " or more outputs");
  const ValueInfo& info = (*body)->outputs[body_output];
  std::vector<int64_t> sizes;
  if (info.shape)
    for (const Dim& d : *info.shape) sizes.push_back(d.fixed() ? d.size : 0);
  sizes.insert(sizes.begin() + normalize_axis(ctx, axis, int64_t(sizes.size()) + 1), 0);
  return zeros(sizes, info.dtype.value_or(kFloat32));
}

}  // namespace nnvm::model_detail
