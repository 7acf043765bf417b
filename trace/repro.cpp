// Repro bundles (trace/repro.h): the file format, a group as a trace of its
// own, comparing results, and a bundle's replay.
#include "nnvm/trace/repro.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "nnvm/core/functions.h"
#include "nnvm/core/generator.h"
#include "nnvm/core/mode_state.h"
#include "nnvm/core/text_file.h"
#include "nnvm/trace/executor.h"
#include "nnvm/trace/group_program.h"
#include "nnvm/trace/interpreter.h"
#include "nnvm/trace/pipeline.h"

#ifndef NNVM_VERSION
#define NNVM_VERSION "unknown"
#endif

namespace nnvm::trace {

using json = nlohmann::json;

namespace {

constexpr char kMagic[8] = {'N', 'N', 'V', 'M', 'R', 'E', 'P', 'R'};
constexpr int kFormat = 1;
// Elements a tensor of a bundle may have (a compile failure's inputs are
// drawn at their recorded sizes, so the header alone could ask for any).
constexpr int64_t kMaxElements = int64_t(1) << 32;

[[noreturn]] void bad(const std::string& why) { throw Error("read_repro_bundle: " + why); }

// Calls f(element index, element offset) for every element of a layout, in
// row-major order of `shape`.
template <class F> void for_each_element(IntArrayRef shape, IntArrayRef strides, F f) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  DimVector index(shape.size(), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, offset);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
}

// The elements of x in row-major order, as bytes.
std::string dense_bytes(const Tensor& x) {
  const size_t item = itemsize(x.dtype());
  std::string out(size_t(x.numel()) * item, '\0');
  if (out.empty()) return out;
  const char* base = static_cast<const char*>(x.data_ptr());
  for_each_element(x.sizes(), x.strides(), [&](int64_t i, int64_t offset) {
    std::memcpy(out.data() + size_t(i) * item, base + offset * int64_t(item), item);
  });
  return out;
}

// The elements a layout with non-negative strides reaches, from its first to its last.
int64_t extent(IntArrayRef shape, IntArrayRef strides) {
  int64_t span = numel_of(shape) > 0 ? 1 : 0;
  for (size_t d = 0; d < shape.size() && span; ++d) span += (shape[d] - 1) * strides[d];
  return span;
}

// An uninitialised tensor with this layout, over `span` elements of its own.
Tensor with_layout(DType dtype, IntArrayRef shape, IntArrayRef strides, int64_t span) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(size_t(span) * itemsize(dtype), Device());
  impl->shape = dims(shape);
  impl->strides = dims(strides);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

// A tensor with this layout, its elements taken in row-major order from `bytes`.
Tensor strided_tensor(DType dtype, IntArrayRef shape, IntArrayRef strides, std::string_view bytes) {
  const size_t item = itemsize(dtype);
  const int64_t span = extent(shape, strides);
  Tensor t = with_layout(dtype, shape, strides, span);
  if (span == 0) return t;
  char* base = static_cast<char*>(t.data_ptr());
  std::memset(base, 0, size_t(span) * item);
  for_each_element(shape, strides, [&](int64_t i, int64_t offset) {
    std::memcpy(base + offset * int64_t(item), bytes.data() + size_t(i) * item, item);
  });
  return t;
}

json attr_json(const AttrValue& a) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          return json{{"int", x}};
        } else if constexpr (std::is_same_v<T, bool>) {
          return json{{"bool", x}};
        } else if constexpr (std::is_same_v<T, Scalar>) {
          if (x.is_floating()) {  // bit for bit: NaN, infinities, -0
            const double d = x.to_double();
            uint64_t bits;
            std::memcpy(&bits, &d, 8);
            return json{{"f64", absl::StrFormat("%016x", bits)}, {"value", absl::StrCat(d)}};
          }
          if (x.is_integral()) return json{{"i64", x.to_int()}};
          return json{{"scalar_bool", x.to_int() != 0}};
        } else if constexpr (std::is_same_v<T, DimVector>) {
          return json{{"dims", std::vector<int64_t>(x.begin(), x.end())}};
        } else if constexpr (std::is_same_v<T, DType>) {
          return json{{"dtype", std::string(dtype_name(x))}};
        } else {
          return json{{"str", x}};
        }
      },
      a);
}

