// StepLR and CosineWarmupLR.
#include "nnvm/optim/schedulers.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace nnvm::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}

void LRScheduler::step() {
  ++step_count_;
  set_lrs(get_lrs());
}

std::vector<double> LRScheduler::current_lrs() const {
  std::vector<double> lrs;
  for (const OptimizerParamGroup& group : optimizer_.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

std::vector<double> LRScheduler::get_last_lr() const { return current_lrs(); }

void LRScheduler::set_lrs(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  NNVM_CHECK(lrs.size() == groups.size(), "LRScheduler", "got ", lrs.size(), " rates for ", groups.size(),
             " parameter groups");
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  NNVM_CHECK(step_size > 0, "StepLR", "step_size must be positive, got ", step_size);
}

std::vector<double> StepLR::get_lrs() {
  std::vector<double> lrs = current_lrs();
  if (step_count() % step_size_ == 0)
    for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

CosineWarmupLR::CosineWarmupLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double min_lr)
    : LRScheduler(optimizer), base_lrs_(current_lrs()), warmup_steps_(warmup_steps), total_steps_(total_steps),
      min_lr_(min_lr) {
  NNVM_CHECK(warmup_steps >= 0 && total_steps > warmup_steps, "CosineWarmupLR",
             "expected 0 <= warmup_steps < total_steps, got warmup_steps ", warmup_steps, " and total_steps ",
             total_steps);
  set_lrs(get_lrs());
}

std::vector<double> CosineWarmupLR::get_lrs() {
  const int64_t t = step_count();
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) {
    if (t < warmup_steps_) {
      lr *= double(t) / double(warmup_steps_);
    } else {
      const double progress = std::min(1.0, double(t - warmup_steps_) / double(total_steps_ - warmup_steps_));
      lr = min_lr_ + (lr - min_lr_) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
    }
  }
  return lrs;
}

}  // namespace nnvm::optim
