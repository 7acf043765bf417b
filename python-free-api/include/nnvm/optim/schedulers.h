// Learning-rate schedulers: each step() sets the learning rate of every
// parameter group of an optimizer (libtorch's LRScheduler).
#pragma once

#include <vector>

#include "nnvm/optim/optimizer.h"

namespace nnvm::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;

  // Advances one step and applies the new rates.
  void step();
  // The rate of each group, as last applied.
  std::vector<double> get_last_lr() const;
  int64_t step_count() const { return step_count_; }

 protected:
  // The rates for step_count(), from the current ones.
  virtual std::vector<double> get_lrs() = 0;
  std::vector<double> current_lrs() const;
  void set_lrs(const std::vector<double>& lrs);
  Optimizer& optimizer_;

 private:
  int64_t step_count_ = 0;
};

// Multiplies the rate by gamma every step_size steps.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lrs() override;

 private:
  int64_t step_size_;
  double gamma_;
};

// Linear warm-up from 0 to each group's initial rate over warmup_steps, then a
// cosine decay to min_lr at total_steps, min_lr after (the schedule of
// Hugging Face's get_cosine_schedule_with_warmup, with a floor). The rate for
// step 0 is applied on construction.
class CosineWarmupLR : public LRScheduler {
 public:
  CosineWarmupLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double min_lr = 0.0);

 protected:
  std::vector<double> get_lrs() override;

 private:
  std::vector<double> base_lrs_;
  int64_t warmup_steps_, total_steps_;
  double min_lr_;
};

}  // namespace nnvm::optim
