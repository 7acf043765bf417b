#include "reference.h"

namespace nnvm {
namespace {
TEST(Smoke, AddAndSum) {
  Tensor a = arange(6, kFloat32).view({2, 3});
  Tensor b = (a * 2 + 1)[1][2];
  EXPECT_EQ(b.item<float>(), 11.0f);
}
}  // namespace
}  // namespace nnvm
