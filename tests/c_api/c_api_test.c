/* The C API from C (not C++): tensors, ops by name, errors, autograd, an
 * optimizer training a small network, modes, cache statistics and a model
 * file. Exits non-zero naming the first check that failed.
 *
 *   c_api_test MODEL.pb OUT_DIR [PLUGIN.so] */
#include "nnvm/nnvm_c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                \
    }                                                                            \
  } while (0)

/* A call that must succeed; on failure prints nnvm's message and stops. */
#define OK(call)                                                                                           \
  do {                                                                                                     \
    nnvm_status status_ = (call);                                                                          \
    if (status_ != NNVM_OK) {                                                                              \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, nnvm_status_name(status_), \
              nnvm_last_error());                                                                          \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)

/* A call that must fail with `expected`, its message containing `text`. */
static void expect_failure(nnvm_status status, nnvm_status expected, const char* text, int line) {
  if (status != expected) {
    fprintf(stderr, "line %d: expected status '%s', got '%s' (%s)\n", line, nnvm_status_name(expected),
            nnvm_status_name(status), nnvm_last_error());
    ++failures;
  } else if (strstr(nnvm_last_error(), text) == NULL) {
    fprintf(stderr, "line %d: message '%s' does not contain '%s'\n", line, nnvm_last_error(), text);
    ++failures;
  }
}
#define FAILS(call, expected, text) expect_failure((call), (expected), (text), __LINE__)

static nnvm_tensor op1(const char* type, nnvm_tensor a, nnvm_tensor b) {
  nnvm_tensor inputs[2] = {a, b};
  nnvm_tensor out = NULL;
  OK(nnvm_op(type, inputs, b ? 2 : 1, NULL, 0, &out, 1));
  return out;
}

