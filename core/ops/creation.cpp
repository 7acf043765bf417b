// Creation, copy and cast ops: full (also behind fill_/zeros/ones), copy
// (clone, contiguous, to(dtype), copy_), arange, linspace, eye and the random
// fills. Random ops take the generator's (seed, counter) as Scalar attributes,
// so they are run-time values and a trace replays with fresh numbers.
#include <cmath>
#include <cstring>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"

namespace nnvm {

namespace {

// Sizes non-negative and the byte count representable (for the widest dtype).
void check_shape(IntArrayRef shape, std::string_view op) { checked_nbytes(shape, 8, op); }

// attrs: shape, dtype, ...: outputs one tensor of that shape and dtype
OutputSpecs infer_from_attrs(absl::Span<const Tensor>, const Attrs& a) {
  return {{dims(a.ints(0)), a.dtype(1)}};
}

OutputSpecs infer_copy(absl::Span<const Tensor> in, const Attrs& a) { return {{dims(in[0].sizes()), a.dtype(0)}}; }

// `op`: a function-local static of the caller's (find_op takes the registry's
// lock). The attributes: (shape, dtype, extra...), each made in place.
template <class... Extra> Tensor creation(const OpDef& op, IntArrayRef shape, DType dtype, Extra&&... extra) {
  check_shape(shape, op.name);
  return call1(op, absl::Span<const Tensor>(), Attrs(dims(shape), dtype, std::forward<Extra>(extra)...));
}

DType dtype_or(const std::optional<TensorOptions>& o, DType fallback) { return o ? o->dtype_ : fallback; }

// The CPU is the one device tensors live on today.
void check_device(Device d, std::string_view op) {
  NNVM_CHECK(d.is_cpu(), op, "device ", d, " is not available: this build of nnvm keeps tensors on the CPU "
             "(nnvm::kCPU)");
}

// What a creation's options ask beyond the dtype: its device, and requires_grad.
Tensor made(Tensor t, const TensorOptions& o, std::string_view op) {
  check_device(o.device_, op);
  return o.requires_grad_ ? t.requires_grad_() : t;
}
Tensor made(Tensor t, const std::optional<TensorOptions>& o, std::string_view op) {
  return o ? made(std::move(t), *o, op) : t;
}

Generator& gen_or_default(Generator* g) { return g ? *g : default_generator(); }

// Two 32-bit random words per element.
AttrValue seed_attr(std::pair<uint64_t, uint64_t> s) { return Scalar(int64_t(s.first)); }
AttrValue counter_attr(std::pair<uint64_t, uint64_t> s) { return Scalar(int64_t(s.second)); }

template <class... Extra>
Tensor random_op(const OpDef& op, IntArrayRef shape, DType dtype, Generator* gen, Extra&&... extra) {
  check_shape(shape, op.name);
  const auto s = gen_or_default(gen).reserve(2 * uint64_t(numel_of(shape)));
  return call1(op, absl::Span<const Tensor>(),
               Attrs(dims(shape), dtype, seed_attr(s), counter_attr(s), std::forward<Extra>(extra)...));
}

}  // namespace

NNVM_REGISTER(creation_ops) {
  register_op("full").inputs(0).infer_with(infer_from_attrs);            // shape, dtype, value
  register_op("arange").inputs(0).infer_with(infer_from_attrs);          // shape, dtype, start, step
  register_op("linspace").inputs(0).infer_with(infer_from_attrs);        // shape, dtype, start, end
  register_op("eye").inputs(0).infer_with(infer_from_attrs);             // shape, dtype
  register_op("uniform").inputs(0).infer_with(infer_from_attrs);         // shape, dtype, seed, counter, low, high
  register_op("normal").inputs(0).infer_with(infer_from_attrs);          // shape, dtype, seed, counter
  register_op("randint").inputs(0).infer_with(infer_from_attrs);         // shape, dtype, seed, counter, low, high
  register_op("bernoulli").checks_input_values().inputs(1).is_elementwise().infer_with(        // p; attrs: seed, counter
      [](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs {
        NNVM_CHECK(in[0].is_floating_point(), "bernoulli", "expected floating-point probabilities but got ",
                   in[0].dtype());
        return {{dims(in[0].sizes()), in[0].dtype()}};
      });
  // copy's gradient is the incoming one; the engine casts it back to the input's dtype.
  // A quantized tensor's values are its integers here: clone and contiguous copy
  // them to its own dtype, int_repr to the integer dtype (core/ops/quantize.cpp).
  register_op("copy")
      .inputs(1)
      .is_elementwise()
      .takes_quantized(QuantizedInputs::kAny)
      .infer_with(infer_copy)
      .grad_with([](const GradContext& c) -> std::vector<Tensor> { return {c.grad_outputs[0]}; }, false);  // dtype
}

// ---- creation ----
Tensor empty(IntArrayRef shape, TensorOptions o) {
  check_shape(shape, "empty");
  check_device(o.device_, "empty");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(checked_nbytes(shape, itemsize(o.dtype_), "empty"), o.device_);
  impl->shape = dims(shape);
  impl->strides = contiguous_strides(shape);
  impl->dtype = o.dtype_;
  impl->device = o.device_;
  return made(Tensor(std::move(impl)), o, "empty");
}

Tensor full(IntArrayRef shape, const Scalar& value, std::optional<TensorOptions> o) {
  static const OpDef& op = find_op("full");
  return made(creation(op, shape, dtype_or(o, value.default_dtype()), value), o, "full");
}
Tensor zeros(IntArrayRef shape, TensorOptions o) { return full(shape, 0, o); }
Tensor ones(IntArrayRef shape, TensorOptions o) { return full(shape, 1, o); }
Tensor scalar_tensor(const Scalar& value, std::optional<TensorOptions> o) { return full({}, value, o); }

Tensor arange(const Scalar& end, std::optional<TensorOptions> o) { return arange(0, end, 1, o); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<TensorOptions> o) {
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  NNVM_CHECK(st != 0, "arange", "step must be nonzero");
  NNVM_CHECK(std::isfinite(s) && std::isfinite(e), "arange", "start and end must be finite, got ", s, " and ", e);
  NNVM_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange", "the range [", s, ", ", e,
             ") is not reachable with step ", st);
  const bool any_float = start.is_floating() || end.is_floating() || step.is_floating();
  const int64_t n = int64_t(std::ceil((e - s) / st));
  static const OpDef& op = find_op("arange");
  return made(creation(op, {n}, dtype_or(o, any_float ? kFloat32 : kInt64), start, step), o, "arange");
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  NNVM_CHECK(steps >= 0, "linspace", "number of steps must be non-negative, got ", steps);
  static const OpDef& op = find_op("linspace");
  return made(creation(op, {steps}, o.dtype_, Scalar(start), Scalar(end)), o, "linspace");
}

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions o) {
  static const OpDef& op = find_op("eye");
  return made(creation(op, {n, m.value_or(n)}, o.dtype_), o, "eye");
}

Tensor rand(IntArrayRef shape, TensorOptions o, Generator* gen) {
  NNVM_CHECK(is_floating(o.dtype_), "rand", "expected a floating dtype but got ", o.dtype_);
  static const OpDef& op = find_op("uniform");
  return made(random_op(op, shape, o.dtype_, gen, Scalar(0.0), Scalar(1.0)), o, "rand");
}

Tensor randn(IntArrayRef shape, TensorOptions o, Generator* gen) {
  NNVM_CHECK(is_floating(o.dtype_), "randn", "expected a floating dtype but got ", o.dtype_);
  static const OpDef& op = find_op("normal");
  return made(random_op(op, shape, o.dtype_, gen), o, "randn");
}

Tensor randint(int64_t low, int64_t high, IntArrayRef shape, TensorOptions o, Generator* gen) {
  NNVM_CHECK(low < high, "randint", "expected low < high but got low=", low, ", high=", high);
  static const OpDef& op = find_op("randint");
  return made(random_op(op, shape, o.dtype_, gen, Scalar(low), Scalar(high)), o, "randint");
}

Tensor randint(int64_t high, IntArrayRef shape, TensorOptions o, Generator* gen) {
  return randint(0, high, shape, o, gen);
}

Tensor bernoulli(const Tensor& p, Generator* gen) {
  const auto s = gen_or_default(gen).reserve(2 * uint64_t(p.numel()));
  static const OpDef& op = find_op("bernoulli");
  return call1(op, {p}, {seed_attr(s), counter_attr(s)});
}

Tensor bernoulli(IntArrayRef shape, double p, TensorOptions o, Generator* gen) {
  NNVM_CHECK(p >= 0 && p <= 1, "bernoulli", "p must be in [0, 1], got ", p);
  return made(bernoulli(full(shape, p, TensorOptions(o.dtype_)), gen), o, "bernoulli");
}

Tensor empty_like(const Tensor& t, std::optional<TensorOptions> o) {
  return empty(t.sizes(), TensorOptions(dtype_or(o, t.dtype())).device(t.device()));
}
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> o) {
  return made(zeros(t.sizes(), dtype_or(o, t.dtype())), o, "zeros_like");
}
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> o) {
  return made(ones(t.sizes(), dtype_or(o, t.dtype())), o, "ones_like");
}
Tensor full_like(const Tensor& t, const Scalar& v, std::optional<TensorOptions> o) {
  return made(full(t.sizes(), v, TensorOptions(dtype_or(o, t.dtype()))), o, "full_like");
}
Tensor rand_like(const Tensor& t, Generator* gen) { return rand(t.sizes(), t.dtype(), gen); }
Tensor randn_like(const Tensor& t, Generator* gen) { return randn(t.sizes(), t.dtype(), gen); }

