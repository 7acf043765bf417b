#include "nnvm/jit/rowwise_jit.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/kernels/cpu/loops.h"
#include "nnvm/kernels/cpu/row_sums.h"

namespace nnvm::jit {

namespace {

std::atomic<int64_t> compiles{0};

// Elements per parallel task: a few rows of L2-resident work.
constexpr int64_t kTaskElements = 32768;

int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, kTaskElements / std::max<int64_t>(cols, 1)); }

// A tensor as rows of its trailing `k` dims: each row unit-stride, the rows
// one stride apart (elements). None when the layout is not that.
struct RowLayout {
  int64_t rows = 1, cols = 1, stride = 0;
};
std::optional<RowLayout> row_layout(const Tensor& x, int64_t k) {
  const IntArrayRef sizes = x.sizes(), strides = x.strides();
  const int64_t rank = int64_t(sizes.size());
  RowLayout r;
  int64_t expect = 1;
  for (int64_t d = rank - 1; d >= rank - k; --d) {
    if (sizes[size_t(d)] != 1 && strides[size_t(d)] != expect) return std::nullopt;
    expect *= sizes[size_t(d)];
    r.cols *= sizes[size_t(d)];
  }
  r.stride = r.cols;
  bool first = true;
  int64_t next = 0;
  for (int64_t d = rank - k - 1; d >= 0; --d) {
    const int64_t size = sizes[size_t(d)], stride = strides[size_t(d)];
    r.rows *= size;
    if (size == 1) continue;
    if (!first && stride != next) return std::nullopt;
    if (first) r.stride = stride;
    first = false;
    next = stride * size;
  }
  return r;
}

const char* bytes_of(const Tensor& t) { return static_cast<const char*>(t.data_ptr()); }

}  // namespace

int64_t rowwise_compiles() { return compiles.load(); }
int64_t rowwise_runs() { return RowwiseJit::runs(); }

CompiledRowwise::CompiledRowwise(const x86::RowwiseSpec& spec, Isa isa) : spec_(spec), isa_(isa), kernel_(spec, isa) {
  compiles.fetch_add(1);
}

std::string CompiledRowwise::describe() const {
  return absl::StrCat("x86 ", isa_name(isa_), " rowwise ", spec_.name(), " ", kernel_.code_bytes(), " bytes");
}

const std::string& CompiledRowwise::declined() const {
  static const std::string none;
  return none;
}

std::string CompiledRowwise::machine_code() const { return hex_dump(kernel_.entry(), kernel_.code_bytes()); }

struct RowwiseLaunch {
  const x86::RowwiseKernel* kernel;
  x86::RowwiseCall call;  // every field but the pointers
  int64_t rows;
};

bool RowwiseJit::handles(const std::string& op) {
  return op == "softmax" || op == "log_softmax" || op == "layer_norm" || op == "layer_norm_backward" ||
         op == "cross_entropy" || op == "cross_entropy_backward" || op == "rms_norm" || op == "rms_norm_backward";
}

