// nnvm::Tensor: a handle to a view of a Storage (docs/DESIGN.md §3.2). Copying a Tensor
// copies the handle, not the data, as in libtorch. Methods follow libtorch's
// names and argument order; each forwards to one op of the op table. As in
// libtorch, in-place methods (add_, zero_, ...) are const: they change the
// data the handle points to, not the handle, so `w.grad().zero_()` works.
// Sizes and dims are IntArrayRefs (core/shape.h), which a bare integer
// converts to as libtorch's does: x.sum(1), x.view(-1), x.permute({1, 0}).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "nnvm/core/device.h"
#include "nnvm/core/dtype.h"
#include "nnvm/core/error.h"
#include "nnvm/core/scalar.h"
#include "nnvm/core/shape.h"
#include "nnvm/core/storage.h"
#include "nnvm/core/tensor_options.h"

namespace nnvm {

class Generator;
// Quantized tensors (core/quantize.h).
enum class QScheme : uint8_t;
struct Quantizer;

// The unary ops that are Tensor methods with an in-place twin, and free
// functions too (core/functions.h): X(name) for each.
#define NNVM_TENSOR_UNARY_OPS(X)                                                                       \
  X(neg) X(abs) X(exp) X(exp2) X(log) X(log2) X(log1p) X(expm1) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) \
  X(tanh) X(sigmoid) X(relu) X(erf) X(floor) X(ceil) X(round) X(trunc) X(sign) X(reciprocal)         \
  X(square) X(logical_not)

namespace indexing {
class TensorIndex;
}  // namespace indexing

namespace autograd {
struct AutogradMeta;
struct Node;
}  // namespace autograd

// A number no TensorImpl of the process has had before. Threads take blocks of them.
uint64_t new_layout_id();

// TensorImpl::layout_id: names one object's shape and strides. Made new
// with the object, and again when the object is copied or assigned (the
// copy is another object, whose layout may change) or renewed (set_data).
class LayoutId {
 public:
  LayoutId() = default;
  LayoutId(const LayoutId&) {}
  LayoutId& operator=(const LayoutId&) {
    renew();
    return *this;
  }
  operator uint64_t() const { return value_; }
  void renew() { value_ = new_layout_id(); }

 private:
  uint64_t value_ = new_layout_id();
};

struct TensorImpl {
  TensorImpl() = default;
  // Constructed with its layout: copying a DimVector into a new one is a
  // memcpy, assigning one is a loop (core/block_pool.h's pooled_tensor).
  template <class Shape, class Strides>
  TensorImpl(std::shared_ptr<Storage> storage_, Shape&& shape_, Strides&& strides_, int64_t offset_, DType dtype_,
             Device device_, bool is_view_)
      : storage(std::move(storage_)),
        shape(std::forward<Shape>(shape_)),
        strides(std::forward<Strides>(strides_)),
        offset(offset_),
        dtype(dtype_),
        device(device_),
        is_view(is_view_) {}

  std::shared_ptr<Storage> storage;
  DimVector shape;
  DimVector strides;
  int64_t offset = 0;  // in elements
  DType dtype = kFloat32;
  Device device;
  bool is_view = false;  // made by a view op: shares another tensor's storage
  std::shared_ptr<autograd::AutogradMeta> autograd;  // null: no gradient business
  // Set on a quantized tensor (dtype qint8, quint8, qint32) made by the user's
  // call: its scale and zero point (core/quantize.h). Views share it. Null on
  // the tensors a trace makes inside itself: kernels take the parameters as
  // attributes and inputs, never from here.
  std::shared_ptr<const Quantizer> quantizer;
  // Names this object's shape and strides: two TensorImpls never share one,
  // and Tensor::set_data, which re-points the object, renews it. The
  // recorder compares it before it compares a layout (trace/recorder.cpp).
  // Code that changes the shape or strides of a TensorImpl others have seen
  // renews it.
  LayoutId layout_id;
};