json layout_json(DType dtype, IntArrayRef shape, IntArrayRef strides) {
  return json{{"dtype", std::string(dtype_name(dtype))},
              {"shape", std::vector<int64_t>(shape.begin(), shape.end())},
              {"strides", std::vector<int64_t>(strides.begin(), strides.end())}};
}

// ---- reading: every field checked ----

const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) bad(where + " is not a JSON object");
  const auto it = j.find(key);
  if (it == j.end()) bad(absl::StrCat(where, " has no \"", key, "\""));
  return *it;
}
std::string string_field(const json& j, const char* key, const std::string& where) {
  const json& v = field(j, key, where);
  if (!v.is_string()) bad(absl::StrCat(where, "'s \"", key, "\" is not a string"));
  return v.get<std::string>();
}
int64_t int_value(const json& v, const std::string& where) {
  if (!v.is_number_integer()) bad(where + " is not an integer");
  return v.get<int64_t>();
}
const json& array_field(const json& j, const char* key, const std::string& where) {
  const json& v = field(j, key, where);
  if (!v.is_array()) bad(absl::StrCat(where, "'s \"", key, "\" is not an array"));
  return v;
}
DimVector ints_field(const json& j, const char* key, const std::string& where) {
  DimVector out;
  for (const json& v : array_field(j, key, where)) out.push_back(int_value(v, absl::StrCat(where, "'s ", key)));
  return out;
}
DType parse_dtype(const std::string& name, const std::string& where) {
  for (int d = 0; d < kNumDTypes; ++d)
    if (dtype_name(DType(d)) == name) {
      if (is_quantized(DType(d))) bad(absl::StrCat(where, " is ", name, ": bundles hold no quantized values"));
      return DType(d);
    }
  bad(absl::StrCat(where, " has an unknown dtype \"", name, "\""));
}

AttrValue parse_attr(const json& j, const std::string& where) {
  if (!j.is_object() || j.empty()) bad(where + " is not an attribute object");
  if (j.contains("int")) return int_value(j["int"], where);
  if (j.contains("bool")) {
    if (!j["bool"].is_boolean()) bad(where + " is not a boolean");
    return j["bool"].get<bool>();
  }
  if (j.contains("f64")) {
    const json& v = j["f64"];
    if (!v.is_string() || v.get<std::string>().size() != 16) bad(where + "'s f64 is not 16 hex digits");
    uint64_t bits = 0;
    for (char c : v.get<std::string>()) {
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) bad(where + "'s f64 is not 16 hex digits");
      bits = bits << 4 | uint64_t(digit);
    }
    double d;
    std::memcpy(&d, &bits, 8);
    return Scalar(d);
  }
  if (j.contains("i64")) return Scalar(int_value(j["i64"], where));
  if (j.contains("scalar_bool")) {
    if (!j["scalar_bool"].is_boolean()) bad(where + " is not a boolean");
    return Scalar(j["scalar_bool"].get<bool>());
  }
  if (j.contains("dims")) return ints_field(j, "dims", where);
  if (j.contains("dtype")) return parse_dtype(string_field(j, "dtype", where), where);
  if (j.contains("str")) return string_field(j, "str", where);
  bad(where + " is of no attribute kind this reader knows");
}

