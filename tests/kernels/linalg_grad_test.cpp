// Gradients of the linear-algebra functions (core/ops/linalg.cpp): mm, bmm,
// outer and linear are views around matmul, so they take its gradient.
#include "reference.h"

namespace nnvm {
namespace {

using testing::gradcheck;
using testing::gradgradcheck;
using testing::leaf;

using Fn = testing::DiffFn;

TEST(LinalgGrad, ViewsAroundMatmulMatchFiniteDifferences) {
  struct Case {
    const char* name;
    Fn fn;
    std::vector<DimVector> shapes;
  };
  const Case cases[] = {
      {"matmul broadcast", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1].mT()); },
       {{2, 3, 4}, {5, 4}}},
      {"matmul vector", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {{4}, {2, 4, 3}}},
      {"mm", [](const std::vector<Tensor>& in) { return mm(in[0].t(), in[1]); }, {{4, 3}, {4, 5}}},
      {"bmm", [](const std::vector<Tensor>& in) { return bmm(in[0], in[1].transpose(1, 2)); },
       {{2, 3, 4}, {2, 1, 4}}},
      {"outer", [](const std::vector<Tensor>& in) { return outer(in[0], in[1]); }, {{3}, {4}}},
      {"linear", [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); }, {{2, 3, 4}, {5, 4}, {5}}},
      {"linear no bias", [](const std::vector<Tensor>& in) { return linear(in[0].t(), in[1]); }, {{4, 1}, {3, 4}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.shapes.size(); ++i) inputs.push_back(leaf(c.shapes[i], 60 + i));
    gradcheck(c.fn, inputs);
    gradgradcheck(c.fn, inputs);
  }
}

}  // namespace
}  // namespace nnvm