RowwiseJit::RowwiseJit(const trace::Trace& t, const trace::FusionGroup& g, const trace::GroupValues& values) {
  const trace::Node& node = t.nodes()[size_t(g.nodes[0])];
  op_ = node.op->name;
  auto index_of = [&](trace::ValueId v) {
    return int32_t(std::find(values.ids.begin(), values.ids.end(), v) - values.ids.begin());
  };
  for (trace::ValueId v : node.inputs) inputs_.push_back(index_of(v));
  for (trace::ValueId v : node.outputs) outputs_.push_back(index_of(v));
  const Attrs& a = node.attrs;
  for (size_t i = 0; i < node.inputs.size() + node.outputs.size() && declined_.empty(); ++i) {
    const trace::ValueId v = i < node.inputs.size() ? node.inputs[i] : node.outputs[i - node.inputs.size()];
    const DType dt = t.value(v).dtype;
    const bool target = op_.rfind("cross_entropy", 0) == 0 && i == (op_ == "cross_entropy" ? 1u : 2u);
    if (dt != (target ? kInt64 : kFloat32))
      declined_ = absl::StrCat("%", v, " is ", std::string(dtype_name(dt)), ": the row kernels compute float32 only");
  }
  const int64_t rank = int64_t(t.value(node.inputs[op_ == "cross_entropy_backward" ? 1 : 0]).shape.size());
  using x86::RowOp;
  if (op_ == "softmax" || op_ == "log_softmax") {
    spec_.op = op_ == "softmax" ? RowOp::kSoftmax : RowOp::kLogSoftmax;
    if (declined_.empty() && wrap_dim(a.i(0), rank, op_) != rank - 1)
      declined_ = absl::StrCat(op_, " along dim ", a.i(0), " of a rank-", rank, " input: the row kernel takes the last");
  } else if (op_ == "layer_norm" || op_ == "layer_norm_backward") {
    spec_.op = op_ == "layer_norm" ? RowOp::kLayerNorm : RowOp::kLayerNormBackward;
    spec_.weight = a.b(1);
    spec_.bias = a.b(2);
  } else if (op_ == "rms_norm" || op_ == "rms_norm_backward") {
    spec_.op = op_ == "rms_norm" ? RowOp::kRmsNorm : RowOp::kRmsNormBackward;
    spec_.weight = a.b(1);
  } else {
    spec_.op = op_ == "cross_entropy" ? RowOp::kRowLogSumExp : RowOp::kCrossEntropyBackward;
    spec_.weight = op_ == "cross_entropy_backward" && a.b(2);
    if (declined_.empty() && rank > 2)
      declined_ = absl::StrCat(op_, " over a rank-", rank, " input: the classes are not the last dim");
  }
}

std::string RowwiseJit::code() const { return variants_code(absl::StrCat("row kernel ", spec_.name(), "\n")); }

const x86::RowwiseKernel& RowwiseJit::kernel(Isa isa) const {
  if (const x86::RowwiseKernel* ready = ready_[size_t(isa)].load(std::memory_order_acquire)) return *ready;
  const x86::RowwiseSpec spec = spec_;
  const std::shared_ptr<const CompiledRowwise> compiled =
      find_variant(std::string(isa_name(isa)), absl::StrCat("x86-", isa_name(isa), "-rowwise-", spec.name()),
                   [&] { return std::make_shared<const CompiledRowwise>(spec, isa); });
  ready_[size_t(isa)].store(&compiled->kernel(), std::memory_order_release);  // the variants keep it
  return compiled->kernel();
}

bool RowwiseJit::run(absl::Span<const trace::ValueId> ids, const std::vector<Tensor>& env, const Attrs& attrs) const {
  if (!declined_.empty()) return false;
  if (active_isa() == Isa::kPortable) return fall_back("the ISA is portable");
  // the operands in place: a copy of each would be two atomic operations
  Operands in, out;
  for (int32_t i : inputs_) in.push_back(&env[size_t(ids[size_t(i)])]);
  for (int32_t i : outputs_) out.push_back(&env[size_t(ids[size_t(i)])]);
  bool ran = false;
  switch (spec_.op) {
    case x86::RowOp::kSoftmax: case x86::RowOp::kLogSoftmax:
      ran = run_rows(ids, *in[0], *out[0], attrs, nullptr, nullptr);
      break;
    case x86::RowOp::kLayerNorm:
      ran = run_rows(ids, *in[0], *out[0], attrs, spec_.weight ? in[1] : nullptr,
                     spec_.bias ? in[1 + spec_.weight] : nullptr);
      break;
    case x86::RowOp::kRmsNorm:
      ran = run_rows(ids, *in[0], *out[0], attrs, spec_.weight ? in[1] : nullptr, nullptr);
      break;
    case x86::RowOp::kLayerNormBackward: case x86::RowOp::kRmsNormBackward:
      ran = run_norm_backward(in, out, attrs);
      break;
    case x86::RowOp::kRowLogSumExp: ran = run_cross_entropy(in, *out[0], attrs); break;
    case x86::RowOp::kCrossEntropyBackward: ran = run_cross_entropy_backward(in, *out[0], attrs); break;
  }
  return ran && this->ran();
}