Tensor from_blob(void* data, IntArrayRef shape, IntArrayRef strides, TensorOptions o) {
  check_shape(shape, "from_blob");
  NNVM_CHECK(strides.size() == shape.size(), "from_blob", "shape ", shape_str(shape), " and strides ",
             shape_str(strides), " differ in rank");
  int64_t extent = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    NNVM_CHECK(strides[d] >= 0, "from_blob", "negative strides are not supported: ", shape_str(strides));
    if (shape[d] == 0) extent = 0;
    else extent += (shape[d] - 1) * strides[d];
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, size_t(extent) * itemsize(o.dtype_), o.device_, nullptr);
  impl->shape = dims(shape);
  impl->strides = dims(strides);
  impl->dtype = o.dtype_;
  impl->device = o.device_;
  return made(Tensor(std::move(impl)), o, "from_blob");
}

Tensor from_blob(void* data, IntArrayRef shape, TensorOptions o) {
  return from_blob(data, shape, contiguous_strides(shape), o);
}

Tensor from_blob(void* data, IntArrayRef shape, std::function<void(void*)> deleter, TensorOptions o) {
  Tensor t = from_blob(data, shape, o);
  t.impl()->storage = std::make_shared<Storage>(data, t.nbytes(), o.device_, std::move(deleter));
  return t;
}

