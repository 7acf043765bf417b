// Automatic mixed precision (libtorch's autocast, torch.autocast): inside an
// AutocastGuard the ops that gain most from a lower precision (matrix
// products and convolutions) run in bfloat16 or float16, their float32
// inputs cast on the way in, and the ops that need float32's range or
// precision (reductions, normalisations, softmax, losses) run in float32,
// their bfloat16 and float16 inputs cast up; every other op runs in its
// inputs' types (binary ops promote, as always). Parameters stay float32:
// the casts are ops of their own, recorded and differentiated like any, so
// an optimizer updates float32 master weights from float32 gradients. The
// state is the calling thread's; backward passes run with it off (each
// gradient op in its forward op's types). docs/NN.md, "Mixed precision".
#pragma once

#include <string>
#include <vector>

#include "nnvm/core/dtype.h"

namespace nnvm {

// The calling thread's autocast state (libtorch's at::autocast functions).
bool is_autocast_enabled();
void set_autocast_enabled(bool enabled);
DType get_autocast_dtype();           // kBFloat16 unless set
void set_autocast_dtype(DType dtype);  // kBFloat16 or kFloat16, else an nnvm::Error

// Autocast on (or off) in `dtype` for the guard's lifetime, the previous
// state restored after; nests. Autocast applies where an op is called: in
// traced mode the casts are recorded with the op, and a trace runs its nodes
// as recorded whenever it flushes; a kernel that calls ops calls them as
// written (autocast is off inside every op).
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype = kBFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_;
  DType dtype_;
};

namespace autocast {

// What autocast does to an op's floating inputs.
enum class Policy {
  kNone,            // nothing: the op runs in its inputs' types
  kLowerPrecision,  // float32 inputs cast to the autocast dtype (float64 kept)
  kFloat32,         // bfloat16 and float16 inputs cast to float32, and a bfloat16 or
                    // float16 dtype attribute (softmax's, sum's) made float32
};
Policy policy(const std::string& op);
// The ops of a policy, by name (docs/NN.md lists them).
std::vector<std::string> ops_with(Policy policy);

}  // namespace autocast
}  // namespace nnvm