void RowwiseJit::run_rows(const x86::RowwiseKernel& kernel, const x86::RowwiseCall& base, int64_t rows) {
  parallel_for(0, rows, row_grain(base.cols), [&](int64_t r0, int64_t r1) {
    x86::RowwiseCall call = base;
    call.x += r0 * base.x_stride;
    call.y += r0 * base.y_stride;
    call.rows = r1 - r0;
    kernel(&call);
  });
}

void RowwiseJit::run_launch(const Launch& l, const char* const* ptrs, const ScalarLanes&) const {
  x86::RowwiseCall base = l.call;
  base.x = ptrs[0];
  base.y = const_cast<char*>(ptrs[1]);
  if (l.call.weight) base.weight = reinterpret_cast<const float*>(ptrs[2]);
  if (l.call.bias) base.bias = reinterpret_cast<const float*>(ptrs[2 + (l.call.weight != nullptr)]);
  run_rows(*l.kernel, base, l.rows);
  ran();
}

bool RowwiseJit::run_rows(absl::Span<const trace::ValueId> ids, const Tensor& x, const Tensor& y, const Attrs& a,
                          const Tensor* weight, const Tensor* bias) const {
  const bool norm = spec_.op == x86::RowOp::kLayerNorm || spec_.op == x86::RowOp::kRmsNorm;
  const int64_t k = norm ? int64_t(a.ints(0).size()) : 1;
  const std::optional<RowLayout> rl = row_layout(x, k);
  if (!rl) return fall_back(absl::StrCat("input of shape ", shape_str(x.sizes()), " and strides ",
                                         shape_str(x.strides()), " is not unit-stride rows a uniform stride apart"));
  for (const Tensor* p : {weight, bias})
    if (p && !p->is_contiguous()) return fall_back("a non-contiguous weight or bias");
  if (rl->rows * rl->cols == 0) return true;
  const x86::RowwiseKernel& run = kernel(active_isa());
  x86::RowwiseCall base;
  base.x = bytes_of(x);
  base.y = static_cast<char*>(y.data_ptr());
  base.weight = weight ? weight->data_ptr<float>() : nullptr;
  base.bias = bias ? bias->data_ptr<float>() : nullptr;
  base.cols = rl->cols;
  base.cols_f = float(rl->cols);
  base.x_stride = rl->stride * 4;
  base.y_stride = rl->cols * 4;
  if (norm) base.eps = float(a.d(spec_.op == x86::RowOp::kLayerNorm ? 3 : 2));
  if (trace::ReplayCapture* capture = trace::replay_capture()) [[unlikely]] {
    absl::InlinedVector<trace::ValueId, 4> operands{ids[size_t(inputs_[0])], ids[size_t(outputs_[0])]};
    for (size_t i = 1; i < inputs_.size(); ++i) operands.push_back(ids[size_t(inputs_[i])]);  // the weight and bias
    capture_launch(*capture, std::make_shared<const Launch>(Launch{&run, base, rl->rows}), {}, operands);
  }
  run_rows(run, base, rl->rows);
  return true;
}

