// The demo's model, shared by tools/demo.cpp and bench/train_bench.cpp
// (BM_CnnTrainStep times one training step of exactly this network).
#pragma once

#include <nnvm/nnvm.h>

namespace nnvm {

// conv 1→32 3x3, relu, pool 2; conv 32→64 3x3, relu, pool 2; 3136→128, relu, →10.
struct FashionCnnImpl : nn::Module {
  FashionCnnImpl()
      : nn::Module("FashionCnn"),
        conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", nn::Linear(128, 10))) {}

  // x: [batch, 1, 28, 28] → logits [batch, 10]
  Tensor forward(const Tensor& x) {
    Tensor h = max_pool2d(conv1(x).relu(), {2, 2});
    h = max_pool2d(conv2(h).relu(), {2, 2});
    return fc2(fc1(h.flatten(1)).relu());
  }

  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};
NNVM_MODULE(FashionCnn);

}  // namespace nnvm
