// ONNX files -> nnvm::Graph: the ModelProto read with libonnx's protobuf
// classes, every size and count checked before it is used (docs/MODELS.md).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <absl/strings/str_cat.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "nnvm/core/autograd.h"
#include "op_util.h"

namespace nnvm {
namespace {

namespace fs = std::filesystem;
using model_detail::dtype_from_onnx;
using model_detail::onnx_dtype_name;

std::string read_file(const std::string& path, const char* what) {
  std::error_code ec;
  NNVM_CHECK(fs::is_regular_file(path, ec), what, "cannot open '", path, "': ",
             fs::exists(path, ec) ? "not a regular file" : "no such file");
  std::ifstream in(path, std::ios::binary);
  NNVM_CHECK(in.good(), what, "cannot open '", path, "'");
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  NNVM_CHECK(size >= 0, what, "cannot read '", path, "'");
  std::string bytes(size_t(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  NNVM_CHECK(in.gcount() == size, what, "cannot read '", path, "'");
  return bytes;
}

// What the reader knows while it walks one file: where it is from, for messages and external data.
struct Reader {
  std::string what;      // the file, for messages
  std::string base_dir;  // external data files are relative to it
  int64_t opset = kNewestOpset;

  Tensor tensor(const onnx::TensorProto& proto, const std::string& context) const;
  std::shared_ptr<const Graph> graph(const onnx::GraphProto& proto) const;
  ValueInfo value_info(const onnx::ValueInfoProto& proto) const;
  Attribute attribute(const onnx::AttributeProto& attr, const onnx::NodeProto& node) const;
  std::string external_bytes(const onnx::TensorProto& proto, const std::string& context, size_t nbytes) const;
};

std::string node_name(const onnx::NodeProto& node) {
  return node.name().empty() ? absl::StrCat(node.op_type(), " node") : absl::StrCat(node.op_type(), " node '", node.name(), "'");
}

std::string Reader::external_bytes(const onnx::TensorProto& proto, const std::string& context, size_t nbytes) const {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::strtoll(kv.value().c_str(), nullptr, 10);
    else if (kv.key() == "length") length = std::strtoll(kv.value().c_str(), nullptr, 10);
  }
  NNVM_CHECK(!location.empty(), what, context, " is stored externally but names no location");
  fs::path rel(location);
  // A model names files beside it, never elsewhere on the machine.
  NNVM_CHECK(!rel.is_absolute() && rel.lexically_normal().string().rfind("..", 0) != 0, what, context,
             ": external data location '", location, "' is outside the model's directory");
  fs::path file = fs::path(base_dir.empty() ? "." : base_dir) / rel;
  std::ifstream in(file, std::ios::binary);
  NNVM_CHECK(in.good(), what, context, ": cannot open its external data file '", file.string(), "'");
  in.seekg(0, std::ios::end);
  int64_t size = int64_t(in.tellg());
  if (length < 0) length = int64_t(nbytes);
  NNVM_CHECK(offset >= 0 && length == int64_t(nbytes) && offset <= size && length <= size - offset, what, context,
             ": external data (offset ", offset, ", length ", length, ") does not fit '", file.string(), "' (",
             size, " bytes) or the tensor's ", nbytes, " bytes");
  std::string bytes(nbytes, '\0');
  in.seekg(offset);
  in.read(bytes.data(), std::streamsize(nbytes));
  NNVM_CHECK(in.good() || nbytes == 0, what, context, ": cannot read its external data");
  return bytes;
}

Tensor Reader::tensor(const onnx::TensorProto& proto, const std::string& context) const {
  std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  NNVM_CHECK(dtype.has_value(), what, context, " has data type ", onnx_dtype_name(proto.data_type()),
             ", which nnvm does not have");
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    NNVM_CHECK(d >= 0 && (d == 0 || numel <= std::numeric_limits<int64_t>::max() / 8 / d), what, context,
               " has an invalid shape ", shape_str(shape));
    numel *= d;
  }
  size_t item = itemsize(*dtype);
  size_t nbytes = size_t(numel) * item;
  auto short_by = [&](int64_t have) {
    return absl::StrCat(what, ": ", context, " has ", have, " values; its shape ", shape_str(shape), " needs ",
                        numel);
  };
  // The data is found and its size checked before anything is allocated:
  // a damaged file's shape must not ask for more memory than the file holds.
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string bytes = external_bytes(proto, context, nbytes);
    Tensor t = empty(shape, *dtype);
    if (nbytes) std::memcpy(t.data_ptr(), bytes.data(), nbytes);
    return t;
  }
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    NNVM_CHECK(raw.size() == nbytes, short_by(int64_t(raw.size() / item)));
    Tensor t = empty(shape, *dtype);
    if (nbytes) std::memcpy(t.data_ptr(), raw.data(), nbytes);
    return t;
  }
  // Typed fields: float_data, double_data, int64_data, or int32_data for
  // the narrower types (float16 and bfloat16 as their bits).
  auto copy = [&](const auto& field, auto convert) {
    NNVM_CHECK(int64_t(field.size()) == numel, short_by(field.size()));
    Tensor t = empty(shape, *dtype);
    auto* dst = static_cast<char*>(t.data_ptr());
    for (int64_t i = 0; i < numel; ++i) convert(field.Get(int(i)), dst + size_t(i) * item);
    return t;
  };
  auto narrow = [&](auto tag) {
    using T = decltype(tag);
    return copy(proto.int32_data(), [](int32_t v, char* p) {
      T x = std::is_same_v<T, bool> ? T(v != 0) : T(v);
      std::memcpy(p, &x, sizeof x);
    });
  };
  switch (*dtype) {
    case kFloat32: return copy(proto.float_data(), [](float v, char* p) { std::memcpy(p, &v, 4); });
    case kFloat64: return copy(proto.double_data(), [](double v, char* p) { std::memcpy(p, &v, 8); });
    case kInt64: return copy(proto.int64_data(), [](int64_t v, char* p) { std::memcpy(p, &v, 8); });
    case kInt32: return narrow(int32_t{});
    case kInt8: return narrow(int8_t{});
    case kUInt8: return narrow(uint8_t{});
    case kBool: return narrow(bool{});
    case kFloat16: case kBFloat16: return narrow(uint16_t{});
    case kQInt8: case kQUInt8: case kQInt32: break;  // not an ONNX tensor type
  }
  throw Error(absl::StrCat(what, ": ", context, " has a data type nnvm cannot read"));
}