// A layout from the file: dims and strides non-negative, of one rank, and
// not too many elements.
void check_layout(IntArrayRef shape, IntArrayRef strides, const std::string& where) {
  if (shape.size() != strides.size()) bad(where + " has shape and strides of different ranks");
  if (shape.size() > 64) bad(where + " has more than 64 dims");
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || strides[d] < 0) bad(where + " has a negative size or stride");
    if (shape[d] > 0 && n > kMaxElements / shape[d]) bad(where + " has too many elements");
    n *= shape[d];
    if (strides[d] > kMaxElements) bad(where + " has a stride past the limit");
  }
}

Tensor read_tensor(const json& spec, DType dtype, IntArrayRef shape, IntArrayRef strides, std::string_view data,
                   const std::string& where) {
  const int64_t offset = int_value(field(spec, "offset", where), where + "'s offset");
  const int64_t bytes = int_value(field(spec, "bytes", where), where + "'s bytes");
  const int64_t want = numel_of(shape) * int64_t(itemsize(dtype));
  if (bytes != want) bad(absl::StrCat(where, " holds ", bytes, " bytes; its layout needs ", want));
  if (offset < 0 || uint64_t(offset) > data.size() || uint64_t(bytes) > data.size() - uint64_t(offset))
    bad(where + "'s bytes run past the end of the file");
  const std::string_view values = data.substr(size_t(offset), size_t(bytes));
  if (dtype == DType::Bool)  // any other byte is no bool: kernels would read an invalid value
    for (char c : values)
      if (c != 0 && c != 1) bad(where + " holds a bool that is neither 0 nor 1");
  return strided_tensor(dtype, shape, strides, values);
}

// How a double reads one element.
double element(const char* p, DType dtype) {
  switch (dtype) {
    case DType::Bool: return *reinterpret_cast<const uint8_t*>(p);  // the reader lets only 0 and 1 in
    case DType::UInt8: return *reinterpret_cast<const uint8_t*>(p);
    case DType::Int8: return *reinterpret_cast<const int8_t*>(p);
    case DType::Int32: return *reinterpret_cast<const int32_t*>(p);
    case DType::Int64: return double(*reinterpret_cast<const int64_t*>(p));
    case DType::Float16: return float(*reinterpret_cast<const Half*>(p));
    case DType::BFloat16: return float(*reinterpret_cast<const BFloat16*>(p));
    case DType::Float32: return *reinterpret_cast<const float*>(p);
    case DType::Float64: return *reinterpret_cast<const double*>(p);
    default: return std::nan("");
  }
}

std::string index_str(IntArrayRef shape, int64_t flat) {
  DimVector index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

}  // namespace

Tensor copy_with_layout(const Tensor& x) {
  const int64_t span = extent(x.sizes(), x.strides());
  Tensor copy = with_layout(x.dtype(), x.sizes(), x.strides(), span);
  copy.impl()->quantizer = x.impl()->quantizer;
  if (span > 0) std::memcpy(copy.data_ptr(), x.data_ptr(), size_t(span) * itemsize(x.dtype()));
  return copy;
}

std::string engine_version() {
#if defined(__clang__)
  return absl::StrCat("nnvm ", NNVM_VERSION, " (clang ", __clang_major__, ".", __clang_minor__, ")");
#else
  return absl::StrCat("nnvm ", NNVM_VERSION, " (GCC ", __VERSION__, ")");
#endif
}

