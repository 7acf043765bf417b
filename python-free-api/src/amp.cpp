#include "nnvm/amp.h"

#include <cmath>

#include "nnvm/core/autograd.h"
#include "nnvm/core/error.h"
#include "nnvm/core/functions.h"

namespace nnvm {

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale()) {
  NNVM_CHECK(std::isfinite(options_.init_scale()) && options_.init_scale() > 0, "GradScaler",
             "init_scale must be finite and positive, got ", options_.init_scale());
  NNVM_CHECK(options_.growth_factor() > 1, "GradScaler", "growth_factor must be above 1, got ",
             options_.growth_factor());
  NNVM_CHECK(options_.backoff_factor() > 0 && options_.backoff_factor() < 1, "GradScaler",
             "backoff_factor must be in (0, 1), got ", options_.backoff_factor());
  NNVM_CHECK(options_.growth_interval() > 0, "GradScaler", "growth_interval must be positive, got ",
             options_.growth_interval());
}

Tensor GradScaler::scale(const Tensor& loss) const {
  NNVM_CHECK(loss.defined() && loss.is_floating_point(), "GradScaler::scale", "expected a floating loss, got ",
             loss.defined() ? std::string(dtype_name(loss.dtype())) : std::string("an undefined tensor"));
  if (!options_.enabled()) return loss;
  return loss * Scalar(scale_);
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled()) return;
  PerOptimizer& state = per_optimizer_[&optimizer];
  NNVM_CHECK(state.stage == Stage::kReady, "GradScaler::unscale_",
             state.stage == Stage::kUnscaled ? "unscale_() was already called on this optimizer since the last update()"
                                             : "unscale_() is called after step(); call update() first");
  // PyTorch's: the reciprocal in double, rounded to float32, applied in float32
  const double inverse = double(float(1.0 / scale_));
  NoGradGuard no_grad;
  std::vector<Tensor> finite;
  for (const Tensor& p : optimizer.parameters()) {
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    g.mul_(Scalar(inverse));
    finite.push_back(g.isfinite().all());
  }
  state.found_inf = !finite.empty() && !stack(finite).all().item<bool>();
  state.stage = Stage::kUnscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled()) {
    optimizer.step();
    return true;
  }
  PerOptimizer& state = per_optimizer_[&optimizer];
  NNVM_CHECK(state.stage != Stage::kStepped, "GradScaler::step",
             "step() was already called on this optimizer since the last update()");
  if (state.stage == Stage::kReady) unscale_(optimizer);
  state.stage = Stage::kStepped;
  if (state.found_inf) return false;
  optimizer.step();
  return true;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!options_.enabled()) return;
  if (new_scale) {
    NNVM_CHECK(std::isfinite(*new_scale) && *new_scale > 0, "GradScaler::update",
               "the new scale must be finite and positive, got ", *new_scale);
    scale_ = *new_scale;
  } else {
    bool found_inf = false;
    for (const auto& [optimizer, state] : per_optimizer_) found_inf |= state.found_inf;
    if (found_inf) {
      scale_ = double(float(scale_ * options_.backoff_factor()));
      growth_tracker_ = 0;
    } else if (++growth_tracker_ == options_.growth_interval()) {
      const double grown = double(float(scale_ * options_.growth_factor()));
      if (std::isfinite(grown)) scale_ = grown;  // as PyTorch: a scale that would overflow float32 stays
      growth_tracker_ = 0;
    }
  }
  per_optimizer_.clear();
}

}  // namespace nnvm
