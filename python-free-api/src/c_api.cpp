// The C API (nnvm/nnvm_c.h, docs/C_API.md): handles around the C++ objects,
// every exception turned into a status and a per-thread message.
#include "nnvm/nnvm_c.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nnvm/cache.h"
#include "nnvm/core/allocator.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/error.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/generator.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/tensor.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/model.h"
#include "nnvm/optim/adam.h"
#include "nnvm/optim/sgd.h"
#include "nnvm/plugin.h"
#include "nnvm/profiler.h"

struct nnvm_tensor_s {
  nnvm::Tensor value;
};
struct nnvm_optimizer_s {
  std::unique_ptr<nnvm::optim::Optimizer> value;
};
struct nnvm_model_s {
  nnvm::Model value;
};
struct nnvm_profiler_s {
  nnvm::profiler::Session value;
};

namespace {

using nnvm::Error;
using nnvm::Tensor;

static_assert(int(nnvm::DType::QInt32) == NNVM_QINT32 && nnvm::kNumDTypes == 12,
              "nnvm_dtype mirrors nnvm::DType: a dtype added to one must be added to the other");
static_assert(int(nnvm::DType::Float32) == NNVM_FLOAT32 && int(nnvm::DType::Bool) == NNVM_BOOL);

thread_local std::string last_error;

// The argument mistakes the C side can make, apart from nnvm's own errors.
struct InvalidArgument {
  std::string message;
};

[[noreturn]] void invalid(std::string message) { throw InvalidArgument{std::move(message)}; }

// Runs `body`, turning what it throws into a status and this thread's message.
template <class Body> nnvm_status guarded(const char* function, Body&& body) {
  try {
    body();
    return NNVM_OK;
  } catch (const InvalidArgument& e) {
    last_error = absl::StrCat(function, ": ", e.message);
    return NNVM_INVALID_ARGUMENT;
  } catch (const Error& e) {
    last_error = e.what();
    return NNVM_ERROR;
  } catch (const std::bad_alloc&) {
    last_error = absl::StrCat(function, ": out of memory");
    return NNVM_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error = absl::StrCat(function, ": ", e.what());
    return NNVM_INTERNAL;
  } catch (...) {
    last_error = absl::StrCat(function, ": an unknown exception");
    return NNVM_INTERNAL;
  }
}

template <class T> T* not_null(T* p, const char* what) {
  if (p == nullptr) invalid(absl::StrCat(what, " is NULL"));
  return p;
}

const Tensor& tensor_of(nnvm_tensor t, const char* what = "tensor") { return not_null(t, what)->value; }

nnvm_tensor new_handle(Tensor t) { return new nnvm_tensor_s{std::move(t)}; }

nnvm::DType dtype_of(nnvm_dtype dtype) {
  if (int(dtype) < 0 || int(dtype) >= nnvm::kNumDTypes) invalid(absl::StrCat("dtype ", int(dtype), " is not an nnvm_dtype"));
  return nnvm::DType(dtype);
}

// A shape from the caller: ndim sizes, each at least 0.
std::vector<int64_t> shape_of(const int64_t* shape, int64_t ndim) {
  if (ndim < 0 || ndim > 64) invalid(absl::StrCat("ndim ", ndim, " is not in [0, 64]"));
  if (ndim > 0) not_null(shape, "shape");
  std::vector<int64_t> sizes(shape, shape + ndim);
  for (int64_t s : sizes)
    if (s < 0) invalid(absl::StrCat("a size is ", s, "; sizes are at least 0"));
  return sizes;
}

void check_bytes(const Tensor& t, size_t bytes) {
  if (bytes != t.nbytes())
    invalid(absl::StrCat("the buffer has ", bytes, " bytes; a ", std::string(nnvm::dtype_name(t.dtype())), nnvm::shape_str(t.sizes()),
                         " tensor has ", t.nbytes()));
}

// Text into a caller's buffer, cut to fit, always zero-terminated.
void write_text(const std::string& text, char* out, size_t capacity, size_t* needed) {
  if (needed != nullptr) *needed = text.size() + 1;
  if (capacity == 0) return;
  not_null(out, "text");
  size_t n = std::min(capacity - 1, text.size());
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

nnvm::Attribute attribute_of(const nnvm_attr& a) {
  auto list = [&](const auto* values, const char* what) {
    if (a.count > 0) not_null(values, what);
    return values;
  };
  switch (a.kind) {
    case NNVM_ATTR_INT: return a.i;
    case NNVM_ATTR_FLOAT: return a.f;
    case NNVM_ATTR_STRING: return std::string(not_null(a.s, "a string attribute's value"));
    case NNVM_ATTR_INTS: {
      const int64_t* v = list(a.ints, "an ints attribute's values");
      return std::vector<int64_t>(v, v + a.count);
    }
    case NNVM_ATTR_FLOATS: {
      const double* v = list(a.floats, "a floats attribute's values");
      return std::vector<double>(v, v + a.count);
    }
    case NNVM_ATTR_STRINGS: {
      const char* const* v = list(a.strings, "a strings attribute's values");
      std::vector<std::string> strings;
      for (size_t k = 0; k < a.count; ++k) strings.emplace_back(not_null(v[k], "a strings attribute's value"));
      return strings;
    }
    case NNVM_ATTR_TENSOR: return tensor_of(a.tensor, "a tensor attribute's value");
  }
  invalid(absl::StrCat("attribute kind ", int(a.kind), " is not an nnvm_attr_kind"));
}

// One node as a Model: inputs of the given dtypes and any shape. Models of
// ops without tensor attributes are kept by what they are made of, so a
// loop's repeated op is checked once.
class OpModels {
 public:
  nnvm::Model get(const std::string& op_type, const std::vector<const Tensor*>& inputs,
                  const std::map<std::string, nnvm::Attribute>& attrs, size_t num_outputs) {
    // The key is built in the thread's buffer: a loop's call allocates no key (the map copies a new one).
    thread_local std::string key;
    key.clear();
    absl::StrAppend(&key, op_type, "|", num_outputs, "|");
    for (const Tensor* t : inputs) {
      key.append(t ? nnvm::dtype_name(t->dtype()) : std::string_view("-"));
      key += ',';
    }
    bool keyed = true;
    for (const auto& [name, value] : attrs) {
      absl::StrAppend(&key, "|", name, "=", value.index(), ":");
      if (std::holds_alternative<Tensor>(value)) keyed = false;
      if (const auto* i = std::get_if<int64_t>(&value)) absl::StrAppend(&key, *i);
      if (const auto* f = std::get_if<double>(&value)) absl::StrAppend(&key, absl::Hex(std::bit_cast<uint64_t>(*f)));
      if (const auto* s = std::get_if<std::string>(&value)) absl::StrAppend(&key, s->size(), ":", *s);
      if (const auto* v = std::get_if<std::vector<int64_t>>(&value)) absl::StrAppend(&key, absl::StrJoin(*v, ","));
      if (const auto* v = std::get_if<std::vector<double>>(&value))
        for (double f : *v) absl::StrAppend(&key, absl::Hex(std::bit_cast<uint64_t>(f)), ",");
      if (const auto* v = std::get_if<std::vector<std::string>>(&value))
        for (const std::string& s : *v) absl::StrAppend(&key, s.size(), ":", s);
    }
    if (keyed) {
      std::lock_guard lock(mutex_);
      auto it = models_.find(key);
      if (it != models_.end()) return it->second;
    }
    nnvm::Graph graph;
    graph.name = op_type;
    nnvm::Node node;
    node.op_type = op_type;
    node.attributes = attrs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == nullptr) {
        node.inputs.emplace_back();
        continue;
      }
      std::string name = absl::StrCat("input", i);
      graph.inputs.push_back(nnvm::ValueInfo{name, inputs[i]->dtype(), std::nullopt});
      node.inputs.push_back(name);
    }
    for (size_t o = 0; o < num_outputs; ++o) {
      std::string name = absl::StrCat("output", o);
      node.outputs.push_back(name);
      graph.outputs.push_back(nnvm::ValueInfo{name, std::nullopt, std::nullopt});
    }
    graph.nodes.push_back(std::move(node));
    nnvm::Model model(std::move(graph));
    if (keyed) {
      std::lock_guard lock(mutex_);
      if (models_.size() >= kMaxModels) models_.clear();  // a program of that many kinds of node rebuilds them
      models_.emplace(key, model);
    }
    return model;
  }