std::string repro_bundle_bytes(const ReproBundle& b) {
  const Trace& t = b.trace;
  NNVM_CHECK(b.inputs.empty() || b.inputs.size() == t.inputs().size(), "write_repro_bundle", "the trace takes ",
             t.inputs().size(), " inputs but the bundle has ", b.inputs.size());
  std::string data;
  auto add_tensor = [&](const Tensor& x) {
    NNVM_CHECK(!is_quantized(x.dtype()), "write_repro_bundle", "a ", dtype_name(x.dtype()),
               " value: bundles hold no quantized values");
    const std::string bytes = dense_bytes(x);
    json j{{"offset", data.size()}, {"bytes", bytes.size()}};
    data += bytes;
    return j;
  };
  // Values are numbered as the reader makes them: inputs, constants, then
  // each node's outputs in order.
  std::vector<int64_t> number(t.values().size(), -1);
  int64_t next = 0;
  json inputs = json::array(), constants = json::array(), nodes = json::array(), outputs = json::array();
  for (size_t i = 0; i < t.inputs().size(); ++i) {
    const Value& v = t.value(t.inputs()[i]);
    json j = layout_json(v.dtype, v.shape, v.strides);
    if (!b.inputs.empty()) {
      const Tensor& x = b.inputs[i];
      NNVM_CHECK(x.dtype() == v.dtype && same_dims(x.sizes(), v.shape) && same_dims(x.strides(), v.strides),
                 "write_repro_bundle", "input ", i, " is ", dtype_name(x.dtype()), shape_str(x.sizes()),
                 " with strides ", shape_str(x.strides()), "; the trace's is ", dtype_name(v.dtype),
                 shape_str(v.shape), " with strides ", shape_str(v.strides));
      j["data"] = add_tensor(x);
    }
    inputs.push_back(std::move(j));
    number[size_t(t.inputs()[i])] = next++;
  }
  for (ValueId c : t.constants()) {
    const Tensor& x = t.constant_value(c);
    json j = layout_json(x.dtype(), x.sizes(), contiguous_strides(x.sizes()));
    j["data"] = add_tensor(x);
    constants.push_back(std::move(j));
    number[size_t(c)] = next++;
  }
  for (const Node& n : t.nodes()) {
    const Attrs attrs = bind_scalars(n, t.scalars());
    json a = json::array(), ins = json::array();
    for (size_t k = 0; k < attrs.size(); ++k) a.push_back(attr_json(attrs[k]));
    for (ValueId in : n.inputs) ins.push_back(number[size_t(in)]);
    nodes.push_back(json{{"op", n.op->name}, {"inputs", ins}, {"attrs", a}, {"outputs", n.outputs.size()}});
    for (ValueId out : n.outputs) number[size_t(out)] = next++;
  }
  for (ValueId v : t.outputs()) outputs.push_back(number[size_t(v)]);
  json header{{"format", kFormat},  {"kind", b.kind}, {"engine", b.engine}, {"message", b.message},
              {"unit", b.unit},     {"ir", t.to_string()},
              {"trace", json{{"inputs", inputs}, {"constants", constants}, {"nodes", nodes}, {"outputs", outputs}}},
              {"code", b.code}};
  const std::string text = header.dump(1, ' ', false, json::error_handler_t::replace);
  std::string out(kMagic, sizeof kMagic);
  for (int k = 0; k < 8; ++k) out.push_back(char(uint64_t(text.size()) >> (8 * k) & 0xff));
  out += text;
  out += data;
  return out;
}

void write_repro_bundle(const ReproBundle& b, const std::string& path) {
  write_text_file(path, repro_bundle_bytes(b), "write_repro_bundle");
}

