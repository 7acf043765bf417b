#include "sweep/sweep.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "jit/isa_scope.h"
#include "nnvm/core/allocator.h"
#include "nnvm/core/knobs.h"
#include "nnvm/trace/recorder.h"
#include "reference.h"

namespace nnvm::sweep {

Case op_case(const std::string& name, std::vector<Input> inputs, Attrs attrs, std::vector<DType> dtypes,
             std::string label) {
  const OpDef& op = find_op(name);
  Case c = program_case(name, std::move(inputs), nullptr, std::move(dtypes), std::move(label));
  c.run = [&op, attrs](const std::vector<Tensor>& in) { return call(op, in, attrs); };
  if (!op.view) {
    c.into = &op;
    c.into_attrs = std::move(attrs);
  }
  return c;
}

namespace {

// Ops that move, pick or compare values without arithmetic: they must give
// the float64 reference's values exactly.
const std::set<std::string> kExactOps = {
    "abs", "amax", "amin", "arange", "cat", "ceil", "clamp", "copy", "diagonal", "embedding", "expand", "eye",
    "flip", "floor", "full", "gather", "index_select", "masked_fill", "max", "max.dim",
    "max_pool2d", "maximum", "maximum.Scalar", "min", "min.dim", "minimum", "minimum.Scalar", "neg",
    "one_hot", "pad", "permute", "relu", "repeat", "roll", "round", "scatter", "scatter.value", "select", "sign",
    "slice", "sort", "squeeze", "stack", "strided_update", "topk", "transpose", "tril", "triu", "trunc",
    "unsqueeze", "upsample_nearest2d", "view", "view_scatter", "where", "as_strided"};

}  // namespace

Case program_case(const std::string& name, std::vector<Input> inputs, Program run, std::vector<DType> dtypes,
                  std::string label) {
  Case c;
  c.tolerance = kExactOps.count(name) ? 0 : 1;
  c.op = name;
  c.label = std::move(label);
  c.dtypes = std::move(dtypes);
  c.inputs = std::move(inputs);
  c.run = std::move(run);
  return c;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> c;
    add_pointwise_cases(c);
    add_reduction_cases(c);
    add_nn_cases(c);
    add_tensor_cases(c);
    return c;
  }();
  return cases;
}

namespace {

using Clock = std::chrono::steady_clock;

// Sets the process-wide mode for one scope.
class ModeScope {
 public:
  explicit ModeScope(Mode m) : saved_(mode()) { set_mode(m); }
  ~ModeScope() { set_mode(saved_); }
  ModeScope(const ModeScope&) = delete;
  ModeScope& operator=(const ModeScope&) = delete;

 private:
  Mode saved_;
};

// Guard pages behind every allocation for one scope (core/allocator.h).
class AllocGuardScope {
 public:
  explicit AllocGuardScope(bool on) : on_(on) {
    if (on_) set_alloc_guard(true);
  }
  ~AllocGuardScope() {
    if (on_) set_alloc_guard(knobs().alloc_guard);
  }
  AllocGuardScope(const AllocGuardScope&) = delete;
  AllocGuardScope& operator=(const AllocGuardScope&) = delete;

