// The README's first command: a small eager computation, printed.
// It grows into the Fashion-MNIST training demo with the autograd issue.
#include <nnvm/nnvm.h>

#include <iostream>

int main() {
  using namespace nnvm;
  manual_seed(0);
  std::cout << "nnvm eager demo (" << get_num_threads() << " threads)\n\n";

  // A batch of 4 inputs through a 2-layer MLP with random weights.
  const Tensor x = randn({4, 8});
  const Tensor w1 = randn({16, 8}) * 0.5, b1 = zeros({16});
  const Tensor w2 = randn({3, 16}) * 0.5, b2 = zeros({3});
  const Tensor hidden = gelu(linear(x, w1, b1));
  const Tensor logits = linear(hidden, w2, b2);
  const Tensor probs = softmax(logits, -1);
  const Tensor target = tensor<int64_t>({0, 2, 1, 2});
  const Tensor loss = cross_entropy(logits, target);

  std::cout << "logits =\n" << logits << "\n\n";
  std::cout << "softmax(logits, -1) =\n" << probs << "\n\n";
  std::cout << "probs.sum({1}) =\n" << probs.sum({1}) << "\n\n";
  std::cout << "predicted classes: ";
  for (int64_t c : probs.argmax(1).to_vector<int64_t>()) std::cout << c << " ";
  std::cout << "\ncross_entropy = " << loss.item<float>() << "\n\n";

  // Views share storage; in-place ops write through them.
  Tensor grid = arange(12, kFloat32).view({3, 4});
  grid.t()[1].mul_(-1);
  std::cout << "arange(12).view({3, 4}) with column 1 negated through a transposed view =\n" << grid << "\n\n";

  const AllocatorStats s = cpu_memory_stats();
  std::cout << "allocator: " << s.allocations << " allocations, " << s.cache_hits << " cache hits, peak "
            << s.peak_bytes_in_use << " bytes\n";
  return 0;
}