class Tensor;
using TensorList = absl::Span<const Tensor>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  // Assigning to a named tensor re-points the handle; assigning to a
  // temporary writes into the data it views, as libtorch's does:
  // x[i][j] = v copies v in, x[0] = 1.5 fills.
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  Tensor& operator=(const Tensor& src) && { return copy_(src); }
  Tensor& operator=(const Scalar& value) && { return fill_(value); }

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- metadata (each throws nnvm::Error on an undefined tensor) ----
  IntArrayRef sizes() const { return checked().shape; }
  IntArrayRef shape() const { return checked().shape; }
  IntArrayRef strides() const { return checked().strides; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return int64_t(checked().shape.size()); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return numel_of(checked().shape); }
  DType dtype() const { return checked().dtype; }
  DType scalar_type() const { return checked().dtype; }
  Device device() const { return checked().device; }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().type == DeviceType::CUDA; }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  int64_t storage_offset() const { return checked().offset; }
  size_t element_size() const { return itemsize(checked().dtype); }
  size_t nbytes() const { return size_t(numel()) * element_size(); }
  bool is_contiguous() const { return is_contiguous_layout(checked().shape, checked().strides); }
  bool is_floating_point() const { return is_floating(checked().dtype); }
  const std::shared_ptr<Storage>& storage() const { return checked().storage; }
  std::string toString() const;  // "CPUFloatType{2,3}"

  // ---- data access ----
  void* data_ptr() const;  // untyped pointer to element 0
  template <class T> T* data_ptr() const {
    check_dtype(dtype_of_v<T>, "data_ptr");
    return static_cast<T*>(data_ptr());
  }
  template <class T> T item() const;
  Scalar item() const;
  template <class T> std::vector<T> to_vector() const;

  // ---- autograd (core/autograd.h) ----
  bool requires_grad() const;
  // Only floating tensors can require grad; throws nnvm::Error otherwise.
  Tensor& requires_grad_(bool requires_grad = true) const;
  const Tensor& grad() const;  // undefined until a backward pass reaches this leaf
  Tensor& mutable_grad() const;      // assign or reset the accumulated gradient
  void set_grad(const Tensor& grad) { mutable_grad() = grad; }
  bool is_leaf() const;
  void retain_grad();
  // The name of the node that made this tensor (libtorch's: "MulBackward0"), empty for leaves.
  std::string grad_fn_name() const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  // A scalar output needs no gradient argument; others need one of their shape.
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // The same data, cut from the graph.
  Tensor detach() const;
  Tensor& detach_() const;

  // ---- quantized tensors (core/quantize.h), with libtorch's names ----
  // Each throws nnvm::Error on a tensor that is not quantized, and q_scale and
  // q_zero_point on a per-channel one (the q_per_channel_* on a per-tensor one).
  bool is_quantized() const { return nnvm::is_quantized(checked().dtype); }
  QScheme qscheme() const;
  double q_scale() const;
  int64_t q_zero_point() const;
  Tensor q_per_channel_scales() const;       // float64
  Tensor q_per_channel_zero_points() const;  // int64
  int64_t q_per_channel_axis() const;
  Tensor int_repr() const;    // the stored integers as an int8, uint8 or int32 tensor (a copy)
  Tensor dequantize() const;  // (q - zero_point) * scale, float32
  const Quantizer& quantizer() const;

  // ---- views (no copies) ----
  Tensor view(IntArrayRef shape) const;
  Tensor reshape(IntArrayRef shape) const;  // a view when the layout allows, else a copy
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor expand(IntArrayRef shape) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor t() const;
  Tensor mT() const;
  Tensor view_as(const Tensor& other) const { return view(other.sizes()); }
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;

  // ---- copies and casts ----
  // Points this tensor's every handle at `value`'s memory and layout
  // (libtorch's set_data; Module::to). A trace recorded before still reads
  // what the tensor was.
  void set_data(const Tensor& value) const;
  Tensor contiguous() const;  // returns *this when already contiguous
  Tensor clone() const;
  Tensor to(DType dtype) const;  // returns *this when the dtype already matches
  // The CPU is the one device today: another throws nnvm::Error naming it.
  Tensor to(Device device) const;
  Tensor to(Device device, DType dtype) const { return to(device).to(dtype); }
  Tensor to(const Tensor& other) const { return to(other.device(), other.dtype()); }
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda() const { return to(Device(kCUDA)); }
  // libtorch's .data(): the same data, cut from the graph (as detach()).
  Tensor data() const { return detach(); }
  Tensor& copy_(const Tensor& src) const;
  Tensor& fill_(const Scalar& value) const;
  Tensor& zero_() const;
  // Random fills in place, from the default generator unless one is given.
  Tensor& uniform_(double from = 0, double to = 1, Generator* gen = nullptr) const;
  Tensor& normal_(double mean = 0, double std = 1, Generator* gen = nullptr) const;
  Tensor& bernoulli_(double p = 0.5, Generator* gen = nullptr) const;
  // Integers drawn uniformly from [from, to) (libtorch's random_(from, to)).
  Tensor& random_(int64_t from, int64_t to, Generator* gen = nullptr) const;
  // ---- pointwise unary (each has an in-place twin ending in _) ----
