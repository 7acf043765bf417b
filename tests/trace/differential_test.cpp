// Traced mode computes what eager mode computes. Random programs over the
// public API (tests/trace/random_program.h) run once eagerly and several
// times traced, with the same inputs: every register, every input after the
// program's in-place updates and the SGD step, every gradient, every value
// read mid-program and every item()-driven decision must agree within
// floating-point reassociation. The traced runs go cold (interpreter), then
// hot (a compiled plan, NNVM_HOT=2 by default; run again, its captured kernel
// calls where it has them), then replay the plan with
// new Scalar values (a second variant of the program with every Scalar
// argument scaled), then over other sizes (its inputs' commonest dim
// resized: a new size of each trace's hot shape class, compiled at first
// sight), and once more with a trace cap of a few nodes.
//
// NNVM_DIFF_PROGRAMS=N runs N programs instead of the default few hundred
// (NNVM_DIFF_SEED=S starts at seed S), e.g.
//   NNVM_DIFF_PROGRAMS=5000 ./build/tests/nnvm_tests --gtest_filter='Differential*'
// A failure prints the seed and the program's text; NNVM_DIFF_SEED=seed
// NNVM_DIFF_PROGRAMS=1 replays it alone.
#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/trace/recorder.h"
#include "random_program.h"

namespace nnvm::testing {
namespace {

constexpr int kDefaultPrograms = 500;
constexpr int kMaxSteps = 24;
// cold, turning hot, hot (the executor, its kernel calls captured), hot
// again (those calls replayed, where the plan has them: trace/replay.h)
constexpr int kTracedRuns = 4;
constexpr int64_t kSmallCap = 5;

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

// How far a traced float32 value may stray from the float64 result of the
// same program on the same values, in multiples of eager's own distance
// from it (see compare_values).
constexpr double kNoiseFactor = 8;

// |a - e| <= atol + rtol * |e| with atol scaled by the tensor's magnitude:
// a reassociated sum errs relative to its terms, not to its result.
// With `exact` (the float64 run on the same values) an element that misses
// passes when a is as close to it as kNoiseFactor times e is: an
// ill-conditioned value (x - 1.0125 x; atan2(c x, x), whose gradient is a
// difference of equal terms) is rounding noise in float32 far above any
// fixed tolerance, eager's as much as the trace's. A wrong value stays far
// from `exact` where eager is close to it.
std::string compare_values(const std::vector<double>& got, const std::vector<double>& want, DType dtype,
                           const std::vector<double>* exact = nullptr) {
  if (got.size() != want.size()) return absl::StrCat(got.size(), " elements, expected ", want.size());
  if (exact && exact->size() != want.size()) exact = nullptr;  // not the same value: no reference
  const double rtol = dtype == kFloat64 ? 1e-9 : 1e-4;
  double scale = 1;
  for (double e : want)
    if (std::isfinite(e)) scale = std::max(scale, std::fabs(e));
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], e = want[i];
    if ((std::isnan(a) && std::isnan(e)) || a == e) continue;
    const double tolerance = rtol * (std::fabs(e) + 0.1 * scale);
    if (std::fabs(a - e) <= tolerance) continue;
    if (exact && std::fabs(a - (*exact)[i]) <= tolerance + kNoiseFactor * std::fabs(e - (*exact)[i])) continue;
    return absl::StrCat("element ", i, ": got ", a, ", expected ", e,
                        exact ? absl::StrCat(" (float64: ", (*exact)[i], ")") : std::string());
  }
  return "";
}

std::string compare_tensors(const Tensor& got, const Tensor& want, const Tensor* exact = nullptr) {
  if (got.defined() != want.defined())
    return absl::StrCat(got.defined() ? "defined" : "undefined", ", expected ", want.defined() ? "defined" : "undefined");
  if (!got.defined()) return "";
  if (got.sizes() != want.sizes()) return absl::StrCat("shape ", shape_str(got.sizes()), ", expected ", shape_str(want.sizes()));
  if (got.dtype() != want.dtype()) return absl::StrCat("dtype ", std::string(dtype_name(got.dtype())), ", expected ", std::string(dtype_name(want.dtype())));
  if (got.requires_grad() != want.requires_grad()) return absl::StrCat("requires_grad ", got.requires_grad());
  if (!exact) return compare_values(values(got), values(want), got.dtype());
  const std::vector<double> exact_values = values(*exact);
  return compare_values(values(got), values(want), got.dtype(), &exact_values);
}

