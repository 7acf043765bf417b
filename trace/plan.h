// A Plan is what the trace cache keeps for a hot signature (docs/DESIGN.md §1): a
// compiled form of one trace that any later trace with the same signature
// replays, with that trace's inputs and Scalar values as run-time arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

// One flag per trace output: whether a run computed it straight into its
// target. Bytes, not std::vector<bool>'s bits (a shift and a mask per access).
using WrittenFlags = std::vector<uint8_t>;

class Plan {
 public:
  virtual ~Plan() = default;
  // `inputs` as for interpret(); `scalars` are the Scalar slot values of the
  // trace being replayed (its scalars()). Returns the trace's outputs.
  virtual std::vector<Tensor> run(absl::Span<const Tensor> inputs, absl::Span<const Scalar> scalars) const = 0;
  // run(), told where the outputs go: targets[i], where defined, is the
  // materialised tensor the caller writes output i into afterwards (an
  // in-place update of a parameter, say). A plan may compute output i straight
  // into targets[i] when nothing reads the target's old contents afterwards;
  // it then returns targets[i] as output i and sets written[i], and the
  // caller neither copies nor holds a second parameter-sized buffer. The
  // outputs go into `results` (a caller's buffer, kept from run to run).
  // `inputs` are borrowed: the run may move them out, and gives them back
  // before it returns or throws. `recorded_layouts`: each input is undefined
  // or has the dtype, shape and strides of the plan's trace input (the
  // recorder's flush of a trace with the plan's signature), so the run need
  // not compare them. The default writes no target.
  virtual void run_into(absl::Span<Tensor> inputs, absl::Span<const Scalar> scalars,
                        absl::Span<const Tensor> targets, WrittenFlags& written,
                        std::vector<Tensor>& results, bool /*recorded_layouts*/ = false) const {
    written.assign(targets.size(), 0);
    results = run(inputs, scalars);
  }
  // A run by the recorder of a trace with the plan's signature and Scalars
  // (holds_scalars), whose outputs are all lazy storages: writes output i
  // into outputs[i]'s memory, allocated here, with nothing but the kernels'
  // calls when the plan has captured them from an earlier run (trace/replay.h).
  // False: nothing ran and nothing was allocated; run_into then runs it.
  virtual bool replay(absl::Span<const Tensor> /*inputs*/, absl::Span<Storage* const> /*outputs*/) const {
    return false;
  }
  // Whether every Scalar the plan runs with is bit for bit its value in
  // `scalars` (another trace's scalars(), of the plan's signature): a run
  // with those may then pass none. The default says no.
  virtual bool holds_scalars(absl::Span<const Scalar> /*scalars*/) const { return false; }
  // The optimised trace the plan runs.
  virtual const Trace& trace() const = 0;
  // A readable description (the optimised trace, and how it runs).
  virtual std::string to_string() const { return trace().to_string(); }
};

// The simplest plan: an optimised trace run node by node by the interpreter.
class InterpretedPlan final : public Plan {
 public:
  explicit InterpretedPlan(Trace t) : trace_(std::move(t)) {}
  std::vector<Tensor> run(absl::Span<const Tensor> inputs, absl::Span<const Scalar> scalars) const override;
  const Trace& trace() const override { return trace_; }

 private:
  Trace trace_;
};

}  // namespace nnvm::trace
