// The trace IR (docs/DESIGN.md §1, §3.2-3.4): a straight-line program of op-table
// nodes over values. A value is a trace input (a materialised tensor passed
// at run time: its data pointer and storage offset are never part of the
// trace) or an output of a node. Values carry shape, dtype and strides, so
// shape inference, signatures and passes need no data.
//
// Passes (trace/passes/) rewrite a Trace; the interpreter runs one with the
// reference kernels; signatures key the trace cache.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "nnvm/core/op.h"

namespace nnvm::trace {

using ValueId = int32_t;

struct Value {
  DimVector shape;
  DimVector strides;
  DType dtype = kFloat32;
  static constexpr int32_t kInput = -1, kConstant = -2;
  int32_t node = kInput;  // the producing node, or kInput / kConstant
  int32_t index = 0;      // output index within the node, or position among the inputs / constants
  bool is_input() const { return node == kInput; }
  bool is_constant() const { return node == kConstant; }
};

// A Scalar attribute bound at run time: attrs[attr] takes the value of the
// trace's Scalar slot `slot` (docs/DESIGN.md §3.4: Scalars are kernel arguments).
struct ScalarSlot {
  int32_t attr;
  int32_t slot;
};
using ScalarSlots = absl::InlinedVector<ScalarSlot, 1>;

struct Node {
  const OpDef* op = nullptr;
  Attrs attrs;
  absl::InlinedVector<ValueId, 3> inputs;
  absl::InlinedVector<ValueId, 2> outputs;
  // The Scalar attributes that are run-time arguments. A Scalar attribute not
  // listed here is a compile-time value (one a pass made, like 1/c).
  ScalarSlots slots;
  // The memory monitor's phase (core/memory_monitor.h memory::Phase) the
  // node was recorded in; a node a pass makes takes the latest phase of the
  // nodes it reads. Not part of a signature: a plan's groups name their
  // blocks by it when they run.
  uint8_t phase = 0;
};

// How add_node treats the Scalar attributes of a new node.
enum class ScalarBinding {
  kRunTime,      // each Scalar gets a new slot holding its value (recording)
  kCompileTime,  // the Scalars are fixed values of this trace (a pass's own)
};

class Trace {
 public:
  // A run-time input with the given layout.
  ValueId add_input(DType dtype, IntArrayRef shape, IntArrayRef strides);
  ValueId add_input(const Tensor& like) { return add_input(like.dtype(), like.sizes(), like.strides()); }
  // A constant: its layout is the tensor's; like an input it is defined
  // before every node.
  ValueId add_constant(Tensor value);
  // Appends a node; its outputs' shapes and dtypes come from the op's own
  // inference (or view function), which throws nnvm::Error on bad input.
  std::vector<ValueId> add_node(const OpDef& op, absl::Span<const ValueId> inputs, Attrs attrs = {},
                                ScalarBinding binding = ScalarBinding::kRunTime);
  ValueId add_node1(const OpDef& op, absl::Span<const ValueId> inputs, Attrs attrs = {},
                    ScalarBinding binding = ScalarBinding::kRunTime);
  // Appends a copy of `like` (a node of a trace with the same Scalar slots)
  // reading `inputs`: a pass's way to keep a node, its slots included.
  std::vector<ValueId> copy_node(const Node& like, absl::Span<const ValueId> inputs);
  // The recorder's way: the outputs' shapes and dtypes are already inferred
  // (a computing op's outputs are contiguous). Returns the first output's id;
  // the others follow it.
  ValueId add_inferred_node(const OpDef& op, absl::Span<const ValueId> inputs, const Attrs& attrs,
                            absl::Span<const OutputSpec> specs);
  // The same, with the outputs' layouts those of `like`'s outputs in `from`
  // (the recorder's cursor: a node it has recorded and inferred before).
  ValueId add_node_like(const OpDef& op, absl::Span<const ValueId> inputs, const Attrs& attrs, const Trace& from,
                        const Node& like);
  // Makes this trace the first `nodes` nodes and `values` values of `from`
  // (a recorded trace without constants), with their Scalar slots: the
  // recorder builds the prefix its cursor has followed without building it.
  void assign_prefix(const Trace& from, size_t nodes, size_t values);
  // Empties the trace and keeps its memory: a recorder reuses one trace's
  // buffers for the next.
  void clear();
  // A value the program still needs after the trace (a live tensor).
  void mark_output(ValueId v) { outputs_.push_back(v); }

  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<ValueId>& constants() const { return constants_; }
  const Tensor& constant_value(ValueId v) const { return constant_values_[size_t(value(v).index)]; }
  const Value& value(ValueId v) const { return values_[size_t(v)]; }

