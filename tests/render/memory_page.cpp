// Writes a memory timeline page (nnvm::memory::memory_timeline) of a few
// eager training steps, for tests/render/render.cmake to render.
//   memory_page OUT.html
#include <cstdio>

#include "nnvm/core/memory_monitor.h"
#include "nnvm/nnvm.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: memory_page OUT.html\n");
    return 2;
  }
  nnvm::EagerGuard eager;  // each phase's blocks named by their phase (traced mode runs the step at the optimizer's)
  nnvm::Tensor w1 = nnvm::randn({256, 128}).requires_grad_(), w2 = nnvm::randn({128, 10}).requires_grad_();
  nnvm::optim::Adam opt({w1, w2});
  const nnvm::Tensor kept = nnvm::randn({64, 256});  // allocated before monitoring: the "before the ring" area
  nnvm::memory::start_monitoring();
  for (int step = 0; step < 4; ++step) {
    opt.zero_grad();
    nnvm::matmul(nnvm::matmul(nnvm::randn({64, 256}), w1).relu(), w2).square().mean().backward();
    opt.step();
  }
  nnvm::memory::memory_timeline(argv[1]);
  nnvm::memory::stop_monitoring();
  return kept.numel() > 0 ? 0 : 1;
}
