// TensorFlow frozen GraphDefs -> nnvm::Graph (docs/MODELS.md, "TensorFlow
// .pb"): Placeholders become graph inputs, Consts initializers, every other
// node its ONNX nodes (tensorflow_ops.cpp) in an order where each reads only
// what comes before it. Every size and count is checked before it is used.
#include "tensorflow.h"

#include <cstring>
#include <limits>
#include <set>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>

#include "nnvm/core/error.h"
#include "nnvm/core/functions.h"

namespace nnvm {
namespace tf_import {
namespace {

// A Const may list fewer values than its shape holds (TF repeats the last);
// such a splat is not backed by the file, so its size is bounded.
constexpr size_t kMaxSplatBytes = size_t(64) << 20;

// An input "name:i" reads output i of at most this many.
constexpr int kMaxOutputs = 1 << 16;

struct TfType {
  int code;
  DType dtype;
};
constexpr TfType kTfTypes[] = {
    {tensorflow::DT_FLOAT, kFloat32}, {tensorflow::DT_DOUBLE, kFloat64},  {tensorflow::DT_INT32, kInt32},
    {tensorflow::DT_UINT8, kUInt8},   {tensorflow::DT_INT8, kInt8},       {tensorflow::DT_INT64, kInt64},
    {tensorflow::DT_BOOL, kBool},     {tensorflow::DT_HALF, kFloat16},    {tensorflow::DT_BFLOAT16, kBFloat16},
};

const char* kind_name(int kind) {
  using A = tensorflow::AttrValue;
  switch (kind) {
    case A::kS: return "string";
    case A::kI: return "int";
    case A::kF: return "float";
    case A::kB: return "bool";
    case A::kType: return "type";
    case A::kShape: return "shape";
    case A::kTensor: return "tensor";
    case A::kList: return "list";
    case A::kFunc: return "func";
    case A::kPlaceholder: return "placeholder";
    default: return "nothing";
  }
}

}  // namespace

std::optional<DType> dtype_from_tf(int code) {
  for (const TfType& t : kTfTypes)
    if (t.code == code) return t.dtype;
  return std::nullopt;
}

std::string tf_dtype_name(int code) {
  if (tensorflow::DataType_IsValid(code)) return tensorflow::DataType_Name(tensorflow::DataType(code));
  return absl::StrCat("data type ", code);
}

std::string GraphWriter::output(const NodeDef& node, int i) {
  return i == 0 ? node.name() : absl::StrCat(node.name(), ":", i);
}

GraphWriter::GraphWriter(const tensorflow::GraphDef& graph, std::string what) : def_(graph), what_(std::move(what)) {
  graph_.opset = kNewestOpset;
  for (const NodeDef& n : def_.node()) {
    NNVM_CHECK(!n.name().empty(), "load_model", what_, ": a ", n.op(), " node has no name");
    NNVM_CHECK(by_name_.emplace(n.name(), &n).second, "load_model", what_, ": two nodes are named '", n.name(), "'");
  }
  for (const NodeDef& n : def_.node()) {
    for (const std::string& in : n.input()) {
      bool control = !in.empty() && in[0] == '^';
      std::string name = control ? in.substr(1) : in;
      int index = 0;
      // "name:1" is output 1; node names never hold a colon
      if (size_t colon = name.rfind(':'); colon != std::string::npos && !control) {
        check(absl::SimpleAtoi(name.substr(colon + 1), &index) && index >= 0 && index < kMaxOutputs, n,
              absl::StrCat("input '", in, "' names no output"));
        name.resize(colon);
      }
      auto it = by_name_.find(name);
      check(it != by_name_.end(), n, absl::StrCat("reads '", in, "', which no node of the graph defines"));
      deps_[&n].push_back(it->second);
      if (control) continue;
      inputs_[&n].push_back(Ref{it->second, index});
      int& read = outputs_read_[it->second];
      read = std::max(read, index + 1);
    }
  }
}

void GraphWriter::fail(const NodeDef& node, const std::string& message) const {
  throw Error(absl::StrCat("load_model: ", what_, ": ", node.op(), " node '", node.name(), "': ", message));
}

const GraphWriter::Ref& GraphWriter::ref(const NodeDef& node, int i) const {
  auto it = inputs_.find(&node);
  int n = it == inputs_.end() ? 0 : int(it->second.size());
  check(i >= 0 && i < n, node, absl::StrCat("needs input ", i, ", has ", n));
  return it->second[size_t(i)];
}

int GraphWriter::num_inputs(const NodeDef& node) const {
  auto it = inputs_.find(&node);
  return it == inputs_.end() ? 0 : int(it->second.size());
}

std::string GraphWriter::input(const NodeDef& node, int i) const {
  const Ref& r = ref(node, i);
  return output(*r.node, r.output);
}

std::string GraphWriter::emit(const NodeDef& node, const std::string& op_type, std::vector<std::string> inputs,
                              std::map<std::string, Attribute> attributes, std::string output) {
  if (output.empty()) output = absl::StrCat(node.name(), "#", fresh_++);
  defined_.insert(output);
  graph_.nodes.push_back(Node{op_type, node.name(), std::move(inputs), {output}, std::move(attributes)});
  return output;
}

std::string GraphWriter::constant(const NodeDef& node, const Tensor& value) {
  return emit(node, "Constant", {}, {{"value", value}});
}

std::string GraphWriter::initializer(const std::string& name, const Tensor& value) {
  if (defined_.insert(name).second) graph_.initializers.emplace_back(name, value);
  return name;
}

// Follows Identity nodes back from an input to the node that makes its
// value (nullptr for another output than a node's first).
const NodeDef* GraphWriter::source(const Ref& r) const {
  const NodeDef* n = r.node;
  int output = r.output;
  for (size_t hops = 0; hops <= inputs_.size() && output == 0 && n->op() == "Identity"; ++hops) {
    auto it = inputs_.find(n);
    if (it == inputs_.end() || it->second.empty()) break;
    output = it->second[0].output;
    n = it->second[0].node;
  }
  return output == 0 ? n : nullptr;
}

std::optional<Tensor> GraphWriter::const_input(const NodeDef& node, int i) {
  const Ref& r = ref(node, i);
  const NodeDef* src = source(r);
  if (src == nullptr || src->op() != "Const") return std::nullopt;
  return const_value(*src);
}

std::string GraphWriter::const_name(const NodeDef& node, int i) const {
  const Ref& r = ref(node, i);
  const NodeDef* src = source(r);
  return src ? src->name() : input(node, i);
}

std::vector<int64_t> GraphWriter::const_ints(const NodeDef& node, int i) {
  std::optional<Tensor> t = const_input(node, i);
  check(t.has_value(), node, absl::StrCat("input ", i, " ('", input(node, i), "') must be a constant"));
  check(is_integral(t->dtype()), node,
        absl::StrCat("input ", i, " must be integers, got ", std::string(dtype_name(t->dtype()))));
  Tensor c = t->to(kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

Tensor GraphWriter::const_value(const NodeDef& node) {
  if (auto it = consts_.find(node.name()); it != consts_.end()) return it->second;
  const tensorflow::AttrValue* value = attr(node, "value", tensorflow::AttrValue::kTensor);
  check(value != nullptr, node, "has no attribute 'value'");
  const tensorflow::TensorProto& proto = value->tensor();
  std::optional<DType> dtype = dtype_from_tf(proto.dtype());
  check(dtype.has_value(), node, absl::StrCat("has data type ", tf_dtype_name(proto.dtype()),
                                              ", which nnvm does not have"));
  check(!proto.tensor_shape().unknown_rank(), node, "its value has no shape");
  std::vector<int64_t> shape;
  int64_t numel = 1;
  for (const auto& d : proto.tensor_shape().dim()) {
    shape.push_back(d.size());
    check(d.size() >= 0 && (d.size() == 0 || numel <= std::numeric_limits<int64_t>::max() / 8 / d.size()), node,
          absl::StrCat("its value has an invalid shape ", shape_str(shape)));
    numel *= d.size();
  }
  size_t item = itemsize(*dtype), nbytes = size_t(numel) * item;
  Tensor t;
  if (!proto.tensor_content().empty()) {
    check(proto.tensor_content().size() == nbytes, node,
          absl::StrCat("its value holds ", proto.tensor_content().size(), " bytes; its shape ", shape_str(shape),
                       " needs ", nbytes));
    t = empty(shape, *dtype);
    std::memcpy(t.data_ptr(), proto.tensor_content().data(), nbytes);
  } else {
    // Typed fields; fewer values than the shape holds repeat the last one.
    auto fill = [&](const auto& field, auto store) {
      int64_t have = field.size();
      check(have <= numel && (have == numel || nbytes <= kMaxSplatBytes), node,
            absl::StrCat("its value lists ", have, " values for shape ", shape_str(shape)));
      Tensor out = zeros(shape, *dtype);
      auto* dst = static_cast<char*>(out.data_ptr());
      for (int64_t i = 0; have > 0 && i < numel; ++i)
        store(field.Get(int(std::min(i, have - 1))), dst + size_t(i) * item);
      return out;
    };
    auto narrow = [&](const auto& field, auto tag) {
      using T = decltype(tag);
      return fill(field, [](auto v, char* p) {
        T x = std::is_same_v<T, bool> ? T(v != 0) : T(v);
        std::memcpy(p, &x, sizeof x);
      });
    };
    switch (*dtype) {
      case kFloat32: t = narrow(proto.float_val(), float{}); break;
      case kFloat64: t = narrow(proto.double_val(), double{}); break;
      case kInt64: t = narrow(proto.int64_val(), int64_t{}); break;
      case kInt32: t = narrow(proto.int_val(), int32_t{}); break;
      case kInt8: t = narrow(proto.int_val(), int8_t{}); break;
      case kUInt8: t = narrow(proto.int_val(), uint8_t{}); break;
      case kBool: t = narrow(proto.bool_val(), bool{}); break;
      case kFloat16: case kBFloat16: t = narrow(proto.half_val(), uint16_t{}); break;
      case kQInt8: case kQUInt8: case kQInt32: break;  // dtype_from_tf never gives one
    }
  }
  consts_.emplace(node.name(), t);
  return t;
}

const tensorflow::AttrValue* GraphWriter::attr(const NodeDef& node, const std::string& name, int kind) const {
  auto it = node.attr().find(name);
  if (it == node.attr().end()) return nullptr;
  check(it->second.value_case() == kind, node,
        absl::StrCat("attribute '", name, "' must be ", kind_name(kind), ", got ", kind_name(it->second.value_case())));
  return &it->second;
}

// An attribute's value, or the fallback when the node has none; without a fallback it is required.
template <class T, class Get>
static T attr_or(const GraphWriter& w, const NodeDef& node, const std::string& name, const tensorflow::AttrValue* a,
                 const std::optional<T>& fallback, Get get) {
  if (a != nullptr) return get(*a);
  w.check(fallback.has_value(), node, absl::StrCat("has no attribute '", name, "'"));
  return *fallback;
}

int64_t GraphWriter::attr_int(const NodeDef& node, const std::string& name, std::optional<int64_t> fallback) const {
  return attr_or(*this, node, name, attr(node, name, tensorflow::AttrValue::kI), fallback,
                 [](const auto& a) { return int64_t(a.i()); });
}

double GraphWriter::attr_float(const NodeDef& node, const std::string& name, std::optional<double> fallback) const {
  return attr_or(*this, node, name, attr(node, name, tensorflow::AttrValue::kF), fallback,
                 [](const auto& a) { return double(a.f()); });
}

bool GraphWriter::attr_bool(const NodeDef& node, const std::string& name, std::optional<bool> fallback) const {
  return attr_or(*this, node, name, attr(node, name, tensorflow::AttrValue::kB), fallback,
                 [](const auto& a) { return a.b(); });
}

std::string GraphWriter::attr_string(const NodeDef& node, const std::string& name,
                                     std::optional<std::string> fallback) const {
  return attr_or(*this, node, name, attr(node, name, tensorflow::AttrValue::kS), fallback,
                 [](const auto& a) { return a.s(); });
}

std::vector<int64_t> GraphWriter::attr_ints(const NodeDef& node, const std::string& name,
                                            std::optional<std::vector<int64_t>> fallback) const {
  return attr_or(*this, node, name, attr(node, name, tensorflow::AttrValue::kList), fallback,
                 [](const auto& a) { return std::vector<int64_t>(a.list().i().begin(), a.list().i().end()); });
}

DType GraphWriter::attr_dtype(const NodeDef& node, const std::string& name, std::optional<DType> fallback) const {
  const tensorflow::AttrValue* a = attr(node, name, tensorflow::AttrValue::kType);
  if (a == nullptr) return attr_or(*this, node, name, a, fallback, [](const auto&) { return kFloat32; });
  int code = a->type();
  std::optional<DType> dtype = dtype_from_tf(code);
  check(dtype.has_value(), node,
        absl::StrCat("attribute '", name, "' is ", tf_dtype_name(code), ", which nnvm does not have"));
  return *dtype;
}

std::string GraphWriter::to_nchw(const NodeDef& node, const std::string& nhwc) {
  if (auto it = nchw_.find(nhwc); it != nchw_.end()) return it->second;
  std::string nchw = emit(node, "Transpose", {nhwc}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
  nchw_[nhwc] = nchw;
  return nchw;
}

const std::string* GraphWriter::nchw_twin(const std::string& nhwc) const {
  auto it = nchw_.find(nhwc);
  return it == nchw_.end() ? nullptr : &it->second;
}

void GraphWriter::to_nhwc(const NodeDef& node, const std::string& nchw, const std::string& output) {
  emit(node, "Transpose", {nchw}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}, output);
  nchw_[output] = nchw;
}

// Dependencies first, in file order otherwise; iterative, as a graph may be deep.
std::vector<const NodeDef*> GraphWriter::ordered() const {
  std::vector<const NodeDef*> order;
  std::map<const NodeDef*, int> state;  // 1: on the path, 2: placed
  for (const NodeDef& root : def_.node()) {
    if (state[&root]) continue;
    std::vector<std::pair<const NodeDef*, size_t>> stack{{&root, 0}};
    state[&root] = 1;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      auto it = deps_.find(n);
      if (it != deps_.end() && next < it->second.size()) {
        const NodeDef* d = it->second[next++];
        check(state[d] != 1, *d, "is on a cycle of the graph (TensorFlow 1 control flow is not supported)");
        if (state[d] == 0) {
          state[d] = 1;
          stack.emplace_back(d, 0);
        }
        continue;
      }
      state[n] = 2;
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

void GraphWriter::convert_node(const NodeDef& node) {
  const std::string& op = node.op();
  if (op == "Placeholder") {
    ValueInfo info{node.name(), attr_dtype(node, "dtype"), std::nullopt};
    if (const auto* a = attr(node, "shape", tensorflow::AttrValue::kShape); a && !a->shape().unknown_rank()) {
      std::vector<Dim> dims;
      for (const auto& d : a->shape().dim()) {
        check(d.size() >= -1, node, absl::StrCat("has an invalid dimension ", d.size()));
        // an unknown size is a symbol of its own: TF does not say two are equal
        dims.push_back(d.size() >= 0 ? Dim{d.size(), {}} : Dim{-1, absl::StrCat(node.name(), "_d", dims.size())});
      }
      info.shape = std::move(dims);
    }
    defined_.insert(node.name());
    graph_.inputs.push_back(std::move(info));
  } else if (op == "Const") {
    initializer(node.name(), const_value(node));
  } else if (auto it = conversions().find(op); it != conversions().end()) {
    it->second(*this, node);
  } else if (op != "NoOp") {
    // kept by its TF name, so Model and `nnvm info` report it as unsupported
    std::vector<std::string> ins;
    for (int i = 0; i < num_inputs(node); ++i) ins.push_back(input(node, i));
    Node n{absl::StrCat("tf::", op), node.name(), std::move(ins), {}, {}};
    for (int i = 0; i < std::max(outputs_read_[&node], 1); ++i) {
      n.outputs.push_back(output(node, i));
      defined_.insert(n.outputs.back());
    }
    graph_.nodes.push_back(std::move(n));
  }
  for (int i = 0; i < outputs_read_[&node]; ++i)
    check(defined_.count(output(node, i)) != 0, node,
          absl::StrCat("its output ", i, " is read by another node; nnvm's conversion of ", op, " does not make it"));
}

void GraphWriter::add_outputs(const std::vector<std::string>& names) {
  if (!names.empty()) {
    for (const std::string& name : names) {
      // "name:0" is the value "name"
      bool first = name.size() > 2 && name.compare(name.size() - 2, 2, ":0") == 0;
      std::string value = first ? name.substr(0, name.size() - 2) : name;
      NNVM_CHECK(defined_.count(value) != 0, "load_model", what_, ": the requested output '", name,
                 "' is no node's output");
      graph_.outputs.push_back(ValueInfo{value, std::nullopt, std::nullopt});
    }
    return;
  }
  // By default: each result no node reads (constants and inputs are not results).
  for (const NodeDef& n : def_.node())
    if (outputs_read_[&n] == 0 && n.op() != "NoOp" && n.op() != "Const" && n.op() != "Placeholder")
      graph_.outputs.push_back(ValueInfo{output(n), std::nullopt, std::nullopt});
  NNVM_CHECK(!graph_.outputs.empty(), "load_model", what_, ": the graph computes nothing (no node's result is unread)");
}

// Drops the nodes and initializers no output needs: constants a conversion
// replaced (a filter in HWIO) and transposes that cancelled out.
void GraphWriter::prune() {
  std::set<std::string> needed;
  for (const ValueInfo& v : graph_.outputs) needed.insert(v.name);
  std::vector<Node> kept;
  for (auto n = graph_.nodes.rbegin(); n != graph_.nodes.rend(); ++n) {
    bool used = false;
    for (const std::string& out : n->outputs) used = used || needed.count(out) != 0;
    if (!used) continue;
    needed.insert(n->inputs.begin(), n->inputs.end());
    kept.push_back(std::move(*n));
  }
  graph_.nodes.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  std::erase_if(graph_.initializers, [&](const auto& init) { return needed.count(init.first) == 0; });
}

Graph GraphWriter::convert(const std::vector<std::string>& outputs) {
  for (const NodeDef* n : ordered()) convert_node(*n);
  add_outputs(outputs);
  prune();
  return std::move(graph_);
}

}  // namespace tf_import

Graph read_tensorflow(const std::string& bytes, const std::string& what, const std::vector<std::string>& outputs) {
  tensorflow::GraphDef def;
  bool parsed = false;
  if (bytes.size() <= size_t(std::numeric_limits<int>::max())) {
    google::protobuf::LogSilencer quiet;  // a damaged string is the error below, not a log line
    parsed = def.ParseFromArray(bytes.data(), int(bytes.size()));
  }
  NNVM_CHECK(parsed, "load_model", "'", what, "' is not a valid TensorFlow GraphDef (malformed or truncated)");
  NNVM_CHECK(def.node_size() > 0, "load_model", "'", what, "' is a TensorFlow GraphDef without nodes");
  Graph graph = tf_import::GraphWriter(def, absl::StrCat("'", what, "'")).convert(outputs);
  graph.name = what;
  return graph;
}

}  // namespace nnvm