 private:
  static constexpr size_t kMaxModels = 4096;
  std::mutex mutex_;
  std::map<std::string, nnvm::Model> models_;
};

OpModels& op_models() {
  static auto* models = new OpModels;  // never destroyed: handles may outlive static destruction
  return *models;
}

std::vector<Tensor> tensors_of(const nnvm_tensor* handles, size_t n, const char* what) {
  if (n > 0) not_null(handles, what);
  std::vector<Tensor> tensors;
  tensors.reserve(n);
  for (size_t i = 0; i < n; ++i) tensors.push_back(tensor_of(handles[i], what));
  return tensors;
}

// Writes handles for `values` into `out` (num_out of them, checked before
// anything is allocated, so a failure leaves `out` untouched).
void write_handles(std::vector<Tensor> values, nnvm_tensor* out, size_t num_out, const char* what) {
  if (values.size() != num_out)
    throw Error(absl::StrCat(what, " gives ", values.size(), " outputs; the call asked for ", num_out));
  if (num_out > 0) not_null(out, "outputs");
  std::vector<std::unique_ptr<nnvm_tensor_s>> handles;
  for (Tensor& v : values) handles.push_back(std::make_unique<nnvm_tensor_s>(nnvm_tensor_s{std::move(v)}));
  for (size_t i = 0; i < num_out; ++i) out[i] = handles[i].release();
}

