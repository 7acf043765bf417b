// The per-op sweep, in the manner of ggml's test-backend-ops: every op in the
// op table, in each dtype it takes and in several layouts and sizes, runs on
// every registered path (eager and traced-hot, per ISA, with and without the
// allocator's guard pages) and is compared with a reference: the op run
// eagerly in float64 on the same values (normalised mean squared error within
// the case's bound), or, for integer and bool results and for random ops,
// the op run eagerly in its own dtype (exactly). Where an op has an out=
// form (call_into), the result is also written into a slice of a buffer
// filled with a sentinel, which must survive.
//
// A case is a row of a table (cases_*.cpp), not a test body: the op's name,
// its inputs' shapes and kinds, the program that calls it, its dtypes and its
// bound. The sweep fails when an op of the table has no case.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nnvm/nnvm.h"

namespace nnvm::sweep {

// What one input of a case holds.
enum class Kind {
  Values,  // the case's dtype, uniform in [lo, hi); relaid out per layout
  Index,   // int64 in [lo, hi): indices, class targets
  Mask,    // bool
  Float,   // float32 in [lo, hi) whatever the case's dtype (weights of an integer op)
};

struct Input {
  DimVector shape;
  Kind kind = Kind::Values;
  double lo = -2, hi = 2;
};

// How a case's results are checked.
enum class Reference {
  Float64,    // floating outputs against the op run eagerly on float64 copies of the inputs
  SameDtype,  // against the op run eagerly in the case's dtype (random ops; ops without float64)
};

using Program = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

struct Case {
  std::string op;     // the op-table entry it sweeps (the trace must contain it, unless it is a view)
  std::string label;  // what varies between cases of one op: shapes, attributes
  std::vector<DType> dtypes;
  std::vector<Input> inputs;
  Program run;
  // The op run again into a sentinel-padded slice (call_into) with these
  // attributes; null where the op has no out= form.
  const OpDef* into = nullptr;
  Attrs into_attrs;
  Reference reference = Reference::Float64;
  // A multiple of the dtype's normalised-mean-squared-error bound: 0 for ops
  // that move or pick values (sweep.cpp), 1 for the rest unless a case says.
  double tolerance = 1;
  bool relayout = true;  // Values inputs are also swept transposed and strided at an offset (reference.h)
};

// The dtype groups most ops take.
inline const std::vector<DType> kFloats = {kFloat32, kFloat64, kFloat16, kBFloat16};
inline const std::vector<DType> kFloat32Only = {kFloat32};
inline const std::vector<DType> kF32F64 = {kFloat32, kFloat64};
inline const std::vector<DType> kNumbers = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32};
inline const std::vector<DType> kAll = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kBool};

// A case that calls op `name` with `attrs` on its inputs (the out= form too,
// for a computing op with one output).
Case op_case(const std::string& name, std::vector<Input> inputs, Attrs attrs = {},
             std::vector<DType> dtypes = kFloats, std::string label = "");
// A case whose program is `run` (a public function that reaches `name`).
Case program_case(const std::string& name, std::vector<Input> inputs, Program run,
                  std::vector<DType> dtypes = kFloats, std::string label = "");

// The case table, by family (cases_*.cpp).
void add_pointwise_cases(std::vector<Case>& cases);
void add_reduction_cases(std::vector<Case>& cases);
void add_nn_cases(std::vector<Case>& cases);
void add_tensor_cases(std::vector<Case>& cases);
const std::vector<Case>& all_cases();

// A way of running a program: eager or traced-hot under one ISA, a later
// backend. `run` runs `program` (a case's, inputs bound) and returns its
// outputs, materialised; given `seconds`, it sets the time of one
// steady-state run there.
using BoundProgram = std::function<std::vector<Tensor>()>;
struct Path {
  std::string name;
  std::function<std::vector<Tensor>(const BoundProgram& program, double* seconds)> run;
};
// The paths this machine has, in order; a backend adds its own.
std::vector<Path>& paths();
void register_path(Path path);

// Runs every case on every path; returns one line per failure. `perf`:
// prints time and GB/s per op and path.
std::vector<std::string> run_sweep(const std::vector<Case>& cases, bool perf);

}  // namespace nnvm::sweep
