// A Model's calls that record nothing (docs/MODELS.md, "Calls that record
// nothing"). A call records its nodes into the thread's trace like eager
// code; once two calls with the same inputs' dtypes, shapes and strides
// have flushed the same compiled plans with the same Scalars, reading
// nothing on the host meanwhile, later calls with those inputs run the
// plans straight away: no node is recorded, looked up or inferred.
//
// What a capture keeps, per flush of the call: the plan, its Scalars, and
// where each of its inputs comes from (a call input, an earlier flush's
// output, or a tensor the call held: an initializer, a constant), each with
// the layout the plan was compiled for; and where each of the call's
// outputs comes from. It holds while what it assumed holds:
//   - values the host read decide what a call records (an If's condition, a
//     Reshape's target, NonZero's count): a call that read any value on the
//     host (a call input's data, or a lazy value: its trace flushes) is
//     never captured, and nor is one whose trace ran cold or wrote into a
//     materialised tensor;
//   - random ops draw new Scalars each call: two calls must agree bit for bit;
//   - steps run at once on constants (docs/MODELS.md) are held as computed:
//     every initializer's storage and version are stamped, and a capture
//     whose stamps moved (an optimizer step, set_data) is recorded again.
// Calls that need gradients, run under autocast, a profiler session, the
// checking mode or the memory monitor, or inside another capture, record.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "nnvm/core/tensor.h"
#include "program.h"

namespace nnvm::trace {
class Plan;
}  // namespace nnvm::trace

namespace nnvm::model_detail {

class CallCaptures {
 public:
  // Runs `program` on `inputs` (checked), from a capture when one holds.
  std::vector<Tensor> call(const Program& program, const std::vector<Tensor>& inputs);

  // Calls that ran from a capture, and captures made (tests, docs).
  int64_t replayed() const { return replayed_.load(std::memory_order_relaxed); }
  int64_t captured() const { return captured_.load(std::memory_order_relaxed); }

  // Where a plan's input or a call's output comes from, with its layout.
  struct Source {
    enum Kind : uint8_t { kInput, kFlush, kHeld } kind = kHeld;
    int32_t index = 0;   // kInput: the call's input; kFlush: the flush
    int32_t output = 0;  // kFlush: its output
    Tensor held;         // kHeld
    uint64_t layout = 0;  // kHeld: held's layout_id when captured
    DimVector sizes, strides;
    int64_t offset = 0;  // kInput: from the input's offset; kFlush: in the output's storage
    DType dtype = kFloat32;
  };
  struct Output {
    size_t bytes;
    Device device;
  };
  struct Step {
    std::shared_ptr<const trace::Plan> plan;
    std::vector<Scalar> scalars;
    std::vector<Source> inputs;
    std::vector<Output> outputs;  // the lazy storages the flush bound
  };
  struct Stamp {
    const TensorImpl* impl;
    const Storage* storage;
    uint64_t version;
  };
  struct Capture {
    std::vector<Step> steps;
    std::vector<Source> outputs;
    std::vector<Stamp> stamps;  // every initializer's
    bool ready = false;         // a second call agreed
  };

 private:
  std::vector<Tensor> replay(const Capture& c, const std::vector<Tensor>& inputs);
  std::vector<Tensor> record(const Program& program, const std::vector<Tensor>& inputs,
                             const std::vector<int64_t>& key);

  std::mutex mu_;  // guards table_
  absl::flat_hash_map<std::vector<int64_t>, std::shared_ptr<const Capture>> table_;
  std::mutex recording_;  // one recording call at a time (they watch their inputs' storages)
  std::atomic<int64_t> replayed_{0}, captured_{0};
};

}  // namespace nnvm::model_detail
