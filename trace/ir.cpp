#include "nnvm/trace/ir.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nnvm/core/memory_monitor.h"

namespace nnvm::trace {

Tensor meta_tensor(const Value& v) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = v.shape;
  impl->strides = v.strides;
  impl->dtype = v.dtype;
  return Tensor(std::move(impl));
}

ValueId Trace::add_input(DType dtype, IntArrayRef shape, IntArrayRef strides) {
  Value& v = values_.emplace_back();
  v.shape.assign(shape.begin(), shape.end());
  v.strides.assign(strides.begin(), strides.end());
  v.dtype = dtype;
  v.index = int32_t(inputs_.size());
  inputs_.push_back(ValueId(values_.size() - 1));
  return inputs_.back();
}

ValueId Trace::add_constant(Tensor value) {
  NNVM_CHECK(value.defined(), "add_constant", "the constant is undefined");
  Value v;
  v.shape = dims(value.sizes());
  v.strides = dims(value.strides());
  v.dtype = value.dtype();
  v.node = Value::kConstant;
  v.index = int32_t(constants_.size());
  values_.push_back(std::move(v));
  constants_.push_back(ValueId(values_.size() - 1));
  constant_values_.push_back(std::move(value));
  return constants_.back();
}

std::vector<ValueId> Trace::add_node(const OpDef& op, absl::Span<const ValueId> inputs, Attrs attrs,
                                     ScalarBinding binding) {
  std::vector<ValueId> outs = add_node_impl(op, inputs, std::move(attrs));
  if (binding == ScalarBinding::kRunTime) {
    Node& n = nodes_.back();
    for (size_t k = 0; k < n.attrs.size(); ++k) {
      if (!std::holds_alternative<Scalar>(n.attrs[k])) continue;
      n.slots.push_back({int32_t(k), int32_t(scalars_.size())});
      scalars_.push_back(n.attrs.s(k));
    }
  }
  return outs;
}

std::vector<ValueId> Trace::copy_node(const Node& like, absl::Span<const ValueId> inputs) {
  ScalarSlots slots = like.slots;  // `like` may be a node of this trace, which the append may move
  const uint8_t phase = like.phase;
  std::vector<ValueId> outs = add_node_impl(*like.op, inputs, like.attrs);
  nodes_.back().slots = std::move(slots);
  nodes_.back().phase = phase;
  return outs;
}

Node& Trace::append_recorded(const OpDef& op, absl::Span<const ValueId> inputs, const Attrs& attrs) {
  NNVM_DCHECK(op.view == nullptr);
#ifndef NDEBUG
  check_inputs(op, inputs);  // the recorder's own value ids: checked in debug builds only
#endif
  Node& n = nodes_.emplace_back();
  n.op = &op;
  n.phase = uint8_t(memory::current_phase());
  n.attrs = attrs;
  n.inputs.assign(inputs.begin(), inputs.end());
  for (size_t k = 0; k < attrs.size(); ++k) {
    if (!std::holds_alternative<Scalar>(attrs[k])) continue;
    n.slots.push_back({int32_t(k), int32_t(scalars_.size())});
    scalars_.push_back(attrs.s(k));
  }
  return n;
}

ValueId Trace::add_inferred_node(const OpDef& op, absl::Span<const ValueId> inputs, const Attrs& attrs,
                                 absl::Span<const OutputSpec> specs) {
  const int32_t id = int32_t(nodes_.size());
  const ValueId first = ValueId(values_.size());
  Node& n = append_recorded(op, inputs, attrs);
  for (const OutputSpec& s : specs) {
    Value& v = values_.emplace_back();
    const size_t rank = s.shape.size();
    v.shape.assign(s.shape.begin(), s.shape.end());
    v.strides.resize(rank);
    for (int64_t d = int64_t(rank) - 1, stride = 1; d >= 0; --d) {  // contiguous_strides, without a temporary
      v.strides[size_t(d)] = stride;
      stride *= std::max<int64_t>(s.shape[size_t(d)], 1);
    }
    v.dtype = s.dtype;
    v.node = id;
    v.index = int32_t(n.outputs.size());
    n.outputs.push_back(ValueId(values_.size() - 1));
  }
  return first;
}

ValueId Trace::add_node_like(const OpDef& op, absl::Span<const ValueId> inputs, const Attrs& attrs, const Trace& from,
                             const Node& like) {
  const int32_t id = int32_t(nodes_.size());
  const ValueId first = ValueId(values_.size());
  Node& n = append_recorded(op, inputs, attrs);
  for (ValueId out : like.outputs) {
    Value& v = values_.emplace_back(from.value(out));
    v.node = id;
    n.outputs.push_back(ValueId(values_.size() - 1));
  }
  return first;
}

