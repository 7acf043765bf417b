/* nnvm's C API: tensors, ops by name, autograd, optimizers, modes, cache
 * statistics and models, for C programs and for other languages' foreign
 * function interfaces (Python's ctypes, Rust, Go, Julia). docs/C_API.md.
 *
 *   nnvm_tensor x, y;
 *   int64_t shape[2] = {2, 3};
 *   float data[6] = {1, 2, 3, 4, 5, 6};
 *   if (nnvm_tensor_from_data(data, shape, 2, NNVM_FLOAT32, &x) != NNVM_OK)
 *     fprintf(stderr, "%s\n", nnvm_last_error());
 *   nnvm_op("Relu", &x, 1, NULL, 0, &y, 1);
 *   nnvm_tensor_free(x);
 *   nnvm_tensor_free(y);
 *
 * Every function that can fail returns an nnvm_status; on failure its
 * message is nnvm_last_error() (per thread) and its outputs are untouched.
 * Handles (nnvm_tensor, nnvm_optimizer, nnvm_model) are owned by the caller
 * and released by their _free function; a handle returned by a function is
 * new and independent of the handles given to it. Tensors share storage as
 * libtorch's do: a handle to a tensor's gradient sees the gradient that was
 * there when it was taken.
 *
 * The header is C99 and C++; the library is C++20 (libnnvm.so). */
#ifndef NNVM_NNVM_C_H_
#define NNVM_NNVM_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In C++ the enums below have int as their fixed underlying type, so a value
 * a C caller passes outside the listed ones is a value the library can check
 * and refuse (NNVM_INVALID_ARGUMENT), not undefined behaviour; in C they are
 * int-sized enums as usual. */
#ifdef __cplusplus
#define NNVM_ENUM_INT : int
#else
#define NNVM_ENUM_INT
#endif

/* Raised when a function's meaning or a struct's layout changes. */
#define NNVM_C_API_VERSION 1
/* The version the library was built with: a program built against this
 * header should refuse a library whose version differs. */
int nnvm_c_api_version(void);

/* ---- errors ---- */

typedef enum nnvm_status NNVM_ENUM_INT {
  NNVM_OK = 0,
  /* nnvm refused the request: a shape or dtype mismatch, an unknown op, a bad
   * or missing file, an unsupported op in a model. The message names the op,
   * the shapes and what was expected, as nnvm::Error's does in C++. */
  NNVM_ERROR = 1,
  /* The call's own arguments: a null pointer, an enum value out of range, a
   * buffer of the wrong size. */
  NNVM_INVALID_ARGUMENT = 2,
  NNVM_OUT_OF_MEMORY = 3,
  /* Anything else (a bug in nnvm: please report the message). */
  NNVM_INTERNAL = 4
} nnvm_status;

/* The message of this thread's last failure ("" when none has failed). Valid
 * until this thread's next call into the API. */
const char* nnvm_last_error(void);
/* "ok", "error", "invalid argument", "out of memory", "internal error". */
const char* nnvm_status_name(nnvm_status status);

/* ---- dtypes ---- */

typedef enum nnvm_dtype NNVM_ENUM_INT {
  NNVM_BOOL = 0,
  NNVM_UINT8 = 1,
  NNVM_INT8 = 2,
  NNVM_INT32 = 3,
  NNVM_INT64 = 4,
  NNVM_FLOAT16 = 5,
  NNVM_BFLOAT16 = 6,
  NNVM_FLOAT32 = 7,
  NNVM_FLOAT64 = 8,
  NNVM_QINT8 = 9, /* quantized: made by ops, not from buffers */
  NNVM_QUINT8 = 10,
  NNVM_QINT32 = 11
} nnvm_dtype;

/* "float32", "int64", ...; NULL for a value out of range. */
const char* nnvm_dtype_name(nnvm_dtype dtype);
/* Bytes per element (bool 1, float16 2, ...); 0 for a value out of range. */
size_t nnvm_dtype_size(nnvm_dtype dtype);

/* ---- tensors ---- */

typedef struct nnvm_tensor_s* nnvm_tensor;

/* A new tensor holding a copy of `data`: ndim sizes, row-major, elements of
 * `dtype` (a bool is one byte, 0 or 1). `data` may be NULL when the shape
 * has no elements. */