// layer_norm_backward and rms_norm_backward (no dbias; eps is attribute 2).
// dweight and dbias add up per fixed block of rows, then the blocks in order
// (kernels/cpu/norm.cpp does the same): the sums do not depend on the thread count.
bool RowwiseJit::run_norm_backward(const Operands& in, const Operands& out, const Attrs& a) const {
  trace::decline_replay("a row-wise backward kernel");
  const int64_t k = int64_t(a.ints(0).size());
  const std::optional<RowLayout> g = row_layout(*in[0], k), x = row_layout(*in[1], k);
  if (!g || !x) return fall_back("the gradient or the input is not unit-stride rows a uniform stride apart");
  if (spec_.weight && !in[2]->is_contiguous()) return fall_back("a non-contiguous weight");
  const int64_t rows = x->rows, cols = x->cols;
  if (cols == 0) return fall_back("an empty row");
  const bool params = spec_.weight || spec_.bias;
  const int64_t block = row_grain(cols), blocks = (rows + block - 1) / block;
  std::vector<float> partial(params ? size_t(blocks * 2 * cols) : 0, 0.0f);
  x86::RowwiseCall base;
  base.x = bytes_of(*in[1]);
  base.g = bytes_of(*in[0]);
  base.weight = spec_.weight ? in[2]->data_ptr<float>() : nullptr;
  base.y = static_cast<char*>(out[0]->data_ptr());
  base.cols = cols;
  base.cols_f = float(cols);
  base.x_stride = x->stride * 4;
  base.g_stride = g->stride * 4;
  base.y_stride = cols * 4;
  base.eps = float(a.d(spec_.op == x86::RowOp::kLayerNormBackward ? 3 : 2));
  if (rows > 0) {
    const x86::RowwiseKernel& run = kernel(active_isa());
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        x86::RowwiseCall call = base;
        const int64_t r0 = b * block;
        call.x += r0 * base.x_stride;
        call.g += r0 * base.g_stride;
        call.y += r0 * base.y_stride;
        call.rows = std::min(rows, r0 + block) - r0;
        if (params) {
          call.dweight = partial.data() + b * 2 * cols;
          call.dbias = call.dweight + cols;
        }
        run(&call);
      }
    });
  }
  if (!params) return true;
  float* dw = spec_.weight ? out[1]->data_ptr<float>() : nullptr;
  float* db = spec_.bias ? out[1 + spec_.weight]->data_ptr<float>() : nullptr;
  parallel_for(0, cols, std::max<int64_t>(1, kTaskElements / std::max<int64_t>(blocks, 1)), [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      float sw = 0, sb = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        sw += partial[size_t(b * 2 * cols + j)];
        sb += partial[size_t(b * 2 * cols + cols + j)];
      }
      if (dw) dw[j] = sw;
      if (db) db[j] = sb;
    }
  });
  return true;
}

// libtorch's formula, as the reference (kernels/cpu/row_sums.h): with lse the
// row's log-sum-exp, loss = (1 - ls) * -w[t] (x[t] - lse) + ls / C * -sum_c (x[c] - lse);
// the kernel leaves each row's max, exp-sum and sum of logits.
bool RowwiseJit::run_cross_entropy(const Operands& in, const Tensor& out, const Attrs& a) const {
  trace::decline_replay("cross_entropy reads its targets");
  const Tensor& x = *in[0];
  const std::optional<RowLayout> rl = row_layout(x, 1);
  if (!rl) return fall_back("the logits are not unit-stride rows a uniform stride apart");
  const int64_t n = rl->rows, classes = rl->cols, ignore = a.i(1);
  const bool has_weight = a.b(2);
  const float ls = float(a.d(3));
  if (n == 0 || classes == 0) return fall_back("no rows or no classes");
  if (has_weight && ls != 0) return fall_back("label smoothing with class weights");
  const Tensor target = in[1]->contiguous();
  const int64_t* t = target.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r)
    if (t[r] != ignore && (t[r] < 0 || t[r] >= classes))
      return fall_back("a target out of range: the reference kernel reports it");
  const Tensor weight = has_weight ? in[2]->contiguous() : Tensor();
  const float* w = has_weight ? weight.data_ptr<float>() : nullptr;
  std::vector<float> stats(size_t(3 * n));
  const x86::RowwiseKernel& run = kernel(active_isa());
  x86::RowwiseCall base;
  base.x = bytes_of(x);
  base.cols = classes;
  base.x_stride = rl->stride * 4;
  base.row_out = stats.data();
  parallel_for(0, n, row_grain(classes), [&](int64_t r0, int64_t r1) {
    x86::RowwiseCall call = base;
    call.x += r0 * base.x_stride;
    call.row_out += 3 * r0;
    call.rows = r1 - r0;
    run(&call);
  });
  const float* px = x.data_ptr<float>();
  auto loss = [&](int64_t r) -> float {
    if (t[r] == ignore) return 0;
    const float lse = stats[size_t(3 * r)] + cpu::log_vec(stats[size_t(3 * r + 1)]);
    const float smooth = ls == 0 ? 0.0f : cpu::smooth_of_sum(stats[size_t(3 * r + 2)], lse, classes);
    return cpu::cross_entropy_row_loss(px[r * rl->stride + t[r]], lse, w ? w[t[r]] : 1.0f, ls, classes, smooth);
  };
  float* po = out.data_ptr<float>();
  const Reduction reduction = Reduction(a.i(0));
  if (reduction == Reduction::None) {
    parallel_for(0, n, kTaskElements, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) po[r] = loss(r);
    });
    return true;
  }
  const float total = cpu::ordered_sum<float>(n, loss);
  *po = reduction == Reduction::Sum
            ? total
            : total / cpu::ordered_sum<float>(n, [&](int64_t r) { return t[r] == ignore ? 0.0f : (w ? w[t[r]] : 1.0f); });
  return true;
}