static void test_tensors(void) {
  int64_t shape[2] = {2, 3};
  float data[6] = {1, -2, 3, -4, 5, -6};
  nnvm_tensor x;
  OK(nnvm_tensor_from_data(data, shape, 2, NNVM_FLOAT32, &x));
  int64_t ndim = 0, sizes[4] = {0}, numel = 0;
  nnvm_dtype dtype;
  OK(nnvm_tensor_ndim(x, &ndim));
  OK(nnvm_tensor_shape(x, sizes, 4));
  OK(nnvm_tensor_numel(x, &numel));
  OK(nnvm_tensor_dtype(x, &dtype));
  CHECK(ndim == 2 && sizes[0] == 2 && sizes[1] == 3 && numel == 6 && dtype == NNVM_FLOAT32);
  CHECK(strcmp(nnvm_dtype_name(dtype), "float32") == 0 && nnvm_dtype_size(NNVM_BFLOAT16) == 2);

  nnvm_tensor y = op1("Relu", x, NULL);
  float out[6];
  OK(nnvm_tensor_copy_to(y, out, sizeof out));
  for (int i = 0; i < 6; ++i) CHECK(out[i] == (data[i] > 0 ? data[i] : 0));

  /* Gemm with an attribute: x [2,3] times w [4,3] transposed, plus c. */
  int64_t wshape[2] = {4, 3};
  float w[12];
  for (int i = 0; i < 12; ++i) w[i] = (float)(i % 5) - 2;
  nnvm_tensor wt, c, g;
  OK(nnvm_tensor_from_data(w, wshape, 2, NNVM_FLOAT32, &wt));
  int64_t cshape[1] = {4};
  OK(nnvm_tensor_full(cshape, 1, 0.5, NNVM_FLOAT32, &c));
  nnvm_tensor gemm_in[3] = {x, wt, c};
  nnvm_attr trans_b = nnvm_attr_int("transB", 1);
  OK(nnvm_op("Gemm", gemm_in, 3, &trans_b, 1, &g, 1));
  float gout[8];
  OK(nnvm_tensor_copy_to(g, gout, sizeof gout));
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 4; ++k) {
      float want = 0.5f;
      for (int j = 0; j < 3; ++j) want += data[r * 3 + j] * w[k * 3 + j];
      CHECK(fabsf(gout[r * 4 + k] - want) < 1e-5f);
    }

  /* A reduction with list attributes, and item(). */
  int64_t axes[2] = {0, 1};
  nnvm_attr reduce_attrs[2] = {nnvm_attr_ints("axes", axes, 2), nnvm_attr_int("keepdims", 0)};
  nnvm_tensor s;
  OK(nnvm_op("ReduceSum", &x, 1, reduce_attrs, 2, &s, 1));
  double total = 0;
  OK(nnvm_tensor_item(s, &total));
  CHECK(total == -3.0);

  /* Two outputs: TopK. */
  int64_t kshape[1] = {1};
  int64_t kvalue = 2;
  nnvm_tensor k, topk_in[2], topk_out[2] = {NULL, NULL};
  OK(nnvm_tensor_from_data(&kvalue, kshape, 1, NNVM_INT64, &k));
  topk_in[0] = x;
  topk_in[1] = k;
  OK(nnvm_op("TopK", topk_in, 2, NULL, 0, topk_out, 2));
  int64_t index_sizes[2];
  OK(nnvm_tensor_shape(topk_out[1], index_sizes, 2));
  nnvm_dtype index_dtype;
  OK(nnvm_tensor_dtype(topk_out[1], &index_dtype));
  CHECK(index_sizes[0] == 2 && index_sizes[1] == 2 && index_dtype == NNVM_INT64);

  /* Text: asked for its size first, then written; a short buffer is cut. */
  size_t needed = 0;
  OK(nnvm_tensor_str(s, NULL, 0, &needed));
  char* text = malloc(needed);
  OK(nnvm_tensor_str(s, text, needed, NULL));
  CHECK(strlen(text) + 1 == needed && strstr(text, "-3") != NULL);
  char small[4];
  OK(nnvm_tensor_str(s, small, sizeof small, NULL));
  CHECK(strlen(small) == 3);
  free(text);

  /* Writing values in place; converting. */
  float ones[6] = {1, 1, 1, 1, 1, 1};
  OK(nnvm_tensor_copy_from(y, ones, sizeof ones));
  nnvm_tensor yd;
  OK(nnvm_tensor_to(y, NNVM_FLOAT64, &yd));
  double dout[6];
  OK(nnvm_tensor_copy_to(yd, dout, sizeof dout));
  CHECK(dout[0] == 1.0 && dout[5] == 1.0);

  size_t count = nnvm_op_count();
  CHECK(count > 100);
  int has_conv = 0;
  for (size_t i = 0; i < count; ++i) has_conv |= strcmp(nnvm_op_type(i), "Conv") == 0;
  CHECK(has_conv && nnvm_op_type(count) == NULL);

  nnvm_tensor handles[] = {x, y, wt, c, g, s, k, topk_out[0], topk_out[1], yd};
  for (size_t i = 0; i < sizeof handles / sizeof handles[0]; ++i) nnvm_tensor_free(handles[i]);
  nnvm_tensor_free(NULL);
}