void Trace::assign_prefix(const Trace& from, size_t nodes, size_t values) {
  NNVM_DCHECK(from.constants_.empty() && nodes <= from.nodes_.size() && values <= from.values_.size());
  clear();
  values_.assign(from.values_.begin(), from.values_.begin() + ptrdiff_t(values));
  nodes_.assign(from.nodes_.begin(), from.nodes_.begin() + ptrdiff_t(nodes));
  for (ValueId v : from.inputs_)
    if (size_t(v) < values) inputs_.push_back(v);
  size_t slots = 0;  // numbered in node order
  for (const Node& n : nodes_) slots += n.slots.size();
  scalars_.assign(from.scalars_.begin(), from.scalars_.begin() + ptrdiff_t(slots));
}

void Trace::clear() {
  values_.clear();
  nodes_.clear();
  inputs_.clear();
  outputs_.clear();
  constants_.clear();
  constant_values_.clear();
  scalars_.clear();
}

int pinned_constant(const Scalar& s) {
  if (s.is_bool()) return s.to_int() ? 1 : 0;
  static constexpr double kPinned[] = {0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0,
                                       1.4142135623730951, 0.7071067811865476, 0.7978845608028654, 0.044715};
  constexpr int kNegativeZero = 2 * int(std::size(kPinned));
  const double v = s.to_double();
  if (s.is_floating() && v == 0.0 && std::signbit(v)) return kNegativeZero;
  for (size_t i = 0; i < std::size(kPinned); ++i) {
    if (v == kPinned[i]) return int(2 * i);
    // the constant as a float literal (0.044715f) is another value, with an index of its own
    if (s.is_floating() && v == double(float(kPinned[i]))) return int(2 * i + 1);
  }
  return -1;
}

bool scalar_is_known(const Node& n, size_t attr) {
  for (const ScalarSlot& s : n.slots)
    if (s.attr == int32_t(attr)) return pinned_constant(n.attrs.s(attr)) >= 0;
  return true;
}

bool checks_values(const Trace& t, const Node& n) {
  if (n.op->checks_values) return true;
  if (!n.op->checks_integer_values) return false;
  for (ValueId v : n.inputs)
    if (!is_floating(t.value(v).dtype)) return true;
  return false;
}

bool is_reduction(const OpDef& op) {
  static const char* const names[] = {"sum", "mean", "prod", "amax", "amin",      "max",    "min",
                                      "all", "any",  "norm", "logsumexp", "argmax", "argmin"};
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return op.name == n; });
}

Attrs bind_scalars(const Node& n, absl::Span<const Scalar> scalars) {
  if (n.slots.empty()) return n.attrs;
  Attrs bound;
  for (size_t k = 0; k < n.attrs.size(); ++k) bound.push_back(n.attrs[k]);
  for (const ScalarSlot& s : n.slots) {
    NNVM_DCHECK(size_t(s.slot) < scalars.size());
    bound.set(size_t(s.attr), scalars[size_t(s.slot)]);
  }
  return bound;
}

bool holds_scalars(const Node& n, absl::Span<const Scalar> scalars) {
  for (const ScalarSlot& s : n.slots)
    if (!identical(n.attrs.s(size_t(s.attr)), scalars[size_t(s.slot)])) return false;
  return true;
}

void Trace::check_inputs(const OpDef& op, absl::Span<const ValueId> inputs) const {
  for (ValueId v : inputs)
    NNVM_CHECK(v >= 0 && size_t(v) < values_.size(), op.name, "input value %", v, " is not in the trace");
  NNVM_CHECK(op.num_inputs < 0 || int(inputs.size()) == op.num_inputs, op.name, "expected ", op.num_inputs,
             " inputs but got ", inputs.size());
}

std::vector<ValueId> Trace::add_node_impl(const OpDef& op, absl::Span<const ValueId> inputs, Attrs attrs) {
  check_inputs(op, inputs);
  std::vector<Tensor> metas;
  for (ValueId v : inputs) metas.push_back(meta_tensor(values_[size_t(v)]));
  Node node;
  node.op = &op;
  node.inputs.assign(inputs.begin(), inputs.end());
  for (ValueId v : inputs)  // a pass's node: the latest phase it reads from
    if (values_[size_t(v)].node >= 0) node.phase = std::max(node.phase, nodes_[size_t(values_[size_t(v)].node)].phase);
  const int32_t id = int32_t(nodes_.size());
  auto add_output = [&](DimVector shape, DimVector strides, DType dtype) {
    Value v;
    v.shape = std::move(shape);
    v.strides = std::move(strides);
    v.dtype = dtype;
    v.node = id;
    v.index = int32_t(node.outputs.size());
    values_.push_back(std::move(v));
    node.outputs.push_back(ValueId(values_.size() - 1));
  };
  if (op.view) {
    ViewSpec s = op.view(metas[0], attrs);
    add_output(std::move(s.shape), std::move(s.strides), metas[0].dtype());
  } else {
    NNVM_CHECK(op.infer != nullptr, op.name, "op is declared but has no shape inference");
    for (OutputSpec& s : op.infer(metas, attrs)) {
      DimVector strides = contiguous_strides(s.shape);
      add_output(std::move(s.shape), std::move(strides), s.dtype);
    }
  }
  node.attrs = std::move(attrs);
  nodes_.push_back(std::move(node));
  return std::vector<ValueId>(nodes_.back().outputs.begin(), nodes_.back().outputs.end());
}