template <class T> Tensor tensor(const std::vector<T>& values, std::optional<IntArrayRef> shape) {
  const DimVector s = shape ? dims(*shape) : DimVector{int64_t(values.size())};
  NNVM_CHECK(numel_of(s) == int64_t(values.size()), "tensor", values.size(), " values do not fill shape ",
             shape_str(s));
  Tensor t = empty(s, dtype_of_v<T>);
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  return t;
}
template Tensor tensor(const std::vector<float>&, std::optional<IntArrayRef>);
template Tensor tensor(const std::vector<double>&, std::optional<IntArrayRef>);
template Tensor tensor(const std::vector<int64_t>&, std::optional<IntArrayRef>);
template Tensor tensor(const std::vector<int32_t>&, std::optional<IntArrayRef>);
template Tensor tensor(const std::vector<int8_t>&, std::optional<IntArrayRef>);
template Tensor tensor(const std::vector<uint8_t>&, std::optional<IntArrayRef>);
template Tensor tensor(const std::vector<Half>&, std::optional<IntArrayRef>);
template Tensor tensor(const std::vector<BFloat16>&, std::optional<IntArrayRef>);

Tensor tensor(const std::vector<bool>& values, std::optional<IntArrayRef> shape) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  Tensor t = tensor(bytes, shape);
  Tensor b = empty(t.sizes(), kBool);
  if (!bytes.empty()) std::memcpy(b.data_ptr(), bytes.data(), bytes.size());
  return b;
}

// ---- copies and casts ----
Tensor Tensor::clone() const {
  static const OpDef& o = find_op("copy");
  return call1(o, {*this}, {dtype()});
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::to(DType t) const {
  static const OpDef& o = find_op("copy");
  if (t == dtype()) return *this;
  NNVM_CHECK(!is_quantized() && !nnvm::is_quantized(t), "to", "cannot convert a ", dtype(), " tensor to ", t,
             is_quantized() ? "; use dequantize() or int_repr()"
                            : "; use quantize_per_tensor() or quantize_per_channel()");
  return call1(o, {*this}, {t});
}

Tensor& Tensor::copy_(const Tensor& src) const {
  static const OpDef& o = find_op("copy");
  NNVM_CHECK(src.defined(), "copy_", "the source tensor is undefined");
  NNVM_CHECK(!src.is_quantized(), "copy_", "the source is a quantized tensor (", src.dtype(),
             "); copy its dequantize() or int_repr()");
  broadcast_shapes(sizes(), src.sizes(), "copy_");  // throws when they do not broadcast
  const Tensor from = src.sizes() == sizes() ? src : src.expand(sizes());
  // copy_ casts freely, like libtorch's: the copy op's result already has self's dtype.
  call_into(o, {from}, {dtype()}, *this);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::fill_(const Scalar& value) const {
  static const OpDef& o = find_op("full");
  call_into(o, {}, {dims(sizes()), dtype(), value}, *this);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::zero_() const { return fill_(0); }

Tensor Tensor::to(Device d) const {
  check_device(d, "to");
  return *this;
}

// The random fills draw a new tensor and copy it in: the same numbers as
// the out-of-place functions for the same generator state.
Tensor& Tensor::uniform_(double from, double to, Generator* gen) const {
  NNVM_CHECK(is_floating_point(), "uniform_", "expected a floating tensor but got ", dtype());
  NNVM_CHECK(from <= to, "uniform_", "expected from <= to but got from=", from, ", to=", to);
  return copy_(rand(sizes(), dtype(), gen) * (to - from) + from);
}
Tensor& Tensor::normal_(double mean, double std, Generator* gen) const {
  NNVM_CHECK(is_floating_point(), "normal_", "expected a floating tensor but got ", dtype());
  NNVM_CHECK(std >= 0, "normal_", "expected std >= 0 but got ", std);
  return copy_(randn(sizes(), dtype(), gen) * std + mean);
}
Tensor& Tensor::bernoulli_(double p, Generator* gen) const {
  return copy_(bernoulli(sizes(), p, is_floating_point() ? dtype() : kFloat32, gen));
}
Tensor& Tensor::random_(int64_t from, int64_t to, Generator* gen) const {
  return copy_(randint(from, to, sizes(), kInt64, gen));
}

}  // namespace nnvm