static void test_errors(void) {
  int64_t shape[2] = {2, 3};
  nnvm_tensor a, b, out = NULL;
  OK(nnvm_tensor_zeros(shape, 2, NNVM_FLOAT32, &a));
  OK(nnvm_tensor_zeros(shape, 2, NNVM_FLOAT32, &b));
  nnvm_tensor both[2] = {a, b};
  /* nnvm's own errors name the op, the shapes and what was expected. */
  FAILS(nnvm_op("MatMul", both, 2, NULL, 0, &out, 1), NNVM_ERROR, "[2, 3]");
  FAILS(nnvm_op("NoSuchOp", both, 2, NULL, 0, &out, 1), NNVM_ERROR, "NoSuchOp");
  nnvm_attr bad_axis = nnvm_attr_int("axis", 7);
  FAILS(nnvm_op("Softmax", &a, 1, &bad_axis, 1, &out, 1), NNVM_ERROR, "Softmax");
  nnvm_attr wrong_kind = nnvm_attr_string("axis", "one");
  FAILS(nnvm_op("Softmax", &a, 1, &wrong_kind, 1, &out, 1), NNVM_ERROR, "axis");
  FAILS(nnvm_op("Relu", &a, 1, NULL, 0, &out, 2), NNVM_ERROR, "Relu");
  CHECK(out == NULL); /* outputs untouched on failure */
  /* The call's own arguments. */
  FAILS(nnvm_op(NULL, both, 2, NULL, 0, &out, 1), NNVM_INVALID_ARGUMENT, "op_type is NULL");
  FAILS(nnvm_tensor_ndim(NULL, NULL), NNVM_INVALID_ARGUMENT, "NULL");
  FAILS(nnvm_tensor_zeros(shape, 2, (nnvm_dtype)99, &out), NNVM_INVALID_ARGUMENT, "99");
  int64_t negative[1] = {-1};
  FAILS(nnvm_tensor_zeros(negative, 1, NNVM_FLOAT32, &out), NNVM_INVALID_ARGUMENT, "-1");
  float buffer[5];
  FAILS(nnvm_tensor_copy_to(a, buffer, sizeof buffer), NNVM_INVALID_ARGUMENT, "24");
  int64_t sizes[1];
  FAILS(nnvm_tensor_shape(a, sizes, 1), NNVM_INVALID_ARGUMENT, "capacity");
  nnvm_model model = NULL;
  FAILS(nnvm_model_load("/nonexistent/model.onnx", &model), NNVM_ERROR, "/nonexistent/model.onnx");
  CHECK(model == NULL);
  /* A failure's message stays until the thread's next failure. */
  OK(nnvm_tensor_numel(a, &shape[0]));
  CHECK(strstr(nnvm_last_error(), "/nonexistent/model.onnx") != NULL);
  /* An integer tensor cannot require grad. */
  nnvm_tensor i;
  OK(nnvm_tensor_zeros(shape, 2, NNVM_INT64, &i));
  FAILS(nnvm_tensor_set_requires_grad(i, 1), NNVM_ERROR, "int64");
  nnvm_tensor_free(i);
  nnvm_tensor_free(a);
  nnvm_tensor_free(b);
}

/* Mean squared error of a small network: y = relu(x w1^T + b1) w2^T + b2. */
static nnvm_tensor mse(nnvm_tensor prediction, nnvm_tensor target) {
  nnvm_tensor diff = op1("Sub", prediction, target);
  nnvm_tensor square = op1("Mul", diff, diff);
  nnvm_tensor loss;
  nnvm_attr keep = nnvm_attr_int("keepdims", 0);
  OK(nnvm_op("ReduceMean", &square, 1, &keep, 1, &loss, 1));
  nnvm_tensor_free(diff);
  nnvm_tensor_free(square);
  return loss;
}

static nnvm_tensor linear(nnvm_tensor x, nnvm_tensor w, nnvm_tensor b) {
  nnvm_tensor in[3] = {x, w, b};
  nnvm_attr trans_b = nnvm_attr_int("transB", 1);
  nnvm_tensor out;
  OK(nnvm_op("Gemm", in, 3, &trans_b, 1, &out, 1));
  return out;
}

/* Trains the network to fit y = sin(3 x0) + x1^2 with Adam; returns the
 * ratio of the last loss to the first. */
