// The op table (docs/DESIGN.md §3.1). Every op, built-in or a user's, is declared once
// here: its name, how many inputs it takes, how it infers output shapes and
// dtypes (or, for a view, the view's layout), and a kernel per device. Ops are
// called only through `call`/`call_inplace`, which is where autograd and the
// tracer hook in later, so no op is written twice.
//
// Attributes are positional. An attribute's *kind* says how later layers treat
// it: int64 / bool / int list / dtype / string attributes are structure (part of
// a trace's signature); Scalar attributes are run-time values (a learning rate,
// a fill value), never part of a signature, so changing them never recompiles.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "nnvm/core/dtype.h"
#include "nnvm/core/scalar.h"
#include "nnvm/core/shape.h"
#include "nnvm/core/tensor.h"

namespace nnvm {

using AttrValue = std::variant<int64_t, bool, Scalar, DimVector, DType, std::string>;

class Attrs {
 public:
  Attrs() = default;
  // `{alpha}`, `{dims(d), keepdim}`: each value made in place. An
  // initializer list would make each one twice (the list's copy, then ours)
  // and destroy the list's: a variant visit each, on every recorded op.
  template <class... V>
    requires(sizeof...(V) > 0 && (std::is_constructible_v<AttrValue, V &&> && ...))
  Attrs(V&&... values) {  // NOLINT: implicit, for braced lists
    (values_.emplace_back(std::forward<V>(values)), ...);
  }

  size_t size() const { return values_.size(); }
  // Checked: a kernel that reads an attribute its node lacks gets an
  // nnvm::Error, never memory past the list (traces read from files,
  // trace/repro.h, name any op with any attributes).
  const AttrValue& operator[](size_t k) const {
    if (k >= values_.size()) [[unlikely]]
      missing(k);
    return values_[k];
  }
  void push_back(AttrValue v) { values_.push_back(std::move(v)); }
  void set(size_t k, AttrValue v) { values_[k] = std::move(v); }
  // The attributes from position `from` on.
  Attrs tail(size_t from) const {
    Attrs t;
    for (size_t i = from; i < values_.size(); ++i) t.push_back(values_[i]);
    return t;
  }

  // An attribute of another kind throws std::bad_variant_access.
  int64_t i(size_t k) const { return std::get<int64_t>((*this)[k]); }
  bool b(size_t k) const { return std::get<bool>((*this)[k]); }
  const Scalar& s(size_t k) const { return std::get<Scalar>((*this)[k]); }
  double d(size_t k) const { return s(k).to_double(); }
  IntArrayRef ints(size_t k) const { return std::get<DimVector>((*this)[k]); }
  DType dtype(size_t k) const { return std::get<DType>((*this)[k]); }
  const std::string& str(size_t k) const { return std::get<std::string>((*this)[k]); }

 private:
  [[noreturn, gnu::cold]] void missing(size_t k) const;

  absl::InlinedVector<AttrValue, 4> values_;
};

inline DimVector dims(IntArrayRef v) { return DimVector(v.begin(), v.end()); }

struct OutputSpec {
  DimVector shape;
  DType dtype;
};
using OutputSpecs = absl::InlinedVector<OutputSpec, 2>;

// The layout of a view of input 0: shape, strides and absolute storage offset.
struct ViewSpec {
  DimVector shape;
  DimVector strides;
  int64_t offset;
};

using InferFn = std::function<OutputSpecs(absl::Span<const Tensor> inputs, const Attrs& attrs)>;
using ViewFn = std::function<ViewSpec(const Tensor& input, const Attrs& attrs)>;
// A kernel writes every output; outputs are allocated by the dispatcher
// (contiguous) or, for an elementwise op, given by the caller (in-place: any
// strides and a castable dtype, may alias an input; call_into).
using KernelFn =
    std::function<void(absl::Span<const Tensor> inputs, absl::Span<const Tensor> outputs, const Attrs& attrs)>;

// What an op's gradient function sees (core/autograd.h). Gradients are
// written with ops, so they are recorded, differentiable and traceable.
struct GradContext {
  absl::Span<const Tensor> inputs;        // the forward inputs (undefined unless saved)
  absl::Span<const Tensor> outputs;       // the forward outputs (undefined unless saved)
  absl::Span<const Tensor> grad_outputs;  // one per output; undefined = zero
  const Attrs& attrs;
  std::vector<bool> needs_input_grad;     // one per input
};
// Returns one gradient per input (undefined where none is needed or none
// exists). A gradient may have the broadcast shape or a wider dtype: the
// engine sums it back to the input's shape and casts it to the input's dtype.
using GradFn = std::function<std::vector<Tensor>(const GradContext& ctx)>;

// Which quantized inputs an op takes; the dispatcher refuses the others with
// an nnvm::Error that says to dequantize() first (core/op.cpp).
enum class QuantizedInputs : uint8_t {
  kNone,
  kPerTensor,  // views: a per-tensor quantizer stays valid whatever the layout
  kAny,        // dequantize, int_repr, copy (clone, contiguous)
};

struct OpDef {
  std::string name;
  int num_inputs = 1;  // -1: any number (cat, stack)
  InferFn infer;       // set for computing ops
  ViewFn view;         // set for view ops: the output aliases input 0's storage
  std::array<KernelFn, 2> kernels;  // indexed by DeviceType
  // Output element i depends only on input elements at index i (after
  // broadcasting): such a kernel may write over an input with the same layout.
  bool elementwise = false;
  // The kernel checks input values (indices, class targets, probabilities)
  // and throws nnvm::Error on bad ones. A trace keeps such a node even when
  // nothing reads its result, so the error surfaces as it would eagerly.
  bool checks_values = false;
  // The same for integer inputs only: integer division by zero, an integer
  // to a negative power (a float division by zero is inf, no error).
  bool checks_integer_values = false;
  // Quantized inputs it takes. An output of an input's quantized dtype gets
  // that input's quantizer (a view, a clone).
  QuantizedInputs quantized_inputs = QuantizedInputs::kNone;
  GradFn grad;                    // null: not differentiable (an error if a gradient reaches it)
  bool grad_saves_inputs = true;  // what `grad` reads from the context
  bool grad_saves_outputs = false;

