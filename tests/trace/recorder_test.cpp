// Regressions found by the differential test (differential_test.cpp), each
// reduced to the smallest program that showed it: the program runs eagerly,
// then traced enough times to replay a hot plan, and every run must agree.
#include <functional>

#include "nnvm/core/mode.h"
#include "reference.h"

namespace nnvm::testing {
namespace {

// A materialised tensor overwritten from another layout of itself: a hot
// plan's result may be that input view, so the write needs a temporary.
TEST(Recorder, CopyIntoMaterialisedFromItsOwnTranspose) {
  expect_traced_equals_eager([] { return std::vector<Tensor>{random({3, 3}, kFloat32, 1)}; },
                             [](std::vector<Tensor>& in) {
                               Tensor v = in[0].mT();
                               v.copy_(v.mT());
                               return std::vector<Tensor>{in[0]};
                             });
}

}  // namespace
}  // namespace nnvm::testing