ReproBundle parse_repro_bundle(std::string_view bytes) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    bad("not a repro bundle: it does not start with NNVMREPR and a header length");
  uint64_t length = 0;
  for (int k = 0; k < 8; ++k) length |= uint64_t(uint8_t(bytes[size_t(8 + k)])) << (8 * k);
  if (length > bytes.size() - 16) bad(absl::StrCat("the header's length ", length, " runs past the end of the file"));
  const json h = json::parse(bytes.substr(16, size_t(length)), nullptr, /*allow_exceptions=*/false);
  if (h.is_discarded() || !h.is_object()) bad("the header is not a JSON object");
  const std::string_view data = bytes.substr(16 + size_t(length));
  const json& format = field(h, "format", "the header");
  if (!format.is_number_integer() || format.get<int64_t>() != kFormat)
    bad(absl::StrCat("the bundle's format is ", format.dump(), "; this reader reads ", kFormat));
  ReproBundle b;
  b.kind = string_field(h, "kind", "the header");
  if (b.kind != "mismatch" && b.kind != "crash" && b.kind != "compile")
    bad("the kind \"" + b.kind + "\" is none of mismatch, crash, compile");
  b.engine = string_field(h, "engine", "the header");
  b.message = string_field(h, "message", "the header");
  b.unit = string_field(h, "unit", "the header");
  b.code = string_field(h, "code", "the header");
  const json& trace = field(h, "trace", "the header");
  int64_t next = 0;
  std::vector<ValueId> ids;  // the file's value numbers, as this trace's ids
  const json& inputs = array_field(trace, "inputs", "the trace");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string where = absl::StrCat("input ", i);
    const DType dtype = parse_dtype(string_field(inputs[i], "dtype", where), where);
    const DimVector shape = ints_field(inputs[i], "shape", where), strides = ints_field(inputs[i], "strides", where);
    check_layout(shape, strides, where);
    ids.push_back(b.trace.add_input(dtype, shape, strides));
    ++next;
    if (inputs[i].contains("data"))
      b.inputs.push_back(read_tensor(inputs[i]["data"], dtype, shape, strides, data, where));
  }
  if (!b.inputs.empty() && b.inputs.size() != inputs.size()) bad("some inputs have values and others not");
  if (b.kind != "compile" && b.inputs.size() != inputs.size()) bad("a " + b.kind + " bundle holds every input's values");
  const json& constants = array_field(trace, "constants", "the trace");
  for (size_t i = 0; i < constants.size(); ++i) {
    const std::string where = absl::StrCat("constant ", i);
    const DType dtype = parse_dtype(string_field(constants[i], "dtype", where), where);
    const DimVector shape = ints_field(constants[i], "shape", where);
    const DimVector strides = contiguous_strides(shape);
    check_layout(shape, strides, where);
    ids.push_back(b.trace.add_constant(read_tensor(field(constants[i], "data", where), dtype, shape, strides, data, where)));
    ++next;
  }
  const json& nodes = array_field(trace, "nodes", "the trace");
  for (size_t k = 0; k < nodes.size(); ++k) {
    const std::string where = absl::StrCat("node ", k);
    const std::string op = string_field(nodes[k], "op", where);
    if (!has_op(op)) bad(absl::StrCat(where, " runs op \"", op, "\", which this nnvm does not have (a plugin's op needs its plugin loaded)"));
    std::vector<ValueId> args;
    for (const json& v : array_field(nodes[k], "inputs", where)) {
      const int64_t id = int_value(v, where + "'s input");
      if (id < 0 || id >= next) bad(absl::StrCat(where, " reads value ", id, ", which is not defined before it"));
      args.push_back(ids[size_t(id)]);
    }
    Attrs attrs;
    const json& a = array_field(nodes[k], "attrs", where);
    for (size_t i = 0; i < a.size(); ++i) attrs.push_back(parse_attr(a[i], absl::StrCat(where, "'s attribute ", i)));
    const int64_t outputs = int_value(field(nodes[k], "outputs", where), where + "'s outputs");
    std::vector<ValueId> made;
    try {
      made = b.trace.add_node(find_op(op), args, std::move(attrs));
    } catch (const std::exception& e) {  // the op's own inference refused it (nnvm::Error), or an attribute's kind
      bad(absl::StrCat(where, " (", op, "): ", e.what()));
    }
    if (int64_t(made.size()) != outputs)
      bad(absl::StrCat(where, " (", op, ") has ", made.size(), " outputs here; the file says ", outputs));
    for (ValueId v : made) ids.push_back(v);
    next += outputs;
  }
  for (const json& v : array_field(trace, "outputs", "the trace")) {
    const int64_t id = int_value(v, "an output");
    if (id < 0 || id >= next) bad(absl::StrCat("output ", id, " is not a value of the trace"));
    b.trace.mark_output(ids[size_t(id)]);
  }
  return b;
}

