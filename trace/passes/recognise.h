// Recognition of composite ops written out with elementary ones (docs/DESIGN.md §1,
// hot passes): the chain becomes the single op, so the executor runs one
// row-wise or pointwise kernel instead of several, with no intermediates.
//   e = exp(x - amax(x, {d}, true)); e / e.sum({d}, true)   -> softmax(x, d)
//   x - amax(..) - log(exp(x - amax(..)).sum({d}, true)),
//   x - logsumexp(x, {d}, true)                             -> log_softmax(x, d)
//   xc = x - x.mean(D, true);
//   xc / sqrt(v + eps) or xc * rsqrt(v + eps), with v = (xc * xc).mean(D, true)
//   (or xc.square(), xc.pow(2)) or x.var(D, 0, true); then * w, + b optional,
//   D the trailing dims                                     -> layer_norm(x, shape of D, w, b, eps)
//   x / sqrt(ms + eps) or x * rsqrt(ms + eps), ms = (x * x).mean(D, true)
//   (or x.square(), x.pow(2)); then * w optional            -> rms_norm(x, shape of D, w, eps)
//   0.5 * x * (1 + erf(x / sqrt(2)))   (or x * (1/sqrt(2)))  -> gelu(x)
//   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  -> gelu(x, "tanh")
//   x * sigmoid(x)                                          -> silu(x)
//   matmul(a, b) + matmul(c, d)                             -> matmul_sum(a, b, c, d)
//     (one GEMM adds the second product into the first's memory: an RNN
//     cell's x W + h U, a gradient that reaches a tensor through two products)
// The results agree with the chain's up to the order of floating-point
// operations (the fused kernels round once where the chain rounds per op);
// nothing else changes:
// - exp(x) / sum(exp(x)) without the max subtracted is declined: it overflows
//   where softmax does not, so it is a different function for large x.
// - a rule reads a Scalar's value only when it is a compile-time one. A
//   recorded Scalar (a slot) is a run-time argument: a later trace with the
//   same signature may bring another value, and a plan that assumed this one
//   would silently compute something else. So a pattern whose shape depends
//   on a slotted value (the -1 of a subtraction, gelu's constants) is declined
//   in recorded traces, with one exception: the sign of softmax's max
//   subtraction. For every alpha, exp(x + alpha m) / sum(exp(x + alpha m)) is
//   softmax(x) in exact arithmetic (the shift cancels); the rule requires
//   today's alpha to be -1, so this trace's results are unchanged, and a
//   replay with another alpha gets softmax where the chain might overflow.
//   layer_norm's and rms_norm's eps need no value: a slotted eps stays a run-time argument
//   of the new node (its slot is kept).
// - every value inside a pattern must be used only inside it (not elsewhere,
//   not a trace output): keeping one alive would keep most of the chain's work
//   and memory, so such a match is declined. x, w and b may be used anywhere.
// - only float32 and float64: for float16 and bfloat16 the fused kernels
//   compute in float32 and round once, which the chain does not.
// Each pattern's nodes are removed by the pass itself; the new node takes the
// place of the pattern's last node.
#pragma once

#include <string>
#include <vector>

#include "nnvm/trace/ir.h"

namespace nnvm::trace {

struct RecogniseDecision {
  size_t node = 0;      // the pattern's last node, in the trace as it was before the pass
  std::string pattern;  // "softmax", "log_softmax", "layer_norm", "gelu", "gelu_tanh", "silu", "rms_norm",
                        // "matmul_sum"
  bool applied = false;
  std::string reason;   // why not, when not applied
};

struct RecogniseReport {
  std::vector<RecogniseDecision> decisions;
  int applied() const;
  std::string to_string() const;
};

// Returns the number of patterns replaced.
int recognise(Trace& t, RecogniseReport* report = nullptr);

}  // namespace nnvm::trace