  // Fluent set-up: register_op("add").inputs(2).infer(f);
  OpDef& inputs(int n) { num_inputs = n; return *this; }
  OpDef& infer_with(InferFn f) { infer = std::move(f); return *this; }
  OpDef& view_with(ViewFn f) { view = std::move(f); return *this; }
  OpDef& kernel(DeviceType d, KernelFn f) { kernels[size_t(d)] = std::move(f); return *this; }
  OpDef& is_elementwise() { elementwise = true; return *this; }
  OpDef& checks_input_values() { checks_values = true; return *this; }
  OpDef& checks_integer_input_values() { checks_integer_values = true; return *this; }
  OpDef& takes_quantized(QuantizedInputs q) { quantized_inputs = q; return *this; }
  // Declares the gradient and which forward tensors it needs kept alive.
  OpDef& grad_with(GradFn f, bool saves_inputs = true, bool saves_outputs = false) {
    grad = std::move(f);
    grad_saves_inputs = saves_inputs;
    grad_saves_outputs = saves_outputs;
    return *this;
  }
};

// Declares (or returns the already declared) op `name`. Entries never move,
// so a `const OpDef&` may be kept for the life of the process. Kernels and
// declarations may register in either order.
OpDef& register_op(std::string_view name);
void register_kernel(std::string_view name, DeviceType device, KernelFn kernel);
// Throws nnvm::Error for an unknown name.
const OpDef& find_op(std::string_view name);
bool has_op(std::string_view name);
std::vector<std::string> op_names();

// Runs a computing or view op and returns its outputs. The inputs are
// borrowed (TensorRefs): `call1(op, {a, b})` copies neither tensor.
std::vector<Tensor> call(const OpDef& op, TensorRefs inputs, const Attrs& attrs = {});
// The same, for an op with exactly one output.
Tensor call1(const OpDef& op, TensorRefs inputs, const Attrs& attrs = {});
// A view of the defined tensor `in` with layout v, as the dispatcher makes a
// view op's output (nothing recorded for autograd: the caller's business).
Tensor view_of(const Tensor& in, ViewSpec v);
// The same for one input: call1(op, {x}, ...) picks this one.
inline Tensor call1(const OpDef& op, const Tensor& input, const Attrs& attrs = {}) {
  return call1(op, absl::MakeConstSpan(&input, 1), attrs);
}
// Runs a computing op writing its single output into `out` (in-place ops and
// out= variants): the inferred shape must equal out's, and the inferred dtype
// must be castable to out's. Bumps out's storage version. When the kernel
// cannot write `out` itself (a non-elementwise op's `out` not contiguous or
// of another dtype, or sharing any memory with an input; an elementwise op's
// sharing memory with an input at a different layout), the result goes
// through a temporary.
void call_into(const OpDef& op, TensorRefs inputs, const Attrs& attrs, const Tensor& out);

// Whether a value of dtype `from` may be written into a tensor of dtype `to`
// by an in-place op (libtorch's rule: no floating into integral, nothing but bool into bool).
bool can_cast(DType from, DType to);

// Registers at static-initialisation time: NNVM_REGISTER(my_ops) { register_op(...)...; }
#define NNVM_REGISTER(name)                                             \
  static void nnvm_register_##name();                                   \
  [[maybe_unused]] static const bool nnvm_registered_##name = (nnvm_register_##name(), true); \
  static void nnvm_register_##name()

}  // namespace nnvm