ValueId Trace::add_node1(const OpDef& op, absl::Span<const ValueId> inputs, Attrs attrs, ScalarBinding binding) {
  const std::vector<ValueId> outs = add_node(op, inputs, std::move(attrs), binding);
  NNVM_CHECK(outs.size() == 1, op.name, "has ", outs.size(), " outputs; expected one");
  return outs[0];
}

void Trace::rewrite(const std::vector<bool>& keep, const std::vector<ValueId>& replace) {
  auto resolve = [&](ValueId v) {
    while (replace[size_t(v)] != v) v = replace[size_t(v)];
    return v;
  };
  std::vector<ValueId> renumber(values_.size(), -1);
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs, constants;
  for (auto [from, to] : {std::pair{&inputs_, &inputs}, std::pair{&constants_, &constants}}) {
    for (ValueId v : *from) {
      renumber[size_t(v)] = ValueId(values.size());
      to->push_back(ValueId(values.size()));
      values.push_back(values_[size_t(v)]);
    }
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (!keep[n]) continue;
    Node node = nodes_[n];
    for (ValueId& in : node.inputs) {
      in = renumber[size_t(resolve(in))];
      NNVM_DCHECK(in >= 0);
    }
    for (ValueId& out : node.outputs) {
      Value v = values_[size_t(out)];
      v.node = int32_t(nodes.size());
      renumber[size_t(out)] = ValueId(values.size());
      out = ValueId(values.size());
      values.push_back(std::move(v));
    }
    nodes.push_back(std::move(node));
  }
  for (ValueId& out : outputs_) {
    out = renumber[size_t(resolve(out))];
    NNVM_DCHECK(out >= 0);
  }
  values_ = std::move(values);
  nodes_ = std::move(nodes);
  inputs_ = std::move(inputs);
  constants_ = std::move(constants);
}

void append_attr(std::string& out, const AttrValue& a, bool with_scalar_values) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          absl::StrAppend(&out, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, Scalar>) {
          out += x.is_floating() ? "f64" : x.is_integral() ? "i64" : "bool";
          if (with_scalar_values) {
            if (x.is_floating()) {
              uint64_t bits;
              const double d = x.to_double();
              std::memcpy(&bits, &d, 8);  // exact, and NaN-safe for CSE
              absl::StrAppend(&out, ":", bits);
            } else {
              absl::StrAppend(&out, ":", x.to_int());
            }
          }
        } else if constexpr (std::is_same_v<T, DimVector>) {
          absl::StrAppend(&out, "[", absl::StrJoin(x, ","), "]");
        } else if constexpr (std::is_same_v<T, DType>) {
          out += std::string(dtype_name(x));
        } else {
          absl::StrAppend(&out, "\"", x, "\"");
        }
      },
      a);
}

std::string Trace::to_string() const {
  std::string s;
  auto type_of = [](const Value& v) { return std::string(dtype_name(v.dtype)) + shape_str(v.shape); };
  for (ValueId v : inputs_)
    absl::StrAppend(&s, "%", v, " = input ", type_of(values_[size_t(v)]), " strides ",
                    shape_str(values_[size_t(v)].strides), "\n");
  for (ValueId v : constants_)
    absl::StrAppend(&s, "%", v, " = constant ", type_of(values_[size_t(v)]), " strides ",
                    shape_str(values_[size_t(v)].strides), "\n");
  for (const Node& n : nodes_) {
    absl::StrAppend(&s, absl::StrJoin(n.outputs, ", ", [](std::string* o, ValueId v) { absl::StrAppend(o, "%", v); }),
                    " = ", n.op->name, "(",
                    absl::StrJoin(n.inputs, ", ", [](std::string* o, ValueId v) { absl::StrAppend(o, "%", v); }), ")");
    if (n.attrs.size()) {
      s += " [";
      for (size_t i = 0; i < n.attrs.size(); ++i) {
        if (i) s += ", ";
        for (const ScalarSlot& slot : n.slots)
          if (slot.attr == int32_t(i)) absl::StrAppend(&s, "$", slot.slot, "=");
        append_attr(s, n.attrs[i], true);
      }
      s += "]";
    }
    s += " :";
    for (ValueId v : n.outputs) absl::StrAppend(&s, " ", type_of(values_[size_t(v)]));
    s += "\n";
  }
  absl::StrAppend(&s, "outputs: ",
                  absl::StrJoin(outputs_, ", ", [](std::string* o, ValueId v) { absl::StrAppend(o, "%", v); }), "\n");
  return s;
}

}  // namespace nnvm::trace