 private:
  bool on_;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The program once, eagerly; measured, once before (the first call of a JIT
// GEMM's shape compiles its kernel).
std::vector<Tensor> run_eager(const BoundProgram& program, double* seconds) {
  EagerGuard eager;
  if (seconds) program();
  const Clock::time_point t0 = Clock::now();
  std::vector<Tensor> out = program();
  if (seconds) *seconds = seconds_since(t0);
  return out;
}

// The program traced until its trace is compiled, then twice more (the
// compiled plan, then its captured kernel calls replayed where it has them).
// The last run's outputs, and its time.
std::vector<Tensor> run_traced_hot(const BoundProgram& program, double* seconds) {
  ModeScope traced(Mode::Traced);
  const int64_t hits = trace::global_trace_cache().stats().hits;
  const int64_t flushes = trace::recorder_stats().flushes;
  std::vector<Tensor> out;
  for (int run = 0; run < knobs().hot + 2; ++run) {
    const Clock::time_point t0 = Clock::now();
    out = program();
    mark_step();
    if (seconds) *seconds = seconds_since(t0);
  }
  if (trace::recorder_stats().flushes > flushes && trace::global_trace_cache().stats().hits <= hits)
    throw std::runtime_error("the trace never ran hot");
  return out;
}

}  // namespace

std::vector<Path>& paths() {
  static std::vector<Path> registered = [] {
    std::vector<Path> p;
    const auto add = [&p](const std::string& mode, jit::Isa isa, bool guard, auto run) {
      p.push_back(Path{absl::StrCat(mode, "/", jit::isa_name(isa), guard ? "/guard" : ""),
                       [isa, guard, run](const BoundProgram& program, double* seconds) {
                         jit::IsaGuard scoped_isa(isa);
                         AllocGuardScope scoped_guard(guard);
                         return run(program, seconds);
                       }});
    };
    std::vector<jit::Isa> isas = jit::jit_isas();
    isas.push_back(jit::Isa::kPortable);
    for (jit::Isa isa : isas) {
      add("eager", isa, false, run_eager);
      add("traced-hot", isa, false, run_traced_hot);
    }
    // Guard pages catch what JIT code reads or writes past an operand.
    add("eager", isas[0], true, run_eager);
    for (jit::Isa isa : isas) add("traced-hot", isa, true, run_traced_hot);
    return p;
  }();
  return registered;
}

void register_path(Path path) { paths().push_back(std::move(path)); }

namespace {

using testing::Layout;

std::vector<Tensor> make_inputs(const Case& c, DType dtype, Layout layout, uint64_t seed) {
  std::vector<Tensor> in;
  for (const Input& i : c.inputs) {
    switch (i.kind) {
      case Kind::Values: in.push_back(testing::with_layout(testing::random(i.shape, dtype, seed, i.lo, i.hi), layout)); break;
      case Kind::Index: in.push_back(testing::random(i.shape, kInt64, seed, i.lo, i.hi - 1)); break;
      case Kind::Mask: in.push_back(testing::random(i.shape, kBool, seed)); break;
      case Kind::Float: in.push_back(testing::random(i.shape, kFloat32, seed, i.lo, i.hi)); break;
    }
    ++seed;
  }
  return in;
}

// The normalised-mean-squared-error bound of a result in `dtype`: a root
// mean square error within the dtype's relative tolerance (reference.h).
double nmse_bound(DType dtype) { return testing::rtol_for(dtype) * testing::rtol_for(dtype); }

// "" when `got` matches `want` (the same op eagerly in the same dtype) and,
// for a floating result, `exact` (the float64 run, when there is one) within
// `tolerance` times the dtype's bound. Non-finite values must agree exactly.
std::string compare(const Tensor& got, const Tensor& want, const Tensor* exact, double tolerance) {
  if (got.sizes() != want.sizes())
    return absl::StrCat("shape ", shape_str(got.sizes()), ", expected ", shape_str(want.sizes()));
  if (got.dtype() != want.dtype())
    return absl::StrCat("dtype ", std::string(dtype_name(got.dtype())), ", expected ", std::string(dtype_name(want.dtype())));
  const std::vector<double> g = testing::values(got);
  const std::vector<double> w = testing::values(exact && is_floating(got.dtype()) ? *exact : want);
  if (!is_floating(got.dtype())) {
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] != w[i]) return absl::StrCat("element ", i, ": ", g[i], ", expected ", w[i]);
    return "";
  }
  // An absolute floor of 1e-3 per element: a result of cancellations near 0
  // errs relative to its terms, not to itself.
  double err = 0, norm = 1e-6 * double(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(w[i]) || !std::isfinite(g[i])) {
      if ((std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i]) continue;
      return absl::StrCat("element ", i, ": ", g[i], ", expected ", w[i]);
    }
    err += (g[i] - w[i]) * (g[i] - w[i]);
    norm += w[i] * w[i];
  }
  const double bound = tolerance * nmse_bound(got.dtype());
  if (err / norm > bound) return absl::StrCat("normalised mean squared error ", err / norm, " > ", bound);
  return "";
}