static double train(int steps) {
  enum { kBatch = 64, kIn = 2, kHidden = 32 };
  float xs[kBatch * kIn], ys[kBatch];
  for (int i = 0; i < kBatch; ++i) {
    xs[i * kIn] = (float)i / kBatch * 2 - 1;
    xs[i * kIn + 1] = (float)((i * 37) % kBatch) / kBatch * 2 - 1;
    ys[i] = sinf(3 * xs[i * kIn]) + xs[i * kIn + 1] * xs[i * kIn + 1];
  }
  int64_t xshape[2] = {kBatch, kIn}, yshape[2] = {kBatch, 1};
  int64_t w1shape[2] = {kHidden, kIn}, b1shape[1] = {kHidden}, w2shape[2] = {1, kHidden}, b2shape[1] = {1};
  nnvm_tensor x, y, params[4];
  OK(nnvm_tensor_from_data(xs, xshape, 2, NNVM_FLOAT32, &x));
  OK(nnvm_tensor_from_data(ys, yshape, 2, NNVM_FLOAT32, &y));
  OK(nnvm_manual_seed(7));
  OK(nnvm_tensor_randn(w1shape, 2, NNVM_FLOAT32, &params[0]));
  OK(nnvm_tensor_zeros(b1shape, 1, NNVM_FLOAT32, &params[1]));
  OK(nnvm_tensor_randn(w2shape, 2, NNVM_FLOAT32, &params[2]));
  OK(nnvm_tensor_zeros(b2shape, 1, NNVM_FLOAT32, &params[3]));
  for (int p = 0; p < 4; ++p) OK(nnvm_tensor_set_requires_grad(params[p], 1));
  int requires = 0;
  OK(nnvm_tensor_requires_grad(params[0], &requires));
  CHECK(requires == 1);
  nnvm_optimizer adam;
  OK(nnvm_optimizer_adam(params, 4, 0.02, 0.9, 0.999, 1e-8, 0.0, &adam));

  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    OK(nnvm_optimizer_zero_grad(adam));
    nnvm_tensor h = linear(x, params[0], params[1]);
    nnvm_tensor a = op1("Relu", h, NULL);
    nnvm_tensor prediction = linear(a, params[2], params[3]);
    nnvm_tensor loss = mse(prediction, y);
    OK(nnvm_tensor_backward(loss, NULL, 0));
    if (step == 0) {
      nnvm_tensor grad = NULL;
      OK(nnvm_tensor_grad(params[0], &grad));
      CHECK(grad != NULL);
      int64_t gsizes[2];
      OK(nnvm_tensor_shape(grad, gsizes, 2));
      CHECK(gsizes[0] == kHidden && gsizes[1] == kIn);
      nnvm_tensor_free(grad);
    }
    OK(nnvm_optimizer_step(adam));
    double value;
    OK(nnvm_tensor_item(loss, &value));
    if (step == 0) first = value;
    last = value;
    nnvm_tensor_free(h);
    nnvm_tensor_free(a);
    nnvm_tensor_free(prediction);
    nnvm_tensor_free(loss);
  }
  /* Without grad, nothing records; zero_grad drops a gradient. */
  OK(nnvm_set_grad_enabled(0));
  CHECK(nnvm_is_grad_enabled() == 0);
  nnvm_tensor h = linear(x, params[0], params[1]);
  OK(nnvm_tensor_requires_grad(h, &requires));
  CHECK(requires == 0);
  nnvm_tensor_free(h);
  OK(nnvm_set_grad_enabled(1));
  OK(nnvm_tensor_zero_grad(params[0]));
  nnvm_tensor grad = (nnvm_tensor)1;
  OK(nnvm_tensor_grad(params[0], &grad));
  CHECK(grad == NULL);

  nnvm_optimizer_free(adam);
  for (int p = 0; p < 4; ++p) nnvm_tensor_free(params[p]);
  nnvm_tensor_free(x);
  nnvm_tensor_free(y);
  printf("loss %.5f -> %.5f after %d steps\n", first, last, steps);
  return last / first;
}

