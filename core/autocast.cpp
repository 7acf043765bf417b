#include "nnvm/core/autocast.h"

#include <variant>

#include "absl/container/flat_hash_map.h"
#include "nnvm/core/autocast_state.h"
#include "nnvm/core/error.h"

namespace nnvm {

namespace detail {
NNVM_HOT_TLS thread_local uint8_t t_autocast_on = 0;
}  // namespace detail

namespace {

thread_local bool t_enabled = false;
thread_local DType t_dtype = kBFloat16;

// libtorch's CPU lists, for the ops nnvm has: the products in the lower
// precision; reductions, normalisations, softmax and losses in float32.
const char* const kLowerPrecisionOps[] = {"matmul", "conv2d", "conv_transpose2d"};
const char* const kFloat32Ops[] = {"softmax",    "log_softmax", "logsumexp",  "cross_entropy",
                                   "nll_loss",   "mse_loss",    "l1_loss",    "binary_cross_entropy_with_logits",
                                   "layer_norm", "group_norm",  "batch_norm", "rms_norm",
                                   "sum",        "mean",        "prod",       "norm",
                                   "std",        "var",         "var_mean",   "cumsum"};

const absl::flat_hash_map<const OpDef*, autocast::Policy>& table() {
  static const auto* t = [] {
    auto* m = new absl::flat_hash_map<const OpDef*, autocast::Policy>();
    for (const char* name : kLowerPrecisionOps)
      if (has_op(name)) m->emplace(&find_op(name), autocast::Policy::kLowerPrecision);
    for (const char* name : kFloat32Ops)
      if (has_op(name)) m->emplace(&find_op(name), autocast::Policy::kFloat32);
    return m;
  }();
  return *t;
}

bool is_half(DType t) { return t == kBFloat16 || t == kFloat16; }

}  // namespace

bool is_autocast_enabled() { return t_enabled; }
DType get_autocast_dtype() { return t_dtype; }

void set_autocast_enabled(bool enabled) {
  t_enabled = enabled;
  detail::t_autocast_on = enabled ? 1 : 0;
}

void set_autocast_dtype(DType dtype) {
  NNVM_CHECK(is_half(dtype), "autocast", "the autocast dtype must be bfloat16 or float16, got ", dtype);
  t_dtype = dtype;
}

AutocastGuard::AutocastGuard(DType dtype, bool enabled) : enabled_(t_enabled), dtype_(t_dtype) {
  NNVM_CHECK(is_half(dtype), "AutocastGuard", "the autocast dtype must be bfloat16 or float16, got ", dtype);
  t_dtype = dtype;
  set_autocast_enabled(enabled);
}

AutocastGuard::~AutocastGuard() {
  t_dtype = dtype_;
  set_autocast_enabled(enabled_);
}

namespace autocast {

Policy policy(const std::string& op) {
  if (!has_op(op)) return Policy::kNone;
  const auto it = table().find(&find_op(op));
  return it == table().end() ? Policy::kNone : it->second;
}

std::vector<std::string> ops_with(Policy p) {
  std::vector<std::string> names;
  if (p == Policy::kLowerPrecision)
    for (const char* n : kLowerPrecisionOps) names.emplace_back(n);
  if (p == Policy::kFloat32)
    for (const char* n : kFloat32Ops) names.emplace_back(n);
  return names;
}

}  // namespace autocast

namespace detail {

bool autocast_inputs(const OpDef& op, TensorRefs given, const Attrs& given_attrs, std::vector<Tensor>& inputs,
                     Attrs& attrs) {
  const auto it = table().find(&op);
  if (it == table().end()) return false;
  const bool lower = it->second == autocast::Policy::kLowerPrecision;
  const DType target = lower ? t_dtype : kFloat32;
  auto eligible = [&](const Tensor& t) {
    if (!t.defined() || t.dtype() == target) return false;
    return lower ? (t.dtype() == kFloat32 || is_half(t.dtype())) : is_half(t.dtype());
  };
  bool changed = false;
  for (const Tensor& t : given) changed |= eligible(t);
  if (!lower)
    for (size_t k = 0; k < given_attrs.size(); ++k)
      if (const DType* d = std::get_if<DType>(&given_attrs[k])) changed |= is_half(*d);
  if (!changed) return false;
  inputs.clear();
  for (const Tensor& t : given) inputs.push_back(eligible(t) ? t.to(target) : t);
  attrs = given_attrs;
  if (!lower)
    for (size_t k = 0; k < attrs.size(); ++k)
      if (const DType* d = std::get_if<DType>(&attrs[k]); d && is_half(*d)) attrs.set(k, kFloat32);
  return true;
}

}  // namespace detail
}  // namespace nnvm