// Decisions on values within rounding of their threshold may differ; the
// rest of such a run is not comparable.
bool fragile(const Decision& d) {
  return std::fabs(d.value - d.threshold) <= 1e-3 * (std::fabs(d.value) + std::fabs(d.threshold)) + 1e-6;
}

// Returns the first disagreement, "" if none, or "skip" when the runs took
// different branches on a value within rounding of its threshold. `exact`:
// the float64 run of a float32 program on the same values (compare_values).
std::string compare(const Outcome& got, const Outcome& want, DType dtype, const Outcome* exact = nullptr) {
  for (size_t i = 0; i < std::min(got.decisions.size(), want.decisions.size()); ++i) {
    const Decision &g = got.decisions[i], &w = want.decisions[i];
    if (g.taken == w.taken) continue;
    if (fragile(w)) return "skip";
    return absl::StrCat("decision ", i, ": traced saw ", g.value, " against ", g.threshold, ", eager saw ", w.value);
  }
  if (got.decisions.size() != want.decisions.size())
    return absl::StrCat(got.decisions.size(), " decisions, expected ", want.decisions.size());
  for (size_t i = 0; i < want.observed.size(); ++i)
    if (std::string why = compare_values(got.observed[i], want.observed[i], dtype, exact ? &exact->observed[i] : nullptr);
        !why.empty())
      return absl::StrCat("observed value ", i, ": ", why);
  const std::pair<const char*, const std::vector<Tensor>*> groups[] = {
      {"r", &got.regs}, {"input", &got.inputs}, {"grad of input", &got.grads}};
  const std::vector<Tensor>* wanted[] = {&want.regs, &want.inputs, &want.grads};
  const std::vector<Tensor>* exacts[] = {exact ? &exact->regs : nullptr, exact ? &exact->inputs : nullptr,
                                         exact ? &exact->grads : nullptr};
  for (size_t g = 0; g < 3; ++g) {
    const std::vector<Tensor>& gs = *groups[g].second;
    if (gs.size() != wanted[g]->size()) return absl::StrCat(groups[g].first, ": count differs");
    for (size_t i = 0; i < gs.size(); ++i) {
      const Tensor* x = exacts[g] && (*exacts[g])[i].defined() ? &(*exacts[g])[i] : nullptr;
      if (std::string why = compare_tensors(gs[i], (*wanted[g])[i], x); !why.empty())
        return absl::StrCat(groups[g].first, i, ": ", why);
    }
  }
  return "";
}

// got (traced) against want (eager). A float32 disagreement is looked at
// again beside the float64 run on the same values, when that run took the
// same branches: rounding noise passes, a wrong value does not.
std::string compare_runs(const Program& p, const Outcome& got, const Outcome& want, double scale) {
  const std::string why = compare(got, want, p.dtype);
  if (why.empty() || why == "skip" || p.dtype != kFloat32) return why;
  Program wide = p;
  wide.dtype = kFloat64;
  wide.float32_values = true;
  const Outcome exact = run_program(wide, Mode::Eager, scale);
  if (exact.decisions.size() != want.decisions.size() || exact.observed.size() != want.observed.size()) return why;
  for (size_t i = 0; i < want.decisions.size(); ++i)
    if (exact.decisions[i].taken != want.decisions[i].taken) return why;
  return compare(got, want, p.dtype, &exact);
}

int resized_compared = 0;  // resized programs whose eager run did not throw