static void test_model(const char* path, const char* out_dir) {
  nnvm_model model;
  OK(nnvm_model_load(path, &model));
  CHECK(nnvm_model_num_inputs(model) == 1 && nnvm_model_num_outputs(model) == 1);
  CHECK(nnvm_model_input_name(model, 0) != NULL && nnvm_model_input_name(model, 1) == NULL);
  int64_t shape[4] = {2, 12, 12, 3};
  nnvm_tensor x, y;
  OK(nnvm_tensor_randn(shape, 4, NNVM_FLOAT32, &x));
  OK(nnvm_model_run(model, &x, 1, &y, 1));
  size_t count = 0;
  OK(nnvm_model_parameters(model, NULL, 0, &count));
  CHECK(count > 0);
  nnvm_tensor* params = calloc(count, sizeof(nnvm_tensor));
  OK(nnvm_model_parameters(model, params, count, &count));
  for (size_t i = 0; i < count; ++i) nnvm_tensor_free(params[i]);
  free(params);

  /* Handed on as ONNX and read back: the same outputs. */
  char onnx_path[4096];
  snprintf(onnx_path, sizeof onnx_path, "%s/c_api_model.onnx", out_dir);
  OK(nnvm_model_save_onnx(model, &x, 1, onnx_path));
  nnvm_model again;
  OK(nnvm_model_load(onnx_path, &again));
  nnvm_tensor y2;
  OK(nnvm_model_run(again, &x, 1, &y2, 1));
  int64_t n = 0;
  OK(nnvm_tensor_numel(y, &n));
  float* a = malloc((size_t)n * sizeof(float));
  float* b = malloc((size_t)n * sizeof(float));
  OK(nnvm_tensor_copy_to(y, a, (size_t)n * sizeof(float)));
  OK(nnvm_tensor_copy_to(y2, b, (size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) CHECK(fabsf(a[i] - b[i]) <= 1e-5f * (1 + fabsf(a[i])));
  free(a);
  free(b);
  nnvm_tensor wrong;
  int64_t wrong_shape[2] = {2, 3};
  OK(nnvm_tensor_zeros(wrong_shape, 2, NNVM_FLOAT32, &wrong));
  FAILS(nnvm_model_run(model, &wrong, 1, &y2, 1), NNVM_ERROR, "[2, 3]");
  nnvm_tensor_free(wrong);
  nnvm_tensor_free(x);
  nnvm_tensor_free(y);
  nnvm_tensor_free(y2);
  nnvm_model_free(model);
  nnvm_model_free(again);
}

/* The profiler's table names the ops the training ran; its trace is a file. */
static void test_profiler(nnvm_profiler profiler, const char* out_dir) {
  size_t needed = 0;
  OK(nnvm_profiler_table(profiler, 0, NULL, 0, &needed));
  char* table = malloc(needed);
  OK(nnvm_profiler_table(profiler, 0, table, needed, NULL));
  CHECK(strncmp(table, "Name", 4) == 0);
  CHECK(strstr(table, "matmul") != NULL && strstr(table, "relu") != NULL);
  free(table);
  char path[4096];
  snprintf(path, sizeof path, "%s/c_api_trace.json", out_dir);
  OK(nnvm_profiler_export_chrome_trace(profiler, path));
  FILE* f = fopen(path, "rb");
  CHECK(f != NULL);
  if (f) {
    char head[16] = {0};
    CHECK(fread(head, 1, 14, f) == 14 && strncmp(head, "{\"traceEvents\"", 14) == 0);
    fclose(f);
    remove(path);
  }
  FAILS(nnvm_profiler_export_chrome_trace(profiler, "/nonexistent/dir/trace.json"), NNVM_ERROR, "/nonexistent/dir");
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: c_api_test MODEL.pb OUT_DIR [PLUGIN.so]\n");
    return 2;
  }
  CHECK(nnvm_c_api_version() == NNVM_C_API_VERSION);
  OK(nnvm_set_num_threads(2));
  CHECK(nnvm_get_num_threads() == 2);
  test_tensors();
  test_errors();

  nnvm_mode mode = nnvm_get_mode();
  nnvm_cache_stats before, after;
  OK(nnvm_get_cache_stats(&before));
  nnvm_profiler profiler;
  OK(nnvm_profiler_start(&profiler));
  CHECK(train(300) < 0.1);
  OK(nnvm_mark_step());
  OK(nnvm_profiler_stop(profiler));
  OK(nnvm_get_cache_stats(&after));
  test_profiler(profiler, argv[2]);
  nnvm_profiler_free(profiler);
  if (mode == NNVM_MODE_TRACED) CHECK(after.trace.hits > before.trace.hits + 100);
  /* The mode switches both ways and the same program trains in the other. */
  OK(nnvm_set_mode(mode == NNVM_MODE_TRACED ? NNVM_MODE_EAGER : NNVM_MODE_TRACED));
  CHECK(nnvm_get_mode() != mode);
  CHECK(train(100) < 0.5);
  OK(nnvm_set_mode(mode));
  FAILS(nnvm_set_mode((nnvm_mode)5), NNVM_INVALID_ARGUMENT, "5");

  size_t needed = 0;
  OK(nnvm_memory_summary(NULL, 0, &needed));
  char* summary = malloc(needed);
  OK(nnvm_memory_summary(summary, needed, NULL));
  CHECK(strstr(summary, "Allocated memory") != NULL);
  free(summary);

  test_model(argv[1], argv[2]);
  if (argc == 4) {
    OK(nnvm_load_plugin(argv[3]));
    OK(nnvm_load_plugin(argv[3])); /* a second time: nothing more */
  }
  FAILS(nnvm_load_plugin("/nonexistent/libplugin.so"), NNVM_ERROR, "/nonexistent/libplugin.so");
  FAILS(nnvm_load_plugin(NULL), NNVM_INVALID_ARGUMENT, "path is NULL");
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  else printf("all checks passed\n");
  return failures ? 1 : 0;
}