ReproBundle read_repro_bundle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad("cannot open '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_repro_bundle(bytes);
}

Trace group_trace(const Trace& t, const FusionGroup& g, const GroupValues& values,
                  absl::Span<const Attrs* const> attrs, absl::Span<const Tensor> inputs) {
  NNVM_CHECK(inputs.size() == size_t(values.inputs) && attrs.size() == g.nodes.size(), "group_trace",
             "the group has ", values.inputs, " inputs and ", g.nodes.size(), " nodes; got ", inputs.size(),
             " tensors and ", attrs.size(), " attribute lists");
  Trace out;
  std::vector<ValueId> map(t.values().size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i)
    map[size_t(values.ids[i])] = out.add_input(inputs[i].dtype(), inputs[i].sizes(), inputs[i].strides());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = t.nodes()[size_t(g.nodes[k])];
    std::vector<ValueId> args;
    for (ValueId in : n.inputs) {
      NNVM_CHECK(map[size_t(in)] >= 0, "group_trace", "node ", g.nodes[k], " reads %", in,
                 ", which is neither an input of the group nor made in it");
      args.push_back(map[size_t(in)]);
    }
    const std::vector<ValueId> made = out.add_node(*n.op, args, *attrs[k]);
    NNVM_CHECK(made.size() == n.outputs.size(), "group_trace", n.op->name, " made ", made.size(), " outputs, not ",
               n.outputs.size());
    for (size_t o = 0; o < made.size(); ++o) map[size_t(n.outputs[o])] = made[o];
  }
  for (int32_t j = 0; j < values.outputs; ++j) out.mark_output(map[size_t(values.ids[size_t(values.inputs + j)])]);
  return out;
}

Tolerance check_tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64: return {1e-9, 1e-12};
    case DType::Float32: return {1e-4, 1e-5};
    case DType::Float16:
    case DType::BFloat16: return {2e-2, 1e-3};
    default: return {0, 0};
  }
}

Difference compare_results(const Tensor& got, const Tensor& want) {
  Difference d;
  if (!got.defined() || !want.defined() || got.dtype() != want.dtype() || !same_dims(got.sizes(), want.sizes())) {
    d.agrees = false;
    d.max_abs = INFINITY;
    auto describe = [](const Tensor& x) {
      if (!x.defined()) return std::string("undefined");
      return absl::StrCat(std::string(dtype_name(x.dtype())), shape_str(x.sizes()));
    };
    d.what = absl::StrCat("fused ", describe(got), ", reference ", describe(want));
    return d;
  }
  if (is_quantized(got.dtype())) return compare_results(got.int_repr(), want.int_repr());
  const Tolerance tol = check_tolerance(got.dtype());
  const size_t item = itemsize(got.dtype());
  const char* a = static_cast<const char*>(got.numel() ? got.data_ptr() : nullptr);
  const char* b = static_cast<const char*>(want.numel() ? want.data_ptr() : nullptr);
  std::vector<int64_t> a_offsets;
  for_each_element(got.sizes(), got.strides(), [&](int64_t, int64_t offset) { a_offsets.push_back(offset); });
  int64_t worst = -1, bad_count = 0;
  double worst_excess = 0, worst_a = 0, worst_b = 0;
  for_each_element(want.sizes(), want.strides(), [&](int64_t i, int64_t offset) {
    const double x = element(a + a_offsets[size_t(i)] * int64_t(item), got.dtype());
    const double y = element(b + offset * int64_t(item), want.dtype());
    if (std::isnan(x) && std::isnan(y)) return;
    const double diff = x == y ? 0.0 : std::isnan(x) || std::isnan(y) ? INFINITY : std::fabs(x - y);
    d.max_abs = std::max(d.max_abs, diff);
    const double excess = diff - (tol.atol + tol.rtol * std::fabs(y));
    if (!(excess > 0)) return;
    ++bad_count;
    if (worst < 0 || excess > worst_excess) {
      worst = i;
      worst_excess = excess;
      worst_a = x;
      worst_b = y;
    }
  });
  if (bad_count == 0) return d;
  d.agrees = false;
  d.what = absl::StrFormat("%d of %d elements of %s%s outside rtol %g atol %g; max |fused - reference| %g; worst at %s: "
                           "fused %.9g, reference %.9g",
                           bad_count, got.numel(), std::string(dtype_name(got.dtype())), shape_str(got.sizes()), tol.rtol,
                           tol.atol, d.max_abs, index_str(got.sizes(), worst), worst_a, worst_b);
  return d;
}