nnvm_status nnvm_tensor_from_data(const void* data, const int64_t* shape, int64_t ndim, nnvm_dtype dtype,
                                  nnvm_tensor* out);
nnvm_status nnvm_tensor_zeros(const int64_t* shape, int64_t ndim, nnvm_dtype dtype, nnvm_tensor* out);
nnvm_status nnvm_tensor_full(const int64_t* shape, int64_t ndim, double value, nnvm_dtype dtype, nnvm_tensor* out);
/* Standard normal samples from the default generator (nnvm_manual_seed). */
nnvm_status nnvm_tensor_randn(const int64_t* shape, int64_t ndim, nnvm_dtype dtype, nnvm_tensor* out);
nnvm_status nnvm_manual_seed(uint64_t seed);
/* Releases the handle (NULL is allowed); the tensor's memory goes when no
 * handle, graph or optimizer holds it any more. */
void nnvm_tensor_free(nnvm_tensor tensor);

nnvm_status nnvm_tensor_ndim(nnvm_tensor tensor, int64_t* ndim);
/* Writes ndim sizes into `sizes`; `capacity` must be at least ndim. */
nnvm_status nnvm_tensor_shape(nnvm_tensor tensor, int64_t* sizes, int64_t capacity);
nnvm_status nnvm_tensor_numel(nnvm_tensor tensor, int64_t* numel);
nnvm_status nnvm_tensor_dtype(nnvm_tensor tensor, nnvm_dtype* dtype);
/* Copies the elements out, row-major; `bytes` must be numel × the dtype's
 * size. Runs whatever recorded work the values depend on (traced mode). */
nnvm_status nnvm_tensor_copy_to(nnvm_tensor tensor, void* data, size_t bytes);
/* Overwrites the elements in place (a parameter's values, say); `bytes` as
 * for copy_to. Not recorded for autograd (as under libtorch's no_grad). */
nnvm_status nnvm_tensor_copy_from(nnvm_tensor tensor, const void* data, size_t bytes);
/* The one element of a tensor with one element, as a double. */
nnvm_status nnvm_tensor_item(nnvm_tensor tensor, double* value);
/* A tensor of another dtype (a new tensor, or the same values when equal). */
nnvm_status nnvm_tensor_to(nnvm_tensor tensor, nnvm_dtype dtype, nnvm_tensor* out);
/* The tensor printed as libtorch prints it. Writes at most `capacity` bytes
 * including the terminating zero and sets *needed (when not NULL) to the
 * size the whole text needs; call with capacity 0 to ask. */
nnvm_status nnvm_tensor_str(nnvm_tensor tensor, char* text, size_t capacity, size_t* needed);

/* ---- ops by name ---- */

/* Ops are named and take attributes as in the ONNX specification
 * (ai.onnx, opset 17; https://onnx.ai/onnx/operators/): "Add", "MatMul",
 * "Gemm" with transB, "Conv" with strides and pads, "Softmax" with axis,
 * "ReduceMean" with axes and keepdims. They run as nnvm::Model runs a graph's
 * nodes: through the public ops, recorded in traced mode, differentiable. */
typedef enum nnvm_attr_kind NNVM_ENUM_INT {
  NNVM_ATTR_INT = 0,
  NNVM_ATTR_FLOAT = 1,
  NNVM_ATTR_STRING = 2,
  NNVM_ATTR_INTS = 3,
  NNVM_ATTR_FLOATS = 4,
  NNVM_ATTR_STRINGS = 5,
  NNVM_ATTR_TENSOR = 6
} nnvm_attr_kind;

typedef struct nnvm_attr {
  const char* name;
  nnvm_attr_kind kind;
  int64_t i;                  /* NNVM_ATTR_INT */
  double f;                   /* NNVM_ATTR_FLOAT */
  const char* s;              /* NNVM_ATTR_STRING */
  const int64_t* ints;        /* NNVM_ATTR_INTS, `count` of them */
  const double* floats;       /* NNVM_ATTR_FLOATS */
  const char* const* strings; /* NNVM_ATTR_STRINGS */
  size_t count;
  nnvm_tensor tensor; /* NNVM_ATTR_TENSOR */
} nnvm_attr;