// A buffer filled with a sentinel and the slice in its middle an out= call
// writes: contiguous, or every `step`-th element (sentinels between them too).
struct Sentinel {
  static constexpr int64_t kPad = 5;
  int64_t step;
  Tensor buffer, slice;
  Sentinel(IntArrayRef shape, DType dtype, int64_t step) : step(step) {
    EagerGuard eager;
    const int64_t n = numel_of(shape);
    buffer = full({n * step + 2 * kPad}, dtype == kBool ? Scalar(true) : Scalar(77), dtype);
    DimVector strides = contiguous_strides(shape);
    for (int64_t& s : strides) s *= step;
    slice = view_of(buffer, ViewSpec{dims(shape), std::move(strides), kPad});
  }
  // "" when nothing outside the slice's elements changed.
  std::string check() const {
    const std::vector<double> v = testing::values(buffer);
    const int64_t end = int64_t(v.size()) - kPad;
    for (int64_t i = 0; i < int64_t(v.size()); ++i) {
      const bool element = i >= kPad && i < end && (i - kPad) % step == 0;
      if (!element && v[size_t(i)] != v.front())
        return absl::StrCat("the sentinel at ", i, " was overwritten with ", v[size_t(i)]);
    }
    return "";
  }
};

Tensor to_float64(const Tensor& t) { return is_floating(t.dtype()) ? t.to(kFloat64) : t; }

int64_t bytes_of(const std::vector<Tensor>& ts) {
  int64_t n = 0;
  for (const Tensor& t : ts)
    if (t.defined()) n += int64_t(t.nbytes());
  return n;
}

struct PerfRow {
  double seconds = 0;
  int64_t bytes = 0;
};

}  // namespace

namespace {

// One configuration of a case (a dtype and a layout): its inputs and what
// the reference runs gave.
struct Configuration {
  const Case& c;
  Layout layout;
  std::vector<Tensor> in, want, exact;
};

// Runs `cf` on `path`: "" when every output and the out= result match and
// the sentinel survived, else what differed. Measured (`row`): adds a
// steady-state run's time and bytes to it.
std::string check_path(const Configuration& cf, const Path& path, PerfRow* row) {
  const Case& c = cf.c;
  const std::vector<Tensor>& want = cf.want;
  std::optional<Sentinel> sentinel;
  // A contiguous out= with contiguous inputs, else a strided one; with
  // transposed inputs a floating result goes into float64 (a castable out=).
  if (c.into && want.size() == 1 && want[0].defined()) {
    const DType result = want[0].dtype();
    const bool wider = cf.layout == Layout::Transposed && is_floating(result);
    sentinel.emplace(want[0].sizes(), wider ? kFloat64 : result, cf.layout == Layout::Contiguous ? 1 : 2);
  }
  const BoundProgram program = [&c, &cf, &sentinel] {
    std::vector<Tensor> out = c.run(cf.in);
    if (sentinel) call_into(*c.into, cf.in, c.into_attrs, sentinel->slice);
    return out;
  };
  std::vector<Tensor> got;
  double seconds = 0;
  try {
    got = path.run(program, row ? &seconds : nullptr);
  } catch (const std::exception& e) {
    return absl::StrCat("threw: ", e.what());
  }
  if (row) {
    row->seconds += seconds;
    row->bytes += bytes_of(cf.in) + bytes_of(got);
  }
  if (got.size() != want.size()) return absl::StrCat(got.size(), " outputs, expected ", want.size());
  std::string problems;
  for (size_t k = 0; k < want.size(); ++k) {
    if (!want[k].defined()) continue;
    const Tensor* x = k < cf.exact.size() && cf.exact[k].defined() ? &cf.exact[k] : nullptr;
    if (std::string why = compare(got[k], want[k], x, c.tolerance); !why.empty())
      absl::StrAppend(&problems, "output ", k, ": ", why, "; ");
  }
  if (sentinel) {
    if (std::string why = sentinel->check(); !why.empty()) absl::StrAppend(&problems, why, "; ");
    const Tensor* x = cf.exact.empty() ? nullptr : &cf.exact[0];
    if (std::string why = compare(sentinel->slice.to(want[0].dtype()), want[0], x, c.tolerance); !why.empty())
      absl::StrAppend(&problems, "out=: ", why, "; ");
  }
  return problems;
}

}  // namespace