const nnvm::Model& model_of(nnvm_model m) { return not_null(m, "model")->value; }

}  // namespace

// The definitions take C linkage from their declarations in nnvm_c.h.

int nnvm_c_api_version(void) { return NNVM_C_API_VERSION; }

const char* nnvm_last_error(void) { return last_error.c_str(); }

const char* nnvm_status_name(nnvm_status status) {
  switch (status) {
    case NNVM_OK: return "ok";
    case NNVM_ERROR: return "error";
    case NNVM_INVALID_ARGUMENT: return "invalid argument";
    case NNVM_OUT_OF_MEMORY: return "out of memory";
    case NNVM_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char* nnvm_dtype_name(nnvm_dtype dtype) {
  if (int(dtype) < 0 || int(dtype) >= nnvm::kNumDTypes) return nullptr;
  return nnvm::dtype_name(nnvm::DType(dtype)).data();  // names are static, zero-terminated literals
}

size_t nnvm_dtype_size(nnvm_dtype dtype) {
  if (int(dtype) < 0 || int(dtype) >= nnvm::kNumDTypes) return 0;
  return nnvm::itemsize(nnvm::DType(dtype));
}

// ---- tensors ----

nnvm_status nnvm_tensor_from_data(const void* data, const int64_t* shape, int64_t ndim, nnvm_dtype dtype,
                                  nnvm_tensor* out) {
  return guarded(__func__, [&] {
    not_null(out, "out");
    nnvm::DType d = dtype_of(dtype);
    if (nnvm::is_quantized(d)) invalid(absl::StrCat(std::string(nnvm::dtype_name(d)), " tensors are made by ops, not from buffers"));
    Tensor t = nnvm::empty(shape_of(shape, ndim), d);
    if (t.numel() > 0) {
      not_null(data, "data");
      std::memcpy(t.data_ptr(), data, t.nbytes());
    }
    *out = new_handle(std::move(t));
  });
}

nnvm_status nnvm_tensor_zeros(const int64_t* shape, int64_t ndim, nnvm_dtype dtype, nnvm_tensor* out) {
  return guarded(__func__, [&] {
    not_null(out, "out");
    *out = new_handle(nnvm::zeros(shape_of(shape, ndim), dtype_of(dtype)));
  });
}

nnvm_status nnvm_tensor_full(const int64_t* shape, int64_t ndim, double value, nnvm_dtype dtype, nnvm_tensor* out) {
  return guarded(__func__, [&] {
    not_null(out, "out");
    *out = new_handle(nnvm::full(shape_of(shape, ndim), value, nnvm::TensorOptions(dtype_of(dtype))));
  });
}

nnvm_status nnvm_tensor_randn(const int64_t* shape, int64_t ndim, nnvm_dtype dtype, nnvm_tensor* out) {
  return guarded(__func__, [&] {
    not_null(out, "out");
    *out = new_handle(nnvm::randn(shape_of(shape, ndim), dtype_of(dtype)));
  });
}

nnvm_status nnvm_manual_seed(uint64_t seed) {
  return guarded(__func__, [&] { nnvm::manual_seed(seed); });
}

void nnvm_tensor_free(nnvm_tensor tensor) { delete tensor; }

nnvm_status nnvm_tensor_ndim(nnvm_tensor tensor, int64_t* ndim) {
  return guarded(__func__, [&] { *not_null(ndim, "ndim") = tensor_of(tensor).dim(); });
}

nnvm_status nnvm_tensor_shape(nnvm_tensor tensor, int64_t* sizes, int64_t capacity) {
  return guarded(__func__, [&] {
    const Tensor& t = tensor_of(tensor);
    if (capacity < t.dim()) invalid(absl::StrCat("capacity ", capacity, " is less than the tensor's ", t.dim(), " dims"));
    if (t.dim() > 0) std::copy(t.sizes().begin(), t.sizes().end(), not_null(sizes, "sizes"));
  });
}

nnvm_status nnvm_tensor_numel(nnvm_tensor tensor, int64_t* numel) {
  return guarded(__func__, [&] { *not_null(numel, "numel") = tensor_of(tensor).numel(); });
}

nnvm_status nnvm_tensor_dtype(nnvm_tensor tensor, nnvm_dtype* dtype) {
  return guarded(__func__, [&] { *not_null(dtype, "dtype") = nnvm_dtype(tensor_of(tensor).dtype()); });
}

nnvm_status nnvm_tensor_copy_to(nnvm_tensor tensor, void* data, size_t bytes) {
  return guarded(__func__, [&] {
    const Tensor& t = tensor_of(tensor);
    check_bytes(t, bytes);
    if (bytes == 0) return;
    Tensor c = t.contiguous();
    std::memcpy(not_null(data, "data"), c.data_ptr(), bytes);
  });
}

nnvm_status nnvm_tensor_copy_from(nnvm_tensor tensor, const void* data, size_t bytes) {
  return guarded(__func__, [&] {
    const Tensor& t = tensor_of(tensor);
    check_bytes(t, bytes);
    if (bytes == 0) return;
    not_null(data, "data");
    if (nnvm::is_quantized(t.dtype())) invalid("a quantized tensor's values are written by ops, not from buffers");
    Tensor src = nnvm::empty(t.sizes(), t.dtype());
    std::memcpy(src.data_ptr(), data, bytes);
    nnvm::NoGradGuard no_grad;
    t.copy_(src);
  });
}

nnvm_status nnvm_tensor_item(nnvm_tensor tensor, double* value) {
  return guarded(__func__, [&] {
    not_null(value, "value");
    *value = tensor_of(tensor).item().to_double();
  });
}

nnvm_status nnvm_tensor_to(nnvm_tensor tensor, nnvm_dtype dtype, nnvm_tensor* out) {
  return guarded(__func__, [&] {
    not_null(out, "out");
    *out = new_handle(tensor_of(tensor).to(dtype_of(dtype)));
  });
}

nnvm_status nnvm_tensor_str(nnvm_tensor tensor, char* text, size_t capacity, size_t* needed) {
  return guarded(__func__, [&] {
    std::ostringstream os;
    os << tensor_of(tensor);
    write_text(os.str(), text, capacity, needed);
  });
}

// ---- ops ----

nnvm_status nnvm_op(const char* op_type, const nnvm_tensor* inputs, size_t num_inputs, const nnvm_attr* attrs,
                    size_t num_attrs, nnvm_tensor* outputs, size_t num_outputs) {
  return guarded(__func__, [&] {
    std::string type = not_null(op_type, "op_type");
    if (num_inputs > 0) not_null(inputs, "inputs");
    if (num_attrs > 0) not_null(attrs, "attrs");
    if (num_outputs > 0) not_null(outputs, "outputs");
    std::vector<const Tensor*> in;
    std::vector<Tensor> args;
    for (size_t i = 0; i < num_inputs; ++i) {
      in.push_back(inputs[i] ? &inputs[i]->value : nullptr);
      if (inputs[i]) args.push_back(inputs[i]->value);
    }
    std::map<std::string, nnvm::Attribute> attributes;
    for (size_t k = 0; k < num_attrs; ++k) {
      std::string name = not_null(attrs[k].name, "an attribute's name");
      if (!attributes.emplace(name, attribute_of(attrs[k])).second)
        invalid(absl::StrCat("attribute '", name, "' is given twice"));
    }
    nnvm::Model model = op_models().get(type, in, attributes, num_outputs);
    write_handles(model(args), outputs, num_outputs, type.c_str());
  });
}

size_t nnvm_op_count(void) { return nnvm::model_op_types().size(); }

const char* nnvm_op_type(size_t index) {
  static const std::vector<std::string>* types = new std::vector<std::string>(nnvm::model_op_types());
  return index < types->size() ? (*types)[index].c_str() : nullptr;
}

// ---- autograd ----

nnvm_status nnvm_tensor_set_requires_grad(nnvm_tensor tensor, int requires_grad) {
  return guarded(__func__, [&] { tensor_of(tensor).requires_grad_(requires_grad != 0); });
}

nnvm_status nnvm_tensor_requires_grad(nnvm_tensor tensor, int* requires_grad) {
  return guarded(__func__, [&] { *not_null(requires_grad, "requires_grad") = tensor_of(tensor).requires_grad(); });
}

nnvm_status nnvm_tensor_backward(nnvm_tensor tensor, nnvm_tensor gradient, int retain_graph) {
  return guarded(__func__, [&] {
    Tensor g = gradient ? gradient->value : Tensor();
    tensor_of(tensor).backward(g, retain_graph != 0);
  });
}

nnvm_status nnvm_tensor_grad(nnvm_tensor tensor, nnvm_tensor* grad) {
  return guarded(__func__, [&] {
    not_null(grad, "grad");
    const Tensor& g = tensor_of(tensor).grad();
    *grad = g.defined() ? new_handle(g) : nullptr;
  });
}

nnvm_status nnvm_tensor_zero_grad(nnvm_tensor tensor) {
  return guarded(__func__, [&] { tensor_of(tensor).mutable_grad() = Tensor(); });
}

nnvm_status nnvm_tensor_detach(nnvm_tensor tensor, nnvm_tensor* out) {
  return guarded(__func__, [&] {
    not_null(out, "out");
    *out = new_handle(tensor_of(tensor).detach());
  });
}

nnvm_status nnvm_set_grad_enabled(int enabled) {
  return guarded(__func__, [&] { nnvm::autograd::set_grad_enabled(enabled != 0); });
}

int nnvm_is_grad_enabled(void) { return nnvm::autograd::grad_enabled() ? 1 : 0; }

// ---- optimizers ----

namespace {
template <class Make> nnvm_status make_optimizer(const char* function, const nnvm_tensor* params, size_t n,
                                                 nnvm_optimizer* out, Make make) {
  return guarded(function, [&] {
    not_null(out, "out");
    std::vector<Tensor> tensors = tensors_of(params, n, "params");
    auto handle = std::make_unique<nnvm_optimizer_s>();
    handle->value = make(std::move(tensors));
    *out = handle.release();
  });
}

nnvm::optim::Optimizer& optimizer_of(nnvm_optimizer o) { return *not_null(o, "optimizer")->value; }
}  // namespace

nnvm_status nnvm_optimizer_sgd(const nnvm_tensor* params, size_t num_params, double lr, double momentum,
                               double weight_decay, nnvm_optimizer* out) {
  return make_optimizer(__func__, params, num_params, out, [&](std::vector<Tensor> p) {
    return std::make_unique<nnvm::optim::SGD>(
        std::move(p), nnvm::optim::SGDOptions(lr).momentum(momentum).weight_decay(weight_decay));
  });
}

nnvm_status nnvm_optimizer_adam(const nnvm_tensor* params, size_t num_params, double lr, double beta1, double beta2,
                                double eps, double weight_decay, nnvm_optimizer* out) {
  return make_optimizer(__func__, params, num_params, out, [&](std::vector<Tensor> p) {
    return std::make_unique<nnvm::optim::Adam>(
        std::move(p),
        nnvm::optim::AdamOptions(lr).betas(std::make_tuple(beta1, beta2)).eps(eps).weight_decay(weight_decay));
  });
}

nnvm_status nnvm_optimizer_step(nnvm_optimizer optimizer) {
  return guarded(__func__, [&] { optimizer_of(optimizer).step(); });
}

nnvm_status nnvm_optimizer_zero_grad(nnvm_optimizer optimizer) {
  return guarded(__func__, [&] { optimizer_of(optimizer).zero_grad(); });
}

nnvm_status nnvm_optimizer_set_lr(nnvm_optimizer optimizer, double lr) {
  return guarded(__func__, [&] {
    for (auto& group : optimizer_of(optimizer).param_groups()) group.options().set_lr(lr);
  });
}

void nnvm_optimizer_free(nnvm_optimizer optimizer) { delete optimizer; }

// ---- modes, threads, caches, memory ----

nnvm_status nnvm_set_mode(nnvm_mode mode) {
  return guarded(__func__, [&] {
    if (mode != NNVM_MODE_EAGER && mode != NNVM_MODE_TRACED) invalid(absl::StrCat("mode ", int(mode), " is not an nnvm_mode"));
    nnvm::set_mode(mode == NNVM_MODE_EAGER ? nnvm::Mode::Eager : nnvm::Mode::Traced);
  });
}

nnvm_mode nnvm_get_mode(void) { return nnvm::mode() == nnvm::Mode::Eager ? NNVM_MODE_EAGER : NNVM_MODE_TRACED; }

nnvm_status nnvm_mark_step(void) {
  return guarded(__func__, [&] { nnvm::mark_step(); });
}

nnvm_status nnvm_set_num_threads(int threads) {
  return guarded(__func__, [&] {
    if (threads < 1) invalid(absl::StrCat("threads is ", threads, "; at least 1"));
    nnvm::set_num_threads(threads);
  });
}

int nnvm_get_num_threads(void) { return nnvm::get_num_threads(); }

nnvm_status nnvm_get_cache_stats(nnvm_cache_stats* stats) {
  return guarded(__func__, [&] {
    not_null(stats, "stats");
    nnvm::CacheStats s = nnvm::cache_stats();
    auto counts = [](const auto& c) {
      return nnvm_cache_counts{c.hits, c.misses, c.compiles, c.evictions, c.entries, c.compile_seconds};
    };
    *stats = nnvm_cache_stats{counts(s.trace), counts(s.kernels), s.trace.first_sight_compiles,
                              int64_t(s.trace.classes.size())};
  });
}

nnvm_status nnvm_memory_summary(char* text, size_t capacity, size_t* needed) {
  return guarded(__func__, [&] { write_text(nnvm::memory_summary(), text, capacity, needed); });
}

// ---- plugins ----

nnvm_status nnvm_load_plugin(const char* path) {
  return guarded(__func__, [&] { nnvm::load_plugin(not_null(path, "path")); });
}

// ---- profiling ----

nnvm_status nnvm_profiler_start(nnvm_profiler* out) {
  return guarded(__func__, [&] {
    not_null(out, "out");
    *out = new nnvm_profiler_s;
  });
}

nnvm_status nnvm_profiler_stop(nnvm_profiler profiler) {
  return guarded(__func__, [&] { not_null(profiler, "profiler")->value.stop(); });
}

nnvm_status nnvm_profiler_export_chrome_trace(nnvm_profiler profiler, const char* path) {
  return guarded(__func__, [&] { not_null(profiler, "profiler")->value.export_chrome_trace(not_null(path, "path")); });
}

nnvm_status nnvm_profiler_table(nnvm_profiler profiler, size_t row_limit, char* text, size_t capacity,
                                size_t* needed) {
  return guarded(__func__, [&] {
    write_text(not_null(profiler, "profiler")->value.key_averages().table(row_limit), text, capacity, needed);
  });
}

void nnvm_profiler_free(nnvm_profiler profiler) { delete profiler; }

// ---- models ----

nnvm_status nnvm_model_load(const char* path, nnvm_model* out) {
  return guarded(__func__, [&] {
    not_null(out, "out");
    nnvm::Model m = nnvm::load_model(not_null(path, "path"));
    *out = new nnvm_model_s{std::move(m)};
  });
}

void nnvm_model_free(nnvm_model model) { delete model; }

size_t nnvm_model_num_inputs(nnvm_model model) { return model ? model->value.inputs().size() : 0; }
size_t nnvm_model_num_outputs(nnvm_model model) { return model ? model->value.outputs().size() : 0; }

const char* nnvm_model_input_name(nnvm_model model, size_t index) {
  if (model == nullptr || index >= model->value.inputs().size()) return nullptr;
  return model->value.inputs()[index].name.c_str();
}

const char* nnvm_model_output_name(nnvm_model model, size_t index) {
  if (model == nullptr || index >= model->value.outputs().size()) return nullptr;
  return model->value.outputs()[index].name.c_str();
}

nnvm_status nnvm_model_run(nnvm_model model, const nnvm_tensor* inputs, size_t num_inputs, nnvm_tensor* outputs,
                           size_t num_outputs) {
  return guarded(__func__, [&] {
    const nnvm::Model& m = model_of(model);
    if (num_outputs != m.outputs().size())
      invalid(absl::StrCat("the model has ", m.outputs().size(), " outputs; the call asked for ", num_outputs));
    write_handles(m(tensors_of(inputs, num_inputs, "inputs")), outputs, num_outputs, "the model");
  });
}

nnvm_status nnvm_model_parameters(nnvm_model model, nnvm_tensor* params, size_t capacity, size_t* count) {
  return guarded(__func__, [&] {
    not_null(count, "count");
    std::vector<Tensor> p = model_of(model).parameters();
    size_t n = std::min(capacity, p.size());
    if (n > 0) not_null(params, "params");
    *count = p.size();
    for (size_t i = 0; i < n; ++i) params[i] = new_handle(p[i]);
  });
}

nnvm_status nnvm_model_save_onnx(nnvm_model model, const nnvm_tensor* example_inputs, size_t num_inputs,
                                 const char* path) {
  return guarded(__func__, [&] {
    nnvm::save_onnx(model_of(model), tensors_of(example_inputs, num_inputs, "example_inputs"), not_null(path, "path"));
  });
}