static inline nnvm_attr nnvm_attr_int(const char* name, int64_t value) {
  nnvm_attr a = {name, NNVM_ATTR_INT, value, 0, NULL, NULL, NULL, NULL, 0, NULL};
  return a;
}
static inline nnvm_attr nnvm_attr_float(const char* name, double value) {
  nnvm_attr a = {name, NNVM_ATTR_FLOAT, 0, value, NULL, NULL, NULL, NULL, 0, NULL};
  return a;
}
static inline nnvm_attr nnvm_attr_string(const char* name, const char* value) {
  nnvm_attr a = {name, NNVM_ATTR_STRING, 0, 0, value, NULL, NULL, NULL, 0, NULL};
  return a;
}
static inline nnvm_attr nnvm_attr_ints(const char* name, const int64_t* values, size_t count) {
  nnvm_attr a = {name, NNVM_ATTR_INTS, 0, 0, NULL, values, NULL, NULL, count, NULL};
  return a;
}
static inline nnvm_attr nnvm_attr_floats(const char* name, const double* values, size_t count) {
  nnvm_attr a = {name, NNVM_ATTR_FLOATS, 0, 0, NULL, NULL, values, NULL, count, NULL};
  return a;
}
static inline nnvm_attr nnvm_attr_strings(const char* name, const char* const* values, size_t count) {
  nnvm_attr a = {name, NNVM_ATTR_STRINGS, 0, 0, NULL, NULL, NULL, values, count, NULL};
  return a;
}
static inline nnvm_attr nnvm_attr_tensor(const char* name, nnvm_tensor value) {
  nnvm_attr a = {name, NNVM_ATTR_TENSOR, 0, 0, NULL, NULL, NULL, NULL, 0, value};
  return a;
}

/* Runs op `op_type` on `num_inputs` inputs (a NULL handle is an absent
 * optional input) and writes `num_outputs` new handles to `outputs` (the
 * node's outputs, in the specification's order). */
nnvm_status nnvm_op(const char* op_type, const nnvm_tensor* inputs, size_t num_inputs, const nnvm_attr* attrs,
                    size_t num_attrs, nnvm_tensor* outputs, size_t num_outputs);
/* The op types nnvm_op runs, sorted: nnvm_op_type(i) for i < nnvm_op_count()
 * (NULL past the end). */
size_t nnvm_op_count(void);
const char* nnvm_op_type(size_t index);

/* ---- autograd ---- */

nnvm_status nnvm_tensor_set_requires_grad(nnvm_tensor tensor, int requires_grad);
nnvm_status nnvm_tensor_requires_grad(nnvm_tensor tensor, int* requires_grad);
/* Gradients of `tensor` (a scalar, or with `gradient` of its shape; gradient
 * may be NULL for a scalar) into the .grad of every leaf that requires grad. */
nnvm_status nnvm_tensor_backward(nnvm_tensor tensor, nnvm_tensor gradient, int retain_graph);
/* A new handle to the leaf's gradient, or *grad = NULL when it has none. */
nnvm_status nnvm_tensor_grad(nnvm_tensor tensor, nnvm_tensor* grad);
/* Drops the leaf's gradient (libtorch's zero_grad with set_to_none). */
nnvm_status nnvm_tensor_zero_grad(nnvm_tensor tensor);
/* The same values, cut from the graph. */
nnvm_status nnvm_tensor_detach(nnvm_tensor tensor, nnvm_tensor* out);
/* Whether ops record for autograd in this thread (libtorch's GradMode). */
nnvm_status nnvm_set_grad_enabled(int enabled);
int nnvm_is_grad_enabled(void);

/* ---- optimizers ---- */

typedef struct nnvm_optimizer_s* nnvm_optimizer;

/* libtorch's SGD and Adam over `num_params` parameter tensors. */
nnvm_status nnvm_optimizer_sgd(const nnvm_tensor* params, size_t num_params, double lr, double momentum,
                               double weight_decay, nnvm_optimizer* out);
nnvm_status nnvm_optimizer_adam(const nnvm_tensor* params, size_t num_params, double lr, double beta1, double beta2,
                                double eps, double weight_decay, nnvm_optimizer* out);
nnvm_status nnvm_optimizer_step(nnvm_optimizer optimizer);
nnvm_status nnvm_optimizer_zero_grad(nnvm_optimizer optimizer);
nnvm_status nnvm_optimizer_set_lr(nnvm_optimizer optimizer, double lr);
void nnvm_optimizer_free(nnvm_optimizer optimizer);

/* ---- modes, threads, caches, memory ---- */