// With p = softmax(x), W = sum_c w[c] and smoothing ls, a counted row's gradient is
//   dx[c] = k ((1 - ls) w[t] (p[c] - [c == t]) + ls / C (W p[c] - w[c]))
// = a p[c] - b w[c], then dx[t] -= k (1 - ls) w[t] (cpu::CrossEntropyRowGrad,
// the reference's arithmetic); ignored rows are zeros.
bool RowwiseJit::run_cross_entropy_backward(const Operands& in, const Tensor& out, const Attrs& a) const {
  trace::decline_replay("cross_entropy reads its targets");
  const Tensor& x = *in[1];
  const std::optional<RowLayout> rl = row_layout(x, 1);
  if (!rl) return fall_back("the logits are not unit-stride rows a uniform stride apart");
  const int64_t n = rl->rows, classes = rl->cols, ignore = a.i(1);
  if (n == 0 || classes == 0) return fall_back("no rows or no classes");
  const Tensor target = in[2]->contiguous();
  const int64_t* t = target.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r)
    if (t[r] != ignore && (t[r] < 0 || t[r] >= classes))
      return fall_back("a target out of range: the reference kernel reports it");
  const Tensor g = in[0]->contiguous();
  const float* pg = g.data_ptr<float>();
  const Tensor weight = spec_.weight ? in[3]->contiguous() : Tensor();
  const float* w = spec_.weight ? weight.data_ptr<float>() : nullptr;
  const Reduction reduction = Reduction(a.i(0));
  float total_weight = 0;
  for (int64_t c = 0; c < classes; ++c) total_weight += w ? w[c] : 1.0f;
  float scale = reduction == Reduction::None ? 0.0f : pg[0];
  if (reduction == Reduction::Mean)
    scale /= cpu::ordered_sum<float>(n, [&](int64_t r) { return t[r] == ignore ? 0.0f : (w ? w[t[r]] : 1.0f); });
  const float ls = float(a.d(3));
  // Each row's coefficients, once: the kernel reads a and b, the target's correction the rest.
  std::vector<cpu::CrossEntropyRowGrad<float>> grads;
  grads.reserve(size_t(n));
  for (int64_t r = 0; r < n; ++r)
    grads.emplace_back(reduction == Reduction::None ? pg[r] : scale, t[r] == ignore ? 0.0f : (w ? w[t[r]] : 1.0f),
                       ls, classes, total_weight);
  std::vector<float> coeff_a(static_cast<size_t>(n)), coeff_b(static_cast<size_t>(n));
  const x86::RowwiseKernel& run = kernel(active_isa());
  x86::RowwiseCall base;
  base.x = bytes_of(x);
  base.weight = w;
  base.y = static_cast<char*>(out.data_ptr());
  base.cols = classes;
  base.x_stride = rl->stride * 4;
  base.y_stride = classes * 4;
  base.row_a = coeff_a.data();
  base.row_b = coeff_b.data();
  float* dx = out.data_ptr<float>();
  parallel_for(0, n, row_grain(classes), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      coeff_a[size_t(r)] = grads[size_t(r)].a;
      coeff_b[size_t(r)] = grads[size_t(r)].b;
    }
    x86::RowwiseCall call = base;
    call.x += r0 * base.x_stride;
    call.y += r0 * base.y_stride;
    call.row_a += r0;
    call.row_b += r0;
    call.rows = r1 - r0;
    run(&call);
    for (int64_t r = r0; r < r1; ++r) {
      if (t[r] == ignore) {
        std::fill_n(dx + r * classes, classes, 0.0f);
        continue;
      }
      float& dx_t = dx[r * classes + t[r]];
      dx_t = grads[size_t(r)].at_target(dx_t);
    }
  });
  return true;
}

}  // namespace nnvm::jit