ValueInfo Reader::value_info(const onnx::ValueInfoProto& proto) const {
  ValueInfo info;
  info.name = proto.name();
  if (!proto.has_type()) return info;
  NNVM_CHECK(proto.type().has_tensor_type(), what, "value '", proto.name(),
             "' is a sequence, map or optional; nnvm's graphs hold tensors only");
  const auto& tt = proto.type().tensor_type();
  if (tt.elem_type() != 0) {
    info.dtype = dtype_from_onnx(tt.elem_type());
    NNVM_CHECK(info.dtype.has_value(), what, "value '", proto.name(), "' has data type ",
               onnx_dtype_name(tt.elem_type()), ", which nnvm does not have");
  }
  if (tt.has_shape()) {
    std::vector<Dim> dims;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0) dims.push_back(Dim{d.dim_value(), {}});
      else dims.push_back(Dim{-1, d.has_dim_param() ? d.dim_param() : std::string()});
    }
    info.shape = std::move(dims);
  }
  return info;
}

const char* attribute_type_name(int type) {
  return onnx::AttributeProto::AttributeType_Name(onnx::AttributeProto::AttributeType(type)).c_str();
}

Attribute Reader::attribute(const onnx::AttributeProto& attr, const onnx::NodeProto& node) const {
  std::string context = absl::StrCat(node_name(node), " attribute '", attr.name(), "'");
  using A = onnx::AttributeProto;
  switch (attr.type()) {
    case A::FLOAT: return double(attr.f());
    case A::INT: return int64_t(attr.i());
    case A::STRING: return attr.s();
    case A::TENSOR: return tensor(attr.t(), context);
    case A::GRAPH: return graph(attr.g());
    case A::FLOATS: return std::vector<double>(attr.floats().begin(), attr.floats().end());
    case A::INTS: return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
    case A::STRINGS: return std::vector<std::string>(attr.strings().begin(), attr.strings().end());
    default:
      throw Error(absl::StrCat(what, ": ", context, " has type ", attribute_type_name(attr.type()),
                               ", which nnvm does not support"));
  }
}

