// The fixed regression the checkpoint tests train (tests/api/checkpoint_test.cpp,
// checkpoint_resume_test.cpp): step s on its own batch, the same in every
// process, so a run resumed at any step can be compared with one that went
// straight through.
#pragma once

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm::testing {

// Steps [first, first + steps) of the regression of [8, 4] inputs onto [8, 2] targets.
template <class Net>
void train_regression(Net& net, optim::Optimizer& opt, int first, int steps, optim::LRScheduler* scheduler = nullptr) {
  for (int s = first; s < first + steps; ++s) {
    const Tensor x = random({8, 4}, kFloat32, uint64_t(100 + s));
    const Tensor y = random({8, 2}, kFloat32, uint64_t(200 + s));
    opt.zero_grad();
    mse_loss(net(x), y).backward();
    opt.step();
    if (scheduler) scheduler->step();
  }
}

}  // namespace nnvm::testing