std::vector<std::string> run_sweep(const std::vector<Case>& cases, bool perf) {
  std::vector<std::string> failures;
  std::map<std::pair<std::string, std::string>, PerfRow> timings;  // (op, path)
  std::set<std::string> seen;  // ops in the traces flushed
  trace::set_flush_observer([&seen](const trace::Trace& t) {
    for (const trace::Node& n : t.nodes()) seen.insert(n.op->name);
  });
  uint64_t seed = 1;
  int64_t configurations = 0;
  for (const Case& c : cases) {
    seen.clear();
    std::vector<Layout> layouts = {Layout::Contiguous};
    bool matrix = false, nonscalar = false;
    for (const Input& i : c.inputs) {
      if (i.kind != Kind::Values) continue;
      matrix |= i.shape.size() >= 2;
      nonscalar |= !i.shape.empty();
    }
    if (c.relayout && matrix) layouts.push_back(Layout::Transposed);
    if (c.relayout && nonscalar) layouts.push_back(Layout::Strided);
    for (DType dtype : c.dtypes) {
      for (Layout layout : layouts) {
        const std::string where =
            absl::StrCat(c.op, " ", c.label, " ", std::string(dtype_name(dtype)), " ", testing::layout_name(layout));
        Configuration cf{c, layout, {}, {}, {}};
        try {
          EagerGuard eager;
          cf.in = make_inputs(c, dtype, layout, seed++);
          cf.want = c.run(cf.in);
          if (c.reference == Reference::Float64 && is_floating(dtype)) {
            std::vector<Tensor> wide;
            for (size_t k = 0; k < cf.in.size(); ++k)
              wide.push_back(c.inputs[k].kind == Kind::Values ? to_float64(cf.in[k]) : cf.in[k]);
            cf.exact = c.run(wide);
          }
        } catch (const std::exception& e) {
          failures.push_back(absl::StrCat(where, " [reference]: ", e.what()));
          continue;
        }
        ++configurations;
        for (const Path& path : paths())
          if (std::string why = check_path(cf, path, perf ? &timings[{c.op, path.name}] : nullptr); !why.empty())
            failures.push_back(absl::StrCat(where, " [", path.name, "]: ", why));
      }
    }
    if (!find_op(c.op).view && !seen.count(c.op)) failures.push_back(c.op + ": no trace contained the op");
  }
  trace::set_flush_observer(nullptr);
  std::printf("sweep: %zu cases, %lld configurations (dtype x layout), %zu paths\n", cases.size(),
              static_cast<long long>(configurations), paths().size());
  if (perf) {
    std::printf("%-32s %-28s %12s %10s\n", "op", "path", "time (us)", "GB/s");
    for (const auto& [key, row] : timings)
      std::printf("%-32s %-28s %12.1f %10.3f\n", key.first.c_str(), key.second.c_str(), row.seconds * 1e6,
                  row.seconds > 0 ? double(row.bytes) / row.seconds * 1e-9 : 0.0);
  }
  return failures;
}

}  // namespace nnvm::sweep