std::shared_ptr<const Graph> Reader::graph(const onnx::GraphProto& proto) const {
  auto g = std::make_shared<Graph>();
  g->name = proto.name();
  g->opset = opset;
  for (const auto& init : proto.initializer()) {
    NNVM_CHECK(!init.name().empty(), what, "an initializer has no name");
    g->initializers.emplace_back(init.name(), tensor(init, absl::StrCat("initializer '", init.name(), "'")));
  }
  NNVM_CHECK(proto.sparse_initializer_size() == 0, what, "sparse initializers are not supported");
  for (const auto& in : proto.input()) g->inputs.push_back(value_info(in));
  for (const auto& out : proto.output()) g->outputs.push_back(value_info(out));
  for (const auto& n : proto.node()) {
    Node node;
    bool standard = n.domain().empty() || n.domain() == "ai.onnx";
    // Another domain's op keeps its domain in its name, so it is reported as unsupported.
    node.op_type = standard ? n.op_type() : absl::StrCat(n.domain(), "::", n.op_type());
    node.name = n.name();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    // Before opset 7 a binary op could broadcast its second input from an
    // axis (attributes broadcast and axis); numpy-style broadcasting replaced it.
    bool legacy_broadcast = false, has_axis = false;
    for (const auto& attr : n.attribute()) {
      legacy_broadcast = legacy_broadcast || (attr.name() == "broadcast" && attr.i() != 0);
      has_axis = has_axis || attr.name() == "axis";
    }
    NNVM_CHECK(opset >= 7 || !(legacy_broadcast && has_axis), what, node_name(n),
               " broadcasts from an axis (opset ", opset, "); re-export the model with opset 7 or newer");
    const onnx::OpSchema* schema = standard ? onnx::OpSchemaRegistry::Schema(n.op_type(), int(opset)) : nullptr;
    for (const auto& attr : n.attribute()) {
      NNVM_CHECK(attr.ref_attr_name().empty(), what, node_name(n), " attribute '", attr.name(),
                 "' refers to a function's attribute; functions are not supported");
      if (schema != nullptr) {
        auto it = schema->attributes().find(attr.name());
        NNVM_CHECK(it == schema->attributes().end() || it->second.type == attr.type(), what, node_name(n),
                   " attribute '", attr.name(), "' must be ",
                   it == schema->attributes().end() ? "" : attribute_type_name(it->second.type), ", got ",
                   attribute_type_name(attr.type()));
      }
      NNVM_CHECK(node.attributes.emplace(attr.name(), attribute(attr, n)).second, what, node_name(n),
                 " has attribute '", attr.name(), "' twice");
    }
    g->nodes.push_back(std::move(node));
  }
  return g;
}

Reader reader_for(const std::string& what, const std::string& base_dir) { return Reader{what, base_dir, kNewestOpset}; }

}  // namespace

Graph read_onnx(const std::string& bytes, const std::string& what, const std::string& base_dir) {
  onnx::ModelProto model;
  NNVM_CHECK(bytes.size() <= size_t(std::numeric_limits<int>::max()) &&
                 model.ParseFromArray(bytes.data(), int(bytes.size())),
             "load_model", "'", what, "' is not a valid ONNX model (malformed or truncated)");
  Reader reader = reader_for(what, base_dir);
  reader.what = absl::StrCat("load_model: '", what, "'");
  int64_t opset = -1;
  for (const auto& imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") opset = imp.version();
  // A model of another domain only (training ops, ai.onnx.ml) has its ops reported as unsupported.
  if (opset < 0) opset = model.opset_import_size() == 0 ? 1 : kNewestOpset;
  NNVM_CHECK(model.has_graph(), reader.what, "the model has no graph");
  reader.opset = opset;
  std::shared_ptr<const Graph> graph = reader.graph(model.graph());
  return *graph;
}

Graph read_graph(const std::string& path) {
  std::string bytes = read_file(path, "load_model");
  // A .pb is a TensorFlow GraphDef unless it is an ONNX model (a GraphDef
  // never has ModelProto's graph, field 7).
  onnx::ModelProto onnx_model;
  if (fs::path(path).extension() == ".pb" &&
      !(bytes.size() <= size_t(std::numeric_limits<int>::max()) &&
        onnx_model.ParseFromArray(bytes.data(), int(bytes.size())) && onnx_model.has_graph()))
    return read_tensorflow(bytes, path);
  std::string base_dir = fs::path(path).parent_path().string();
  return read_onnx(bytes, path, base_dir);
}

Model load_model(const std::string& path) { return Model(read_graph(path)); }

Tensor read_onnx_tensor(const std::string& bytes, const std::string& what, const std::string& base_dir) {
  onnx::TensorProto proto;
  NNVM_CHECK(bytes.size() <= size_t(std::numeric_limits<int>::max()) &&
                 proto.ParseFromArray(bytes.data(), int(bytes.size())),
             "load_onnx_tensor", "'", what, "' is not a valid ONNX TensorProto (malformed or truncated)");
  Reader reader = reader_for(absl::StrCat("load_onnx_tensor: '", what, "'"), base_dir);
  return reader.tensor(proto, "the tensor");
}

Tensor load_onnx_tensor(const std::string& path) {
  return read_onnx_tensor(read_file(path, "load_onnx_tensor"), path, fs::path(path).parent_path().string());
}

namespace {

void write_message(const google::protobuf::MessageLite& proto, const std::string& path, const char* op) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  NNVM_CHECK(out.good() && proto.SerializeToOstream(&out), op, "cannot write '", path, "'");
}

void to_proto(const Tensor& value, const std::string& name, onnx::TensorProto& proto) {
  proto.set_name(name);
  proto.set_data_type(int(model_detail::dtype_to_onnx(value.dtype())));
  for (int64_t d : value.sizes()) proto.add_dims(d);
  Tensor c = value.detach().contiguous();
  proto.set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), c.nbytes()));
}

