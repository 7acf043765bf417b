// Backends (docs/DESIGN.md §2.2): the code generators a fusion group may be
// compiled by, behind one interface trace/ owns. A backend registers itself
// (the x86 JIT from jit/x86_backend.cpp at start-up; a GPU or a plugin's
// backend later), is asked to compile each fusion group when its program is
// built (trace/group_program.h), once per group key, and either returns a
// GroupKernel or declines with a reason. A GroupKernel may still refuse a
// run (another ISA forced since, operand layouts it does not take); the
// group's portable program, its tiles or reference kernels node by node,
// runs what no backend took.
//
// trace/ includes nothing of a backend: a backend includes trace/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "nnvm/core/op.h"
#include "nnvm/trace/ir.h"
#include "nnvm/trace/passes/fuse.h"

namespace nnvm::trace {

class GroupProgram;
struct GroupValues;
struct Tiling;

// One run of a fusion group: its values' tensors in `env` at ids[i] (the
// order GroupValues names them; inputs set, outputs allocated), each step's
// attributes with the run's Scalars bound, the run's tiling, and `layouts`
// (nonzero: the caller's place whose every run has the same operand sizes
// and strides; see jit::LaunchStamp).
struct GroupRun {
  absl::Span<const ValueId> ids;
  std::vector<Tensor>& env;
  absl::Span<const Attrs* const> attrs;
  const Tiling& tiling;
  uint64_t layouts = 0;
};

// What a backend compiled for one group. Shared by every plan and thread
// that runs the group: run() is const and thread-safe.
class GroupKernel {
 public:
  virtual ~GroupKernel() = default;
  // Runs the whole group and returns true, or returns false having written
  // nothing, and the portable program runs it. `program` is the group's
  // portable program: a kernel may run some of its steps through it
  // (GroupProgram::run_steps) and the rest itself.
  virtual bool run(const GroupProgram& program, const GroupRun& run) const = 0;
  // How the group runs, for plans and logs ("x86 pointwise kernel").
  virtual std::string describe() const = 0;
  // What the kernel runs, as text for a repro bundle (trace/repro.h): the
  // IR it was compiled from and its machine code; empty when not known.
  virtual std::string code() const { return {}; }
};

// What a backend compiles: the group in its trace, its values, and the
// portable program built for it (whether it is tiled, and why not).
struct GroupSource {
  const Trace& trace;
  const FusionGroup& group;
  const GroupValues& values;
  const GroupProgram& program;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Unique among registered backends ("x86").
  virtual std::string_view name() const = 0;
  // The group compiled, or null with the reason in *why_not.
  virtual std::unique_ptr<const GroupKernel> compile(const GroupSource& group, std::string* why_not) const = 0;
  // What the code this backend compiles and runs depends on beyond the
  // group (the x86 JIT: the ISA in force). A hot plan replays its captured
  // calls (trace/replay.h) only while every backend's variant is the one it
  // had when they were captured.
  virtual uint64_t variant() const { return 0; }
};

// Registers `backend`: groups are offered to the registered backends by
// descending priority, equal priorities in the order they registered.
// Throws nnvm::Error for a name already registered. Programs built before
// keep the kernels they have (the kernel cache holds them).
void register_backend(std::shared_ptr<const Backend> backend, int priority = 0);
// The registered backends, in the order groups are offered to them.
std::vector<std::shared_ptr<const Backend>> backends();
// Every registered backend's variant() combined; one atomic load and a
// virtual call per backend.
uint64_t backends_variant();

}  // namespace nnvm::trace
