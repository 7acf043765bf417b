// Built against an installed nnvm by tests/consumer/run.cmake.
#include <nnvm/nnvm.h>

#include <iostream>

int main() {
  const nnvm::Tensor a = nnvm::arange(6, nnvm::kFloat32).view({2, 3});
  const nnvm::Tensor b = (a * 2 + 1)[1][2];
  std::cout << b.item<float>() << "\n";
  return b.item<float>() == 11.0f ? 0 : 1;
}
