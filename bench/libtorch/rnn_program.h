// bench/trace_bench.cpp's BM_RnnDynamic program in libtorch, for
// torch_bench.cpp and rnn_reference.cpp: h = tanh(x_t W + h U + b), hidden
// 64, batch 1, until |h| crosses a threshold (read with item() every step)
// or 64 steps. Timed per step: the trip count depends on the data, and
// each library draws its own random numbers.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>

struct TorchRnn {
  static constexpr int64_t kHidden = 64, kMaxSteps = 64;
  static constexpr float kThreshold = 6.1f;
  torch::Tensor w, u, b, xs;

  TorchRnn() {
    torch::manual_seed(0);
    w = torch::randn({kHidden, kHidden}) * (1.0 / std::sqrt(double(kHidden)));
    u = torch::randn({kHidden, kHidden}) * (1.0 / std::sqrt(double(kHidden)));
    b = torch::randn({1, kHidden}) * 0.1;
    xs = torch::randn({kMaxSteps, 1, kHidden});
  }

  // One run from h = 0; the steps it took.
  int64_t run() const {
    torch::Tensor h = torch::zeros({1, kHidden});
    int64_t t = 0;
    while (t < kMaxSteps) {
      h = (torch::matmul(xs[t], w) + torch::matmul(h, u) + b).tanh();
      ++t;
      if (h.norm().item<float>() > kThreshold) break;
    }
    return t;
  }
};