void to_proto(const ValueInfo& info, onnx::ValueInfoProto& proto) {
  proto.set_name(info.name);
  auto* tt = proto.mutable_type()->mutable_tensor_type();
  if (info.dtype) tt->set_elem_type(int(model_detail::dtype_to_onnx(*info.dtype)));
  if (!info.shape) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : *info.shape) {
    auto* dim = shape->add_dim();
    if (d.fixed()) dim->set_dim_value(d.size);
    else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
  }
}

void to_proto(const Graph& graph, onnx::GraphProto& proto);

void to_proto(const std::string& name, const Attribute& value, onnx::AttributeProto& proto) {
  using A = onnx::AttributeProto;
  proto.set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          proto.set_type(A::INT), proto.set_i(v);
        } else if constexpr (std::is_same_v<T, double>) {
          proto.set_type(A::FLOAT), proto.set_f(float(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          proto.set_type(A::STRING), proto.set_s(v);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          proto.set_type(A::TENSOR), to_proto(v, "", *proto.mutable_t());
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Graph>>) {
          proto.set_type(A::GRAPH), to_proto(*v, *proto.mutable_g());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          proto.set_type(A::INTS);
          for (int64_t x : v) proto.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          proto.set_type(A::FLOATS);
          for (double x : v) proto.add_floats(float(x));
        } else {
          proto.set_type(A::STRINGS);
          for (const auto& x : v) proto.add_strings(x);
        }
      },
      value);
}

void to_proto(const Graph& graph, onnx::GraphProto& proto) {
  proto.set_name(graph.name.empty() ? "nnvm" : graph.name);
  for (const auto& [name, value] : graph.initializers) to_proto(value, name, *proto.add_initializer());
  for (const ValueInfo& in : graph.inputs) to_proto(in, *proto.add_input());
  for (const ValueInfo& out : graph.outputs) to_proto(out, *proto.add_output());
  for (const Node& node : graph.nodes) {
    auto* n = proto.add_node();
    auto sep = node.op_type.find("::");
    if (sep != std::string::npos) {
      n->set_domain(node.op_type.substr(0, sep));
      n->set_op_type(node.op_type.substr(sep + 2));
    } else {
      n->set_op_type(node.op_type);
    }
    n->set_name(node.name);
    for (const auto& in : node.inputs) n->add_input(in);
    for (const auto& out : node.outputs) n->add_output(out);
    for (const auto& [name, value] : node.attributes) to_proto(name, value, *n->add_attribute());
  }
}

}  // namespace

void save_onnx_tensor(const Tensor& value, const std::string& path, const std::string& name) {
  NNVM_CHECK(value.defined(), "save_onnx_tensor", "the tensor is undefined");
  onnx::TensorProto proto;
  to_proto(value, name, proto);
  write_message(proto, path, "save_onnx_tensor");
}

void save_onnx(const Model& model, const std::vector<Tensor>& example_inputs, const std::string& path) {
  Graph graph = model.graph();
  // The outputs' types, where the graph does not declare them, from a run on the example inputs.
  bool typed = std::all_of(graph.outputs.begin(), graph.outputs.end(),
                           [](const ValueInfo& v) { return v.dtype.has_value(); });
  if (!typed) {
    NNVM_CHECK(!example_inputs.empty() || model.inputs().empty(), "save_onnx",
               "the graph's outputs have no declared types: pass example inputs to find them");
    NoGradGuard no_grad;
    std::vector<Tensor> outs = model(example_inputs);
    bool symbolic = false;
    for (const ValueInfo& in : model.inputs())
      if (in.shape)
        for (const Dim& d : *in.shape) symbolic = symbolic || !d.fixed();
    for (size_t i = 0; i < outs.size(); ++i) {
      ValueInfo& out = graph.outputs[i];
      if (out.dtype) continue;
      out.dtype = outs[i].dtype();
      std::vector<Dim> dims;
      for (int64_t d : outs[i].sizes()) dims.push_back(Dim{symbolic ? -1 : d, {}});
      out.shape = std::move(dims);
    }
  }
  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("nnvm");
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(graph.opset);
  to_proto(graph, *proto.mutable_graph());
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    throw Error(absl::StrCat("save_onnx: the model fails ONNX's checker: ", e.what()));
  }
  write_message(proto, path, "save_onnx");
}

}  // namespace nnvm
