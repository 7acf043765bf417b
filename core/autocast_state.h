// The autocast state that core/autocast.cpp owns, for the dispatcher's hot
// path (core/op.cpp): one load per op says whether autocast is on. Not for
// users: core/autocast.h is the interface.
#pragma once

#include <cstdint>

#include "nnvm/core/hot_tls.h"
#include "nnvm/core/op.h"

namespace nnvm::detail {

// Nonzero while the calling thread's autocast is on (and not suspended by a backward pass).
NNVM_HOT_TLS extern thread_local uint8_t t_autocast_on;

// The op's inputs and attributes as autocast runs it, when that differs
// from how it was called (else false): `inputs` and `attrs` filled.
bool autocast_inputs(const OpDef& op, TensorRefs given, const Attrs& given_attrs, std::vector<Tensor>& inputs,
                     Attrs& attrs);

// Autocast off for a scope (a backward pass, an op's own run, a trace's run), the state restored after.
class AutocastSuspend {
 public:
  AutocastSuspend() : saved_(t_autocast_on) { t_autocast_on = 0; }
  ~AutocastSuspend() { t_autocast_on = saved_; }
  AutocastSuspend(const AutocastSuspend&) = delete;
  AutocastSuspend& operator=(const AutocastSuspend&) = delete;

 private:
  uint8_t saved_;
};

}  // namespace nnvm::detail