typedef enum nnvm_mode NNVM_ENUM_INT { NNVM_MODE_EAGER = 0, NNVM_MODE_TRACED = 1 } nnvm_mode;

/* Eager runs each op as it is called; traced records ops and runs them fused
 * and compiled when values are read (docs/TRACE.md). Process-wide; the
 * default is NNVM_MODE (environment), else traced. */
nnvm_status nnvm_set_mode(nnvm_mode mode);
nnvm_mode nnvm_get_mode(void);
/* Ends the current trace (libtorch/XLA's mark_step): runs what is recorded. */
nnvm_status nnvm_mark_step(void);
nnvm_status nnvm_set_num_threads(int threads);
int nnvm_get_num_threads(void);

typedef struct nnvm_cache_counts {
  int64_t hits;
  int64_t misses;
  int64_t compiles;
  int64_t evictions;
  int64_t entries;
  double compile_seconds;
} nnvm_cache_counts;

typedef struct nnvm_cache_stats {
  nnvm_cache_counts trace;   /* trace signature -> compiled plan */
  nnvm_cache_counts kernels; /* fusion group -> compiled kernel */
  int64_t first_sight_compiles;
  int64_t shape_classes;
} nnvm_cache_stats;

/* What the two caches have done since the process started. */
nnvm_status nnvm_get_cache_stats(nnvm_cache_stats* stats);
/* The CPU allocator's table (as nnvm::memory_summary()); text as for
 * nnvm_tensor_str. */
nnvm_status nnvm_memory_summary(char* text, size_t capacity, size_t* needed);

/* ---- plugins (docs/PLUGINS.md) ---- */

/* Loads a plugin library (nnvm::load_plugin): its ops, passes and backends,
 * all or none. Loading one path again does nothing. */
nnvm_status nnvm_load_plugin(const char* path);

/* ---- profiling (docs/PROFILING.md) ---- */

typedef struct nnvm_profiler_s* nnvm_profiler;

/* Starts recording (nnvm::profiler::Session): ops, flushes, cache lookups,
 * compiles, kernels, memory. */
nnvm_status nnvm_profiler_start(nnvm_profiler* out);
/* Stops recording; the events stay until the handle is freed. */
nnvm_status nnvm_profiler_stop(nnvm_profiler profiler);
/* Chrome's trace event JSON (Perfetto, chrome://tracing). */
nnvm_status nnvm_profiler_export_chrome_trace(nnvm_profiler profiler, const char* path);
/* The summary table (key_averages().table(row_limit); 0: every row); text
 * as for nnvm_tensor_str. */
nnvm_status nnvm_profiler_table(nnvm_profiler profiler, size_t row_limit, char* text, size_t capacity,
                                size_t* needed);
/* Stops it if it still records, and releases it. */
void nnvm_profiler_free(nnvm_profiler profiler);

/* ---- models (ONNX, TensorFlow .pb) ---- */

typedef struct nnvm_model_s* nnvm_model;

/* Reads and checks a model file (nnvm::load_model). */
nnvm_status nnvm_model_load(const char* path, nnvm_model* out);
void nnvm_model_free(nnvm_model model);
size_t nnvm_model_num_inputs(nnvm_model model);
size_t nnvm_model_num_outputs(nnvm_model model);
/* Names owned by the model; NULL for an index out of range. */
const char* nnvm_model_input_name(nnvm_model model, size_t index);
const char* nnvm_model_output_name(nnvm_model model, size_t index);
/* Runs the model on its inputs in graph-input order; writes num_outputs
 * handles, which must equal nnvm_model_num_outputs. */
nnvm_status nnvm_model_run(nnvm_model model, const nnvm_tensor* inputs, size_t num_inputs, nnvm_tensor* outputs,
                           size_t num_outputs);
/* The model's floating-point weights (fine-tune them with an optimizer):
 * writes min(count, capacity) handles and sets *count to how many there are. */
nnvm_status nnvm_model_parameters(nnvm_model model, nnvm_tensor* params, size_t capacity, size_t* count);
/* Writes the model, with its current weights, as an ONNX file. */
nnvm_status nnvm_model_save_onnx(nnvm_model model, const nnvm_tensor* example_inputs, size_t num_inputs,
                                 const char* path);

#ifdef __cplusplus
}
#endif

#undef NNVM_ENUM_INT

#endif /* NNVM_NNVM_C_H_ */
