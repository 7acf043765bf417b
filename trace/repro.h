// Repro bundles (docs/PROFILING.md "Checking and repro bundles"): one file
// that reproduces a fused group's wrong result or crash, or a trace that
// failed to compile, away from the program that met it.
//
// A bundle holds the engine that wrote it, what happened, a trace (a fused
// group as a trace of its own: the group's inputs, its nodes with the run's
// attributes, Scalars bound, and its outputs; or the whole trace that failed
// to compile), the values of its inputs with their layouts (a compile
// failure records layouts only: compiling reads no data), and the code the
// group's kernel ran (its IR and machine code, trace::GroupKernel::code).
// trace/check.h writes them under NNVM_REPRO=DIR; `nnvm replay BUNDLE`
// (tools/nnvm_cli.cpp) reads one and runs it again, fused and unfused.
//
// The file: the 8 bytes "NNVMREPR", the header's length (8 bytes, little
// endian), the header (JSON, described in docs/PROFILING.md), then the
// tensors' bytes, each at the offset the header gives. A damaged or hostile
// file is an nnvm::Error, never a crash: every field is checked, every op
// must be one this process has, and each node goes through its op's own
// shape inference as the recorder's would.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

struct FusionGroup;
struct GroupValues;

struct ReproBundle {
  std::string kind;     // "mismatch", "crash" or "compile"
  std::string engine;   // the writer's version (engine_version())
  std::string message;  // what happened, in words
  std::string unit;     // how the group ran ("x86 pointwise kernel"); empty for a compile
  std::string code;     // what the group's kernel ran; may be empty
  Trace trace;
  // Per trace input, with its recorded shape and strides; empty for a
  // compile failure (replay draws them).
  std::vector<Tensor> inputs;
};

// "nnvm 0.1.0 (GCC 12.2.0)": the version and the compiler that built it.
std::string engine_version();

// The bundle as the file's bytes, and written to `path` (nnvm::Error when it
// cannot be). Quantized values are refused: their quantizers are not kept.
std::string repro_bundle_bytes(const ReproBundle& b);
void write_repro_bundle(const ReproBundle& b, const std::string& path);

// Reads a bundle; nnvm::Error for anything that is not a whole, valid one.
ReproBundle parse_repro_bundle(std::string_view bytes);
ReproBundle read_repro_bundle(const std::string& path);

// Group `g` of trace `t` as a trace of its own: one input per group input
// with the layout of its tensor in `inputs` (the run's), the group's nodes
// with `attrs` (step k's attributes, the run's Scalars bound), and the
// group's outputs as outputs.
Trace group_trace(const Trace& t, const FusionGroup& g, const GroupValues& values,
                  absl::Span<const Attrs* const> attrs, absl::Span<const Tensor> inputs);

// A copy of x with its layout (shape, strides, quantizer) over a storage of
// its own, from x's first element to its last: what a check keeps of a
// group's input before the kernel runs.
Tensor copy_with_layout(const Tensor& x);

// How far two results of one value are apart.
struct Difference {
  bool agrees = true;
  std::string what;    // why not, in words ("max |fused - reference| 0.5 at [3] ..."); empty when agreeing
  double max_abs = 0;  // the largest |a - b| over the elements (NaN against a number: infinity)
};
// `got` against `want` (the reference): the same dtype and shape, and every
// element within atol + rtol * |want| (NaN agrees with NaN; integers and
// bools exactly). Tolerances by dtype: check_tolerance().
Difference compare_results(const Tensor& got, const Tensor& want);
struct Tolerance {
  double rtol, atol;
};
Tolerance check_tolerance(DType dtype);

// A bundle run again: the trace fused (a group's trace straight through the
// pipeline's stages after the passes, so it fuses as it did; a compile
// failure's trace through every stage) and unfused (the reference kernels
// node by node), on the bundle's inputs (a compile failure's drawn from a
// fixed seed), and the outputs compared.
struct ReplayReport {
  bool compiled = false;
  std::string error;               // what the compile or the fused run threw
  std::vector<std::string> units;  // how each fused group ran
  std::vector<Difference> outputs;
  bool agrees() const;
  std::string to_string() const;
};
ReplayReport replay_bundle(const ReproBundle& b);

}  // namespace nnvm::trace