bool ReplayReport::agrees() const {
  if (!compiled || !error.empty()) return false;
  for (const Difference& d : outputs)
    if (!d.agrees) return false;
  return true;
}

std::string ReplayReport::to_string() const {
  std::string out;
  if (!compiled) absl::StrAppend(&out, "compile: failed: ", error, "\n");
  else if (!error.empty()) absl::StrAppend(&out, "fused run: failed: ", error, "\n");
  for (size_t g = 0; g < units.size(); ++g) absl::StrAppend(&out, "group ", g, ": ", units[g], "\n");
  for (size_t k = 0; k < outputs.size(); ++k)
    absl::StrAppend(&out, "output ", k, ": ",
                    outputs[k].agrees ? absl::StrCat("agrees (max |fused - reference| ", outputs[k].max_abs, ")")
                                      : absl::StrCat("DIFFERS: ", outputs[k].what),
                    "\n");
  absl::StrAppend(&out, agrees() ? "fused and unfused agree\n" : "fused and unfused DISAGREE\n");
  return out;
}

ReplayReport replay_bundle(const ReproBundle& b) {
  detail::RunEagerly eager;  // the draws and the reference are the library's own runs
  ReplayReport r;
  std::vector<Tensor> inputs = b.inputs;
  if (inputs.empty()) {  // a compile failure: inputs drawn from a fixed seed
    Generator gen(20261207);
    for (ValueId id : b.trace.inputs()) {
      const Value& v = b.trace.value(id);
      const Tensor dense = is_floating(v.dtype)     ? randn(v.shape, TensorOptions(v.dtype), &gen)
                           : v.dtype == DType::Bool ? randint(0, 2, v.shape, TensorOptions(kInt64), &gen).to(kBool)
                                                    : randint(0, 4, v.shape, TensorOptions(v.dtype), &gen);
      inputs.push_back(strided_tensor(v.dtype, v.shape, v.strides, dense_bytes(dense)));
    }
  }
  std::vector<Tensor> fused;
  try {
    std::shared_ptr<const Plan> plan = b.kind == "compile"
                                           ? compile_plan(b.trace)
                                           : std::make_shared<const FusedPlan>(plan_stages(Trace(b.trace)));
    r.compiled = true;
    if (const auto* fp = dynamic_cast<const FusedPlan*>(plan.get()))
      for (int32_t g : fp->group_order()) {
        std::string ops;
        for (const GroupProgram::Step& s : fp->program(g).steps()) absl::StrAppend(&ops, ops.empty() ? "" : "+", s.op->name);
        r.units.push_back(absl::StrCat(ops, ": ", fp->program(g).describe()));
      }
    fused = plan->run(inputs, {});
  } catch (const std::exception& e) {
    r.error = e.what();
    return r;
  }
  std::vector<Tensor> reference;
  try {
    reference = interpret(b.trace, inputs);
  } catch (const std::exception& e) {
    r.error = absl::StrCat("the reference kernels threw: ", e.what());
    return r;
  }
  for (size_t k = 0; k < reference.size(); ++k)
    r.outputs.push_back(compare_results(k < fused.size() ? fused[k] : Tensor(), reference[k]));
  return r;
}

}  // namespace nnvm::trace