// The program again with its inputs' commonest dim of two or more made the
// smallest size from 6 up that no input dim has, after its own runs made its traces hot: their shape classes
// compile the new sizes at first sight, and traced must still equal eager.
// A program whose steps have sizes of their own throws in eager mode there,
// and is not compared.
std::string check_resized(const Program& p) {
  std::map<int64_t, int> counts;
  for (const InputSpec& in : p.inputs)
    for (int64_t d : in.shape)
      if (d >= 2) ++counts[d];
  if (counts.empty()) return "";
  const int64_t from =
      std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second < b.second; })
          ->first;
  int64_t to = 6;
  while (counts.count(to)) ++to;
  const std::optional<Program> q = resized(p, from, to);
  if (!q) return "";
  Outcome want;
  try {
    want = run_program(*q, Mode::Eager, 1.0);
  } catch (const std::exception&) {
    return "";
  }
  ++resized_compared;
  std::string why;
  try {
    why = compare_runs(*q, run_program(*q, Mode::Traced, 1.0), want, 1.0);
  } catch (const std::exception& e) {
    why = absl::StrCat("the traced run threw: ", e.what());
  }
  if (why == "skip" || why.empty()) return "";
  return absl::StrCat("resized (input dims of ", from, " made ", to, "): ", why);
}

// Runs one program: "" when traced agrees with eager, else what differed.
std::string check_program(const Program& p) {
  for (double scale : {1.0, 1.25}) {
    const int runs = scale == 1.0 ? kTracedRuns : 1;
    Outcome want;
    try {
      want = run_program(p, Mode::Eager, scale);
    } catch (const std::exception& e) {
      return absl::StrCat("the eager run threw: ", e.what());
    }
    for (int run = 0; run < runs; ++run) {
      std::string why;
      try {
        why = compare_runs(p, run_program(p, Mode::Traced, scale), want, scale);
      } catch (const std::exception& e) {
        why = absl::StrCat("the traced run threw: ", e.what());
      }
      if (why == "skip") break;
      if (!why.empty()) return absl::StrCat("traced run ", run + 1, " with Scalars x", scale, ": ", why);
    }
  }
  if (std::string why = check_resized(p); !why.empty()) return why;
  // A small trace cap cuts the same program into other traces.
  const int64_t cap = trace_cap();
  set_trace_cap(kSmallCap);
  std::string why;
  try {
    why = compare_runs(p, run_program(p, Mode::Traced, 1.0), run_program(p, Mode::Eager, 1.0), 1.0);
  } catch (const std::exception& e) {
    why = absl::StrCat("the traced run threw: ", e.what());
  }
  set_trace_cap(cap);
  if (why != "skip" && !why.empty()) return absl::StrCat("traced run with trace cap ", kSmallCap, ": ", why);
  return "";
}

TEST(Differential, TracedEqualsEager) {
  const int64_t n = env_int("NNVM_DIFF_PROGRAMS", kDefaultPrograms);
  const uint64_t first = uint64_t(env_int("NNVM_DIFF_SEED", 1));
  const trace::TraceCacheStats before = trace::global_trace_cache().stats();
  const int64_t replays_before = trace::recorder_stats().flushes_replayed;
  int failures = 0;
  for (uint64_t seed = first; seed < first + uint64_t(n) && failures < 5; ++seed) {
    Program p;
    try {
      p = generate_program(seed, kMaxSteps);
    } catch (const std::exception& e) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ": " << e.what();
      continue;
    }
    const std::string why = check_program(p);
    if (why.empty()) continue;
    ++failures;
    ADD_FAILURE() << "seed " << seed << ": " << why << "\n" << p.text();
  }
  // the hot path ran: plans were compiled and replayed
  const trace::TraceCacheStats after = trace::global_trace_cache().stats();
  EXPECT_GT(after.compiles, before.compiles);
  // and resized programs ran new sizes compiled at first sight
  EXPECT_GT(resized_compared, n / 4);
  EXPECT_GT(after.first_sight_compiles, before.first_sight_compiles);
  EXPECT_GT(after.hits, before.hits + after.compiles - before.compiles);
  // and the fourth runs replayed captured kernel calls, where there is JIT code to call
  if (jit::active_isa() != jit::Isa::kPortable && knobs().hot <= 2) {
    EXPECT_GT(trace::recorder_stats().flushes_replayed, replays_before);
  }
}

}  // namespace
}  // namespace nnvm::testing