  // The values of the Scalar slots as recorded, by slot. A plan compiled from
  // another trace with the same signature replays with these values.
  const std::vector<Scalar>& scalars() const { return scalars_; }
  // A pass that builds a new trace from `t` keeps t's slots.
  void copy_scalars_from(const Trace& t) { scalars_ = t.scalars_; }

  // Rebuilds the trace keeping the nodes marked in `keep`, with every use of
  // value v replaced by replace[v] (identity where replace[v] == v). Inputs
  // and constants are kept; value ids are renumbered densely.
  void rewrite(const std::vector<bool>& keep, const std::vector<ValueId>& replace);

  // One line per input and node, then the outputs:
  //   %2 = add(%0, %1) [1] : float32[2, 3]
  std::string to_string() const;

 private:
  std::vector<ValueId> add_node_impl(const OpDef& op, absl::Span<const ValueId> inputs, Attrs attrs);
  // Appends a node with run-time slots for attrs' Scalars, and no outputs yet.
  Node& append_recorded(const OpDef& op, absl::Span<const ValueId> inputs, const Attrs& attrs);
  void check_inputs(const OpDef& op, absl::Span<const ValueId> inputs) const;

  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<ValueId> constants_;
  std::vector<Tensor> constant_values_;
  std::vector<Scalar> scalars_;
};

// The same dims, compared in a plain loop: shapes are short, and the
// recorder compares a few per op (std::equal would call memcmp).
inline bool same_dims(IntArrayRef a, IntArrayRef b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (a[d] != b[d]) return false;
  return true;
}

// A few well-known constants are pinned (docs/DESIGN.md §3.4, refined): a recorded
// Scalar is a run-time argument, but a signature records which pinned
// constant it is, if any: 0, -0, ±1, ±0.5, ±2, 3, √2, 1/√2, √(2/π), 0.044715.
// Every trace sharing a plan then has the same value there, so passes may
// rely on it (x·1 -> x, the -1 of x - y in a decomposed layer norm, gelu's
// constants); a learning rate that happens to equal one costs a compile,
// never a wrong result. Returns the constant's index, or -1.
int pinned_constant(const Scalar& s);

// Whether attribute `attr` of `n` (a Scalar) has the same value in every
// trace that shares n's signature: a compile-time Scalar, or a pinned one.
bool scalar_is_known(const Node& n, size_t attr);

// Whether n's kernel checks its input values and may throw (OpDef::checks_values,
// or checks_integer_values over an integral input): a trace keeps such a
// node even when nothing reads it, and a plan writes no output into a
// caller's tensor before it has run.
bool checks_values(const Trace& t, const Node& n);

// Whether `op` reduces one input over the dims of its first attribute
// (sum, mean, prod, amax/amin, max/min, all, any, norm, logsumexp,
// argmax/argmin): a fusion group may close with it.
bool is_reduction(const OpDef& op);

// The node's attributes with its slotted Scalars taken from `scalars`.
Attrs bind_scalars(const Node& n, absl::Span<const Scalar> scalars);

// The same Scalar: kind and value, bit for bit.
inline bool identical(const Scalar& a, const Scalar& b) {
  if (a.is_floating() != b.is_floating() || a.is_integral() != b.is_integral()) return false;
  if (!a.is_floating()) return a.to_int() == b.to_int();
  const double x = a.to_double(), y = b.to_double();
  return std::memcmp(&x, &y, sizeof x) == 0;
}

// Whether n's slotted Scalars already hold the values in `scalars` (binding
// them would change nothing).
bool holds_scalars(const Node& n, absl::Span<const Scalar> scalars);

// A tensor with v's metadata and no storage, for the ops' shape inference.
Tensor meta_tensor(const Value& v);

// Appends an attribute's canonical text. Scalars are written as their kind
// only ("f64"/"i64"/"bool") unless `with_scalar_values`: a Scalar is a
// run-time argument, never part of a signature (docs/DESIGN.md §3.4).
void append_attr(std::string& out, const AttrValue& a, bool with_scalar_values);

}  // namespace nnvm::trace
