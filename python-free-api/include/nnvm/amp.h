// Dynamic loss scaling for float16 training (PyTorch's torch.amp.GradScaler):
// the loss is multiplied by a scale before backward so small float16
// gradients do not flush to zero; step() divides the gradients by it again
// and skips the optimizer's step when any is inf or NaN; update() halves the
// scale after such a step and doubles it after `growth_interval` clean ones.
//
//   nnvm::GradScaler scaler;
//   {
//     nnvm::AutocastGuard autocast(nnvm::kFloat16);
//     loss = loss_fn(model(x), y);
//   }
//   scaler.scale(loss).backward();
//   scaler.step(optimizer);
//   scaler.update();
//
// bfloat16 has float32's range and needs no scaler. docs/NN.md, "Mixed precision".
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "nnvm/core/tensor.h"
#include "nnvm/optim/optimizer.h"
#include "nnvm/arg.h"

namespace nnvm {

struct GradScalerOptions {
  NNVM_ARG(double, init_scale) = 65536.0;
  NNVM_ARG(double, growth_factor) = 2.0;
  NNVM_ARG(double, backoff_factor) = 0.5;
  NNVM_ARG(int64_t, growth_interval) = 2000;
  NNVM_ARG(bool, enabled) = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (the loss itself when disabled).
  Tensor scale(const Tensor& loss) const;
  // Divides the gradients of `optimizer`'s parameters by the scale, in place,
  // and notes whether any is inf or NaN. At most once per optimizer between
  // update()s; step() calls it when the caller did not (to clip gradients
  // first, call it yourself).
  void unscale_(optim::Optimizer& optimizer);
  // optimizer.step() unless the unscaled gradients held an inf or NaN;
  // returns whether it stepped.
  bool step(optim::Optimizer& optimizer);
  // The next scale: backoff_factor times this one after a skipped step,
  // growth_factor times after growth_interval steps in a row without one,
  // else the same; or `new_scale` when given.
  void update(std::optional<double> new_scale = std::nullopt);

  double get_scale() const { return options_.enabled() ? scale_ : 1.0; }
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return options_.enabled(); }
  const GradScalerOptions& options() const { return options_; }

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  struct PerOptimizer {
    Stage stage = Stage::kReady;
    bool found_inf = false;
  };
  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  std::unordered_map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace nnvm