#define NNVM_UNARY_METHOD(name) \
  Tensor name() const;          \
  Tensor& name##_() const;
  NNVM_TENSOR_UNARY_OPS(NNVM_UNARY_METHOD)
#undef NNVM_UNARY_METHOD
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(const Scalar& min) const { return clamp(min, std::nullopt); }
  Tensor clamp_max(const Scalar& max) const { return clamp(std::nullopt, max); }
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor nan_to_num(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  // Elementwise |self - other| <= atol + rtol |other| (bool), as libtorch: equal
  // values (infinities included) are close, NaN only to NaN and only with
  // equal_nan. The operands broadcast and must have one dtype.
  Tensor isclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;
  // Whether every element is close (isclose); reads the data, so it ends a trace.
  bool allclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;

  // ---- pointwise binary, with broadcasting and type promotion ----
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  // rounding_mode: "" (true division), "floor" or "trunc"
  Tensor div(const Tensor& other, std::string_view rounding_mode = "") const;
  Tensor div(const Scalar& other, std::string_view rounding_mode = "") const;
  Tensor& div_(const Tensor& other, std::string_view rounding_mode = "") const;
  Tensor& div_(const Scalar& other, std::string_view rounding_mode = "") const;
#define NNVM_BINARY_METHOD(name)                \
  Tensor name(const Tensor& other) const;       \
  Tensor name(const Scalar& other) const;       \
  Tensor& name##_(const Tensor& other) const;         \
  Tensor& name##_(const Scalar& other) const;
  NNVM_BINARY_METHOD(mul) NNVM_BINARY_METHOD(remainder) NNVM_BINARY_METHOD(pow)
  NNVM_BINARY_METHOD(maximum) NNVM_BINARY_METHOD(minimum) NNVM_BINARY_METHOD(atan2)
  NNVM_BINARY_METHOD(eq) NNVM_BINARY_METHOD(ne) NNVM_BINARY_METHOD(lt) NNVM_BINARY_METHOD(le)
  NNVM_BINARY_METHOD(gt) NNVM_BINARY_METHOD(ge) NNVM_BINARY_METHOD(logical_and)
  NNVM_BINARY_METHOD(logical_or) NNVM_BINARY_METHOD(logical_xor)
#undef NNVM_BINARY_METHOD
  Tensor floor_divide(const Tensor& other) const { return div(other, "floor"); }
  Tensor floor_divide(const Scalar& other) const { return div(other, "floor"); }
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;

  // ---- reductions (empty dims = all dims) ----
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;  // values, indices
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2, IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;

  // ---- linear algebra ----
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor outer(const Tensor& other) const;

  // ---- data movement ----
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  // indices: one index tensor per leading dim (int64) or a single bool mask.
  Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false) const;
  Tensor index_put(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false) const;
  // libtorch's index lists (core/indexing.h): x.index({Slice(), 0}), x.index_put_({mask}, 0).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(absl::Span<const indexing::TensorIndex> indices) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const;
  Tensor& index_put_(absl::Span<const indexing::TensorIndex> indices, const Tensor& values) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;  // values, indices
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;

  // ---- operators ----
  Tensor operator-() const { return neg(); }
  Tensor operator!() const { return logical_not(); }
  Tensor& operator+=(const Tensor& o) const { return add_(o); }
  Tensor& operator+=(const Scalar& o) const { return add_(o); }
  Tensor& operator-=(const Tensor& o) const { return sub_(o); }
  Tensor& operator-=(const Scalar& o) const { return sub_(o); }
  Tensor& operator*=(const Tensor& o) const { return mul_(o); }
  Tensor& operator*=(const Scalar& o) const { return mul_(o); }
  Tensor& operator/=(const Tensor& o) const { return div_(o); }
  Tensor& operator/=(const Scalar& o) const { return div_(o); }

  // Throws nnvm::Error naming `op` unless the dtype is `expected`.
  void check_dtype(DType expected, std::string_view op) const;

 private:
  const TensorImpl& checked() const {
    if (!impl_) [[unlikely]] throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();

  std::shared_ptr<TensorImpl> impl_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Scalar& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&&(const Tensor& a, const Tensor& b);
Tensor operator||(const Tensor& a, const Tensor& b);

// The inputs of an op call, borrowed from the caller: no copies of the
// tensors, so no reference-count updates (two atomic operations per tensor
// copied). Either the caller's array of tensors (a span, a vector) or, for a
// braced list `{a, b}`, one pointer per tensor; a temporary in the list lives
// until the end of the full expression, so a TensorRefs must not outlive the
// call it is passed to. Read it like a span; code that keeps an input copies
// it (`Tensor t = refs[i]`), which takes a reference of its own.
class TensorRefs {
 public:
  struct Ref {
    Ref(const Tensor& t) : tensor(&t) {}  // NOLINT: implicit, for braced lists
    const Tensor* tensor;
  };
  TensorRefs(std::initializer_list<Ref> refs)
      : data_(reinterpret_cast<uintptr_t>(refs.begin()) | kRefs), size_(refs.size()) {}
  template <class C, class = std::enable_if_t<std::is_constructible_v<absl::Span<const Tensor>, const C&>>>
  TensorRefs(const C& tensors)  // NOLINT: implicit, like absl::Span's
      : data_(reinterpret_cast<uintptr_t>(absl::Span<const Tensor>(tensors).data())),
        size_(absl::Span<const Tensor>(tensors).size()) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Tensor& operator[](size_t i) const {
    return (data_ & kRefs) ? *reinterpret_cast<const Ref*>(data_ - kRefs)[i].tensor
                           : reinterpret_cast<const Tensor*>(data_)[i];
  }

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Tensor;
    using difference_type = std::ptrdiff_t;
    using pointer = const Tensor*;
    using reference = const Tensor&;
    iterator() = default;
    iterator(const TensorRefs* refs, size_t i) : refs_(refs), i_(i) {}
    const Tensor& operator*() const { return (*refs_)[i_]; }
    const Tensor* operator->() const { return &(*refs_)[i_]; }
    iterator& operator++() { ++i_; return *this; }
    iterator operator++(int) { iterator r = *this; ++i_; return r; }
    bool operator==(const iterator& o) const { return i_ == o.i_; }
   private:
    const TensorRefs* refs_ = nullptr;
    size_t i_ = 0;
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size_}; }

  // The caller's array, when the refs are one (null otherwise).
  const Tensor* array() const { return (data_ & kRefs) ? nullptr : reinterpret_cast<const Tensor*>(data_); }

 private:
  // Two words, passed in registers: the array's address, its low bit set
  // when it holds Refs (both are at least 8-byte aligned).
  static constexpr uintptr_t kRefs = 1;
  uintptr_t data_;
  size_t size_;
};

// The tensors of a TensorRefs as a span (what kernels and shape inference
// take): the caller's array when it is one, else copies of the tensors.
class TensorSpan {
 public:
  explicit TensorSpan(const TensorRefs& refs) {
    if (refs.array()) {
      span_ = absl::MakeConstSpan(refs.array(), refs.size());
    } else {
      copies_.assign(refs.begin(), refs.end());
      span_ = copies_;
    }
  }
  TensorSpan(const TensorSpan&) = delete;
  TensorSpan& operator=(const TensorSpan&) = delete;
  operator absl::Span<const Tensor>() const { return span_; }  // NOLINT
  absl::Span<const Tensor> get() const { return span_; }

 private:
  absl::InlinedVector<Tensor, 4> copies_;
  absl::Span<const Tensor> span_;
};

// Prints like libtorch: the values, then "[ CPUFloatType{2,3} ]".
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- template definitions ----
template <class T> T Tensor::item() const { return item().to<T>(); }

template <class T> std::vector<T> Tensor::to_vector() const {
  const Tensor c = to(dtype_of_v<T>).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

}  // namespace nnvm
